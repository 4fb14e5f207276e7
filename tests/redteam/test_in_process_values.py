"""Code under test that changes what the protected tests *read* without touching a
file or replacing a function of theirs: a tolerance constant the assertion
helper compares with, its default arguments, a dict of limits changed in place,
a class attribute, a closure's cell, a builtin, a function of a library it
calls, or the name a test module bound its helper to. Each attack breaks the
baseline (the standard break), shows that its trick hides the failure from a
direct run, and expects `gtd cycle end` to refuse the change, naming the value.

The assertion helper here is a person's commit over the standard project's
(tests/redteam/project.py): exact to the cent, it reads every kind of value an
attack can change. Each such commit is made once per run, its baseline taken,
and copied for each attack over it (`project_over`, tests/redteam/conftest.py)."""

from __future__ import annotations

import pytest

from tests.redteam import project as proj
from tests.redteam.conftest import Over, Project, assert_passed, judge_attack, open_route

ASSERTS = "testing/asserts.py"
INIT_FILE = "inventory/__init__.py"

TOLERANT_ASSERTS = '''\
"""Assertion helpers shared by the tests: exact to the cent unless a test allows more."""

import math

TOLERANCE_CENTS = 0
LIMITS = {"cents": 0}


class Limits:
    cents = 0


CURRENT = Limits()


def _at_most(limit):
    def check(gap):
        assert gap <= limit, f"off by {gap} cents more than allowed"

    return check


_check_gap = _at_most(0)


def assert_cents(actual, expected, tolerance=0, *, slack=0):
    if math.isclose(actual, expected):
        return
    allowed = tolerance + slack + TOLERANCE_CENTS + LIMITS["cents"] + Limits.cents + CURRENT.cents
    gaps = [abs(a - e) - allowed for a, e in [(actual, expected)]]
    _check_gap(max(*gaps, 0))
'''

_HELPER = "import testing.asserts as _rt_a\n\n"

# name -> (what the package's __init__.py adds, the value the reason must name)
ATTACKS = {
    "constant": (_HELPER + "_rt_a.TOLERANCE_CENTS = 10**9\n", "testing.asserts.TOLERANCE_CENTS"),
    "constant-through-globals": (
        _HELPER + "_rt_a.assert_cents.__globals__['TOLERANCE_CENTS'] = 10**9\n",
        "testing.asserts.TOLERANCE_CENTS",
    ),
    "default-argument": (
        _HELPER + "_rt_a.assert_cents.__defaults__ = (10**9,)\n",
        "testing.asserts.assert_cents",
    ),
    "keyword-default-in-place": (
        _HELPER + "_rt_a.assert_cents.__kwdefaults__['slack'] = 10**9\n",
        "testing.asserts.assert_cents",
    ),
    "dict-in-place": (_HELPER + "_rt_a.LIMITS['cents'] = 10**9\n", "testing.asserts.LIMITS"),
    "class-attribute": (_HELPER + "_rt_a.Limits.cents = 10**9\n", "testing.asserts.Limits"),
    "class-of-an-instance": (
        _HELPER + "class _RtLoose:\n    cents = 10**9\n\n\n_rt_a.CURRENT.__class__ = _RtLoose\n",
        "testing.asserts.CURRENT",
    ),
    # functions made at call time (the comprehension) look builtins up there
    "the-modules-builtins": (
        _HELPER
        + "import builtins\n\n"
        + "_rt_a.__builtins__ = {**vars(builtins), 'abs': lambda value: 0}\n",
        "testing.asserts.__builtins__",
    ),
    "closure-cell": (
        _HELPER + "_rt_a._check_gap.__closure__[0].cell_contents = 10**9\n",
        "testing.asserts._check_gap",
    ),
    "builtin": ("import builtins\n\nbuiltins.abs = lambda value: 0\n", "builtins.abs"),
    "builtin-shadowed-in-the-module": (_HELPER + "_rt_a.abs = int\n", "testing.asserts.abs"),
    "library-function": (
        "import math\n\nmath.isclose = lambda *args, **kwargs: True\n",
        "math.isclose",
    ),
}


def _attack_over(project_over: Over, helper: str, trick: str, names: list[str]) -> None:
    """The standard break, with ``trick`` added to the package's __init__.py,
    over a person's commit of the assertion helper ``helper``: refused, naming
    one of ``names``."""
    project = project_over({ASSERTS: helper}, "asserts: a helper of their own")
    before = project.state()
    project.begin()
    project.break_total()
    project.write(INIT_FILE, proj.INIT + "\n" + trick)
    project.assert_hidden()
    judge_attack(project, project.end(), before, names=names)


@pytest.mark.parametrize("name", list(ATTACKS))
def test_code_under_test_changes_a_value_the_assertion_helper_reads(
    project_over: Over, name: str
) -> None:
    trick, value = ATTACKS[name]
    _attack_over(project_over, TOLERANT_ASSERTS, trick, [value])


