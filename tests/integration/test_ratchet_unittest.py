"""A ``python -m unittest`` suite judged per test (gtd.auto.ratchet.unittest_report,
run through gtd.auto.ratchet.unittest_channel): the runner reports each test as
unittest runs it, its ``load_tests`` doctests included, and applies the helper's
selection; then, through the real CLI, setup detects the project's unittest,
and the ratchet reverts a broken doctest, a deleted test method and a doctest
taken away at import, naming the test, while a prose change passes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gtd.auto.ratchet import commands, report_listener, unittest_channel
from gtd.auto.ratchet.results import Report
from tests.conftest import Repo
from tests.integration.calc_project import gtd_json, run_cli
from tests.integration.test_setup_detects import project_venv

PY = sys.executable

MOD = '''"""Numbers.

>>> 1 + 1
2
"""


def double(x):
    """Twice x.

    >>> double(2)
    4
    """
    return 2 * x
'''

TESTS = """import doctest
import os
import subprocess
import sys
import unittest

import pkg.mod


def load_tests(loader, tests, ignore):
    tests.addTests(doctest.DocTestSuite(pkg.mod))
    return tests


class DoubleTests(unittest.TestCase):
    def test_two(self):
        self.assertEqual(pkg.mod.double(2), 4)

    def test_three(self):
        self.assertEqual(pkg.mod.double(3), 6)
"""

# Every outcome unittest knows, and the failures around the tests.
OUTCOMES = """import unittest


