"""The diff reader in a real cycle: a cheat the tests cannot see is refused before
the run (reverted, its finding the reason, counted by the breaker); a flagged
construct commits and is listed for a person in the answer, memory and report;
the config turns a pattern off or makes a flag a refusal."""

from __future__ import annotations

import yaml

from tests.conftest import Repo
from tests.integration.calc_project import CALC, MUL_TEST, PYTEST, gtd_json, make_project, run_cli

# add() special-cased for the snapshot test's own inputs under pytest: the test
# passes, the function is broken everywhere else.
SNIFFING = (
    "import os\n\n\n"
    "def add(a, b):\n"
    "    if os.environ.get('PYTEST_CURRENT_TEST'):\n"
    "        return a + b\n"
    "    return a - b\n"
    "\n\ndef mul(a, b):\n    return a * b\n"
)
COUNTING = (
    CALC + "\n\n_calls = 0\n\n\n"
    "def mul(a, b):\n"
    "    global _calls\n"
    "    _calls += 1\n"
    "    if _calls > 100:\n"
    "        return 0\n"
    "    return a * b\n"
)


def test_a_test_sniffing_change_is_refused_before_the_run(repo: Repo) -> None:
    make_project(repo)
    head = repo.git("rev-parse", "HEAD").strip()
    assert gtd_json(repo, "cycle", "begin")["status"] == "task"
    repo.write("calc.py", SNIFFING)
    repo.write("tests/test_mul.py", MUL_TEST)
    answer = gtd_json(repo, "cycle", "end")
    assert answer["status"] != "passed", answer
    reason = str(answer["reason"])
    assert reason.startswith("the diff reader refused it: calc.py:5: test-sniffing: "), reason
    assert "PYTEST_CURRENT_TEST" in reason
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert (repo.path / "calc.py").read_text() == CALC  # the exact revert
    mem = yaml.safe_load((repo.path / ".deepflow/auto-memory.yaml").read_text())
    assert mem["consecutive_reverts"]["T1"] == 1


def test_a_flagged_change_commits_and_is_listed_for_a_person(repo: Repo) -> None:
    make_project(repo)
    assert gtd_json(repo, "cycle", "begin")["status"] == "task"
    repo.write("calc.py", COUNTING)
    repo.write("tests/test_mul.py", MUL_TEST)
    answer = gtd_json(repo, "cycle", "end")
    assert answer["status"] == "passed", answer
    flags = answer["look_at"]
    assert isinstance(flags, list)
    (flag,) = flags
    assert isinstance(flag, str)
    assert flag.startswith("calc.py:11: call-counting: mul branches on a count"), flag
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    assert "## Look at These" in report
    assert "calc.py:11: call-counting" in report
    mem = yaml.safe_load((repo.path / ".deepflow/auto-memory.yaml").read_text())
    (cycle,) = [c for c in mem["cycles"] if c["cycle"] == answer["cycle"]]
    assert cycle["look_at"] == [flag]


def test_the_config_decides_each_pattern(repo: Repo) -> None:
    # (an unquoted `off`, which YAML reads as false, means off)
    extra = "  diff_reader:\n    call-counting: refuse\n    test-sniffing: off\n"
    make_project(repo, config_extra=extra)
    assert gtd_json(repo, "cycle", "begin")["status"] == "task"
    repo.write("calc.py", COUNTING)
    repo.write("tests/test_mul.py", MUL_TEST)
    answer = gtd_json(repo, "cycle", "end")
    assert answer["status"] != "passed", answer
    assert "call-counting" in str(answer["reason"])


def test_an_unknown_pattern_or_action_is_a_clear_error(repo: Repo) -> None:
    make_project(repo)
    config = repo.path / ".deepflow/config.yaml"
    for bad, said in (
        ("    test-sniffing: maybe\n", "must be one of refuse, flag, off"),
        ("    sniffing: refuse\n", "sniffing"),
    ):
        config.write_text(f"ratchet:\n  test_command: {PYTEST}\n  diff_reader:\n{bad}")
        result = run_cli(repo, "doctor")
        assert result.code != 0
        assert ".deepflow/config.yaml:4" in result.stderr + result.stdout, result
        assert said in result.stderr + result.stdout, result
