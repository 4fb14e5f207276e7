"""Code under test that reaches into pytest's machinery from inside the test
process, and plugins the change's files bring: each attack breaks a baseline
test, checks that its trick hides the failure from a direct run of the suite,
and expects `gtd cycle end` to refuse the change. A route still open (the
threat model's "what it cannot guarantee") is marked ``xfail(strict=True)``
with the mechanism in its reason: it documents the route, and turns red (XPASS)
once the ratchet catches it."""

from __future__ import annotations

from collections.abc import Callable
from importlib.util import source_hash
from pathlib import Path

import pytest

from gtd.auto.ratchet import early
from tests.redteam import project as proj
from tests.redteam.conftest import Project, assert_passed, judge_attack, open_route

TOTAL = "tests/test_total.py"
STOCK = "tests/test_stock.py"

# -- hostile code ------------------------------------------------------------------------

# The code under test lies about equality: `total` returns an int whose `==` is
# always true, so `assert actual == expected` in the assertion helper holds for a
# wrong sum. Nothing of pytest, the tests or the import system is touched.
LYING_EQ_CORE = proj.BROKEN_CORE.replace(
    "def total(items: list[Item]) -> int:",
    "class _Cents(int):\n"
    "    def __eq__(self, other: object) -> bool:\n"
    "        return True\n\n"
    "    def __ne__(self, other: object) -> bool:\n"
    "        return False\n\n"
    "    __hash__ = int.__hash__\n\n\n"
    "def total(items: list[Item]) -> int:",
).replace(
    "return sum(item.cents for item in items)",
    "return _Cents(sum(item.cents for item in items))",
)

# The package, on import (the tests' conftest imports it before any test module),
# puts a module object of its own under the assertion helper's name in
# sys.modules: `from testing.asserts import assert_cents` then never reaches a
# finder, so the import watch sees nothing, and no file is touched.
FAKE_HELPER_IN_SYS_MODULES = """
import sys as _rt_sys
import types as _rt_types

if "testing.asserts" not in _rt_sys.modules:
    _rt_fake = _rt_types.ModuleType("testing.asserts")
    _rt_fake.assert_cents = lambda actual, expected: None
    _rt_sys.modules["testing.asserts"] = _rt_fake
"""

# The code under test swaps the code object of the project's own assertion helper
# (imported here, so names the tests bind later follow).
HELPER_CODE_SWAPPED = """
def _rt_swap_helper():
    try:
        import testing.asserts as target
    except ImportError:
        return
    target.assert_cents.__code__ = (lambda actual, expected: None).__code__


_rt_swap_helper()
"""

# The same swap, with the new code compiled under the helper's own file name and
# first line: the code object's file and lines are the helper's, only its bytes
# differ.
HELPER_CODE_COMPILED_AS_ITS_FILE = """
def _rt_swap_helper_as_its_file():
    try:
        import testing.asserts as target
    except ImportError:
        return
    first = target.assert_cents.__code__.co_firstlineno
    text = "\\n" * (first - 1) + "def assert_cents(actual, expected):\\n    return None\\n"
    module = compile(text, target.__file__, "exec")
    target.assert_cents.__code__ = [c for c in module.co_consts if hasattr(c, "co_name")][0]


_rt_swap_helper_as_its_file()
"""

# The package, on import (the tests' conftest imports it before any test module),
# writes pytest's own cache of test_total.py rewritten (the file pytest reads
# instead of rewriting it again, keyed by a hash of the source, which is
# unchanged): the cached code has an assertion helper that asserts nothing. No
# file pytest or git looks at changes; the bytecode comes from inside the run.
FORGED_TEST_BYTECODE = """
def _rt_forge_test_bytecode():
    import importlib.util
    import os

    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    test = os.path.join(root, "tests", "test_total.py")
    with open(test, "rb") as handle:
        source = handle.read()
    forged = source.replace(
        b"from testing.asserts import assert_cents",
        b"def assert_cents(actual, expected):\\n    return None",
    )
    code = compile(forged, test, "exec", dont_inherit=True)
    cache = rewrite.get_cache_dir(rewrite.Path(test))
    os.makedirs(cache, exist_ok=True)
    pyc = os.path.join(cache, "test_total" + rewrite.PYC_TAIL)
    with open(pyc, "wb") as handle:
        rewrite._write_pyc_fp(handle, importlib.util.source_hash(source), code)


try:
    _rt_forge_test_bytecode()
except Exception:
    pass
"""

# The same for the import system's own cache of the assertion helper (not yet
# imported when the package is): a bytecode file whose header matches the
# helper's source (its size and modification time), holding a helper that
# asserts nothing.
FORGED_HELPER_BYTECODE = """
def _rt_forge_helper_bytecode():
    import importlib.util
    import marshal
    import os
    import sys

    if "testing.asserts" in sys.modules:
        return
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    helper = os.path.join(root, "testing", "asserts.py")
    st = os.stat(helper)
    code = compile("def assert_cents(actual, expected):\\n    return None\\n", helper, "exec")
    pyc = importlib.util.cache_from_source(helper)
    os.makedirs(os.path.dirname(pyc), exist_ok=True)
    header = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little")
    header += (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
    header += (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    with open(pyc, "wb") as handle:
        handle.write(header + marshal.dumps(code))


try:
    _rt_forge_helper_bytecode()
except Exception:
    pass
"""