class Outcomes(unittest.TestCase):
    def test_pass(self):
        pass

    def test_fail(self):
        self.assertEqual(1, 2)

    def test_error(self):
        raise RuntimeError("boom")

    @unittest.skip("not today")
    def test_skip(self):
        pass

    @unittest.expectedFailure
    def test_xfail(self):
        self.assertEqual(1, 2)

    @unittest.expectedFailure
    def test_xpass(self):
        pass

    def test_subtest(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertLess(i, 2)


def plain_function():
    pass


def load_tests(loader, tests, ignore):
    tests.addTest(unittest.FunctionTestCase(plain_function))
    return tests


class BrokenFixture(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("no fixture")

    def test_a(self):
        pass

    def test_b(self):
        pass
"""

CHILD = """import os
import subprocess
import sys
import unittest


class Child(unittest.TestCase):
    def test_child_environment(self):
        out = subprocess.run(
            [sys.executable, "-c", "import os; print(sorted(k for k in os.environ"
             " if 'RATCHET' in k), 'junitxml' in os.environ.get('PYTEST_ADDOPTS', ''))"],
            capture_output=True, text=True, check=True,
        ).stdout
        self.assertEqual(out.strip(), "[] False")
"""


def project(root: Path, *, outcomes: bool = False) -> None:
    for rel, text in {
        "pkg/__init__.py": "",
        "pkg/mod.py": MOD,
        "tests/__init__.py": "",
        "tests/test_mod.py": TESTS,
        "tests/test_child.py": CHILD,
        **({"tests/test_outcomes.py": OUTCOMES} if outcomes else {}),
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def run(
    root: Path, command: str, request: report_listener.Request | None = None
) -> tuple[int, str, Report]:
    listener = report_listener.start(request or report_listener.Request(root), where=root.parent)
    ran = commands.run_command(root, "test", command, 120, listener.env, pass_fds=listener.pass_fds)
    return ran.exit_code, ran.output_tail, listener.finish()


def plain(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if "GTD" not in k}
    return subprocess.run(
        [PY, "-m", "unittest", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def test_each_test_is_reported_as_unittest_runs_it(tmp_path: Path) -> None:
    root = tmp_path / "p"
    project(root, outcomes=True)
    code, output, report = run(root, f"{PY} -m unittest")
    bare = plain(root)
    # The project's own run, unchanged: its exit status and its summary.
    assert code == bare.returncode == 1
    assert output.splitlines()[-1] == bare.stderr.strip().splitlines()[-1]
    ran = output.splitlines()[-3]
    assert ran.startswith("Ran 13 tests in ")
    assert bare.stderr.strip().splitlines()[-3].startswith("Ran 13 tests in ")
    assert report.source == "plugin"
    assert report.problems == ()
    assert {t: r.outcome for t, r in report.tests.items()} == {
        "pkg/mod.py::pkg.mod": "passed",
        "pkg/mod.py::pkg.mod.double": "passed",
        "tests/test_mod.py::DoubleTests::test_two": "passed",
        "tests/test_mod.py::DoubleTests::test_three": "passed",
        "tests/test_child.py::Child::test_child_environment": "passed",
        "tests/test_outcomes.py::Outcomes::test_pass": "passed",
        "tests/test_outcomes.py::Outcomes::test_fail": "failed",
        "tests/test_outcomes.py::Outcomes::test_error": "error",
        "tests/test_outcomes.py::Outcomes::test_skip": "skipped",
        "tests/test_outcomes.py::Outcomes::test_xfail": "xfailed",
        "tests/test_outcomes.py::Outcomes::test_xpass": "failed",  # unittest fails the run
        "tests/test_outcomes.py::Outcomes::test_subtest": "failed",
        "tests/test_outcomes.py::BrokenFixture::test_a": "error",  # its setUpClass failed
        "tests/test_outcomes.py::BrokenFixture::test_b": "error",
        "tests/test_outcomes.py::plain_function": "passed",  # a FunctionTestCase
    }
    assert report.tests["tests/test_outcomes.py::Outcomes::test_skip"].reason == "not today"
    kinds = {i.node_id: (i.kind, i.file) for i in report.items}
    assert kinds["pkg/mod.py::pkg.mod.double"] == ("doctest-module", "pkg/mod.py")
    assert kinds["tests/test_mod.py::DoubleTests::test_two"] == ("function", "tests/test_mod.py")
    # the doctest's digest is the one the snapshot takes of the source
    from gtd.auto.ratchet import doctests

    digests = doctests.doctest_digests(MOD.encode(), "pkg.mod")
    by_id = {i.node_id: i.docstring for i in report.items if i.kind == "doctest-module"}
    assert by_id == {f"pkg/mod.py::{name}": d for name, d in digests.items()}
    (session,) = report.sessions
    assert session.via == "pipe"
    assert session.ended
    assert session.consistent
    assert session.environment is not None
    assert session.environment.executable == PY


def test_a_module_that_cannot_be_imported_is_an_error_under_its_file(tmp_path: Path) -> None:
    root = tmp_path / "p"
    project(root)
    (root / "tests" / "test_broken.py").write_text("import no_such_module_anywhere\n")
    code, _, report = run(root, f"{PY} -m unittest")
    assert code == 1
    assert report.tests["tests/test_broken.py"].outcome == "error"
    assert report.tests["tests/test_mod.py::DoubleTests::test_two"].outcome == "passed"


def test_only_the_files_asked_for_are_imported(tmp_path: Path) -> None:
    """The old tests' session imports no other test module (a new one could patch
    the code they test at import); the doctests a selected module loads stay."""
    root = tmp_path / "p"
    project(root)
    marker = tmp_path / "imported"
    (root / "tests" / "test_new.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nimport unittest\n\n\n"
        "class New(unittest.TestCase):\n    def test_new(self):\n        pass\n"
    )
    request = report_listener.Request(root, only_files=("tests/test_mod.py", "pkg/mod.py"))
    code, _, report = run(root, f"{PY} -m unittest", request)
    assert code == 0
    assert not marker.exists()
    assert sorted(report.tests) == [
        "pkg/mod.py::pkg.mod",
        "pkg/mod.py::pkg.mod.double",
        "tests/test_mod.py::DoubleTests::test_three",
        "tests/test_mod.py::DoubleTests::test_two",
    ]
    assert report.sessions[0].selected is True
    assert report.problems == ()
    # and the new tests' session: that file alone
    request = report_listener.Request(root, only_files=("tests/test_new.py",))
    _, _, report = run(root, f"{PY} -m unittest", request)
    assert sorted(report.tests) == ["tests/test_new.py::New::test_new"]


def test_only_the_ids_asked_for_run(tmp_path: Path) -> None:
    root = tmp_path / "p"
    project(root)
    wanted = ("pkg/mod.py::pkg.mod.double", "tests/test_mod.py::DoubleTests::test_two")
    code, output, report = run(
        root, f"{PY} -m unittest", report_listener.Request(root, only_ids=wanted)
    )
    assert code == 0
    assert "Ran 2 tests" in output
    assert sorted(report.tests) == sorted(wanted)
    assert report.problems == ()  # through the pipe: a re-run's results are taken


def test_other_commands_are_not_rewritten(tmp_path: Path) -> None:
    settings = {"GTD_RATCHET_SETTINGS": "/x/settings.json"}
    for argv in (
        [PY, "-m", "pytest"],
        [PY, "-I", "-m", "unittest"],
        ["make", "test"],
        ["/bin/sh", "-c", "python -m unittest"],
    ):
        assert unittest_channel.wrapped(argv, settings) == argv
    # a run that listens for no report: the command as configured
    assert unittest_channel.wrapped([PY, "-m", "unittest", "-v"], {}) == [
        PY,
        "-m",
        "unittest",
        "-v",
    ]
    assert unittest_channel.wrapped(["python3", "-m", "unittest", "-v"], settings) == [
        "python3", "-c", unittest_channel.BOOT, unittest_channel.RUNNER_SOURCE, "-v",
    ]  # fmt: skip


def test_the_runner_run_by_hand_is_plain_unittest(tmp_path: Path) -> None:
    """Without a run's settings the runner is `python -m unittest`, and the
    helper's own modules beside it are not on the tests' import path."""
    root = tmp_path / "p"
    project(root)
    (root / "tests" / "test_path.py").write_text(
        "import os, sys, unittest\n\n\nclass P(unittest.TestCase):\n"
        "    def test_path(self):\n"
        "        self.assertEqual(sys.path[0], os.getcwd())\n"
        "        with self.assertRaises(ImportError):\n"
        "            import verdict  # a module beside the runner\n"
    )
    env = {k: v for k, v in os.environ.items() if "GTD" not in k}
    argv = [PY, "-c", unittest_channel.BOOT, unittest_channel.RUNNER_SOURCE, "-q"]
    res = subprocess.run(argv, cwd=root, capture_output=True, text=True, env=env, check=False)
    assert res.returncode == 0, res.stderr
    assert "Ran 6 tests" in res.stderr


# -- through the CLI ---------------------------------------------------------------------

PLAN = "# Plan\n\n### spec-a\n\n- [ ] **T1**: Triple\n  - Files: pkg/mod.py\n  - Blocked by: none\n"
TOX = "[tox]\nenvlist = py3\n\n[testenv]\ncommands = {envpython} -m unittest {posargs}\n"


def set_up(repo: Repo) -> dict[str, object]:
    project(repo.path)
    repo.write("tox.ini", TOX)
    repo.write("PLAN.md", PLAN)
    repo.commit_all("initial")
    project_venv(repo)
    answer = gtd_json(repo, "auto", "setup")
    assert answer["status"] == "ready", answer
    return answer


def ratchet(repo: Repo) -> dict[str, object]:
    res = run_cli(repo, "ratchet", "run", "--json")
    assert res.code in (0, 1), res.stderr
    data = res.json
    assert isinstance(data, dict)
    return data


def test_setup_detects_unittest_and_judges_it_per_test(repo: Repo) -> None:
    answer = set_up(repo)
    assert answer["test_command"] == ".venv/bin/python -m unittest"
    assert str(answer["test_command_why"]).startswith(
        "tox.ini [testenv] commands runs python -m unittest: its own runner, judged per test; "
    )
    baseline = answer["baseline"]
    assert isinstance(baseline, dict)
    assert baseline["per_test"] is True
    assert baseline["tests_total"] == 5  # 2 doctests, 2 methods, the child test
    # A doctest's expected output broken: the test is named.
    text = MOD.replace("    >>> double(2)\n    4\n", "    >>> double(2)\n    5\n")
    repo.write("pkg/mod.py", text)
    verdict = ratchet(repo)
    assert verdict["passed"] is False
    assert verdict["reason"] == "a protected test was changed: pkg/mod.py::pkg.mod.double (doctest)"
    # The prose around it is not the test.
    repo.write("pkg/mod.py", MOD.replace("Twice x.", "Two times x, as a number."))
    assert ratchet(repo)["passed"] is True
    # The code broken: the doctest and the method that see it fail, by name.
    repo.write("pkg/mod.py", MOD.replace("return 2 * x", "return 3 * x"))
    verdict = ratchet(repo)
    assert verdict["reason"] == (
        "tests failed: 3 of 5 (pkg/mod.py::pkg.mod.double, "
        "tests/test_mod.py::DoubleTests::test_three, tests/test_mod.py::DoubleTests::test_two)"
    )


def test_a_deleted_method_and_a_doctest_taken_away_are_reverted(repo: Repo) -> None:
    set_up(repo)
    repo.write(
        "tests/test_mod.py", TESTS.replace("    def test_three(self):\n", "    def _off(self):\n")
    )
    verdict = ratchet(repo)
    assert verdict["passed"] is False
    assert (
        verdict["reason"]
        == "a protected test was deleted: tests/test_mod.py::DoubleTests::test_three"
    )
    repo.git("checkout", "tests/test_mod.py")
    # The docstring is the source's; code run at import takes the examples away
    # (the source's digest is unchanged): the doctest vanishes, by name.
    repo.write("pkg/__init__.py", "from pkg import mod\n\nmod.double.__doc__ = None\n")
    verdict = ratchet(repo)
    assert verdict["passed"] is False
    assert verdict["reason"] == "baseline test vanished: pkg/mod.py::pkg.mod.double"


def test_verify_agrees_with_unittest(repo: Repo) -> None:
    set_up(repo)
    text = MOD.replace("    >>> double(2)\n    4\n", "    >>> double(2)\n    5\n")
    repo.write("pkg/mod.py", text)
    repo.commit_all("a person's commit that breaks a doctest")
    assert plain(repo.path).returncode == 1
    res = run_cli(repo, "verify", "--json")
    data = res.json
    assert data["status"] == "failed", data
    (tests,) = [level for level in data["levels"] if level["level"] == "L4"]
    assert tests["status"] == "failed"
    assert "pkg/mod.py::pkg.mod.double" in tests["detail"]


def test_the_assertion_machinery_rebound_by_the_code_is_named(repo: Repo) -> None:
    """The code under test shares the tests' interpreter: rebinding unittest's
    assertions or doctest's checker at import makes broken code pass the run.
    The runner's tripwire names what changed (the baseline's run saw nothing)."""
    set_up(repo)
    broken = MOD.replace("return 2 * x", "return 3 * x")
    for patch, named in (
        ("unittest.TestCase.assertEqual = lambda *a, **k: None", "TestCase.assertEqual"),
        ("doctest.OutputChecker.check_output = lambda *a: True", "OutputChecker.check_output"),
    ):
        repo.write("pkg/mod.py", broken)
        repo.write("pkg/__init__.py", f"import doctest\nimport unittest\n\n{patch}\n")
        verdict = ratchet(repo)
        assert verdict["passed"] is False
        assert str(verdict["reason"]).startswith("test reporting tampered with: ")
        assert named in str(verdict["reason"]), verdict["reason"]


def test_a_run_that_ends_before_its_tests_do_is_incomplete(tmp_path: Path) -> None:
    """A test (or the code under test) that ends the process with the status of
    a green run: the session never ends, and its report says so by name."""
    root = tmp_path / "p"
    project(root)
    (root / "tests" / "test_exit.py").write_text(
        "import os\nimport unittest\n\n\nclass Exit(unittest.TestCase):\n"
        "    def test_exit(self):\n        os._exit(0)\n"
    )
    code, _, report = run(root, f"{PY} -m unittest")
    assert code == 0  # as unittest itself would exit: the status alone says green
    assert len(report.problems) == 1
    assert report.problems[0].startswith("unittest session unittest-")
    assert report.problems[0].endswith(" did not finish")


def test_the_runners_own_recorder_replaced_is_named(tmp_path: Path) -> None:
    """Code that finds the runner's recorder (the garbage collector reaches it)
    and puts a function of its own in place of a method: named as evidence."""
    root = tmp_path / "p"
    project(root)
    (root / "tests" / "test_reach.py").write_text(
        "import gc\nimport unittest\n\n\nclass Reach(unittest.TestCase):\n"
        "    def test_reach(self):\n"
        "        for obj in gc.get_objects():\n"
        "            if type(obj).__name__ == 'Recorder' and hasattr(obj, 'results'):\n"
        "                obj.outcome = lambda *a, **k: None\n"
    )
    _, _, report = run(root, f"{PY} -m unittest")
    assert [(e.kind, e.subject) for e in report.evidence] == [
        ("machinery", "gtd-unittest.Recorder.outcome")
    ]


def test_an_editable_install_of_the_live_tree_loads_from_the_room(tmp_path: Path) -> None:
    """The project installed in development mode puts the live repository's
    ``src`` on the import path: the tests in the room import the room's code,
    and a module only the live tree holds (a file git does not see) is not
    there to import."""
    live, room = tmp_path / "live", tmp_path / "room"
    for top, answer in ((live, 1), (room, 2)):
        (top / "src" / "pkg").mkdir(parents=True)
        (top / "src" / "pkg" / "__init__.py").write_text(f"ANSWER = {answer}\n")
        (top / "tests").mkdir()
    (live / "src" / "pkg" / "ignored.py").write_text("")
    (room / "tests" / "__init__.py").write_text("")
    (room / "tests" / "test_where.py").write_text(
        "import unittest\n\nimport pkg\n\n\nclass Where(unittest.TestCase):\n"
        "    def test_room(self):\n        self.assertEqual(pkg.ANSWER, 2)\n\n"
        "    def test_ignored(self):\n"
        "        with self.assertRaises(ImportError):\n"
        "            import pkg.ignored  # noqa: F401\n"
    )
    request = report_listener.Request(room, redirect=report_listener.Redirect(live, room))
    listener = report_listener.start(request, where=tmp_path)
    env = {**listener.env, "PYTHONPATH": f"{live / 'src'}:{listener.env['PYTHONPATH']}"}
    ran = commands.run_command(
        room, "test", f"{PY} -m unittest", 120, env, pass_fds=listener.pass_fds
    )
    report = listener.finish()
    assert ran.exit_code == 0, ran.output_tail
    assert report.tests["tests/test_where.py::Where::test_room"].outcome == "passed"
    assert report.tests["tests/test_where.py::Where::test_ignored"].outcome == "passed"
    assert report.evidence == ()
