"""Choosing a project's test command when no config names one, and saying why.

One detector for both modes (auto mode's `.deepflow/config.yaml`, step mode's
`.gtdrc`). The project's kind comes first: strong pytest signs (pytest.ini, a
conftest.py, test_*.py files, a pytest section), then a package.json with a real
"test" script, Cargo.toml, go.mod, then weak Python signs (pyproject.toml,
setup.py, a tests/ folder of .py files).

For a Python project, two questions are answered separately:

- **Which environment runs pytest** — the project's own, in this order: a
  virtualenv in the repository (``.venv``, ``venv``, ``env``: a folder holding
  ``pyvenv.cfg``), the active virtualenv (``$VIRTUAL_ENV``), then the tool the
  project uses (``uv.lock`` or ``[tool.uv]`` → ``uv run``; ``poetry.lock`` or
  ``[tool.poetry]`` → poetry's virtualenv; ``hatch.toml`` or
  ``[tool.hatch.envs]`` → hatch's default environment; ``pdm.lock`` → ``pdm
  run``), and only then the pytest on PATH. A virtualenv is run through its own
  interpreter (``.venv/bin/python -m pytest``), never a console script, whose
  first line names the place it was installed to.
- **Which runner** — a project whose own files (below) first run ``python -m
  unittest`` is run that way, with its own arguments, in the environment
  found: the ratchet runs it through its own unittest runner, per test
  (gtd.auto.ratchet.unittest_channel). pytest would miss what only unittest
  loads: the doctests a ``load_tests`` adds.
- **Which arguments** — those of the first pytest command the project itself runs:
  its ``tox.ini`` (or ``setup.cfg``'s tox sections), ``noxfile.py``, the ``test``
  target of its Makefile, or a CI workflow (``.github/workflows``,
  ``.gitlab-ci.yml``). tox's substitutions are resolved to the repository
  (``{toxinidir}/tests`` → ``tests``; the installed package's folder → its
  source folder), and options that change how a run reports or stops rather than
  what it tests (coverage, xdist, ``-x``, ``--lf``, ``--pdb``, JUnit XML) are
  dropped: the ratchet needs every test run, each reported. gtd runs pytest
  itself rather than tox, nox or make, which would build fresh environments in
  the clean room on every run.

The project's own commands are found by :mod:`gtd.project_runner` (reading
the files) and :mod:`gtd.command_words` (reading their words).

The answer says what was chosen and why (:attr:`Detection.reason`), and which
ignored folders of the repository the command needs in the clean room
(:attr:`Detection.links`): a virtualenv inside the repository is linked there.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from gtd.project_runner import project_runner, read_text
from gtd.tuples import NamedTuple

# Folders a project keeps its virtualenv in, in the order they are preferred.
VENV_DIRS = (".venv", "venv", "env")


class Detection(NamedTuple):
    command: str
    reason: str  # what was chosen and why, one sentence
    links: tuple[str, ...] = ()  # folders of the repository the command needs linked


Probe = Callable[[Sequence[str], Path], str | None]


def detect(
    root: Path, env: Mapping[str, str] | None = None, *, probe: Probe | None = None
) -> Detection | None:
    """The project's test command, or None when nothing is recognised.

    ``env``: the environment to read ``$VIRTUAL_ENV`` and ``PATH`` from (default:
    this process's). ``probe`` asks a tool for its virtualenv (``poetry env info
    --path``); None asks nobody (step mode's per-tick path: ``poetry run``
    instead), :func:`run_probe` runs the tool."""
    environ = os.environ if env is None else env
    if _strong_pytest(root):
        return _python(root, environ, probe)
    if _npm_test_script(root):
        return Detection("npm test", 'package.json has a "test" script')
    if (root / "Cargo.toml").is_file():
        return Detection("cargo test", "a Rust project (Cargo.toml)")
    if (root / "go.mod").is_file():
        return Detection("go test ./...", "a Go module (go.mod)")
    if (
        (root / "pyproject.toml").is_file()
        or (root / "setup.py").is_file()
        or any((root / "tests").glob("**/*.py"))
    ):
        return _python(root, environ, probe)
    return None


def detect_test_command(root: Path) -> str | None:
    """Just the command (no tool is asked for its environment)."""
    found = detect(root)
    return None if found is None else found.command


def run_probe(argv: Sequence[str], cwd: Path) -> str | None:
    """The first line a tool prints, or None when it fails or is not installed."""
    from gtd import proc

    res = proc.run(argv, cwd, timeout=60)
    line = res.stdout.strip().splitlines()[0].strip() if res.ok and res.stdout.strip() else ""
    return line or None


def venv_python(folder: Path) -> Path | None:
    """The interpreter of the virtualenv in ``folder``, if it is one."""
    if not (folder / "pyvenv.cfg").is_file():
        return None
    for rel in ("bin/python", "Scripts/python.exe"):
        if (folder / rel).exists():
            return folder / rel
    return None


def implied_links(root: Path, commands: Iterable[str | None]) -> tuple[str, ...]:
    """The virtualenvs inside the repository that ``commands`` run from
    (``.venv/bin/python -m pytest``, ``venv/bin/mypy``): the clean room must link
    them, configured in ``ratchet.link`` or not."""
    out: list[str] = []
    for command in commands:
        words = (command or "").split()
        program = words[0] if words else ""
        parts = program.split("/")
        if len(parts) < 2 or program.startswith("/") or ".." in parts:
            continue
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth]).removeprefix("./")
            if folder and folder != "." and venv_python(root / folder) is not None:
                if folder not in out:
                    out.append(folder)
                break
    return tuple(out)


# -- the project's kind ----------------------------------------------------------------


def _strong_pytest(root: Path) -> bool:
    if (root / "pytest.ini").is_file() or (root / "conftest.py").is_file():
        return True
    if any(root.glob("test_*.py")) or any(root.glob("*_test.py")):
        return True
    if any((root / "tests").glob("**/test_*.py")) or any((root / "test").glob("**/test_*.py")):
        return True
    for name, marker in (
        ("pyproject.toml", "[tool.pytest"),
        ("setup.cfg", "[tool:pytest]"),
        ("tox.ini", "[pytest]"),
    ):
        if marker in read_text(root / name):
            return True
    return False


def _npm_test_script(root: Path) -> bool:
    try:
        data = json.loads((root / "package.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    scripts = data.get("scripts") if isinstance(data, dict) else None
    test = scripts.get("test") if isinstance(scripts, dict) else None
    # `npm init` writes a placeholder that always fails; it is not a test suite.
    return isinstance(test, str) and bool(test.strip()) and "no test specified" not in test


# -- Python: the environment -----------------------------------------------------------


class _Runner(NamedTuple):
    prefix: str  # what runs pytest: ".venv/bin/python -m pytest", "uv run pytest"
    why: str
    links: tuple[str, ...] = ()


def _python(root: Path, env: Mapping[str, str], probe: Probe | None) -> Detection:
    runner = _environment(root, env, probe)
    found = project_runner(root)
    if found is not None and found.tool == "unittest":
        prefix = _unittest_prefix(runner.prefix)
        why = runner.why
        if runner.prefix in ("pytest", "python3 -m pytest"):  # no environment of its own
            why = why.split(":", 1)[0] + ": python3"
        args = found.args
        command = prefix + ("" if not args else " " + _join(args))
        shown = " ".join(["python -m unittest", *args])
        reason = f"{found.source} runs {shown}: its own runner, judged per test; {why}"
        return Detection(command, reason, runner.links)
    args, source = (found.args, found.source) if found is not None else ([], None)
    command = runner.prefix + ("" if not args else " " + _join(args))
    reason = runner.why
    if source is not None:
        reason += f"; pytest's arguments from {source}"
    return Detection(command, reason, runner.links)


def _unittest_prefix(pytest_prefix: str) -> str:
    """The environment's way to run ``python -m unittest``, from its way to run
    pytest (``.venv/bin/python -m pytest``, ``uv run pytest``, ``pytest``)."""
    if pytest_prefix.endswith(" -m pytest"):
        return pytest_prefix.removesuffix(" -m pytest") + " -m unittest"
    if pytest_prefix.endswith(" run pytest"):
        return pytest_prefix.removesuffix(" pytest") + " python -m unittest"
    return "python3 -m unittest"


def _environment(root: Path, env: Mapping[str, str], probe: Probe | None) -> _Runner:
    from gtd.proc import which

    for name in VENV_DIRS:
        python = venv_python(root / name)
        if python is not None:
            rel = python.relative_to(root).as_posix()
            return _Runner(
                f"{rel} -m pytest",
                f"the project's virtualenv {name}/ (linked into the clean room)",
                (name,),
            )
    active = env.get("VIRTUAL_ENV", "").strip()
    if active:
        python = venv_python(Path(active))
        if python is not None:
            inside = _inside(python, root)
            if inside is not None:
                folder = inside.split("/bin/")[0].split("/Scripts/")[0]
                return _Runner(
                    f"{inside} -m pytest",
                    f"the active virtualenv ($VIRTUAL_ENV={folder}, linked into the clean room)",
                    (folder,),
                )
            return _Runner(
                f"{_quote(str(python))} -m pytest", f"the active virtualenv ($VIRTUAL_ENV={active})"
            )
    path = env.get("PATH")
    pyproject = read_text(root / "pyproject.toml")
    skipped: list[str] = []
    tools = (
        ("uv", ("uv.lock",), "[tool.uv]"),
        ("poetry", ("poetry.lock",), "[tool.poetry]"),
        ("hatch", ("hatch.toml",), "[tool.hatch.envs"),
        ("pdm", ("pdm.lock",), "[tool.pdm]"),
    )
    for tool, files, table in tools:
        sign = next((f for f in files if (root / f).is_file()), None)
        if sign is None and table in pyproject:
            sign = f"pyproject.toml {table}{']' if not table.endswith(']') else ''}"
        if sign is None:
            continue
        if which(tool, path) is None:
            skipped.append(f"{sign} names {tool}, which is not on PATH")
            continue
        return _tool_runner(root, tool, sign, probe, which(tool, path))
    found = which("pytest", path)
    note = f" ({'; '.join(skipped)})" if skipped else ""
    if found is not None:
        return _Runner(
            "pytest",
            f"no virtualenv of the project found (.venv, venv, env, $VIRTUAL_ENV, uv, "
            f"poetry, hatch, pdm){note}: the pytest on PATH ({found})",
        )
    return _Runner(
        "python3 -m pytest",
        f"no virtualenv of the project found (.venv, venv, env, $VIRTUAL_ENV, uv, poetry, "
        f"hatch, pdm){note} and no pytest on PATH: python3's pytest",
    )


def _tool_runner(
    root: Path, tool: str, sign: str, probe: Probe | None, program: str | None
) -> _Runner:
    if tool == "uv":
        # uv keeps the project's environment in .venv (made on the first run).
        return _Runner("uv run pytest", f"the project uses uv ({sign})", (".venv",))
    if tool == "pdm":
        return _Runner("pdm run pytest", f"the project uses pdm ({sign})")
    ask = ["poetry", "env", "info", "--path"] if tool == "poetry" else ["hatch", "env", "find"]
    where = probe([program or tool, *ask[1:]], root) if probe is not None else None
    python = venv_python(Path(where)) if where else None
    if python is not None:
        inside = _inside(python, root)
        if inside is None:
            return _Runner(
                f"{_quote(str(python))} -m pytest",
                f"{tool}'s virtualenv of the project ({sign}; `{' '.join(ask)}`)",
            )
    # Without its path (or inside the repository, where the first rule did not see
    # it): the tool finds its environment itself.
    return _Runner(f"{tool} run pytest", f"the project uses {tool} ({sign})")


def _inside(path: Path, root: Path) -> str | None:
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
    except ValueError:
        return None


def _quote(word: str) -> str:
    import shlex

    return shlex.quote(word)


def _join(words: Sequence[str]) -> str:
    import shlex

    return shlex.join(words)