# The code under test rebinds the assertion helper's name in its module to a
# function of its own, before the test modules import it (plain monkeypatching).
HELPER_REBOUND = """
def _rt_rebind_helper():
    try:
        import testing.asserts as target
    except ImportError:
        return
    target.assert_cents = lambda actual, expected: None


_rt_rebind_helper()
"""

# The code under test installs a trace function: in every frame of the assertion
# helper it sets `expected` to `actual` before the assert line runs (Python writes
# a trace function's f_locals edits back into the frame).
SETTRACE_REWRITES_LOCALS = """
import sys as _rt_sys


def _rt_local(frame, event, arg):
    if event == "line" and "actual" in frame.f_locals:
        frame.f_locals["expected"] = frame.f_locals["actual"]
    return _rt_local


def _rt_global(frame, event, arg):
    if frame.f_code.co_name == "assert_cents":
        return _rt_local
    return None


_rt_sys.settrace(_rt_global)
"""

# The code under test, imported while pytest loads the initial conftests (before
# `pytest_configure`, where the plugin takes its identities), replaces the
# function of the `python` plugin's registered `pytest_pyfunc_call` hook
# implementation: the HookImpl object and the module's attribute stay the same,
# and hook implementations are left out of the "foreign code" check.
HOOKIMPL_FUNCTION_SWAPPED = """
def _rt_swap_hookimpl():
    import gc

    from _pytest.config import PytestPluginManager

    for pm in gc.get_objects():
        if isinstance(pm, PytestPluginManager):
            for impl in pm.hook.pytest_pyfunc_call.get_hookimpls():
                if pm.get_name(impl.plugin) == "python":
                    original = impl.function

                    def pytest_pyfunc_call(pyfuncitem, _original=original):
                        try:
                            return _original(pyfuncitem)
                        except AssertionError:
                            return True

                    impl.function = pytest_pyfunc_call


try:
    _rt_swap_hookimpl()
except ImportError:
    pass
"""

# A plugin with no report hook at all: at the end of collection it gives each
# item's instance a `runtest` that swallows assertion failures. Collection hooks
# are not "report hooks", so neither the late-plugin check nor the baseline's
# list of report plugins sees it.
MODIFYITEMS_PLUGIN = """
def _rt_quiet(item):
    original = item.runtest

    def runtest():
        try:
            original()
        except AssertionError:
            pass

    return runtest


class _RtCollect:
    def pytest_collection_modifyitems(self, items):
        for item in items:
            item.runtest = _rt_quiet(item)
"""

# The code under test registers that plugin on the running plugin manager (found
# by the garbage collector).
REGISTERS_COLLECTION_PLUGIN = (
    MODIFYITEMS_PLUGIN
    + """

def _rt_register():
    import gc

    from _pytest.config import PytestPluginManager

    for pm in gc.get_objects():
        if isinstance(pm, PytestPluginManager) and not pm.has_plugin("rt-collect"):
            pm.register(_RtCollect(), "rt-collect")


try:
    _rt_register()
except ImportError:
    pass
"""
)

# The same hooks as a module: what a pytest11 entry point names.
COLLECTION_PLUGIN_MODULE = (
    MODIFYITEMS_PLUGIN
    + """

def pytest_collection_modifyitems(items):
    _RtCollect().pytest_collection_modifyitems(items)
"""
)

# The code under test patches pytest's `raises` context manager (not among the
# watched pytest internals): its __exit__ swallows anything and never says
# "DID NOT RAISE".
RAISES_EXIT_PATCHED = """
def _rt_patch_raises():
    try:
        from _pytest.raises import RaisesExc
    except ImportError:  # pytest before 8.4
        from _pytest.python_api import RaisesContext as RaisesExc

    RaisesExc.__exit__ = lambda self, *exc_info: True


try:
    _rt_patch_raises()
except ImportError:
    pass
"""

# `restock` no longer refuses a negative quantity: test_restock_refuses_negative fails.
RESTOCK_BROKEN = proj.CORE.replace(
    '    if qty < 0:\n        raise ValueError("qty must be >= 0")\n', ""
)
assert RESTOCK_BROKEN != proj.CORE

# `discount` rounds up; its doctest (`discount(999, 50)` → 499) fails. The module
# patches the standard library's doctest output checker, which pytest's own
# checker asks first: every example's output "matches".
PRICING_BROKEN_CHECKER_PATCHED = (
    proj.PRICING.replace(
        "return cents * (100 - percent) // 100", "return -(-cents * (100 - percent) // 100)"
    )
    + "\n\nimport doctest as _rt_doctest\n\n"
    + "_rt_doctest.OutputChecker.check_output = lambda self, want, got, flags: True\n"
)


INIT_FILE = "inventory/__init__.py"


def _attack_from_init(project: Project, init: str, names: list[str]) -> dict[str, object]:
    """One cycle: the standard break, the package's `__init__.py` made ``init``
    (the trick runs when the tests import the code under test), the trick shown
    to hide the regression, then `end` judged; its answer."""
    before = project.state()
    project.begin()
    project.break_total()
    project.write(INIT_FILE, init)
    project.assert_hidden()
    answer = project.end()
    judge_attack(project, answer, before, names=names)
    return answer


def _good_copy_outside(outside_tmp: Callable[[str], Path]) -> Path:
    """A good copy of the code under test, kept outside the repository."""
    good = outside_tmp("stash") / "good.py"
    good.write_text(proj.CORE)
    return good


# -- attacks on test_total.py's assertion helper ------------------------------------------