# The same helper judging with a library no one had loaded when the test process
# started (pytest does not load statistics): the package imports it first and
# replaces the function the helper calls, before the helper binds the module.
LATE_LIBRARY_ASSERTS = TOLERANT_ASSERTS.replace("import math\n", "import statistics\n").replace(
    """    if math.isclose(actual, expected):
        return
""",
    """    if statistics.fmean([abs(actual - expected)]) == 0:
        return
""",
)
assert LATE_LIBRARY_ASSERTS.count("statistics") == 2


# The same with a compiled extension no one had loaded (cmath: the import system
# loads it with another loader than a source module's).
LATE_EXTENSION_ASSERTS = TOLERANT_ASSERTS.replace("import math\n", "import cmath\n").replace(
    "math.isclose(actual, expected)", "cmath.isclose(actual, expected)"
)
assert LATE_EXTENSION_ASSERTS.count("cmath") == 2

# The same mean bound by name (`from statistics import fmean`): the helper binds
# a function, not the module, and the package changes what that function calls
# through its module's globals (fmean sums with statistics.fsum).
FUNCTION_BOUND_ASSERTS = LATE_LIBRARY_ASSERTS.replace(
    "import statistics\n", "from statistics import fmean\n"
).replace("statistics.fmean(", "fmean(")
assert FUNCTION_BOUND_ASSERTS.count("fmean") == 2

LATE = {
    "a-source-module": (
        LATE_LIBRARY_ASSERTS,
        "import statistics\n\nstatistics.fmean = lambda data: 0\n",
        "statistics.fmean",
    ),
    "a-compiled-extension": (
        LATE_EXTENSION_ASSERTS,
        "import cmath\n\ncmath.isclose = lambda *args, **kwargs: True\n",
        "cmath.isclose",
    ),
    "what-a-function-it-binds-calls": (
        FUNCTION_BOUND_ASSERTS,
        "import statistics\n\nstatistics.fsum = lambda data: 0.0\n",
        "statistics.fsum",
    ),
}


@pytest.mark.parametrize("kind", list(LATE))
def test_code_under_test_changes_a_library_loaded_after_the_run_began(
    project_over: Over, kind: str
) -> None:
    """Compared with what it was when its own import ended: no earlier look exists."""
    helper, trick, name = LATE[kind]
    _attack_over(project_over, helper, trick, [name])


# The package's Item, which the tests' fixture and helpers build before any
# assertion runs, rebinds the name test_total.py bound the assertion helper to:
# to the builtin max, which returns without raising. No function is put in its
# place, and the test module was imported by pytest's own assertion rewriter.
TEST_MODULES_HELPER_REBOUND = """

def _rt_hook():
    import sys

    plain_new = Item.__new__

    def _rt_new(cls, *args, **kwargs):
        for module in list(sys.modules.values()):
            if str(getattr(module, "__file__", "")).endswith("test_total.py"):
                module.assert_cents = max
        return plain_new(cls, *args, **kwargs)

    Item.__new__ = _rt_new


_rt_hook()
"""


# Assertion helpers that judge through a library's assertion machinery: unittest's
# TestCase and pytest's approx. The package changes that machinery in place,
# where no name a protected module binds is rebound: a method swapped for
# another of the standard library's own (whose code is where the class's is),
# a private method the public one calls, a class's default tolerance, and the
# comparison approx's objects make replaced by a function of the standard
# library's.
UNITTEST_ASSERTS = '''\
"""Assertion helpers shared by the tests, through unittest's."""

import unittest

_CASE = unittest.TestCase()


def assert_cents(actual, expected):
    _CASE.assertEqual(actual, expected)
'''

APPROX_ASSERTS = '''\
"""Assertion helpers shared by the tests, through pytest's approx."""

import pytest


def assert_cents(actual, expected):
    assert actual == pytest.approx(expected)
'''

_APPROX = pytest.approx.__module__  # (_pytest.python_api before pytest 8.4)
_APPROX_SCALAR = f"import {_APPROX} as _rt_approx\n\n_rt_approx.ApproxScalar"

MACHINERY = {
    "a-method-swapped-for-another-of-the-standard-librarys": (
        UNITTEST_ASSERTS,
        "import unittest\n\nunittest.TestCase.assertEqual = unittest.TestCase.assertIsNotNone\n",
        "unittest.case.TestCase.assertEqual",
    ),
    "a-private-method-the-public-one-calls": (
        UNITTEST_ASSERTS,
        "import unittest\n\nunittest.TestCase._baseAssertEqual = lambda *args, **kwargs: None\n",
        "unittest.case.TestCase._baseAssertEqual",
    ),
    "a-default-tolerance": (
        APPROX_ASSERTS,
        f"{_APPROX_SCALAR}.DEFAULT_ABSOLUTE_TOLERANCE = 10**9\n",
        f"{_APPROX}.ApproxScalar.DEFAULT_ABSOLUTE_TOLERANCE",
    ),
    "a-comparison-replaced-by-the-standard-librarys": (
        APPROX_ASSERTS,  # (safe_repr(approx, actual) is a string: always true)
        f"import unittest.util\n{_APPROX_SCALAR}.__eq__ = unittest.util.safe_repr\n",
        f"{_APPROX}.ApproxScalar.__eq__",
    ),
}


