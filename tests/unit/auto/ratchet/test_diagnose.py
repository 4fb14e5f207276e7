"""What setup and the doctor say about a test run that did not really run the suite
(gtd.auto.ratchet.diagnose). Pure: runs in, diagnoses out."""

from __future__ import annotations

from gtd.auto.ratchet.diagnose import (
    collection,
    diagnose,
    not_collected,
    plugin_unheard,
    uncollected,
)
from gtd.auto.ratchet.model import CommandRun, Outcome, RunResult


def run(
    tail: str,
    exit_code: int = 1,
    tests: dict[str, Outcome] | None = None,
    missing: str | None = None,
) -> RunResult:
    cmd = CommandRun(
        kind="test", command=".venv/bin/python -m pytest", exit_code=exit_code,
        duration_s=0.1, timeout_s=60, missing=missing, output_tail=tail,
    )  # fmt: skip
    return RunResult((cmd,), tests)


def test_an_interpreter_without_pytest() -> None:
    tail = "/room/tree/.venv/bin/python: No module named pytest"
    found = diagnose(run(tail, missing="pytest"), None, pytest=False, has_tests=True)
    assert found is not None
    assert (
        found.problem == "the test command's interpreter has no pytest module (`-m pytest` failed)"
    )
    assert found.fix.startswith("install pytest (and the project's test dependencies)")


def test_a_program_that_is_not_installed() -> None:
    found = diagnose(run("", 127, missing="tox"), "tox", pytest=False, has_tests=True)
    assert found is not None
    assert found.problem == "the test command's program was not found: tox"


def test_a_collection_error_names_the_file_and_the_module() -> None:
    tail = "E   ModuleNotFoundError: No module named 'railroad'\n"
    tests: dict[str, Outcome] = {"tests/test_diagram.py": "error", "tests/test_a.py::t": "passed"}
    found = diagnose(run(tail, 2, tests), "pytest", pytest=True, has_tests=True)
    assert found is not None
    assert found.problem == "1 test file could not be collected (tests/test_diagram.py)"
    assert "the module 'railroad' cannot be imported" in found.fix


def test_a_run_that_ran_is_not_diagnosed() -> None:
    tests: dict[str, Outcome] = {"tests/test_a.py::t": "passed", "tests/test_a.py::u": "failed"}
    assert (
        diagnose(run("1 failed, 1 passed", 1, tests), "pytest", pytest=True, has_tests=True) is None
    )


def test_collect_only_output() -> None:
    assert collection(0, "3 tests collected in 0.1s") is None
    broken = collection(
        2,
        "ERROR collecting tests/test_diagram.py\nE   ModuleNotFoundError: No module named "
        "'railroad'\nERROR tests/test_diagram.py\n1 error in 0.2s",
    )
    assert broken is not None
    assert broken.problem == "1 test file could not be collected (tests/test_diagram.py)"
    internal = collection(3, "INTERNALERROR> boom")
    assert internal is not None
    assert internal.problem == "pytest stopped with an internal error"
    usage = collection(4, "ERROR: file or directory not found: nope")
    assert usage is not None
    assert usage.problem.startswith("pytest was called wrongly")
    runner = collection(1, "/usr/bin/python3: No module named pytest")
    assert runner is not None
    assert "has no pytest module" in runner.problem


SYNTAX_TAIL = """\
______________________ ERROR collecting tests/test_bad.py ______________________
/usr/lib/python3.11/ast.py:50: in parse
    return compile(source, filename, mode, flags,
E     File "/root/.cache/gtd/rooms/calc-818762ff/0/tree/tests/test_bad.py", line 3
E       def test_bad(:
E                    ^
E   SyntaxError: invalid syntax
=========================== short test summary info ============================
ERROR tests/test_bad.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
"""


def test_a_syntax_error_is_named_with_its_file_and_line() -> None:
    tests: dict[str, Outcome] = {"tests/test_bad.py": "error"}
    found = diagnose(run(SYNTAX_TAIL, 2, tests), "pytest", pytest=True, has_tests=True)
    assert found is not None
    assert found.problem == "1 test file could not be collected (tests/test_bad.py)"
    assert found.fix == "correct the SyntaxError in tests/test_bad.py at line 3: invalid syntax"
    doctor = collection(2, SYNTAX_TAIL)
    assert doctor is not None
    assert doctor.fix == found.fix


# The code under test does not compile: pytest fails the test file that imports it,
# the mistake is in the module (a path of the judge's clean room).
MODULE_TAIL = """\
_____________________ ERROR collecting tests/test_calc.py ______________________
tests/test_calc.py:1: in <module>
    from calc import add
E     File "/root/.cache/gtd/rooms/calc-818762ff/0/tree/src/calc.py", line 2
E       return a +
E                 ^
E   SyntaxError: invalid syntax
=========================== short test summary info ============================
ERROR tests/test_calc.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
"""


def test_a_module_the_tests_import_that_does_not_compile_is_named_with_its_line() -> None:
    from gtd.auto.ratchet.diagnose import syntax_error

    tests: dict[str, Outcome] = {"tests/test_calc.py": "error"}
    found = diagnose(run(MODULE_TAIL, 2, tests), "pytest", pytest=True, has_tests=True)
    assert found is not None
    assert found.fix == (
        "correct the SyntaxError in src/calc.py at line 2: invalid syntax "
        "(found while collecting tests/test_calc.py)"
    )
    assert "import errors" not in found.fix
    # the doctor's collect-only run in the checkout itself: the path as pytest gave it
    live = MODULE_TAIL.replace("/root/.cache/gtd/rooms/calc-818762ff/0/tree", "/home/me/calc")
    doctor = collection(2, live)
    assert doctor is not None
    assert doctor.fix.startswith("correct the SyntaxError in /home/me/calc/src/calc.py at line 2")
    # what a cycle's revert adds to "tests failed: 1 of 1 (tests/test_calc.py)"
    assert syntax_error(MODULE_TAIL) == "SyntaxError in src/calc.py at line 2: invalid syntax"
    assert syntax_error(SYNTAX_TAIL) == "SyntaxError in tests/test_bad.py at line 3: invalid syntax"


