"""Class H: the runs made to excuse a result. A baseline test that fails is run
again alone (it may be flaky), and one that is skipped is run on the base commit
(the environment may be what changed). Each such run must be as clean as the
first: the code under test must not leave something in the clean room that
decides the run again, and a process left running must not rewrite the base
commit's code while it runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.redteam import hostile
from tests.redteam import project as proj
from tests.redteam.conftest import Project, assert_passed, assert_refused, run_gtd

TOTAL = "tests/test_total.py"

# Appended to the broken module: on import (from source) it writes bytecode of the
# good module over its own cache, with a header matching its source's time and
# size, so the next process that imports it runs the good code.
REMEMBER_GOOD = f"""

GOOD = {proj.CORE!r}


def _remember_good():
    import importlib.util, marshal, os, struct

    source = __file__
    if not source.endswith(".py"):
        return
    stat = os.stat(source)
    header = importlib.util.MAGIC_NUMBER + struct.pack(
        "<III", 0, int(stat.st_mtime) & 0xFFFFFFFF, stat.st_size & 0xFFFFFFFF
    )
    cache = importlib.util.cache_from_source(source)
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    with open(cache, "wb") as handle:
        handle.write(header + marshal.dumps(compile(GOOD, source, "exec")))


_remember_good()
"""

# Appended to the broken module: as the test process exits (too late for its own
# session to load it) it leaves a top-level conftest.py in the directory the tests
# ran from, which the run again loads (a conftest of an ancestor of the selected
# test file), untracked, so no check of the checkout's tracked files sees it.
LEAVE_CONFTEST = f"""

def _leave_conftest():
    import atexit, os

    place = os.path.abspath("conftest.py")

    def leave():
        if not os.path.exists(place):
            with open(place, "w") as handle:
                handle.write({hostile.MAKEREPORT_WRAPPER!r})

    atexit.register(leave)


_leave_conftest()
"""


def _prove_the_second_run_passes(project: Project, leftovers: list[str]) -> None:
    """A direct run fails, the one after it passes: the trick hides the regression
    from a run again. What the first run left in the live tree is taken away (in
    the clean room it is left by the run there)."""
    project.assert_suite_fails()
    project.assert_hidden()
    for rel in leftovers:
        (project.path / rel).unlink()


def test_the_code_under_test_forges_its_own_bytecode_for_the_run_again(
    project: Project,
) -> None:
    before = project.state()
    project.begin()
    attacked = proj.BROKEN_CORE + REMEMBER_GOOD
    project.write("inventory/core.py", attacked)
    _prove_the_second_run_passes(project, [])
    answer = project.end()
    assert_refused(project, answer, before, names=[TOTAL], kept={"inventory/core.py": attacked})


@pytest.mark.slow
def test_the_code_under_test_leaves_a_conftest_for_the_run_again(project: Project) -> None:
    before = project.state()
    project.begin()
    attacked = proj.BROKEN_CORE + LEAVE_CONFTEST
    project.write("inventory/core.py", attacked)
    _prove_the_second_run_passes(project, ["conftest.py"])
    answer = project.end()
    assert_refused(project, answer, before, names=[TOTAL], kept={"inventory/core.py": attacked})


# Appended to the broken module: `total` is right only where pytest runs with the
# stock tests not collected, which is how a failing test is run again (alone).
# The whole suite fails, as does any program that calls it outside pytest; the
# failing tests run on their own pass.
RIGHT_WHEN_ALONE = """

_broken_total = total


def total(items):
    import sys

    alone = "_pytest" in sys.modules and not any(
        name.rpartition(".")[2] == "test_stock" for name in list(sys.modules)
    )
    if alone:
        return sum(item.cents * item.qty for item in items)
    return _broken_total(items)