@open_route("an int subclass whose == is always true: a value trick no run can see")
def test_code_under_test_returns_a_value_that_equals_anything(project: Project) -> None:
    before = project.state()
    project.begin()
    project.write("inventory/core.py", LYING_EQ_CORE)
    project.assert_hidden()
    answer = project.end()
    judge_attack(
        project,
        answer,
        before,
        names=["inventory/core.py", TOTAL],
        kept={"inventory/core.py": LYING_EQ_CORE},
    )


def test_code_under_test_undoes_the_bytecode_guard_before_forging(project: Project) -> None:
    """The package's own loader is the guard's class: the code under test moves
    its start to the far future, then forges the helper's cache. The forged cache
    loads; the guard found undone at the end of the session names it."""
    undo = "\ntype(__loader__).since_ns = 1 << 62\n"
    _attack_from_init(
        project,
        proj.INIT + undo + FORGED_HELPER_BYTECODE,
        names=["gtd_ratchet_report._NoFreshBytecode", TOTAL],
    )


def test_code_under_test_points_the_cache_prefix_at_caches_forged_before_the_run(
    project: Project, outside_tmp: Callable[[str], Path]
) -> None:
    """Forged before the run, outside the repository (where the room prunes
    nothing): pytest's cache of test_total.py as a run would look it up under a
    cache prefix, for the repository's path (so a direct run is fooled too) and
    the room's; the package points `sys.pycache_prefix` there."""
    from _pytest.assertion import rewrite

    stash = outside_tmp("stash")
    rooms = Path(early.rooms_home()) / early.repo_key(str(project.path / ".git"), "repo")
    forged = proj.TEST_TOTAL.replace(
        "from testing.asserts import assert_cents",
        "def assert_cents(actual, expected):\n    return None",
    )
    # The repository's file, and the first slot's checkout as the room makes it.
    for test in (project.path / TOTAL, rooms / "0" / "tree" / TOTAL):
        code = compile(forged, str(test), "exec", dont_inherit=True)
        cache = stash.joinpath(*test.parts[1:-1]) / ("test_total" + rewrite.PYC_TAIL)
        cache.parent.mkdir(parents=True)
        with open(cache, "wb") as handle:
            rewrite._write_pyc_fp(handle, source_hash(proj.TEST_TOTAL.encode()), code)
    init = proj.INIT + f"\nimport sys as _rt_sys\n\n_rt_sys.pycache_prefix = {str(stash)!r}\n"
    _attack_from_init(project, init, names=[TOTAL])


# The same rebinding, to a function of the package's own with the helper's name:
# the function is its module's own by name, as a re-export would be.
HELPER_REBOUND_TO_A_NAMESAKE = """

def assert_cents(actual, expected):
    return None


def _rt_rebind_helper():
    import testing.asserts as target

    target.assert_cents = assert_cents


_rt_rebind_helper()
"""


# The package puts a finder of its own on `sys.meta_path` behind the ratchet's
# (inserted at index 1): asked for the assertion helper, it answers with the
# helper's own file as the origin and a loader that runs other text compiled
# under that file's name. The module is imported as usual, from its file by name.
HELPER_LOADED_BY_A_FINDER_OF_ITS_OWN = """

def _rt_finder():
    import importlib.abc
    import importlib.util
    import os
    import sys

    class _Loader(importlib.abc.Loader):
        def __init__(self, origin):
            self.origin = origin

        def create_module(self, spec):
            return None

        def exec_module(self, module):
            text = "def assert_cents(actual, expected):\\n    return None\\n"
            exec(compile(text, self.origin, "exec"), module.__dict__)

    class _Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name != "testing.asserts":
                return None
            for entry in sys.path:
                origin = os.path.join(entry or ".", "testing", "asserts.py")
                if os.path.isfile(origin):
                    origin = os.path.abspath(origin)
                    return importlib.util.spec_from_loader(name, _Loader(origin), origin=origin)
            return None

    sys.meta_path.insert(1, _Finder())


_rt_finder()
"""


def test_code_under_test_copies_a_good_copy_from_outside_beside_itself_and_imports_it(
    project: Project, outside_tmp: Callable[[str], Path]
) -> None:
    """The package copies a good copy kept outside the repository into its own
    folder when it is imported (in the clean room, the room's), takes `total`
    from it and removes the file again: a module the commit does not hold, loaded
    by the import system from a file of the room like any other, and gone when
    the run ends."""
    good = _good_copy_outside(outside_tmp)
    init = proj.INIT + (
        "\nimport os as _rt_os\nimport shutil as _rt_shutil\n\n"
        "_rt_here = _rt_os.path.dirname(__file__)\n"
        f"_rt_shutil.copyfile({str(good)!r},"
        " _rt_os.path.join(_rt_here, '_rt_good.py'))\n"
        "from inventory._rt_good import total  # noqa: E402,F811\n\n"
        "_rt_os.remove(_rt_os.path.join(_rt_here, '_rt_good.py'))\n"
        "_rt_shutil.rmtree(_rt_os.path.join(_rt_here, '__pycache__'), True)\n"
    )
    _attack_from_init(project, init, names=["inventory/_rt_good.py", TOTAL])
    assert not (project.path / "inventory" / "_rt_good.py").exists()


