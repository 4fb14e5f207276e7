"""The held test run (gtd.auto.ratchet.held): the test process starts before its
clean room is ready, imports pytest from its environment, and runs nothing of the
room's until the helper names the room it synced. Real interpreters, real pipes,
real repositories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gtd import spawned
from gtd.auto.config import load_auto_config
from gtd.auto.ratchet import early, gate, held, report_listener, room
from gtd.git import Git
from tests.conftest import Repo, run_gtd
from tests.integration.held_suite import PYTEST, ended, make_project

PYTEST_S = f"{PYTEST} -s"

# What a test of the project under judgement writes where the test asks it to:
# whether pytest came in before the room did, the gate's variable, and which
# sitecustomize ran.
PROBE = """\
import json, os, sys

def test_probe():
    custom = sys.modules.get("sitecustomize")
    with open(os.environ["GTD_TEST_PROBE"], "w") as handle:
        json.dump({
            "gate": os.environ.get("GTD_RATCHET_GATE"),
            "sitecustomize": getattr(getattr(custom, "__spec__", None), "origin", None),
            "file": getattr(custom, "__file__", None),
        }, handle)
"""


class GateChild:
    """``python -c code`` behind the gate, as :func:`held.hold` starts it: in a
    folder of its own (``tmp/start``), the gate's sitecustomize first on
    PYTHONPATH."""

    def __init__(self, tmp: Path, code: str, path: tuple[Path, ...] = ()) -> None:
        site = tmp / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(gate.SOURCE)
        cwd = tmp / "start"
        cwd.mkdir()
        gate_r, self.gate = os.pipe()
        self.came, came_w = os.pipe()
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(str(p) for p in (site, *path)),
            gate.ENV_GATE: f"{gate_r}:{came_w}",
        }
        self.popen = subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=cwd,
            env=env,
            pass_fds=(gate_r, came_w),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        os.close(gate_r)
        os.close(came_w)

    def arrived(self) -> bytes:
        return os.read(self.came, 1)

    def say(self, text: str | None) -> int:
        if text is not None:
            os.write(self.gate, text.encode())
        os.close(self.gate)
        code = self.popen.wait(timeout=60)
        self.rest = os.read(self.came, 1)
        os.close(self.came)
        return code


def inode(path: Path, named: Path | None = None) -> str:
    """The word that opens the gate into ``path`` (said of ``named``)."""
    st = os.stat(path)
    return gate.word(st.st_dev, st.st_ino, str(named or path)).decode()


RECORD = (
    "import json, os, sys; json.dump({'pytest': 'pytest' in sys.modules, "
    "'gate': os.environ.get('GTD_RATCHET_GATE'), "
    "'custom': sys.modules['sitecustomize'].__spec__.origin}, open('ran.json', 'w'))"
)


def test_the_gate_holds_the_process_until_it_is_told_its_room(tmp_path: Path) -> None:
    where = tmp_path / "room"
    where.mkdir()
    child = GateChild(tmp_path, RECORD)
    assert child.arrived() == b"r"
    assert child.popen.poll() is None  # waiting at the gate...
    assert not (where / "ran.json").exists()  # ...having run nothing of its own
    assert os.listdir(tmp_path / "start") == []
    assert child.say(inode(where)) == 0, child.popen.stderr.read() if child.popen.stderr else ""
    ran = json.loads((where / "ran.json").read_text())  # it ran in the room it was told
    assert ran["pytest"] is True  # imported before the gate, from the environment
    assert ran["gate"] is None  # taken out: a process it starts does not wait
    assert ran["custom"] == str(tmp_path / "site" / "sitecustomize.py")


def test_a_gate_closed_without_a_word_ends_the_process(tmp_path: Path) -> None:
    """The run called off, or the helper killed (its end of the pipe closes)."""
    where = tmp_path / "room"
    where.mkdir()
    child = GateChild(tmp_path, RECORD)
    assert child.arrived() == b"r"
    assert child.say(None) == 1
    assert not (where / "ran.json").exists()


@pytest.mark.parametrize("how", ["replaced", "link", "gone", "garbled"])
def test_a_room_that_is_not_the_folder_the_helper_named_runs_nothing(
    tmp_path: Path, how: str
) -> None:
    """The room replaced (a link, a start over, removed) between the helper's
    look and the process's entry: the folder at the path is not the directory
    the helper synced. Nothing runs anywhere."""
    where = tmp_path / "room"
    where.mkdir()
    said = inode(where)
    other = tmp_path / "other"
    other.mkdir()
    child = GateChild(tmp_path, RECORD)
    assert child.arrived() == b"r"
    if how == "replaced":
        where.rename(tmp_path / "old")
        where.mkdir()
    elif how == "link":
        where.rename(tmp_path / "old")
        where.symlink_to(other)
    elif how == "gone":
        where.rmdir()
    else:
        said = said.replace(":", "", 1)
    assert child.say(said) == 1
    assert child.rest == b"x"  # refused: the helper runs the command itself
    for folder in (tmp_path / "start", other, tmp_path / "old", where):
        assert not (folder / "ran.json").exists()


def test_a_sitecustomize_of_the_environment_still_runs_after_the_gate(tmp_path: Path) -> None:
    """The gate's sitecustomize hides any other on the path: that one runs once
    the gate opens (never before: it may read the working directory), and pytest
    is then not imported early (it may change how pytest imports)."""
    where = tmp_path / "room"
    where.mkdir()
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("open('theirs-ran', 'w').close()\n")
    child = GateChild(tmp_path, RECORD, path=(theirs,))
    assert child.arrived() == b"r"
    assert not (where / "theirs-ran").exists()
    assert child.say(inode(where)) == 0
    assert (where / "theirs-ran").exists()
    ran = json.loads((where / "ran.json").read_text())
    assert ran["pytest"] is False
    assert ran["custom"] == str(theirs / "sitecustomize.py")


def test_a_python_the_held_process_starts_does_not_wait(tmp_path: Path) -> None:
    where = tmp_path / "room"
    where.mkdir()
    code = (
        "import subprocess, sys; "
        "subprocess.run([sys.executable, '-c', 'open(\"child-ran\", \"w\").close()'], timeout=60)"
    )
    child = GateChild(tmp_path, code)
    assert child.arrived() == b"r"
    assert child.say(inode(where)) == 0
    assert (where / "child-ran").exists()


# -- which commands are held ------------------------------------------------------------


def fake_room(tmp_path: Path) -> room.Room:
    live = tmp_path / "live"
    tree = tmp_path / "slot" / "tree"
    for folder in (live, tree):
        folder.mkdir(parents=True)
    slot = tree.parent
    return room.Room(slot, tree, slot / "index", slot / "site", live, [])


def holdable(
    rm: room.Room, command: list[str], path: str | None = None, pp: str | None = None
) -> bool:
    return held._holdable(command, rm, path or os.environ.get("PATH"), pp) is not None


def test_held_commands_are_pythons_found_whatever_the_room_holds(tmp_path: Path) -> None:
    rm = fake_room(tmp_path)
    python = sys.executable
    assert holdable(rm, [python, "-m", "pytest", "-q"])
    # Interpreter options (-I ignores PYTHONPATH: no gate), other modules: not held.
    assert not holdable(rm, [python, "-I", "-m", "pytest"])
    assert not holdable(rm, [python, "-m", "unittest"])
    assert not holdable(rm, ["uv", "run", "pytest"])
    # A name looked up on a PATH with a relative folder: the room's own folder.
    assert not holdable(rm, ["python3", "-m", "pytest"], path=f"bin{os.pathsep}/usr/bin")
    assert not holdable(rm, [python, "-m", "pytest"], pp=f"src{os.pathsep}/abs")
    assert holdable(rm, [python, "-m", "pytest"], pp=str(tmp_path))


def test_a_virtualenv_in_the_room_is_held_only_through_the_link_to_the_live_one(
    tmp_path: Path,
) -> None:
    rm = fake_room(tmp_path)
    venv_bin = rm.live / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(sys.executable)
    command = [".venv/bin/python", "-m", "pytest"]
    assert not holdable(rm, command)  # not in the room (yet): found nowhere
    (rm.tree / ".venv").symlink_to(rm.live / ".venv")  # the configured link
    assert holdable(rm, command)
    (rm.tree / ".venv").unlink()
    elsewhere = tmp_path / "elsewhere"  # a link the sync did not make (same python)
    (elsewhere / "bin").mkdir(parents=True)
    (elsewhere / "bin" / "python").symlink_to(sys.executable)
    (rm.tree / ".venv").symlink_to(elsewhere)
    assert not holdable(rm, command)
    (rm.tree / ".venv").unlink()
    (rm.tree / ".venv" / "bin").mkdir(parents=True)  # the room's own (planted) copy
    (rm.tree / ".venv" / "bin" / "python").symlink_to(sys.executable)
    assert not holdable(rm, command)


def test_a_pytest_script_is_held_when_its_first_line_is_a_plain_python(tmp_path: Path) -> None:
    rm = fake_room(tmp_path)
    script = tmp_path / "bin" / "pytest"
    script.parent.mkdir()
    script.write_text(f"#!{sys.executable}\nimport pytest\n")
    script.chmod(0o755)
    assert holdable(rm, [str(script), "-q"])
    script.write_text(f"#!{sys.executable} -I\nimport pytest\n")
    assert not holdable(rm, [str(script)])
    script.write_text("#!/usr/bin/env python3\nimport pytest\n")
    assert not holdable(rm, [str(script)])
    script.write_text("#!/bin/sh\nexec make test\n")
    assert not holdable(rm, [str(script)])


# -- the ratchet's runs, held ---------------------------------------------------------------


@pytest.fixture
def project(repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    return make_project(repo, tmp_path, monkeypatch, PROBE)


def test_ratchet_run_holds_the_test_process_and_judges_as_before(
    project: Repo, tmp_path: Path
) -> None:
    probe = tmp_path / "probe.json"
    probe.unlink()
    res = run_gtd(project.path, "ratchet", "run", "--json")
    assert res.code == 0, res.stderr
    assert res.json["passed"] is True, res.json
    assert res.json["tests_total"] == 2
    seen = json.loads(probe.read_text())
    assert seen["gate"] is None
    # The gate's sitecustomize, in the run's folder of the room's slot: held.
    assert seen["sitecustomize"] is not None
    assert seen["sitecustomize"].endswith(os.path.join("site", "sitecustomize.py"))
    assert str(project.path) not in seen["sitecustomize"]
    # Through the gate, it has no file: hypothesis takes the literals of every
    # module with a file outside site-packages for the project's own.
    assert seen["file"] is None


VENV_PROBE = """\
import json, os, sys