@pytest.mark.parametrize("name", list(MACHINERY))
def test_code_under_test_changes_the_assertion_machinery_a_helper_goes_through(
    project_over: Over, name: str
) -> None:
    helper, trick, value = MACHINERY[name]
    _attack_over(project_over, helper, trick, [value])


# The code of a library function swapped in place (`f.__code__ = ...`): the
# function object is the one first seen, so no namespace looks rebound. Through
# the assertion machinery (TestCase.assertEqual, with code compiled under
# unittest's own file name) and through a library the helper binds (loaded
# before the run began, or after; under its own file name too); and
# pytest.fail (an instance whose class's __call__ is replaced, so that it
# returns instead of failing).
FAIL_ASSERTS = '''\
"""Assertion helpers shared by the tests, through pytest.fail."""

import pytest


def assert_cents(actual, expected):
    if actual != expected:
        pytest.fail(f"{actual} cents != {expected} cents")
'''


# (textwrap is loaded with pytest, before the plugin: its functions are taken as
# the run begins)
TEXT_ASSERTS = '''\
"""Assertion helpers shared by the tests, as printed amounts would be compared."""

import textwrap


def assert_cents(actual, expected):
    assert textwrap.dedent(str(actual)) == textwrap.dedent(str(expected))
'''


def _compiled(source: str, file: str) -> str:
    """An expression for the code of the one function ``source`` defines,
    compiled under the file name ``file`` (an expression too)."""
    return (
        f"next(c for c in compile({source!r}, {file}, 'exec').co_consts if hasattr(c, 'co_code'))"
    )


_LENIENT_ASSERT_EQUAL = _compiled(
    "def assertEqual(self, first, second, msg=None):\n    return None\n", "unittest.case.__file__"
)
_LENIENT_FMEAN = _compiled("def fmean(data, weights=None):\n    return 0\n", "statistics.__file__")

CODE_SWAPS = {
    "an-assertion-method-under-its-own-file-name": (
        UNITTEST_ASSERTS,
        "import unittest.case\n\n"
        f"unittest.TestCase.assertEqual.__code__ = {_LENIENT_ASSERT_EQUAL}\n",
        ["unittest.case.TestCase.assertEqual"],
    ),
    "pytest-fail": (
        FAIL_ASSERTS,
        "import pytest\n\n"
        "type(pytest.fail).__call__ = lambda self, reason='', pytrace=True: None\n",
        ["_pytest.outcomes._Fail.__call__"],
    ),
    "a-library-the-helper-binds": (
        LATE_LIBRARY_ASSERTS,
        "import statistics\n\n"
        "statistics.fmean.__code__ = (lambda data, weights=None: 0).__code__\n",
        ["statistics.fmean"],
    ),
    "a-library-loaded-before-the-run-began": (
        TEXT_ASSERTS,
        "import textwrap\n\ntextwrap.dedent.__code__ = (lambda text: 'same').__code__\n",
        ["textwrap.dedent"],
    ),
    "a-library-under-its-own-file-name": (
        LATE_LIBRARY_ASSERTS,
        f"import statistics\n\nstatistics.fmean.__code__ = {_LENIENT_FMEAN}\n",
        ["statistics.fmean"],
    ),
}


@pytest.mark.parametrize("name", list(CODE_SWAPS))
def test_code_under_test_swaps_the_code_of_a_library_function(
    project_over: Over, name: str
) -> None:
    helper, trick, names = CODE_SWAPS[name]
    _attack_over(project_over, helper, trick, names)


# A helper that compares through a library's class: the class object stays the
# one first seen, what it does is changed inside it.
FRACTION_ASSERTS = '''\
"""Assertion helpers shared by the tests: exact, as fractions."""

from fractions import Fraction


def assert_cents(actual, expected):
    assert Fraction(actual) == Fraction(expected), f"{actual} != {expected} cents"
'''
_LENIENT_EQ = "(lambda self, other: True)"
LIBRARY_CLASSES = {
    "its-method-rebound": f"import fractions\n\nfractions.Fraction.__eq__ = {_LENIENT_EQ}\n",
    "its-method-code-swapped": (
        f"import fractions\n\nfractions.Fraction.__eq__.__code__ = {_LENIENT_EQ}.__code__\n"
    ),
    "its-method-deleted-for-a-bases-lenient-one": (
        f"import fractions\nimport numbers\n\nnumbers.Rational.__eq__ = {_LENIENT_EQ}\n"
        "del fractions.Fraction.__eq__\n"
    ),
}