"""


def test_the_code_under_test_is_right_only_when_its_tests_run_alone(project: Project) -> None:
    """A test that fails with the suite and passes alone is no flaky test: the run
    again that excuses it is made in the first run's company too."""
    before = project.state()
    project.begin()
    attacked = proj.BROKEN_CORE + RIGHT_WHEN_ALONE
    project.write("inventory/core.py", attacked)
    project.assert_suite_fails()
    alone = subprocess.run(
        [*project.command, TOTAL], cwd=project.path, capture_output=True, text=True, timeout=120
    )
    assert alone.returncode == 0, alone.stdout[-2000:]
    answer = project.end()
    assert_refused(project, answer, before, names=[TOTAL], kept={"inventory/core.py": attacked})


# Appended to the good module (the twin): `total` fails the first time any process
# calls it, taking the one byte waiting in a named pipe outside the repository
# (the judge's box lets the tests write nothing outside the room; reading a pipe
# is no write): a test that fails, then passes when run again.
FLAKY = """

def _first_call_fails():
    import os

    marker = os.environ.get("RT_FLAKY_MARKER")
    if marker and os.path.exists(marker):
        fd = os.open(marker, os.O_RDONLY | os.O_NONBLOCK)
        try:
            hiccup = os.read(fd, 1) == b"f"
        except BlockingIOError:
            hiccup = False
        finally:
            os.close(fd)
        if hiccup:
            raise RuntimeError("a hiccup")


_total = total


def total(items):
    _first_call_fails()
    return _total(items)
"""


@pytest.mark.slow  # a twin or a variant: the quick loop keeps one test a mechanism
def test_a_test_that_fails_once_then_passes_is_still_flaky(
    project: Project, outside_tmp: Callable[[str], Path]
) -> None:
    """The twin: a run again from a freshly synced room still excuses a test that
    failed once."""
    project.begin()
    project.do_t1()
    project.write("inventory/core.py", proj.CORE + FLAKY)
    marker = outside_tmp("flaky") / "marker"
    os.mkfifo(marker)
    held = os.open(marker, os.O_RDWR | os.O_NONBLOCK)  # open, and holding one byte
    try:
        os.write(held, b"f")
        answer = project.end(env={"RT_FLAKY_MARKER": str(marker)})
    finally:
        os.close(held)
    assert_passed(project, answer)
    assert len(answer.get("flaky") or []) == 1, answer


# `total` skips its tests: a direct run exits 0.
SKIPPING = proj.CORE.replace(
    '    """What the items cost together, in cents."""\n',
    '    """What the items cost together, in cents."""\n'
    "    import pytest\n\n"
    '    pytest.skip("prices are not available today")\n',
)
assert SKIPPING != proj.CORE


def test_a_background_process_makes_the_base_commit_skip_too(
    project: Project, room_swapper: Callable[..., None]
) -> None:
    before = project.state()
    project.begin()
    project.write("inventory/core.py", SKIPPING)
    project.assert_hidden()
    # Whenever a checkout holds the good module (the base commit's, synced to run
    # the skipped tests there), the skipping one goes over it: the base "skips too".
    room_swapper(proj.CORE, SKIPPING, once=False)
    answer = project.end()
    assert_refused(project, answer, before, names=[TOTAL], kept={"inventory/core.py": SKIPPING})


# A whole session in the report's line format, saying every asked test was
# skipped (the base commit "skips too"): both forgers below write it.
FORGED_SESSION = textwrap.dedent(
    """
    def forged(settings, ids, sid, pid, via):
        lines = [{"k": "start", "s": sid, "v": 2, "pid": pid, "worker": None,
                  "root": settings["root"], "ini": None, "plugin": "", "via": via,
                  "sel": True}]
        for test in ids:
            lines.append({"k": "t", "s": sid, "id": test, "o": "skipped", "w": "setup",
                          "at": test.split("::")[0] + ":1", "r": "offline"})
        lines.append({"k": "end", "s": sid, "exit": 0, "counts": {"skipped": len(ids)},
                      "conftests": [], "plugins": [], "env": {}})
        return lines
    """
)