def test_probe():
    custom = sys.modules.get("sitecustomize")
    with open(os.environ["GTD_TEST_PROBE"], "w") as handle:
        json.dump({"sitecustomize": getattr(getattr(custom, "__spec__", None), "origin", None),
                   "executable": sys.executable, "prefix": sys.prefix}, handle)
"""


def test_a_virtualenv_through_the_rooms_link_is_held_as_it_runs_unheld(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The command a project with a .venv is set up with: a path through the
    # room's link. Started from the run's folder it was not found there, and
    # every run went unheld (its interpreter and pytest started after the sync).
    (repo.path / ".venv").symlink_to(sys.prefix)  # the project's virtualenv
    (repo.path / ".git" / "info" / "exclude").write_text(".venv\n")
    project = make_project(
        repo, tmp_path, monkeypatch, VENV_PROBE,
        command=".venv/bin/python -m pytest -q -p no:cacheprovider",
    )  # fmt: skip
    probe = tmp_path / "probe.json"
    baseline = json.loads(probe.read_text())
    probe.unlink()
    res = run_gtd(project.path, "ratchet", "run", "--json")
    assert res.code == 0, res.stderr
    assert res.json["passed"] is True, res.json
    seen = json.loads(probe.read_text())
    assert seen["sitecustomize"] is not None  # the gate's: held
    assert seen["sitecustomize"].endswith(os.path.join("site", "sitecustomize.py"))
    # The interpreter the room's link leads to, named as the unheld run names
    # it (the room's path): what the baseline recorded of it holds.
    tree = Path(seen["executable"]).parent.parent.parent
    assert seen["executable"] == str(tree / ".venv" / "bin" / "python")
    assert tree.name == "tree"
    assert str(project.path) not in seen["executable"]
    assert (seen["executable"], seen["prefix"]) == (baseline["executable"], baseline["prefix"])


def room_processes(tree: Path) -> list[int]:
    """Processes whose working directory is in the repository's rooms: the room's
    checkout, or a run's folder where a held process waits (a slot's, or one the
    early start made beside the slots)."""
    rooms = str(tree.parent.parent)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            if cwd == rooms or cwd.startswith(rooms + os.sep):
                found.append(int(entry))
        except OSError:
            continue
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc to see processes")
def test_a_candidate_refused_before_its_run_ends_the_held_process(
    project: Repo, tmp_path: Path
) -> None:
    """A snapshot test edited: refused before any test runs. The process started
    for the run ends at the gate, having loaded nothing of the room's."""
    probe = tmp_path / "probe.json"
    loaded = Path(str(probe) + ".conftest")
    loaded.unlink(missing_ok=True)
    project.write("tests/test_more.py", "def test_more():\n    assert True\n")
    res = run_gtd(project.path, "ratchet", "run", "--json")
    assert res.code == 0, res.stderr
    assert res.json["passed"] is False
    assert "tests/test_more.py" in res.json["reason"]
    assert not loaded.exists()  # no conftest of the room was ever imported
    git = Git(project.path, hardened=True)
    with room.acquire(git) as rm:
        assert rm.tree.is_dir()  # the slot the run used (the only one, free again)
        assert room_processes(rm.tree) == []