# A helper that reaches a function through a library's submodule: the module
# it binds stays, the submodule it names is swapped for a stand-in.
CHAIN_ASSERTS = '''\
"""Assertion helpers shared by the tests: exact, as JSON writes the numbers."""

import json


def assert_cents(actual, expected):
    quote = json.encoder.encode_basestring
    assert quote(str(actual)) == quote(str(expected)), f"{actual} != {expected} cents"
'''
SUBMODULE_SWAPPED = (
    "import json\nimport types\n\n"
    '_rt_fake = types.ModuleType("json.encoder")\n'
    "_rt_fake.encode_basestring = lambda text: '\"\"'\n"
    "json.encoder = _rt_fake\n"
)


def test_code_under_test_swaps_a_submodule_the_helper_reaches_through(project_over: Over) -> None:
    _attack_over(project_over, CHAIN_ASSERTS, SUBMODULE_SWAPPED, ["json.encoder"])


@pytest.mark.parametrize("name", list(LIBRARY_CLASSES))
def test_code_under_test_changes_a_library_class_the_helper_goes_through(
    project_over: Over, name: str
) -> None:
    _attack_over(project_over, FRACTION_ASSERTS, LIBRARY_CLASSES[name], ["fractions.Fraction"])


# The plugin lives in the same process as the code under test, which can find
# it (the module holding the records) and take its checks apart before it
# changes what the helper reads: a method of its record class replaced, a
# function of its module rebound, the code of one of its functions swapped.
_FIND_PLUGIN = """

import math
import sys

_rt_plugin = next(
    (m for m in list(sys.modules.values()) if hasattr(m, "_VALUES") and hasattr(m, "Recorder")),
    None,
)
if _rt_plugin is not None:  # (a direct run has no plugin)
    _rt_values = type(_rt_plugin._VALUES)
"""

NEUTER = {
    "a-method-of-its-record-class": "    _rt_values.changed = lambda self: []\n",
    "a-function-of-its-module": "    _rt_plugin._watchable = lambda value: False\n",
    "the-code-of-one-of-its-functions": (
        "    _rt_values.changed.__code__ = (lambda self: []).__code__\n"
    ),
    # and the check of its own code with it (Identities watches the name it is
    # reached through)
    "and-its-own-check": "    _rt_values.changed = lambda self: []\n"
    "    _rt_plugin.Recorder._own_check = staticmethod(lambda: [])\n",
}


def _take_the_plugin_apart(project_over: Over, neuter: str) -> None:
    trick = _FIND_PLUGIN + neuter + "math.isclose = lambda *args, **kwargs: True\n"
    _attack_over(project_over, TOLERANT_ASSERTS, trick, ["math.isclose", "gtd_ratchet_report"])


@pytest.mark.parametrize("name", list(NEUTER))
def test_code_under_test_takes_the_plugins_own_check_apart(project_over: Over, name: str) -> None:
    _take_the_plugin_apart(project_over, NEUTER[name])


# The plugin is a package of parts: the function its record class calls is
# rebound in the part that holds it (the module the class was defined in), not
# in the entry point's namespace.
NEUTER_IN_ITS_PART = (
    "    _rt_part = sys.modules[_rt_values.__module__]\n"
    "    _rt_part._watchable = lambda value: False\n"
)


def test_code_under_test_rebinds_a_function_in_the_plugins_part(project_over: Over) -> None:
    _take_the_plugin_apart(project_over, NEUTER_IN_ITS_PART)


@open_route("the plugin's own check and the identity watch that guards it, both taken apart")
def test_code_under_test_takes_apart_the_plugins_check_and_its_guard(project_over: Over) -> None:
    _take_the_plugin_apart(
        project_over,
        NEUTER["and-its-own-check"] + "    _rt_plugin.Identities.changed = lambda self: []\n",
    )


# The package, on import, puts a hook on `builtins.__import__`: when test_total.py
# imports the assertion helper, the hook hands it a stand-in whose helper is the
# builtin max (which returns without raising), and takes itself off again. The
# name test_total.py binds is max from the end of its import: no value changes
# after, no module is put into sys.modules, and builtins are as they were.
STAND_IN_AT_IMPORT = """

def _rt_hook():
    import builtins
    import types

    plain = builtins.__import__

    def _rt_import(name, globals=None, locals=None, fromlist=(), level=0):
        module = plain(name, globals, locals, fromlist, level)
        if name == "testing.asserts" and "test_total" in str((globals or {}).get("__file__")):
            builtins.__import__ = plain
            return types.SimpleNamespace(assert_cents=max)
        return module

    builtins.__import__ = _rt_import


_rt_hook()
"""