def test_a_syntax_error_a_test_prints_is_no_collection_error() -> None:
    from gtd.auto.ratchet.diagnose import syntax_error

    # a failing test of a parser may show Python's own words; collection was fine
    said = MODULE_TAIL.split("ERROR collecting")[1].replace("ERROR tests/test_calc.py", "")
    assert syntax_error("FAILED tests/test_parse.py::test_x\n" + said.split("\n", 1)[1]) is None
    assert syntax_error("") is None


def test_a_file_that_does_not_import_says_how_to_see_why() -> None:
    tail = "E   RuntimeError: the fixture server is down\nERROR tests/test_net.py\n"
    tests: dict[str, Outcome] = {"tests/test_net.py": "error", "tests/test_ok.py::t": "passed"}
    found = diagnose(run(tail, 2, tests), "pytest -q", pytest=True, has_tests=True)
    assert found is not None
    assert found.fix == (
        "make the file importable: `pytest -q tests/test_net.py` shows why tests/test_net.py is not"
    )
    assert "import errors" not in found.fix


def test_pytest_without_the_plugin_at_the_baseline_is_named_with_what_judges() -> None:
    tests: dict[str, Outcome] = {"tests/test_a.py::t": "passed"}
    command = ".venv/bin/python -I -m pytest"
    by_xml = plugin_unheard(run("1 passed", 0, tests), command, plugin=False)
    by_exit = plugin_unheard(run("1 passed", 0, None), command, plugin=False)
    assert by_xml is not None
    assert by_xml.startswith("pytest ran without gtd's plugin at the baseline (")
    assert "every cycle is judged by pytest's JUnit XML alone, without the plugin's" in by_xml
    assert by_xml.endswith("(e.g. `.venv/bin/python -m pytest`)")
    assert by_exit is not None
    assert "every cycle is judged by the exit code alone" in by_exit


def test_a_plugin_that_reported_or_a_command_without_pytest_says_nothing() -> None:
    tests: dict[str, Outcome] = {"tests/test_a.py::t": "passed"}
    assert plugin_unheard(run("1 passed", 0, tests), "python -m pytest", plugin=True) is None
    assert plugin_unheard(run("ok", 0, tests), "python -m unittest", plugin=False) is None
    assert plugin_unheard(run("ok", 0, None), None, plugin=False) is None


def test_a_test_process_a_signal_ended_is_named_with_the_likely_cause() -> None:
    from gtd.auto.ratchet.box import UNBOXED, Box, killed

    said = "the test process was killed by SIGKILL (exit status {}): likely killed from outside"
    # boxed (bwrap passes 128 + N on) and not (Python's negative status)
    for status, box in ((137, Box("/usr/bin/bwrap")), (-9, UNBOXED)):
        ended = killed(run("", status, None).command("test"), box)
        assert ended is not None
        assert ended.startswith(said.format(status)), ended
        found = diagnose(run("", status, None), "pytest", pytest=True, has_tests=True, ended=ended)
        assert found is not None
        assert found.problem == ended
        assert found.fix.startswith("if nothing outside ended it")
    # a test command's own failure is no signal
    assert killed(run("", 1, None).command("test"), UNBOXED) is None
    ended_at_the_timeout = run("", 137, None).command("test")
    assert ended_at_the_timeout is not None
    assert killed(ended_at_the_timeout._replace(timed_out=True), UNBOXED) is None


def test_files_that_could_not_be_collected_are_counted_in_words() -> None:
    tail = "E   RuntimeError: down\nERROR tests/test_a.py\nERROR tests/test_b.py\n"
    tests: dict[str, Outcome] = {"tests/test_a.py": "error", "tests/test_b.py": "error"}
    found = diagnose(run(tail, 2, tests), "pytest", pytest=True, has_tests=True)
    assert found is not None
    assert found.problem == "2 test files could not be collected (tests/test_a.py, tests/test_b.py)"
    assert found.fix.startswith("make the files importable: `pytest tests/test_a.py` shows why")
    four = [f"t/test_{n}.py" for n in "abcd"]
    assert not_collected(four) == (
        "4 test files could not be collected (t/test_a.py, t/test_b.py, t/test_c.py, …)"
    )
    assert not_collected(["t/test_a.py"]) == "1 test file could not be collected (t/test_a.py)"


def test_the_files_after_a_syntax_error_are_counted_in_words() -> None:
    for others, words in ((1, "1 more file could not"), (2, "2 more files could not")):
        tests: dict[str, Outcome] = {"tests/test_bad.py": "error"}
        tests.update({f"tests/test_{n}.py": "error" for n in range(others)})
        found = diagnose(run(SYNTAX_TAIL, 2, tests), "pytest", pytest=True, has_tests=True)
        assert found is not None
        assert found.fix == (
            "correct the SyntaxError in tests/test_bad.py at line 3: invalid syntax "
            f"({words} be collected)"
        )


def test_uncollected_files_are_the_errors_without_a_test_name() -> None:
    tests: dict[str, Outcome] = {
        "tests/test_b.py": "error",
        "tests/test_a.py": "error",
        "tests/test_c.py::t": "error",
        "tests/test_d.py::t": "passed",
    }
    assert uncollected(tests) == ["tests/test_a.py", "tests/test_b.py"]