def test_a_room_made_anew_while_the_process_waits_is_the_one_it_runs_in(
    project: Repo, tmp_path: Path
) -> None:
    """The held process waits in its own folder, not in the checkout: a room
    started over before it is released (a damaged checkout, say) is the room it
    enters and runs in."""
    git = Git(project.path, hardened=True)
    config = load_auto_config(project.path)
    probe = tmp_path / "probe.json"
    head_tree = git.run("rev-parse", "HEAD^{tree}").strip()
    with room.acquire(git) as rm:
        room.sync(git, rm, head_tree)
        waiting = held.hold(rm, config, room.environment(rm))
        assert waiting is not None
        probe.unlink(missing_ok=True)
        rm.tree.rename(rm.slot / "gone")
        room.sync(git, rm, head_tree)
        released = waiting.release(report_listener.Request(rm.tree), 60)
        assert released is not None
        assert released.result.returncode == 0, released.result.output
        assert released.report.outcomes is not None
        assert sorted(released.report.outcomes) == [
            "tests/test_more.py::test_more",
            "tests/test_probe.py::test_probe",
        ]
        assert probe.exists()
        waiting.cancel()  # a second word does nothing


def test_cycle_end_holds_its_test_process_and_ends_it_when_refused_first(
    project: Repo, tmp_path: Path
) -> None:
    """`gtd cycle end` starts the test process before it builds the candidate: a
    passing cycle ran its tests in it; a cycle refused before any test runs (a
    snapshot test edited) ends it at the gate, having loaded nothing."""
    probe = tmp_path / "probe.json"
    loaded = Path(str(probe) + ".conftest")
    assert run_gtd(project.path, "cycle", "begin", "--json").json["status"] == "task"
    project.write("extra.py", "VALUE = 1\n")
    probe.unlink(missing_ok=True)
    passed = run_gtd(project.path, "cycle", "end", "--json")
    assert passed.json["status"] == "passed", passed.stdout + passed.stderr
    seen = json.loads(probe.read_text())
    assert seen["sitecustomize"].endswith(os.path.join("site", "sitecustomize.py"))

    project.write("PLAN.md", "# Plan\n\n- [x] **T1**: more\n- [ ] **T2**: again\n")
    project.commit_all("plan: T2")
    assert run_gtd(project.path, "cycle", "begin", "--json").json["status"] == "task"
    project.write("tests/test_more.py", "def test_more():\n    assert True\n")
    loaded.unlink(missing_ok=True)
    refused = run_gtd(project.path, "cycle", "end", "--json")
    assert refused.json["status"] == "reverted", refused.stdout + refused.stderr
    assert "tests/test_more.py" in refused.json["reason"]
    assert not loaded.exists()
    if os.path.isdir("/proc/self"):
        with room.acquire(Git(project.path, hardened=True)) as rm:
            assert room_processes(rm.tree) == []