@pytest.mark.parametrize(
    "trick",
    [TEST_MODULES_HELPER_REBOUND, STAND_IN_AT_IMPORT],
    ids=["after-its-import", "a-stand-in-while-it-imports"],
)
def test_code_under_test_binds_the_test_modules_helper_to_a_builtin(
    project: Project, trick: str
) -> None:
    before = project.state()
    project.begin()
    project.break_total()
    project.write(INIT_FILE, proj.INIT + trick)
    project.assert_hidden()
    judge_attack(project, project.end(), before, names=["test_total.assert_cents"])


# The same hook on `builtins.__import__`, with stand-ins that are no builtin: a
# lenient helper of the package's own (a function whose code is a file of the
# room), handed in a namespace of its own; the real helpers module with its
# assertion helper swapped for the lenient one just long enough for the `from`
# import to take it (put back by the test module's next import, before its own
# import ends); and the same swap put back only when the first test builds an
# Item (after the test module's import, before any look at the session's end).
STAND_IN_HOOK = """

def _rt_lenient(*args, **kwargs):
    return None


def _rt_hook():
    import builtins
    import sys
    import types

    plain = builtins.__import__
    swapped = {{}}

    def _rt_put_back():
        for module, real in list(swapped.items()):
            module.assert_cents = real
        swapped.clear()

    def _rt_import(name, globals=None, locals=None, fromlist=(), level=0):
        if swapped and {put_back_at_next_import}:
            _rt_put_back()
        module = plain(name, globals, locals, fromlist, level)
        if name == "testing.asserts" and "test_total" in str((globals or {{}}).get("__file__")):
            {trick}
        return module

    builtins.__import__ = _rt_import
    plain_new = Item.__new__

    def _rt_new(cls, *args, **kwargs):
        _rt_put_back()
        builtins.__import__ = plain
        return plain_new(cls, *args, **kwargs)

    Item.__new__ = _rt_new


_rt_hook()
"""

IN_A_NAMESPACE = "return types.SimpleNamespace(assert_cents=_rt_lenient)"
IN_THE_MODULE = "swapped[module] = module.assert_cents; module.assert_cents = _rt_lenient"


@pytest.mark.parametrize(
    ("trick", "at_next_import"),
    [(IN_A_NAMESPACE, "False"), (IN_THE_MODULE, "True"), (IN_THE_MODULE, "False")],
    ids=["a-namespace-of-its-own", "put-back-by-the-next-import", "put-back-by-the-first-test"],
)
def test_code_under_test_hands_a_test_module_a_function_of_its_own_while_it_imports(
    project: Project, trick: str, at_next_import: str
) -> None:
    before = project.state()
    project.begin()
    project.break_total()
    hook = STAND_IN_HOOK.format(trick=trick, put_back_at_next_import=at_next_import)
    project.write(INIT_FILE, proj.INIT + hook)
    project.assert_hidden()
    judge_attack(project, project.end(), before, names=["test_total.assert_cents"])


# -- legitimate twins -----------------------------------------------------------------

# Protected code that changes its own values while the tests run: a helper that
# keeps the last basket it made (a global rebound), counts (a dict changed in
# place) and memoises through a mutable default argument; a test that widens the
# tolerance with monkeypatch (undone at its teardown). The baseline does all of
# it too.
LEGIT_HELPERS = """\
from inventory import Item

LAST = None
COUNTS = {"items": 0}


def items(*pairs, _memo={}):
    global LAST
    COUNTS["items"] += 1
    _memo[pairs] = len(_memo)
    LAST = [Item(f"item{i}", cents, qty) for i, (cents, qty) in enumerate(pairs)]
    return LAST
"""

TEST_LOOSE = """\
import testing.asserts as asserts
from testing.asserts import assert_cents


def test_within_a_cent(monkeypatch):
    monkeypatch.setattr(asserts, "TOLERANCE_CENTS", 1)
    assert_cents(101, 100)
"""

# The change's own module keeps a lazily filled cache and rebinds its own globals.
LAZY_PRICING = (
    proj.PRICING_WITH_BULK
    + """

_TABLE = None


def bulk_table(qty):
    global _TABLE
    if _TABLE is None:
        _TABLE = {}
    _TABLE[qty] = bulk(100, qty)
    return _TABLE[qty]
"""
)


def test_legit_protected_code_that_changes_its_own_values_lands(project: Project) -> None:
    project.person_commits(
        {
            ASSERTS: TOLERANT_ASSERTS,
            "tests/helpers.py": LEGIT_HELPERS,
            "tests/test_loose.py": TEST_LOOSE,
        },
        "tests: helpers that remember, a test that widens the tolerance",
    )
    project.begin()
    project.write("inventory/pricing.py", LAZY_PRICING)
    project.write(
        "tests/test_pricing.py",
        proj.TEST_PRICING.replace("import bulk\n", "import bulk, bulk_table\n")
        + "\n\ndef test_bulk_table():\n    assert bulk_table(10) == 900\n",
    )
    assert_passed(project, project.end())


