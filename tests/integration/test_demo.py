"""`gtd demo` as a person runs it: the real CLI in a subprocess, started from inside
a repository of their own that it must not touch. The headless night is also the
smoke test of the whole loop (setup, six cycles, verify) on a real project."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from tests.conftest import Repo, indented_block

ROOT = Path(__file__).resolve().parents[2]


def demo(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gtd", "demo", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env if env is not None else {**os.environ},
    )


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


def untouched(repo: Repo) -> tuple[str, str, str, str]:
    """What a run could change in the person's repository."""
    return (
        repo.git("for-each-ref"),
        repo.git("status", "--porcelain", "--ignored", "--untracked-files=all"),
        (repo.path / ".git" / "config").read_text(),
        (repo.path / ".git" / "info" / "exclude").read_text(),
    )


DEMO_DOC = ROOT / "docs" / "demo.md"


def _commits_and_place(text: str, where: str) -> str:
    """What differs from run to run: the commits and the repository's directory."""
    text = re.sub(r"committed [0-9a-f]{7,}", "committed <commit>", text)
    return re.sub(re.escape(where) if where else r"\S*/gtd-demo-[^/\s]+/cart", "<repo>", text)


def doc_example() -> list[str]:
    """The headless run docs/demo.md shows, from its first line to `Report:`."""
    text = DEMO_DOC.read_text(encoding="utf-8")
    block = indented_block(text.split("What `gtd demo` prints, from a", 1)[1])
    return _commits_and_place(block, "").splitlines()


def doc_verdicts() -> dict[int, str]:
    """Cycle → what docs/demo.md's table says its line shows."""
    text = DEMO_DOC.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d) \| T\d [^|]+\| [^|]+\| (.+) \|$", text, re.M)
    return {
        int(n): (found.group(1) if (found := re.match(r"reverted: `(.+)`$", v)) else v)
        for n, v in rows
    }