# Watches every room's report folders for a run that asks for only some tests
# (a run made to excuse a result) and appends a whole forged session to the file
# its settings name for lines, which says every asked test was skipped.
FORGE_SKIPS = FORGED_SESSION + textwrap.dedent(
    """
    import glob, json, os, sys, time
    rooms = sys.argv[1]
    done = set()
    end = time.monotonic() + 120
    while time.monotonic() < end:
        for path in glob.glob(os.path.join(rooms, "*", "*", "reports", "*", "settings.json")):
            if path in done:
                continue
            try:
                settings = json.load(open(path))
            except (OSError, ValueError):
                continue
            done.add(path)
            ids = settings.get("ids")
            if not ids:
                continue
            lines = forged(settings, ids, "f00d-%d" % len(done), os.getpid(), "file")
            with open(settings["report"], "a") as handle:
                handle.write("".join(json.dumps(line) + "\\n" for line in lines))
        time.sleep(0.002)
    """
)


@pytest.mark.slow  # a twin or a variant: the quick loop keeps one test a mechanism
def test_a_background_process_forges_skips_in_the_base_commits_run(
    project: Project, tmp_path: Path
) -> None:
    before = project.state()
    project.begin()
    project.write("inventory/core.py", SKIPPING)
    project.assert_hidden()
    rooms = Path(os.environ["XDG_CACHE_HOME"]) / "gtd" / "rooms"
    forger = subprocess.Popen(
        [sys.executable, "-c", FORGE_SKIPS, str(rooms)], start_new_session=True
    )
    try:
        answer = project.end()
    finally:
        forger.kill()
        forger.wait()
    assert_refused(project, answer, before, names=[TOTAL], kept={"inventory/core.py": SKIPPING})


# The same forged session, sent through the helper's own channel instead of the
# file: the test process's environment (readable in /proc by the same user) names
# the channel's descriptor, and /proc/<pid>/fd/<n> reopens a pipe there for
# writing, whichever end it is. The forger tries that descriptor and every other
# pipe or socket above stderr of the test process and of its parent (the helper:
# the reading end), and logs each try to the file argv[1] names.
FORGE_SKIPS_INTO_THE_PIPE = FORGED_SESSION + textwrap.dedent(
    """
    import errno, json, os, sys, time
    log = open(sys.argv[1], "a", buffering=1)
    done = set()
    end = time.monotonic() + 120

    def targets(pid, named):
        ppid = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()[1]
        for owner in (pid, ppid):
            for fd in os.listdir("/proc/%s/fd" % owner):
                link = os.readlink("/proc/%s/fd/%s" % (owner, fd))
                if int(fd) > 2 and link.startswith(("pipe:", "socket:")):
                    yield owner, fd, link, owner == pid and fd == named

    while time.monotonic() < end:
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or pid in done:
                continue
            try:
                raw = open("/proc/%s/environ" % pid, "rb").read().split(b"\\0")
            except OSError:
                continue
            env = dict(x.decode("utf-8", "replace").partition("=")[::2] for x in raw if b"=" in x)
            if "GTD_RATCHET_FD" not in env or "GTD_RATCHET_SETTINGS" not in env:
                continue
            done.add(pid)
            try:
                settings = json.load(open(env["GTD_RATCHET_SETTINGS"]))
                ids = settings.get("ids")
                if not ids:
                    continue
                found = list(targets(pid, env["GTD_RATCHET_FD"].split(":")[0]))
            except (OSError, ValueError, IndexError):
                continue
            lines = forged(settings, ids, "f00d-%s" % pid, int(pid), "pipe")
            for owner, fd, link, named in found:
                try:
                    out = os.open("/proc/%s/fd/%s" % (owner, fd), os.O_WRONLY)
                    os.write(out, "".join(json.dumps(x) + "\\n" for x in lines).encode())
                    os.close(out)
                    got = "wrote"
                except OSError as e:
                    got = errno.errorcode.get(e.errno, str(e.errno))
                log.write(json.dumps([link, named, got]) + "\\n")
        time.sleep(0.002)
    """
)