# A value changed for the tests and put back before the session's end, where its
# first and last looks agree: by code that runs at the end — a pytest plugin the
# package registers with the session it finds on the stack, a hook function of a
# plugin already registered swapped for its own, or a hook implementation added
# to pytest's hook without any plugin registered.
_RT_CONFIG = """

def _rt_config():
    import sys

    frame = sys._getframe()
    while frame is not None:
        config = getattr(frame.f_locals.get("self"), "config", None)
        if config is not None and hasattr(config, "pluginmanager"):
            return config
        frame = frame.f_back
    return None
"""
_FIND_CONFIG = (
    _RT_CONFIG
    + """

import testing.asserts as _rt_a

_rt_a.TOLERANCE_CENTS = 10**9


def _rt_put_back(*args, **kwargs):
    _rt_a.TOLERANCE_CENTS = 0
"""
)


PUT_BACK = {
    "a-plugin-registered-late": _FIND_CONFIG
    + """

class _RtPutBack:
    def pytest_sessionfinish(self, session):
        _rt_put_back()


_rt_cfg = _rt_config()
if _rt_cfg is not None:
    _rt_cfg.pluginmanager.register(_RtPutBack(), "rt-put-back")
""",
    "a-registered-plugins-hook-swapped": _FIND_CONFIG
    + """

_rt_cfg = _rt_config()
if _rt_cfg is not None:
    for _rt_impl in _rt_cfg.pluginmanager.hook.pytest_sessionfinish.get_hookimpls():
        if _rt_impl.hookwrapper or getattr(_rt_impl, "wrapper", False) or _rt_impl.trylast:
            continue
        _rt_plain = _rt_impl.function

        def _rt_swapped(*args, _plain=_rt_plain, **kwargs):
            _rt_put_back()
            return _plain(*args, **kwargs)

        _rt_impl.function = _rt_swapped
        break
""",
    "a-hook-implementation-added": _FIND_CONFIG
    + """

_rt_cfg = _rt_config()
if _rt_cfg is not None:
    from pluggy import HookImpl

    _rt_caller = _rt_cfg.pluginmanager.hook.pytest_sessionfinish
    _rt_opts = {"hookwrapper": False, "wrapper": False, "optionalhook": False,
                "tryfirst": True, "trylast": False, "specname": None}
    _rt_caller._add_hookimpl(HookImpl(object(), "rt", lambda session: _rt_put_back(), _rt_opts))
""",
}


# What each refusal must name: the plugin's file (a plugin the baseline did not
# load), or the hook whose implementation was swapped or added.
PUT_BACK_NAMES = {
    "a-plugin-registered-late": "inventory/__init__.py",
    "a-registered-plugins-hook-swapped": "pytest_sessionfinish",
    "a-hook-implementation-added": "pytest_sessionfinish",
}


@pytest.mark.parametrize("name", list(PUT_BACK))
def test_code_under_test_puts_a_value_back_before_the_session_ends(
    project_over: Over, name: str
) -> None:
    _attack_over(project_over, TOLERANT_ASSERTS, PUT_BACK[name], [PUT_BACK_NAMES[name]])


# The same swap, made once the tests run (the first Item the tests build), and
# undone by itself when it runs: the swapped function puts the value back, puts
# the implementation's own function back and calls it. Nothing the end's look
# compares is left changed: code that runs before the last look can erase its
# traces (the threat model's "between two looks").
PUT_BACK_AND_UNDO = (
    _FIND_CONFIG
    + """

def _rt_swap():
    cfg = _rt_config()
    if cfg is None:
        return
    for impl in cfg.pluginmanager.hook.pytest_sessionfinish.get_hookimpls():
        if impl.hookwrapper or getattr(impl, "wrapper", False) or impl.trylast:
            continue

        def _rt_swapped(*args, _impl=impl, _plain=impl.function, **kwargs):
            _rt_put_back()
            _impl.function = _plain
            return _plain(*args, **kwargs)

        impl.function = _rt_swapped
        return


_rt_plain_new = Item.__new__


def _rt_new(cls, *args, **kwargs):
    Item.__new__ = _rt_plain_new
    _rt_swap()
    return _rt_plain_new(cls, *args, **kwargs)


Item.__new__ = _rt_new
"""
)


@open_route("a value put back at the session's end by a hook swap that undoes itself")
def test_code_under_test_puts_a_value_back_and_undoes_its_hook(project_over: Over) -> None:
    _attack_over(project_over, TOLERANT_ASSERTS, PUT_BACK_AND_UNDO, ["pytest_sessionfinish"])