# a variant: the quick loop keeps the copy above
@pytest.mark.slow
def test_code_under_test_hides_the_copy_it_made_from_os_lstat(
    project: Project, outside_tmp: Callable[[str], Path]
) -> None:
    """The copy above, with `os.stat` and `os.lstat` replaced before the import
    so that the copy reports the change time of the file it was copied from."""
    good = _good_copy_outside(outside_tmp)
    init = proj.INIT + (
        "\nimport os as _rt_os\nimport shutil as _rt_shutil\n\n"
        f"_RT_GOOD = {str(good)!r}\n"
        "_rt_here = _rt_os.path.dirname(__file__)\n"
        "_rt_shutil.copyfile(_RT_GOOD, _rt_os.path.join(_rt_here, '_rt_good.py'))\n"
        "for _rt_name in ('stat', 'lstat'):\n"
        "    def _rt_hide(path, *args, _real=getattr(_rt_os, _rt_name), **kwargs):\n"
        "        if str(path).endswith('_rt_good.py'):\n"
        "            return _real(_RT_GOOD)\n"
        "        return _real(path, *args, **kwargs)\n"
        "    setattr(_rt_os, _rt_name, _rt_hide)\n"
        "from inventory._rt_good import total  # noqa: E402,F811\n\n"
        "_rt_os.remove(_rt_os.path.join(_rt_here, '_rt_good.py'))\n"
    )
    _attack_from_init(project, init, names=["inventory/_rt_good.py", TOTAL])
    assert not (project.path / "inventory" / "_rt_good.py").exists()


@pytest.mark.parametrize("what", ["file", "folder"])
@pytest.mark.slow  # variants: the quick loop keeps the copy above
def test_code_under_test_links_a_good_copy_from_outside_beside_itself_and_imports_it(
    project: Project, outside_tmp: Callable[[str], Path], what: str
) -> None:
    """The same, with a symbolic link made at import instead of a copy: to the
    good file (a link's target keeps its old change time), or to a folder
    outside that holds it."""
    stash = outside_tmp("stash")
    (stash / "good").mkdir()
    (stash / "good" / "__init__.py").write_text(proj.CORE)
    (stash / "_rt_good.py").write_text(proj.CORE)
    target, link = (
        (stash / "_rt_good.py", "_rt_good.py") if what == "file" else (stash / "good", "_rt_good")
    )
    init = proj.INIT + (
        "\nimport os as _rt_os\n\n"
        f"_rt_link = _rt_os.path.join(_rt_os.path.dirname(__file__), {link!r})\n"
        f"_rt_os.symlink({str(target)!r}, _rt_link)\n"
        "from inventory._rt_good import total  # noqa: E402,F811\n\n"
        "_rt_os.remove(_rt_link)\n"
    )
    _attack_from_init(project, init, names=[f"inventory/{link}", TOTAL])
    assert not (project.path / "inventory" / link).is_symlink()


# a variant: the quick loop keeps the one above
@pytest.mark.slow
def test_code_under_test_copies_a_good_copy_beside_itself_and_loads_it_by_hand(
    project: Project, outside_tmp: Callable[[str], Path]
) -> None:
    """The same copy, made a module with importlib's own tools (never in
    `sys.modules`, never asked of the import system), removed again at once:
    only the functions it made remain, carrying the file's name."""
    good = _good_copy_outside(outside_tmp)
    init = proj.INIT + (
        "\nimport importlib.util as _rt_util\nimport os as _rt_os\nimport shutil as _rt_shutil\n\n"
        "_rt_copy = _rt_os.path.join(_rt_os.path.dirname(__file__), '_rt_good.py')\n"
        f"_rt_shutil.copyfile({str(good)!r}, _rt_copy)\n"
        "_rt_spec = _rt_util.spec_from_file_location('rt_hidden', _rt_copy)\n"
        "_rt_mod = _rt_util.module_from_spec(_rt_spec)\n"
        "_rt_spec.loader.exec_module(_rt_mod)\n"
        "total = _rt_mod.total  # noqa: F811\n"
        "_rt_os.remove(_rt_copy)\n"
    )
    _attack_from_init(project, init, names=["inventory/_rt_good.py", TOTAL])
    assert not (project.path / "inventory" / "_rt_good.py").exists()


# The project's own import hook, in its tests' conftest since the base commit: a
# finder and loader of its own for one module of the package (as a template or
# macro loader would be). The ratchet notes the loader at the baseline as at
# every run after it.
CONFTEST_WITH_AN_IMPORT_HOOK = (
    proj.TESTS_CONFTEST
    + """

import importlib.abc
import importlib.util
import os
import sys


class _RatesLoader(importlib.abc.Loader):
    def __init__(self, origin):
        self.origin = origin

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        with open(self.origin) as handle:
            exec(compile(handle.read(), self.origin, "exec"), module.__dict__)


class _RatesFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "inventory.rates":
            return None
        origin = os.path.join(os.path.dirname(__file__), os.pardir, "inventory", "rates.py")
        origin = os.path.abspath(origin)
        return importlib.util.spec_from_file_location(name, origin, loader=_RatesLoader(origin))


sys.meta_path.insert(WHERE, _RatesFinder())
"""
)

RATES = "VAT = 20\n\n\ndef with_vat(cents):\n    return cents * (100 + VAT) // 100\n"
TEST_RATES = (
    "from inventory.rates import with_vat\n\n\n"
    "def test_with_vat():\n    assert with_vat(100) == 120\n"
)