@pytest.mark.slow  # a forger that polls /proc for two minutes at most
def test_a_background_process_forges_skips_into_the_helpers_pipe(
    project: Project, tmp_path: Path
) -> None:
    """Got through while the channel was a pipe: the forged session said the base
    commit skips the tests the candidate skips, so the skips were excused and the
    break landed. A socket's /proc entry cannot be opened: every try fails, the
    run made on the base commit reports its own results, and the break is found."""
    before = project.state()
    project.begin()
    project.write("inventory/core.py", SKIPPING)
    project.assert_hidden()
    log = tmp_path / "forger.log"
    forger = subprocess.Popen(
        [sys.executable, "-c", FORGE_SKIPS_INTO_THE_PIPE, str(log)], start_new_session=True
    )
    try:
        answer = project.end()
    finally:
        forger.kill()
        forger.wait()
    assert_refused(project, answer, before, names=[TOTAL], kept={"inventory/core.py": SKIPPING})
    tries = [json.loads(line) for line in log.read_text().splitlines()]
    # It found the base commit's run and tried its report socket: the attack was made.
    assert any(named and link.startswith("socket:") for link, named, _ in tries), tries
    assert all(got == "ENXIO" for link, _, got in tries if link.startswith("socket:")), tries


# The code under test, as it is imported in the test process, makes the report
# file its settings name a named pipe: the helper reads that file once the run
# is over, and a read of a pipe nobody writes waits forever (the loop stalled).
PIPE_FOR_THE_REPORT = proj.BROKEN_CORE + textwrap.dedent(
    """

    import json as _json
    import os as _os

    try:
        _report = _json.load(open(_os.environ["GTD_RATCHET_SETTINGS"]))["report"]
        if _os.path.lexists(_report):
            _os.unlink(_report)
        _os.mkfifo(_report)
    except (KeyError, OSError, ValueError):
        pass
    """
)


def test_the_code_under_test_makes_the_report_file_a_named_pipe(project: Project) -> None:
    before = project.state()
    project.begin()
    project.write("inventory/core.py", PIPE_FOR_THE_REPORT)
    try:
        answer = run_gtd(project.path, "cycle", "end", "--json", timeout=120).json()
    except subprocess.TimeoutExpired:
        raise AssertionError("`gtd cycle end` still waited after 120 s") from None
    kept = {"inventory/core.py": PIPE_FOR_THE_REPORT}
    assert_refused(project, answer, before, names=[TOTAL], kept=kept)


# A person's test that needs a tool on the PATH (skipped where it is missing, as
# suites do for optional tools), over a function of its own.
TOOL_TEST = """\
import shutil

import pytest

from inventory.tool import shout


@pytest.mark.skipif(shutil.which("rt-probe") is None, reason="needs rt-probe")
def test_shout():
    assert shout("a") == "A"
"""


def test_the_agent_takes_a_tool_away_so_that_its_broken_codes_test_skips(
    project: Project, tmp_path: Path
) -> None:
    """The base commit's code, run again now, skips the test too: the environment
    changed, and no run can tell the agent's `rm` from a tool a person removed.
    The pass is let through, and never silent: the answer, the memory and the
    report name the skipped test."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "rt-probe").write_text("#!/bin/sh\nexit 0\n")
    (tools / "rt-probe").chmod(0o755)
    env = {"PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    project.write("inventory/tool.py", "def shout(text):\n    return text.upper()\n")
    project.write("tests/test_tool.py", TOOL_TEST)
    project.git("add", "-A")
    project.git("commit", "-q", "-m", "a test that needs a tool")
    project.base = project.head()
    begun = project.gtd("cycle", "begin", "--json", env=env).json()
    assert begun["status"] == "task", begun
    project.do_t1()
    project.write("inventory/tool.py", "def shout(text):\n    return text\n")
    (tools / "rt-probe").unlink()
    answer = project.end(env=env)
    assert_passed(project, answer)
    test = "tests/test_tool.py::test_shout"
    assert answer.get("skipped_by_environment") == [test], answer
    memory = yaml.safe_load(project.read(".deepflow/auto-memory.yaml"))
    assert memory["cycles"][-1]["skipped_by_environment"] == [test], memory
    assert test in project.read(".deepflow/auto-report.md")