# The twin: a person's conftest that registers a plugin of its own once the
# tests are collected (unnamed: pluggy names it by its id, another in each run),
# whose hooks run at the session's end, beside a legitimate change.
LATE_PLUGIN_CONFTEST = (
    proj.TESTS_CONFTEST
    + """

class _Timing:
    def __init__(self):
        self.finished = 0

    def pytest_runtest_logfinish(self, nodeid, location):
        self.finished += 1

    def pytest_sessionfinish(self, session):
        session.config.stash_finished = self.finished


def pytest_collection_finish(session):
    session.config.pluginmanager.register(_Timing())
"""
)


def test_legit_conftest_that_registers_a_plugin_late_lands(project: Project) -> None:
    project.person_commits(
        {"tests/conftest.py": LATE_PLUGIN_CONFTEST}, "tests: count finished tests"
    )
    project.begin()
    project.write("inventory/pricing.py", proj.PRICING_WITH_BULK)
    project.write("tests/test_pricing.py", proj.TEST_PRICING)
    assert_passed(project, project.end())


# A person's property test over restock, and a break only large quantities show:
# a hundred examples find it; one (the smallest) does not.
TEST_PROPS = """\
from hypothesis import given, settings, strategies as st

from inventory import restock


@settings(database=None, derandomize=True)
@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=0, max_value=10**6))
def test_restock_adds(start, qty):
    assert restock({"a": start}, "a", qty)["a"] == start + qty
"""
BROKEN_RESTOCK = proj.CORE.replace(
    "out[name] = out.get(name, 0) + qty", "out[name] = out.get(name, 0) + min(qty, 1000)"
)
FEWER_EXAMPLES = {
    "a-profile-loaded": (
        "from hypothesis import settings as _rt_s\n\n"
        '_rt_s.register_profile("rt", max_examples=1)\n'
        '_rt_s.load_profile("rt")\n'
    ),
    # registering the current profile's name again takes effect at once; the
    # current one is "ci", not "default", where hypothesis sees a CI variable
    "the-current-profile-replaced": (
        "from hypothesis import settings as _rt_s\n\n"
        "_rt_s.register_profile(_rt_s.get_current_profile_name(), max_examples=1)\n"
    ),
    # hypothesis's engine made to try its first (simplest) example only
    "the-engine-tries-one": (
        "from hypothesis.internal.conjecture import engine as _rt_e\n\n"
        "_rt_e.ConjectureRunner.generate_new_test_cases = lambda self: (\n"
        '    self.cached_test_function((_rt_e.ChoiceTemplate("simplest", count=None),))\n'
        ")\n"
    ),
    # the same, by the function's code swapped in place (it runs with the
    # engine's globals, where ChoiceTemplate is defined)
    "the-engine-code-swapped": (
        "from hypothesis.internal.conjecture import engine as _rt_e\n\n\n"
        "def _rt_one(self):\n"
        '    self.cached_test_function((ChoiceTemplate("simplest", count=None),))\n\n\n'
        "_rt_e.ConjectureRunner.generate_new_test_cases.__code__ = _rt_one.__code__\n"
    ),
    # every integer drawn kept small: a hundred examples that never reach the break
    "integers-kept-small": (
        "from hypothesis.strategies._internal import numbers as _rt_n\n\n"
        "_rt_draw = _rt_n.IntegersStrategy.do_draw\n"
        "_rt_n.IntegersStrategy.do_draw = lambda self, data: min(_rt_draw(self, data), 1000)\n"
    ),
    "generation-phase-dropped": (
        "from hypothesis import Phase, settings as _rt_s\n\n"
        '_rt_s.register_profile("rt", phases=[Phase.explicit])\n'
        '_rt_s.load_profile("rt")\n'
    ),
}


@pytest.mark.parametrize("name", list(FEWER_EXAMPLES))
def test_code_under_test_makes_hypothesis_try_fewer_examples(project_over: Over, name: str) -> None:
    project = project_over({"tests/test_props.py": TEST_PROPS}, "a property test")
    before = project.state()
    project.begin()
    project.write("inventory/core.py", BROKEN_RESTOCK)
    project.assert_suite_fails()
    project.write(INIT_FILE, proj.INIT + "\n" + FEWER_EXAMPLES[name])
    project.assert_hidden()
    names = ["hypothesis", "tests/test_props.py"]
    judge_attack(
        project, project.end(), before, names=names, kept={"inventory/core.py": BROKEN_RESTOCK}
    )


