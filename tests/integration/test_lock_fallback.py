"""The state lock on a system without fcntl (Windows): gtd.fsio.locked falls back to
filelock. Each test runs the real code in a subprocess where `import fcntl` fails
(its entry in sys.modules is None, as on a platform that has no such module)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import CliResult, Repo
from tests.integration.calc_project import CALC, CONFTEST, MUL, MUL_TEST, PYTEST, TESTS

PLAN = """\
# Calculator

- [ ] **T1**: Add mul
  - Files: calc.py, tests/test_mul.py
  - Blocked by: none
"""


def without(*modules: str) -> str:
    """Python source that makes ``modules`` unimportable for the rest of the run."""
    return f"import sys\nfor _name in {modules!r}:\n    sys.modules[_name] = None\n"


def gtd_without(repo: Repo, modules: tuple[str, ...], *args: str) -> CliResult:
    """The real `gtd` CLI, started as `python -m gtd` is, with ``modules`` missing."""
    code = without(*modules) + textwrap.dedent(
        f"""\
        import runpy
        sys.argv = ["gtd", *{list(args)!r}]
        runpy.run_module("gtd", run_name="__main__", alter_sys=True)
        """
    )
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=repo.path, capture_output=True, text=True, timeout=300
    )
    return CliResult(res.returncode, res.stdout, res.stderr)


def python(code: str, *, stdin: int | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_cycle_runs_without_fcntl(repo: Repo) -> None:
    """A user's steps on a system without fcntl: setup, begin, the agent's edit, end."""
    repo.write("calc.py", CALC)
    repo.write("tests/test_calc.py", TESTS)
    repo.write("conftest.py", CONFTEST)
    repo.write("PLAN.md", PLAN)
    repo.write(".deepflow/config.yaml", f"ratchet:\n  test_command: {PYTEST}\n")
    repo.commit_all("initial")
    no_fcntl = ("fcntl",)

    setup = gtd_without(repo, no_fcntl, "auto", "setup", "--json")
    assert setup.code == 0, setup.stderr
    assert setup.json["status"] == "ready"
    begin = gtd_without(repo, no_fcntl, "cycle", "begin", "--json")
    assert begin.code == 0, begin.stderr
    assert (begin.json["status"], begin.json["task"]) == ("task", "T1")
    repo.write("calc.py", MUL)
    repo.write("tests/test_mul.py", MUL_TEST)
    end = gtd_without(repo, no_fcntl, "cycle", "end", "--json")
    assert end.code == 0, end.stderr
    assert end.json["status"] == "passed", end.json
    # No warning on the way (filelock's "only soft file lock" is silenced), and the
    # lock is gone with its holder.
    assert setup.stderr == begin.stderr == end.stderr == ""
    assert repo.status() == ""
    assert repo.subjects()[:2] == [
        "T1: mark done in PLAN.md (" + repo.subjects()[0][-8:],
        "T1: Add mul",
    ]


def test_the_fallback_lock_excludes_a_second_holder(tmp_path: Path) -> None:
    lock = tmp_path / ".deepflow" / ".gtd.lock"
    holder = python(
        without("fcntl")
        + textwrap.dedent(
            f"""\
            from pathlib import Path
            import gtd.fsio
            assert gtd.fsio._fcntl is None
            with gtd.fsio.locked(Path({str(lock)!r})):
                print("held", flush=True)
                sys.stdin.readline()
            print("filelock" in sys.modules, flush=True)
            """
        ),
        stdin=subprocess.PIPE,
    )
    assert holder.stdout is not None
    assert holder.stdin is not None
    try:
        assert holder.stdout.readline() == "held\n"
        contender = without("fcntl") + textwrap.dedent(
            f"""\
            from pathlib import Path
            from gtd.errors import LockTimeout
            from gtd.fsio import locked
            try:
                with locked(Path({str(lock)!r}), timeout_s=0.3):
                    print("acquired")
            except LockTimeout as exc:
                print(exc.message)
            """
        )
        waiting = python(contender)
        out, err = waiting.communicate(timeout=60)
        assert out == f"{lock}: another gtd process held the lock for 0 s\n", err
        holder.stdin.write("\n")
        holder.stdin.flush()
        out, err = holder.communicate(timeout=60)
        assert out == "True\n", err  # the lock came from filelock
        after = python(contender)
        out, err = after.communicate(timeout=60)
        assert out == "acquired\n", err
    finally:
        if holder.poll() is None:
            holder.kill()


def test_no_lock_at_all_is_a_clear_error(repo: Repo) -> None:
    repo.write("PLAN.md", PLAN)
    repo.commit_all("plan")
    res = gtd_without(repo, ("fcntl", "filelock"), "cycle", "begin")
    assert res.code == 1
    assert "Traceback" not in res.stderr
    assert "no file lock on this system: fcntl is missing and the filelock package" in res.stderr
    assert "reinstall the helper (python3 install.py)" in res.stderr


def test_with_fcntl_filelock_is_never_imported(tmp_path: Path) -> None:
    """The fallback costs nothing where flock exists: filelock stays unimported."""
    probe = python(
        textwrap.dedent(
            f"""\
            import sys
            from pathlib import Path
            from gtd.fsio import locked
            with locked(Path({str(tmp_path / "lock")!r})):
                pass
            print("filelock" in sys.modules)
            """
        )
    )
    out, err = probe.communicate(timeout=60)
    assert out == "False\n", err