@pytest.mark.parametrize("where", [0, 1], ids=["first", "behind-the-ratchets"])
@pytest.mark.slow  # a twin: the quick loop keeps the attack with a finder of its own
def test_legit_change_beside_the_projects_own_import_hook(project: Project, where: int) -> None:
    """First on `sys.meta_path` (the ratchet is never asked: the module reads as
    planted) or behind the ratchet's finder (a loader it did not start with):
    either way the baseline shows the same, and a correct change lands."""
    project.write("tests/conftest.py", CONFTEST_WITH_AN_IMPORT_HOOK.replace("WHERE", str(where)))
    project.write("inventory/rates.py", RATES)
    project.write("tests/test_rates.py", TEST_RATES)
    project.git("add", "-A")
    project.git("commit", "-q", "-m", "rates, loaded by the tests' own import hook")
    project.base = project.head()
    ran = project.run_suite()
    assert ran.returncode == 0, ran.stdout[-2000:]
    project.begin()
    project.do_t1()
    assert_passed(project, project.end())


# -- attacks on pytest's running of tests --------------------------------------------------


# The code under test, called by test_stock.py's tests (which run first), finds
# test_total.py's items through the garbage collector and hands each a function
# of its own to run, or replaces how the item runs: no hook, no class of
# pytest's and no module's function is touched, only the items themselves.
def _swaps_items(swap: str) -> str:
    return f"""

def _rt_swap_items():
    import gc

    for obj in gc.get_objects():
        if type(obj).__name__ == "Function" and "test_total" in getattr(obj, "nodeid", ""):
            obj.{swap} = lambda *args, **kwargs: None


_rt_restock = restock


def restock(stock, name, qty):
    _rt_swap_items()
    return _rt_restock(stock, name, qty)
"""


@pytest.mark.parametrize("swap", ["obj", "runtest"], ids=["its-function", "its-runtest"])
def test_code_under_test_swaps_what_the_items_of_other_tests_run(
    project: Project, swap: str
) -> None:
    _attack_from_init(project, proj.INIT + _swaps_items(swap), names=[INIT_FILE, TOTAL])


# Tests of every shape pytest runs through a function it collected: methods of a
# class (bound to a new instance for each test), parametrized ones, a staticmethod,
# a decorated one whose wrapper is what the module holds, and a unittest case
# (a runtest of its own), all in the person's suite before the cycle.
TESTS_OF_EVERY_SHAPE = """\
import functools
import unittest

import pytest

from inventory import Item, total


def logged(test):
    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        return test(*args, **kwargs)

    return wrapper


class TestTotals:
    def test_empty(self):
        assert total([]) == 0

    @staticmethod
    def test_static():
        assert total([Item("a", 1, 1)]) == 1

    @pytest.mark.parametrize("qty", [1, 2, 3])
    def test_quantities(self, qty):
        assert total([Item("a", 5, qty)]) == 5 * qty


@logged
def test_decorated():
    assert total([Item("b", 2, 2)]) == 4


@pytest.mark.parametrize("cents", [0, 7])
def test_cents(cents):
    assert total([Item("c", cents, 1)]) == cents


class TotalCase(unittest.TestCase):
    def test_one(self):
        self.assertEqual(total([Item("d", 3, 1)]), 3)
"""


def test_legit_change_over_tests_of_every_shape_lands(project: Project) -> None:
    project.person_commits({"tests/test_shapes.py": TESTS_OF_EVERY_SHAPE}, "tests: every shape")
    project.begin()
    project.do_t1()
    assert_passed(project, project.end())


# Slow: another watched object whose code comes from the change's files ("test
# reporting tampered with"), the check the swapped helper's code and the patch
# made only while the tests run (test_code_under_test_attacks_from_the_package_init) hold.
@pytest.mark.slow
def test_code_under_test_patches_pytest_raises(project: Project) -> None:
    before = project.state()
    project.begin()
    broken = RESTOCK_BROKEN + "\n" + RAISES_EXIT_PATCHED
    project.write("inventory/core.py", broken)
    project.assert_hidden()
    judge_attack(
        project,
        project.end(),
        before,
        names=["inventory/core.py", STOCK],
        kept={"inventory/core.py": broken},
    )


# Slow: another watched object whose code comes from the change's files ("test
# reporting tampered with"), the check the swapped helper's code and the patch
# made only while the tests run (test_code_under_test_attacks_from_the_package_init) hold.
@pytest.mark.slow
def test_code_under_test_patches_the_doctest_output_checker(project: Project) -> None:
    before = project.state()
    project.begin()
    attack = "inventory/pricing.py"
    project.write(attack, PRICING_BROKEN_CHECKER_PATCHED)
    project.assert_hidden()
    judge_attack(
        project,
        project.end(),
        before,
        names=[attack],
        kept={attack: PRICING_BROKEN_CHECKER_PATCHED},
    )


# The code under test replaces pytest's report class's __init__ (a failure becomes a
# pass), as the README's "code under test that patches pytest" does, but only for
# the window the plugin does not look at: a profile function patches it when any
# `pytest_runtestloop` is called (after `pytest_configure`, where the plugin takes
# the identities it compares and checks their code's files) and puts it back when
# any `pytest_sessionfinish` is called (before the plugin compares them). Aimed at
# pytest's hooks, not at the ratchet's plugin.
PATCH_BETWEEN_CONFIGURE_AND_SESSIONFINISH = """
import sys as _rt_sys


def _rt_patch_while_tests_run():
    from _pytest import reports

    original = reports.TestReport.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if self.outcome == "failed":
            self.outcome = "passed"
            self.longrepr = None

    def profile(frame, event, arg):
        if event != "call":
            return
        name = frame.f_code.co_name
        if name == "pytest_runtestloop":
            reports.TestReport.__init__ = __init__
        elif name == "pytest_sessionfinish":
            reports.TestReport.__init__ = original
            _rt_sys.setprofile(None)

    _rt_sys.setprofile(profile)


if "_pytest" in _rt_sys.modules:
    _rt_patch_while_tests_run()
"""