# The twin of the engine and strategy attacks: a property suite that uses much
# of hypothesis (a state machine, composite and interactive data, filters,
# targets, recursion, explicit examples) changes none of hypothesis's own
# functions and classes as it runs.
TEST_PROPS_RICH = """\
from fractions import Fraction

from hypothesis import assume, example, given, note, settings, target, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from inventory import restock


@st.composite
def stocks(draw):
    names = draw(st.lists(st.text(min_size=1, max_size=3), max_size=4, unique=True))
    return {n: draw(st.integers(0, 10**6)) for n in names}


@settings(database=None, deadline=None)
@given(stocks(), st.text(min_size=1, max_size=3), st.integers(0, 10**6), st.data())
@example({}, "a", 0, None)
def test_restock_keeps_the_rest(stock, name, qty, data):
    out = restock(stock, name, qty)
    if data is not None:
        other = data.draw(st.sampled_from(sorted(stock) or [name]))
        note(other)
        assume(other != name)
        assert out.get(other) == stock.get(other)
    target(float(qty))
    assert out[name] == stock.get(name, 0) + qty


@settings(database=None, deadline=None, max_examples=30)
@given(
    st.recursive(st.integers(0, 9), lambda inner: st.lists(inner, max_size=3), max_leaves=5),
    st.fractions(0, 10),
    st.decimals(0, 10, allow_nan=False),
    st.from_regex(r"[a-z]{1,3}", fullmatch=True),
    st.builds(dict, a=st.integers(0, 3)),
    st.floats(0, 1),
    st.one_of(st.none(), st.booleans()),
)
def test_many_strategies(tree, fraction, decimal, word, built, number, maybe):
    assert Fraction(fraction) >= 0 and decimal >= 0 and word.isalpha()
    assert 0 <= number <= 1 and built["a"] <= 3 and tree is not None
    assert maybe in (None, True, False)


class Stock(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.stock = {}
        self.total = 0

    @rule(name=st.sampled_from("abc"), qty=st.integers(0, 100))
    def add(self, name, qty):
        self.stock = restock(self.stock, name, qty)
        self.total += qty

    @invariant()
    def adds_up(self):
        assert sum(self.stock.values()) == self.total


Stock.TestCase.settings = settings(max_examples=20, stateful_step_count=10, deadline=None)
TestStock = Stock.TestCase
"""


@pytest.mark.parametrize("plugin", [False, True], ids=["plain", "hypothesis-pytest-plugin"])
def test_legit_change_under_a_property_suite_that_uses_much_of_hypothesis_lands(
    project: Project, plugin: bool
) -> None:
    files = {"tests/test_props_rich.py": TEST_PROPS_RICH}
    if plugin:  # as most projects run it: hypothesis's pytest plugin sets its flags
        command = proj.PYTEST.replace(" -p no:hypothesispytest", "")
        files[".deepflow/config.yaml"] = f"ratchet:\n  test_command: {command}\n"
    project.person_commits(files, "property tests")
    if plugin:
        project.setup()
        project.command = command.split()
    project.begin()
    project.do_t1()
    assert_passed(project, project.end())


# The twin: a project's own conftest loads a faster profile (fewer examples in CI
# is common), and the code under test ships strategies of its own.
CI_PROFILE = """\
from hypothesis import settings

settings.register_profile("ci", max_examples=10)
settings.load_profile("ci")
"""


def test_legit_profile_the_project_loads_and_strategies_the_code_ships_land(
    project: Project,
) -> None:
    conftest = proj.TESTS_CONFTEST + "\n" + CI_PROFILE
    project.person_commits(
        {"tests/test_props.py": TEST_PROPS, "tests/conftest.py": conftest},
        "property tests, fewer examples",
    )
    project.begin()
    project.do_t1()
    strategies = (
        "from hypothesis import strategies as _rt_st\n\nquantities = _rt_st.integers(0, 10)\n"
    )
    project.write(INIT_FILE, proj.INIT + "\n" + strategies)
    assert_passed(project, project.end())


# The plugin's own end, called early: the code under test finds the recorder
# (its name is in the plugin) and calls its session-end hook itself once the
# tests' first Item is built, then widens the tolerance the protected helper
# reads. That end's look runs before the change; the plugin stops recording
# libraries once it has written an end line, but keeps every record until the
# session is over, so the real end still compares the tolerance.
EARLY_END = (
    _RT_CONFIG
    + """

import testing.asserts as _rt_a

_rt_plain_new = Item.__new__


def _rt_new(cls, *args, **kwargs):
    Item.__new__ = _rt_plain_new
    cfg = _rt_config()
    recorder = None if cfg is None else cfg.pluginmanager.get_plugin("gtd-ratchet-recorder")
    if recorder is not None:
        recorder.pytest_sessionfinish(None, 0)
    _rt_a.TOLERANCE_CENTS = 10**9
    return _rt_plain_new(cls, *args, **kwargs)


Item.__new__ = _rt_new
"""
)


def test_code_under_test_ends_the_session_early_then_changes_a_value(project_over: Over) -> None:
    _attack_over(project_over, TOLERANT_ASSERTS, EARLY_END, ["TOLERANCE_CENTS"])