def test_a_sitecustomize_on_the_users_pythonpath_runs_after_the_gate(
    project: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder of the user's PYTHONPATH comes before the plugin's on the path;
    the gate goes before both, or Python would run the user's sitecustomize
    instead and the process would never stop for the room."""
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    seen = tmp_path / "theirs.json"
    (theirs / "sitecustomize.py").write_text(
        "import json, os\n"
        f"json.dump({{'gate': os.environ.get('GTD_RATCHET_GATE')}}, open({str(seen)!r}, 'w'))\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(theirs))
    res = run_gtd(project.path, "ratchet", "run", "--json")
    assert res.json["passed"] is True, res.json
    assert json.loads(seen.read_text()) == {"gate": None}  # the gate ran first


def test_a_process_that_never_stops_at_the_gate_fails_the_run(
    project: Repo, tmp_path: Path
) -> None:
    """Something in the environment ran before the gate and went on (a `.pth`
    that runs the tests itself, say): it may have run in the room while the room
    was synced and checked, so the run fails rather than being trusted, or
    repeated in that room."""
    git = Git(project.path, hardened=True)
    with room.acquire(git) as rm:
        room.sync(git, rm, git.run("rev-parse", "HEAD^{tree}").strip())
        listener = report_listener.prepare(rm.tree, rm.slot / "reports", gate=gate.SOURCE)
        gate_r, gate_w = os.pipe()
        came_r, came_w = os.pipe()
        child = spawned.start_logged(
            [sys.executable, "-c", "open('ran-early', 'w').close()"],
            rm.tree,
            pass_fds=(gate_r, came_w),
        )
        assert isinstance(child, spawned.Spawned)
        os.close(gate_r)
        os.close(came_w)
        waiting = held.Held(child, listener, "cmd", gate_w, came_r)
        released = waiting.release(report_listener.Request(rm.tree), 60)
        assert released is not None
        assert released.result.returncode == 1
        assert "did not wait at the gate" in released.result.stderr
        assert not released.report.complete
        assert (rm.tree / "ran-early").exists()  # it did run: hence the failure


# -- a process the tests leave running --------------------------------------------------

SERVER = """\
import os, subprocess, sys

def test_starts_a_server_and_never_stops_it():
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    with open(os.environ["GTD_TEST_PROBE"], "a") as handle:
        handle.write(f"{server.pid}\\n")
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc to see processes")
@pytest.mark.parametrize("held_run", [True, False], ids=["held", "not-held"])
def test_a_server_the_tests_leave_running_neither_holds_the_run_nor_outlives_it(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held_run: bool
) -> None:
    """`pytest -s` (output not captured, as many projects configure it): the
    server inherits the test process's output. The run ends when the tests do
    (not at the timeout, which made the baseline red and failed every cycle),
    and the server it left in the clean room ends with it."""
    command = PYTEST_S if held_run else f"{PYTEST_S} && true"  # a shell: never held
    make_project(repo, tmp_path, monkeypatch, SERVER, command, "  timeout_seconds: 30\n")
    probe = tmp_path / "probe.json"
    for _ in range(2):  # the first run held as it starts, the second from the hint
        started = time.monotonic()
        res = run_gtd(repo.path, "ratchet", "run", "--json")
        assert res.code == 0, res.stderr
        assert res.json["passed"] is True, res.json
        assert res.json["tests_total"] == 2
        assert time.monotonic() - started < 20
        server = int(probe.read_text().split()[-1])
        assert ended(server)


SLOW = """\
import os, time

def pause():
    if os.path.exists(os.environ["GTD_TEST_PROBE"] + ".slow"):
        time.sleep(0.2)
""" + "".join(f"\ndef test_slow_{i}():\n    pause()\n" for i in range(150))


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc to see processes")
@pytest.mark.parametrize("quiet", [False, True], ids=["its-output", "the-plugin-alone"])
def test_a_helper_killed_while_its_tests_run_leaves_no_test_process_in_the_room(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quiet: bool
) -> None:
    """`kill -9` of `gtd ratchet run` while the suite runs (~30 s of tests): its
    test process must not go on in the clean room, which the next run takes
    over, writing there while that run syncs and judges it. It ends at its next
    write into a pipe the helper read: its output (a dot a test), or, where it
    writes none (`-p no:terminal`), the plugin's next report line."""
    # (-q is the terminal plugin's option: without that plugin it is a usage error)
    command = f"{PYTEST.replace(' -q', '')} -p no:terminal" if quiet else PYTEST
    make_project(repo, tmp_path, monkeypatch, SLOW, command, autoload=quiet)
    (tmp_path / "probe.json.slow").touch()  # slow from now on: the baseline was quick
    helper = subprocess.Popen(
        [sys.executable, "-m", "gtd", "ratchet", "run", "--json"],
        cwd=repo.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    tree = Path(early.rooms_home()) / early.repo_key(str(repo.path / ".git"), "repo") / "0" / "tree"
    deadline = time.monotonic() + 30
    while not [p for p in room_processes(tree) if p != helper.pid]:
        assert time.monotonic() < deadline, "the test process never started"
        time.sleep(0.05)
    time.sleep(1.5)  # into the tests
    running = [p for p in room_processes(tree) if p != helper.pid]
    assert running
    helper.kill()
    helper.wait()
    for pid in running:
        assert ended(pid, within=5.0), f"test process {pid} still runs in the room"


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc to see processes")
def test_a_run_ended_early_leaves_nothing_of_its_group_that_ignored_sigterm(
    tmp_path: Path,
) -> None:
    """A run ended before it finished (its timeout, a held run given up) gets
    SIGTERM, then SIGKILL after a grace period. Where its first process dies of
    the SIGTERM but another of its group does not (one that ignores it, as the
    box's process 1 of its own PID namespace does), that one must not go on
    once the run is over: it is ended with SIGKILL as the child's group is."""
    pidfile = tmp_path / "member"
    child = spawned.start_logged(
        ["sh", "-c", f"(trap '' TERM; exec sleep 60) & echo $! > {pidfile}; exec sleep 60"],
        tmp_path,
    )
    assert isinstance(child, spawned.Spawned)
    deadline = time.monotonic() + 10
    while not pidfile.read_text().strip() if pidfile.exists() else True:
        assert time.monotonic() < deadline, "the group's second process never started"
        time.sleep(0.02)
    member = int(pidfile.read_text())
    child.kill()
    assert child.returncode is not None
    assert ended(member, within=5.0), f"process {member} of the run's group still runs"


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc to see processes")
def test_a_command_past_its_timeout_leaves_nothing_of_its_group_that_ignored_sigterm(
    tmp_path: Path,
) -> None:
    """The same for a command run to its end with a timeout (gtd.proc.run): the
    whole group ends, and the call returns though that process held the
    command's output open."""
    from gtd import proc

    pidfile = tmp_path / "member"
    started = time.monotonic()
    res = proc.run(
        ["sh", "-c", f"(trap '' TERM; exec sleep 60) & echo $! > {pidfile}; exec sleep 60"],
        tmp_path,
        timeout=1.0,
    )
    assert res.timed_out
    assert time.monotonic() - started < 30
    member = int(pidfile.read_text())
    assert ended(member, within=5.0), f"process {member} of the command's group still runs"