def no_claude_path(tmp_path: Path) -> str:
    """A PATH with git and this Python but no `claude`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("git",):
        found = subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip()
        (bin_dir / tool).symlink_to(found)
    return os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent)])


@pytest.mark.slow
def test_the_headless_night_goes_as_scripted_and_leaves_the_callers_repository_alone(
    repo: Repo, tmp_path: Path
) -> None:
    repo.write("notes.txt", "mine\n")
    repo.commit_all("my own work")
    before = untouched(repo)
    where = tmp_path / "night" / "cart"

    started = time.monotonic()
    res = demo(repo.path, "--keep", str(where))
    took = time.monotonic() - started
    print(f"gtd demo (headless) took {took:.1f} s")

    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    assert "Scripted: only the implementer's edits" in out
    lines = [line for line in out.splitlines() if line.startswith("cycle ")]
    assert [line.split(":")[0] for line in lines] == [
        "cycle 1  T1 Take items out of the cart",
        "cycle 2  T2 Discount codes",
        "cycle 3  T2 Discount codes",
        "cycle 4  T3 Bulk price",
        "cycle 5  T3 Bulk price",
        "cycle 6  T4 Receipt",
    ]
    assert "passed, committed" in lines[0]
    assert "reverted: tests failed: 1 of" in lines[1]
    assert "test_adding_an_item_again_adds_to_its_quantity" in lines[1]
    assert lines[3].endswith(
        "reverted: a protected test was changed: "
        "tests/test_cart.py::test_adding_an_item_again_adds_to_its_quantity (line 21)"
    )
    assert "gtd verify: passed" in out
    assert "The night went as scripted: 6 cycles, 4 committed, 2 reverted" in out
    assert f"Repository: {where}" in out
    report = where / ".deepflow" / "auto-report.md"
    assert f"Report:     {report}" in out
    assert "    # Auto Mode Report — Cart" in out
    row = (
        "    | 4 | T3 | Bulk price | reverted | work kept at `refs/gtd/reverted/cycle-4` "
        "| a protected test was changed: "
        "tests/test_cart.py::test_adding_an_item_again_adds_to_its_quantity (line 21)"
    )
    assert row in out
    # what the night cost, from the usage line the scripted implementer prints
    # (gtd.demo.implementer.usage), priced as claude-sonnet-4-5
    costed = next(x for x in out.splitlines() if x.startswith("    | 4 | T3 |"))
    assert re.search(r"\| \d{1,3}(,\d{3})+ \| \$0\.\d{4} \|$", costed), costed
    assert "    | Total cost | $" in out
    assert "    | Cost of reverted work | $" in out
    assert "| Tokens | Cost |" in out

    # the repository is left for a look: the work committed, the reverted work kept
    subjects = git(where, "log", "--format=%s").splitlines()
    assert [s.split(" (")[0] for s in subjects if s.startswith("T")] == [
        "T4: mark done in PLAN.md",
        "T4: Receipt",
        "T3: mark done in PLAN.md",
        "T3: Bulk price",
        "T2: mark done in PLAN.md",
        "T2: Discount codes",
        "T1: mark done in PLAN.md",
        "T1: Take items out of the cart",
    ]
    weakened = git(where, "show", "refs/gtd/reverted/cycle-4:tests/test_cart.py")
    assert "assert cart.total() > 0" in weakened
    assert "assert cart.total() > 0" not in (where / "tests" / "test_cart.py").read_text()
    assert git(where, "status", "--porcelain") == ""
    assert "| Tasks committed | 4 |" in report.read_text()

    # docs/demo.md shows this run: its example block and its table's verdicts
    shown = _commits_and_place(out, str(where)).splitlines()
    assert doc_example()[0].startswith("gtd demo: one night of auto mode")
    assert shown[: len(doc_example())] == doc_example()
    verdicts = doc_verdicts()
    assert sorted(verdicts) == [1, 2, 3, 4, 5, 6]
    for n, verdict in verdicts.items():
        said = "passed, committed" if verdict == "passed, committed" else f"reverted: {verdict}"
        assert said in lines[n - 1], (n, said, lines[n - 1])

    assert untouched(repo) == before


@pytest.mark.slow
def test_without_claude_it_says_how_to_install_it_runs_headless_and_a_bad_night_fails(
    repo: Repo, tmp_path: Path
) -> None:
    """A test run that cannot even start (pytest refuses an option the environment
    adds) is a night that did not go as scripted: exit 1 with the reason."""
    env = {
        **os.environ,
        "PATH": no_claude_path(tmp_path),
        "PYTEST_ADDOPTS": "--no-such-pytest-option",
    }
    res = demo(repo.path, "--claude", "--keep", str(tmp_path / "cart"), env=env)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Claude Code (`claude`) is not on PATH: install Claude Code with `npm install" in (
        res.stdout
    )
    assert "Running the headless demo instead." in res.stdout
    assert "Scripted: only the implementer's edits" in res.stdout
    assert "gtd demo: the night did NOT go as scripted:" in res.stdout
    assert (
        "`gtd auto setup` answered baseline-broken: the baseline did not run the suite: "
        "pytest was called wrongly (a usage error)" in res.stdout
    )
    assert f"Repository: {tmp_path / 'cart'}" in res.stdout


def test_keep_refuses_a_directory_in_use_or_inside_a_repository(repo: Repo, tmp_path: Path) -> None:
    used = tmp_path / "used"
    used.mkdir()
    (used / "file.txt").write_text("keep me\n")
    res = demo(tmp_path, "--keep", str(used))
    assert res.returncode == 1
    assert f"--keep {used}: exists and is not an empty directory" in res.stderr
    assert (used / "file.txt").read_text() == "keep me\n"
    assert sorted(p.name for p in used.iterdir()) == ["file.txt"]

    before = untouched(repo)
    inside = repo.path / "demo"
    res = demo(tmp_path, "--keep", str(inside))
    assert res.returncode == 1
    assert f"{inside} is inside the git repository {repo.path}" in res.stderr
    assert not inside.exists()
    assert untouched(repo) == before


def test_demo_help_names_both_forms() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "gtd", "demo", "--help"], capture_output=True, text=True
    )
    assert res.returncode == 0
    assert "--keep DIR" in res.stdout
    assert "--claude" in res.stdout


def test_the_scripted_model_is_written_for_the_claude_code_the_tests_pin() -> None:
    from gtd.demo.in_claude import CLAUDE_CODE_VERSION
    from tests.claude_cli import PINNED

    assert CLAUDE_CODE_VERSION == PINNED


@pytest.mark.slow
def test_the_sample_project_ships_in_the_wheel(tmp_path: Path) -> None:
    """An installed helper (install.py pip-installs the checkout) has the sample."""
    from gtd.demo.project import SAMPLE_DIR

    home = tmp_path / "home"  # pip and the build backend keep caches there
    home.mkdir()
    argv = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-cache-dir", "--no-deps"]
    res = subprocess.run(
        [*argv, "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HOME": str(home)},
    )
    assert res.returncode == 0, res.stderr
    [wheel] = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {
        f"gtd/demo/sample/{p.relative_to(SAMPLE_DIR).as_posix()}"
        for p in SAMPLE_DIR.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert "gtd/demo/sample/PLAN.md" in shipped
    assert "gtd/demo/sample/gitignore" in shipped
    assert shipped <= names, shipped - names
    assert "gtd/demo/implementer.py" in names


def test_the_tests_run_with_a_python_that_has_pytest_named_by_its_real_path(
    tmp_path: Path,
) -> None:
    """Where the helper's own Python has no pytest (an installed helper), the demo
    takes the `python3` on PATH that has it, by the path the interpreter reports:
    a version manager's shim is not started again on every test run."""
    shims = tmp_path / "shims"
    shims.mkdir()
    shim = shims / "python3"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    shim.chmod(0o755)
    # -S: this interpreter without its site-packages, so without pytest
    probe = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'helper')!r}); "
        "from gtd.demo.project import pytest_python; print(pytest_python())"
    )
    env = {**os.environ, "PATH": f"{shims}{os.pathsep}/usr/bin{os.pathsep}/bin"}
    res = subprocess.run(
        [sys.executable, "-S", "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == sys.executable

    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    env["PATH"] = str(shims)
    res = subprocess.run(
        [sys.executable, "-S", "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert res.returncode == 1
    assert "no Python here has pytest" in res.stderr