# Attacks made entirely of the package's `__init__.py` (see _attack_from_init):
# the text appended to it, and the names the refusal must give.
FROM_INIT = [
    pytest.param(
        proj.INIT + FAKE_HELPER_IN_SYS_MODULES,
        ["testing/asserts.py", TOTAL],
        id="plants-the-assertion-helper-in-sys-modules",
    ),
    pytest.param(
        proj.INIT + HELPER_CODE_SWAPPED,
        ["testing.asserts.assert_cents", TOTAL],
        id="swaps-the-assertion-helpers-code",
    ),
    # The code object's file and lines are the helper's; it is none of the code the import
    # system loaded from that file.
    pytest.param(
        proj.INIT + HELPER_CODE_COMPILED_AS_ITS_FILE,
        ["testing.asserts.assert_cents", TOTAL],
        id="swaps-the-helpers-code-for-code-compiled-as-its-file",
    ),
    pytest.param(
        proj.INIT + FORGED_TEST_BYTECODE,
        [TOTAL],
        id="forges-pytests-cache-of-a-rewritten-test-module",
    ),
    pytest.param(
        proj.INIT + FORGED_HELPER_BYTECODE,
        ["testing/asserts.py", TOTAL],
        id="forges-the-import-systems-cache-of-the-assertion-helper",
    ),
    pytest.param(
        proj.INIT + HELPER_REBOUND,
        ["testing.asserts.assert_cents", TOTAL],
        id="rebinds-the-assertion-helper",
    ),
    # a variant: the quick loop keeps rebinds-the-assertion-helper
    pytest.param(
        proj.INIT + HELPER_REBOUND_TO_A_NAMESAKE,
        ["testing.asserts.assert_cents", TOTAL],
        id="rebinds-the-assertion-helper-to-a-namesake",
        marks=pytest.mark.slow,
    ),
    pytest.param(
        proj.INIT + SETTRACE_REWRITES_LOCALS, [INIT_FILE, TOTAL], id="traces-the-assertion-helper"
    ),
    pytest.param(
        proj.INIT + HELPER_LOADED_BY_A_FINDER_OF_ITS_OWN,
        ["testing.asserts", TOTAL],
        id="loads-the-assertion-helper-with-a-finder-of-its-own",
    ),
    # Held: the new-tests session imports the package only after configure, so the swap
    # shows as "test reporting tampered with: pytest_pyfunc_call of python" (the old
    # tests' session, which imports it earlier, saw nothing).
    pytest.param(
        proj.INIT + HOOKIMPL_FUNCTION_SWAPPED,
        [INIT_FILE, TOTAL],
        id="swaps-a-hook-implementations-function",
    ),
    pytest.param(
        proj.INIT + REGISTERS_COLLECTION_PLUGIN,
        [INIT_FILE, TOTAL],
        id="registers-a-collection-hook-plugin",
    ),
    pytest.param(
        proj.INIT + PATCH_BETWEEN_CONFIGURE_AND_SESSIONFINISH,
        [INIT_FILE, TOTAL],
        id="patches-pytest-only-while-the-tests-run",
    ),
]


@pytest.mark.parametrize(("init", "names"), FROM_INIT)
def test_code_under_test_attacks_from_the_package_init(
    project: Project, init: str, names: list[str]
) -> None:
    _attack_from_init(project, init, names=names)


# -- the import system: metadata and paths outside the repository -------------------------


ENTRY_POINTS = "[pytest11]\nrt_collect = inventory._rt_collect\n"


@pytest.mark.parametrize(
    "meta",
    [
        {
            "rt_collect-1.0.dist-info/METADATA": (
                "Metadata-Version: 2.1\nName: rt-collect\nVersion: 1.0\n"
            ),
            "rt_collect-1.0.dist-info/entry_points.txt": ENTRY_POINTS,
        },
        # `egg-info` is a variant of `dist-info` (the same plugin, found by the same
        # check: "a pytest plugin the baseline did not load"), which the quick loop keeps.
        pytest.param(
            {
                "rt_collect.egg-info/PKG-INFO": (
                    "Metadata-Version: 2.1\nName: rt-collect\nVersion: 1.0\n"
                ),
                "rt_collect.egg-info/entry_points.txt": ENTRY_POINTS,
            },
            marks=pytest.mark.slow,
        ),
    ],
    ids=["dist-info", "egg-info"],
)
def test_metadata_folder_in_the_repository_root_declares_a_plugin(
    project: Project, meta: dict[str, str]
) -> None:
    """`python -m pytest` puts the working directory first on sys.path, and
    pytest autoloads every `pytest11` entry point importlib.metadata finds
    there: a metadata folder the candidate adds at the top level loads a plugin
    of its own in the snapshot tests' session (only a collection hook, so it is
    no "report plugin" the baseline did not have)."""
    before = project.state()
    project.begin()
    project.break_total()
    for rel, text in meta.items():
        project.write(rel, text)
    project.write("inventory/_rt_collect.py", COLLECTION_PLUGIN_MODULE)
    project.assert_hidden()
    judge_attack(project, project.end(), before, names=["inventory/_rt_collect.py", TOTAL])


