"""docs/step-mode.md's walkthrough, run as written: every `$ command` of its console
blocks runs in a fresh repository, in order, and must print what the page shows
(a line `…` stands for any number of lines); every file the page shows under a
`<!-- write: <path> -->` marker is written before the next command. Commit
hashes are the page's because the author, committer and dates are fixed here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[3] / "docs" / "step-mode.md"
SECTION = "## Walkthrough: a fresh repository to one squashed commit"
_WRITE = re.compile(r"^<!-- write: (\S+) -->$")
_FENCE = re.compile(r"^(`{3,})(\w*)$")


def steps(text: str) -> list[tuple[str, str, list[str]]]:
    """("write", path, lines) and ("run", command, expected output lines), in order."""
    lines = text.split(SECTION + "\n", 1)[1].splitlines()
    out: list[tuple[str, str, list[str]]] = []
    i, target = 0, None
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):  # the next section (headings in fences are skipped)
            break
        marker = _WRITE.match(line)
        if marker:
            target = marker.group(1)
            i += 1
            continue
        fence = _FENCE.match(line)
        if not fence:
            i += 1
            continue
        end = lines.index(fence.group(1), i + 1)
        block = lines[i + 1 : end]
        if target is not None:
            out.append(("write", target, block))
            target = None
        elif fence.group(2) == "console":
            for entry in block:
                if entry.startswith("$ "):
                    out.append(("run", entry[2:], []))
                else:
                    out[-1][2].append(entry)
        i = end + 1
    return out


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` is ``expected`` with each `…` line standing for any lines."""
    if "…" not in expected:
        return expected == actual
    head = expected.index("…")
    if actual[:head] != expected[:head]:
        return False
    rest = expected[head + 1 :]
    return any(matches(rest, actual[at:]) for at in range(head, len(actual) + 1))


@pytest.mark.skipif(sys.platform == "win32", reason="the walkthrough is a bash session")
def test_the_walkthrough_runs_as_written(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "calc"
    home.mkdir()
    repo.mkdir()
    fixed = "2026-01-15T09:00:00Z"
    env = {
        **os.environ,
        "HOME": str(home),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_AUTHOR_NAME": "You",
        "GIT_AUTHOR_EMAIL": "you@example.com",
        "GIT_COMMITTER_NAME": "You",
        "GIT_COMMITTER_EMAIL": "you@example.com",
        "GIT_AUTHOR_DATE": fixed,
        "GIT_COMMITTER_DATE": fixed,
        "PYTHONUNBUFFERED": "1",  # stderr lines stay where the page shows them
        "PYTHONDONTWRITEBYTECODE": "1",
        # The page's project uses no pytest plugin; this environment's (hypothesis,
        # xdist) would load into each of its pytest runs: ~1 s of CPU each.
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    found = steps(PAGE.read_text(encoding="utf-8"))
    assert sum(1 for kind, _, _ in found if kind == "run") >= 20
    for kind, what, lines in found:
        if kind == "write":
            path = repo / what
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            continue
        res = subprocess.run(
            ["bash", "-c", what],
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=300,
            check=False,
        )
        printed = res.stdout.rstrip("\n").splitlines() if res.stdout.strip() else []
        assert matches(lines, printed), (
            f"$ {what}\n--- the page shows:\n" + "\n".join(lines) + "\n--- it printed:\n"
            + "\n".join(printed)
        )  # fmt: skip