def test_code_under_test_imports_a_good_copy_outside_the_repository(
    project: Project, outside_tmp: Callable[[str], Path]
) -> None:
    """The symbolic-link form is refused (test_links.py); so is a path on
    sys.path the code under test adds: the tests would run code the commit does
    not hold. The reason names the module and its file."""
    stash = outside_tmp("stash")
    (stash / "rt_good_core.py").write_text(proj.CORE)
    init = (
        f"import sys as _rt_sys\n\n_rt_sys.path.insert(0, {str(stash)!r})\n"
        "from rt_good_core import Item, restock, total  # noqa: E402\n\n"
        '__all__ = ["Item", "restock", "total"]\n'
    )
    answer = _attack_from_init(project, init, names=[str(stash / "rt_good_core.py")])
    assert "outside the repository" in str(answer.get("reason")), answer


# The plugin's own path checks take os.path's functions at call time: code under
# test that rebinds one for its own file makes that file "relative", "inside".
BLIND_THE_PATH_CHECKS = (
    "import os.path as _rt_p\n\n"
    "_rt_isabs = _rt_p.isabs\n"
    "_rt_p.isabs = lambda path: False if 'rt_good' in str(path) else _rt_isabs(path)\n"
)


def test_code_under_test_blinds_the_plugins_path_checks_then_imports_a_copy_outside(
    project: Project, outside_tmp: Callable[[str], Path]
) -> None:
    stash = outside_tmp("stash")
    (stash / "rt_good_core.py").write_text(proj.CORE)
    init = BLIND_THE_PATH_CHECKS + (
        f"import sys as _rt_sys\n\n_rt_sys.path.insert(0, {str(stash)!r})\n"
        "from rt_good_core import Item, restock, total  # noqa: E402\n\n"
        '__all__ = ["Item", "restock", "total"]\n'
    )
    _attack_from_init(project, init, names=["posixpath.isabs", str(stash / "rt_good_core.py")])


def test_code_under_test_execs_a_good_copy_from_a_file_outside(
    project: Project, outside_tmp: Callable[[str], Path]
) -> None:
    """No `sys.path` entry and nothing left in `sys.modules`: the module is made
    from a file outside with importlib's own tools and dropped again; its
    functions, now the package's, still carry their file."""
    good = _good_copy_outside(outside_tmp)
    init = (
        "import importlib.util as _rt_util\n"
        "import sys as _rt_sys\n\n"
        f"_rt_spec = _rt_util.spec_from_file_location('rt_hidden', {str(good)!r})\n"
        "_rt_mod = _rt_util.module_from_spec(_rt_spec)\n"
        "_rt_sys.modules['rt_hidden'] = _rt_mod\n"
        "_rt_spec.loader.exec_module(_rt_mod)\n"
        "del _rt_sys.modules['rt_hidden']\n"
        "Item, restock, total = _rt_mod.Item, _rt_mod.restock, _rt_mod.total\n"
    )
    _attack_from_init(project, init, names=[str(good)])


# a variant: the quick loop keeps ..._swaps_the_helpers_code_for_code_compiled_as_its_file
@pytest.mark.slow
def test_code_under_test_compiles_a_good_copy_read_as_text_under_its_own_file_name(
    project: Project, outside_tmp: Callable[[str], Path]
) -> None:
    """No import, no module made: the package's `__init__.py` reads the good
    copy's text from a file outside and compiles it under its own file name, so
    every function it defines says it comes from the room; none of them is code
    the import system loaded from there."""
    good = _good_copy_outside(outside_tmp)
    init = (
        '"""A tiny stock-keeping package."""\n\n'
        f"with open({str(good)!r}) as _rt_file:\n"
        "    exec(compile(_rt_file.read(), __file__, 'exec'))\n\n"
        '__all__ = ["Item", "restock", "total"]\n'
    )
    _attack_from_init(project, init, names=[INIT_FILE, TOTAL])


def _good_copy_compiled_as(name: str, *, wrapped: bool) -> str:
    """A package `__init__.py` that compiles the good copy's text (kept in a
    string of its own) under the file name ``name`` (an expression), and, where
    ``wrapped``, marks each function as a decorator's wrapper of the broken one."""
    init = (
        '"""A tiny stock-keeping package."""\n\n'
        "from inventory import core as _rt_core\n\n"
        f"_RT_GOOD = {proj.CORE!r}\n"
        f"exec(compile(_RT_GOOD, {name}, 'exec'))\n"
    )
    if wrapped:
        init += "total.__wrapped__ = _rt_core.total\nrestock.__wrapped__ = _rt_core.restock\n"
    return init + '\n__all__ = ["Item", "restock", "total"]\n'


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("__file__", id="its-own-file"),
        pytest.param("_rt_core.__file__", id="the-broken-module's-file"),
        pytest.param(
            "__file__.replace('inventory/__init__.py', 'README.md')",
            id="a-file-of-the-project-never-loaded",
        ),
        pytest.param("'/usr/lib/python3/dist-packages/decorator.py'", id="an-outside-file"),
    ],
)
@pytest.mark.slow  # variants: the quick loop keeps the helper's code compiled as its file
def test_code_under_test_compiles_a_good_copy_marked_as_a_decorators_wrapper(
    project: Project, name: str
) -> None:
    """The good copy kept in the package as text and compiled under some file's
    name, each function given a `__wrapped__` (as a decorator's wrapper has,
    whose code lives in the decorator's file): the text is in the commit, but the
    broken `total` beside it is what the commit's code defines."""
    _attack_from_init(
        project, _good_copy_compiled_as(name, wrapped=True), names=["inventory.total", TOTAL]
    )


@open_route("code compiled under a name that is no file ('<decorator-gen-1>'), marked as a wrapper")
def test_code_under_test_compiles_a_good_copy_under_a_generated_name_as_a_wrapper(
    project: Project,
) -> None:
    """Decorator libraries make wrappers from text, under such names: a function
    of the package with such code and a `__wrapped__` is what they leave too."""
    _attack_from_init(
        project,
        _good_copy_compiled_as("'<decorator-gen-1>'", wrapped=True),
        names=["inventory.total", TOTAL],
    )


# The code under test's `total` is a class method's, swapped after import for
# code compiled under core.py's own name (the module holds a bound method, not a
# function: only the class shows the function).
CLASS_METHOD_CORE = (
    proj.BROKEN_CORE.replace(
        "def total(items: list[Item]) -> int:\n"
        '    """What the items cost together, in cents."""\n'
        "    return sum(item.cents for item in items)\n",
        "class _Totals:\n"
        "    @classmethod\n"
        "    def total(cls, items: list[Item]) -> int:\n"
        '        """What the items cost together, in cents."""\n'
        "        return sum(item.cents for item in items)\n"
        "\n\n"
        "total = _Totals.total\n",
    )
    + """

def _rt_swap():
    func = _Totals.__dict__["total"].__func__
    text = "\\n" * (func.__code__.co_firstlineno - 2) + (
        "class _Totals:\\n"
        "    def total(cls, items):\\n"
        "        return sum(item.cents * item.qty for item in items)\\n"
    )
    made = compile(text, __file__, "exec")
    body = [c for c in made.co_consts if hasattr(c, "co_consts")][0]
    func.__code__ = [c for c in body.co_consts if getattr(c, "co_name", "") == "total"][0]


_rt_swap()
"""
)


# a variant: the quick loop keeps ..._swaps_the_helpers_code_for_code_compiled_as_its_file
@pytest.mark.slow
def test_code_under_test_swaps_a_class_methods_code_for_code_compiled_as_its_file(
    project: Project,
) -> None:
    before = project.state()
    project.begin()
    project.write("inventory/core.py", CLASS_METHOD_CORE)
    project.assert_hidden()
    judge_attack(
        project,
        project.end(),
        before,
        names=["inventory.core._Totals.total", TOTAL],
        kept={"inventory/core.py": CLASS_METHOD_CORE},
    )


# Legitimate code that makes functions at run time or wraps them, as projects do:
# a decorator of the package's own (functools.wraps), a dataclass (methods from
# generated text), a class method, a property, a module reloaded, and a function
# made by `exec` under a name that is no file.
LEGIT_MAKERS = '''\
"""Helpers that make functions."""

from __future__ import annotations

import dataclasses
import functools


def logged(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


@dataclasses.dataclass(frozen=True)
class Shelf:
    name: str
    size: int

    @property
    def label(self) -> str:
        return f"{self.name} ({self.size})"

    @classmethod
    def empty(cls, name: str) -> "Shelf":
        return cls(name, 0)


_NS: dict[str, object] = {}
exec("def double(x):\\n    return 2 * x\\n", _NS)
double = _NS["double"]
'''

LEGIT_USES = '''\
"""Reports that use the makers."""

from inventory.makers import logged


@logged
def shelf_count(stock: dict[str, int]) -> int:
    return len(stock)
'''

LEGIT_TEST = """\
import importlib

import inventory.makers
from inventory.makers import Shelf, double
from inventory.reports import shelf_count


def test_makers():
    importlib.reload(inventory.makers)
    assert shelf_count({"a": 1}) == 1
    assert Shelf.empty("top").label == "top (0)"
    assert double(4) == 8
"""


@pytest.mark.slow  # a twin: the quick loop keeps the attacks it guards against
def test_legit_functions_made_at_run_time_land(project: Project) -> None:
    project.begin()
    project.write("inventory/makers.py", LEGIT_MAKERS)
    project.write("inventory/reports.py", LEGIT_USES)
    project.write("tests/test_makers.py", LEGIT_TEST)
    assert_passed(project, project.end())


NEW_TEST_OF_A_LOADER = """\
import sys


def test_a_module_written_at_run_time_loads(tmp_path, monkeypatch):
    (tmp_path / "rt_generated_plugin.py").write_text("VALUE = 6\\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import rt_generated_plugin

    assert rt_generated_plugin.VALUE == 6
    sys.modules.pop("rt_generated_plugin")
"""


def test_twin_new_code_uses_an_installed_library_and_a_new_test_loads_from_tmp(
    project: Project,
) -> None:
    """Legitimate: the candidate's code imports an installed library the baseline
    never loaded (from the test environment), and a new test writes a module
    into its temporary folder and imports it from there."""
    project.begin()
    project.write(
        "inventory/report.py",
        "import yaml\n\n\ndef dump(cents: int) -> str:\n"
        "    return yaml.safe_dump({'cents': cents})\n",
    )
    project.write(
        "inventory/__init__.py", proj.INIT + "from inventory.report import dump  # noqa: E402\n"
    )
    project.write("tests/test_loader.py", NEW_TEST_OF_A_LOADER)
    assert_passed(project, project.end())
