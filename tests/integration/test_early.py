"""The early start (gtd.auto.ratchet.early): `gtd ratchet run` starts its test
process from the hint the last held run left, before the helper has loaded
anything else; gtd.auto.ratchet.held adopts it only where the sealed config asks
for that very command, in the same environment. A hint an agent wrote starts a
process that is ended at the gate and never counts. Real repositories, real
interpreters, real pipes."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gtd import pipes, spawned
from gtd.auto.config import load_auto_config
from gtd.auto.ratchet import early, held, report_listener, room
from gtd.git import Git
from tests.conftest import Repo, run_gtd
from tests.integration.held_suite import PYTEST, ended, make_project

pytestmark = pytest.mark.skipif(
    not os.path.isdir("/proc/self"), reason="needs /proc to see the test process"
)

# Where the test process ran from: its sitecustomize (the gate's, in the run's
# folder), its working directory and its open descriptors.
PROBE = """\
import json, os, sys

def test_probe():
    custom = sys.modules.get("sitecustomize")
    with open(os.environ["GTD_TEST_PROBE"], "w") as handle:
        json.dump({
            "sitecustomize": getattr(getattr(custom, "__spec__", None), "origin", None),
            "cwd": os.getcwd(),
            "pwd": os.environ.get("PWD"),
            "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
        }, handle)
"""


@pytest.fixture
def project(repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    return make_project(repo, tmp_path, monkeypatch, PROBE)


def rooms(project: Repo) -> Path:
    """The repository's rooms folder: the hint and the early runs' folders."""
    return Path(early.rooms_home()) / early.repo_key(str(project.path / ".git"), "repo")


def probe(tmp_path: Path) -> dict[str, object]:
    seen: dict[str, object] = json.loads((tmp_path / "probe.json").read_text())
    return seen


def passed_both(project: Repo) -> None:
    res = run_gtd(project.path, "ratchet", "run", "--json")
    assert res.code == 0, res.stderr
    assert res.json["passed"] is True, res.json
    assert res.json["tests_total"] == 2


def test_the_next_run_starts_its_tests_from_the_hint_the_last_one_left(
    project: Repo, tmp_path: Path
) -> None:
    hint = rooms(project) / early.HINT
    assert not hint.exists()
    passed_both(project)  # no hint yet: started by the helper, in a slot's run folder
    first = probe(tmp_path)
    assert f"{os.sep}reports{os.sep}ratchet-" in str(first["sitecustomize"])
    assert early.read_hint(str(rooms(project))) == shlex.split(PYTEST)

    passed_both(project)  # started from the hint, beside the slots
    second = probe(tmp_path)
    assert f"{os.sep}{early.FOLDER}{os.sep}ratchet-" in str(second["sitecustomize"])
    # Either way it ran in the room, which it entered at the gate, and nothing
    # else of the helper's was open in it.
    for seen in (first, second):
        assert Path(str(seen["cwd"])).name == "tree"
        assert seen["pwd"] == seen["cwd"]
    assert len(first["fds"]) == len(second["fds"])  # type: ignore[arg-type]
    assert os.listdir(rooms(project) / early.FOLDER) == []  # its files removed


def test_a_descriptor_the_helper_inherited_does_not_reach_the_tests(
    project: Repo, tmp_path: Path
) -> None:
    """A descriptor left open across exec by whatever started the helper (a
    terminal's, an agent CLI's pipe) is closed in the test process, as
    subprocess closes it."""
    passed_both(project)
    unheld = probe(tmp_path)
    read_end, write_end = os.pipe()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "gtd", "ratchet", "run", "--json"],
            cwd=project.path,
            capture_output=True,
            text=True,
            timeout=300,
            pass_fds=(write_end,),
        )
    finally:
        os.close(read_end)
        os.close(write_end)
    assert json.loads(done.stdout)["passed"] is True, done.stderr
    seen = probe(tmp_path)
    assert f"{os.sep}{early.FOLDER}{os.sep}" in str(seen["sitecustomize"])
    assert len(seen["fds"]) == len(unheld["fds"])  # type: ignore[arg-type]


FAKE_PYTHON = """\
#!/bin/sh
# A program the agent named in the hint: it says where it ran, then waits.
pwd > "$GTD_FAKE_MARK"
echo $$ >> "$GTD_FAKE_MARK"
exec sleep 60
"""


def test_a_forged_hint_starts_a_process_that_is_ended_and_never_counts(
    project: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hint names another program (as a Python that runs pytest): it starts,
    in the early run's own folder and not in the room, is ended before the run,
    and the configured command runs and is judged; the hint is put right."""
    passed_both(project)
    fake = tmp_path / "evil" / "python3"
    fake.parent.mkdir()
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    mark = tmp_path / "fake-ran"
    monkeypatch.setenv("GTD_FAKE_MARK", str(mark))
    hint = rooms(project) / early.HINT
    hint.write_bytes(early.hint_bytes([str(fake), "-m", "pytest"]))
    passed_both(project)
    where, pid = mark.read_text().split()
    assert f"{os.sep}{early.FOLDER}{os.sep}ratchet-" in where  # never in the room
    assert not Path(f"/proc/{pid}").exists()  # ended (and reaped) by the helper
    seen = probe(tmp_path)
    assert f"{os.sep}reports{os.sep}ratchet-" in str(seen["sitecustomize"])
    assert early.read_hint(str(rooms(project))) == shlex.split(PYTEST)


# One variant stays in the quick loop; the rest run in scripts/check and CI.
@pytest.mark.parametrize(
    "how",
    [
        "garbage",
        pytest.param("empty-word", marks=pytest.mark.slow),
        pytest.param("no-end", marks=pytest.mark.slow),
        pytest.param("link", marks=pytest.mark.slow),
        pytest.param("relative", marks=pytest.mark.slow),
    ],
)
def test_a_hint_that_is_not_the_helpers_starts_nothing(
    project: Repo, tmp_path: Path, how: str
) -> None:
    passed_both(project)
    hint = rooms(project) / early.HINT
    good = hint.read_bytes()
    hint.unlink()
    if how == "garbage":
        hint.write_bytes(os.urandom(300))
    elif how == "empty-word":
        hint.write_bytes(early.HINT_HEAD + f"{sys.executable}\0\0-m\0pytest\0".encode())
    elif how == "no-end":
        hint.write_bytes(good[:-1])
    elif how == "link":  # a link to a good hint elsewhere: not followed
        (tmp_path / "elsewhere").write_bytes(good)
        hint.symlink_to(tmp_path / "elsewhere")
    else:  # a path of the room's: the helper's own start knows the links
        hint.write_bytes(early.hint_bytes(["venv/bin/python", "-m", "pytest"]))
    passed_both(project)
    assert f"{os.sep}reports{os.sep}ratchet-" in str(probe(tmp_path)["sitecustomize"])
    assert early.read_hint(str(rooms(project))) == shlex.split(PYTEST)


def test_a_command_that_cannot_be_held_removes_the_hint_and_ends_its_process(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test command through the shell is never held: a hint (an old one, or
    one written) starts a process that is ended, and the hint is removed, so
    later runs do not start one in vain."""
    make_project(repo, tmp_path, monkeypatch, PROBE, command=f"cd . && {PYTEST}")
    base = rooms(repo)
    base.mkdir(parents=True, exist_ok=True)
    (base / early.HINT).write_bytes(early.hint_bytes(shlex.split(PYTEST)))
    res = run_gtd(repo.path, "ratchet", "run", "--json")
    assert res.json["passed"] is True, res.json
    assert not (base / early.HINT).exists()
    assert os.listdir(base / early.FOLDER) == []


@pytest.mark.slow
def test_a_helper_killed_after_the_early_start_leaves_no_process_and_its_files_go(
    project: Repo, tmp_path: Path
) -> None:
    """kill -9 of the helper while its early process waits at the gate: the gate
    closes with the helper, the process ends, and the next run removes the
    killed run's files."""
    passed_both(project)
    base = rooms(project) / early.FOLDER
    helper = subprocess.Popen(
        [sys.executable, "-m", "gtd", "ratchet", "run", "--json"],
        cwd=project.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    folder = base / f"ratchet-{helper.pid}.0"
    deadline = time.monotonic() + 60
    while not folder.is_dir() and time.monotonic() < deadline and helper.poll() is None:
        time.sleep(0.001)
    assert folder.is_dir(), "the early start made no folder"
    helper.kill()
    helper.wait()
    waiting = [pid for pid in _processes_in(base)]
    deadline = time.monotonic() + 30
    while waiting and time.monotonic() < deadline:
        time.sleep(0.05)
        waiting = _processes_in(base)
    assert waiting == []
    passed_both(project)
    assert not folder.exists()


def _processes_in(folder: Path) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/cwd").startswith(str(folder)):
                    found.append(int(entry))
            except OSError:
                continue
    return found


# -- adoption, in this process ---------------------------------------------------------


def _early_start(project: Repo, monkeypatch: pytest.MonkeyPatch) -> early.Early:
    monkeypatch.chdir(project.path)
    early.start()
    started = early.claim()
    assert started is not None
    return started


def test_hold_adopts_the_early_process_only_for_the_same_command_and_environment(
    project: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passed_both(project)  # the hint
    git = Git(project.path, hardened=True)
    config = load_auto_config(project.path)
    head_tree = git.run("rev-parse", "HEAD^{tree}").strip()
    with room.acquire(git) as rm:
        room.sync(git, rm, head_tree)

        started = _early_start(project, monkeypatch)
        monkeypatch.setattr(early, "_STARTED", [started])
        adopted = held.hold(rm, config, room.environment(rm))
        assert adopted is not None
        assert isinstance(adopted.child, spawned.Spawned)
        assert adopted.child.pid == started.pid
        released = adopted.release(report_listener.Request(rm.tree), 60)
        assert released is not None
        assert released.result.returncode == 0, released.result.output
        assert released.report.complete
        assert released.report.outcomes is not None
        assert len(released.report.outcomes) == 2

        changed = _early_start(project, monkeypatch)
        monkeypatch.setattr(early, "_STARTED", [changed])
        monkeypatch.setenv("GTD_SOMETHING_NEW", "1")  # set since the early start
        fresh = held.hold(rm, config, room.environment(rm))
        assert fresh is not None
        assert isinstance(fresh.child, spawned.Spawned)
        assert fresh.child.pid != changed.pid  # started anew
        with pytest.raises(ChildProcessError):
            os.waitpid(changed.pid, os.WNOHANG)  # ended and reaped already
        assert not os.path.exists(changed.folder)
        fresh.cancel()


def test_an_unclaimed_early_process_is_ended_by_discard(
    project: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    passed_both(project)
    started = _early_start(project, monkeypatch)
    monkeypatch.setattr(early, "_STARTED", [started])
    early.discard()
    assert early.claim() is None
    with pytest.raises(ChildProcessError):
        os.waitpid(started.pid, os.WNOHANG)
    assert not os.path.exists(started.folder)


_REOPEN = """
import errno, os, sys
for path in sys.argv[1:]:
    try:
        os.close(os.open(path, os.O_WRONLY))
        print("opened")
    except OSError as e:
        print(errno.errorcode.get(e.errno, e.errno))
"""


def _channels(pid: int) -> list[str]:
    """The /proc entries of the gate, arrival and report descriptors a waiting
    process's environment names (what any process of the user can read). Read
    again until they show: a process just spawned shows its parent's environment
    until its exec is done."""
    deadline = time.monotonic() + 10
    while True:
        raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        env = dict(x.decode().partition("=")[::2] for x in raw if b"=" in x)
        if "GTD_RATCHET_GATE" in env or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    fds = [*env["GTD_RATCHET_GATE"].split(":"), env["GTD_RATCHET_FD"].split(":")[0]]
    return [f"/proc/{pid}/fd/{fd}" for fd in fds]


def test_no_process_of_the_user_can_reopen_a_waiting_runs_channels(
    project: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pipe's /proc entry opens for writing (whichever end it names): a process
    left running could write a word into the gate or lines into the report. Every
    channel of an early process and of a held one, on its side and the helper's,
    refuses."""
    passed_both(project)
    git = Git(project.path, hardened=True)
    config = load_auto_config(project.path)
    with room.acquire(git) as rm:
        room.sync(git, rm, git.run("rev-parse", "HEAD^{tree}").strip())
        started = _early_start(project, monkeypatch)
        monkeypatch.setattr(early, "_STARTED", [])  # not adopted: hold starts its own
        fresh = held.hold(rm, config, room.environment(rm))
        assert fresh is not None
        try:
            ours = [started.fds[k] for k in ("gate", "came", "report_r", "report_w")]
            paths = [
                *_channels(started.pid),
                *_channels(fresh.child.pid),
                *(f"/proc/{os.getpid()}/fd/{fd}" for fd in ours),
            ]
            tried = subprocess.run(
                [sys.executable, "-c", _REOPEN, *paths], capture_output=True, text=True
            )
            assert tried.stdout.split() == ["ENXIO"] * len(paths), tried
        finally:
            started.cancel()
            fresh.cancel()


@pytest.mark.parametrize(
    ("argv", "orig", "expected"),
    [
        (["/v/bin/gtd", "ratchet", "run"], [], True),
        (["/v/bin/gtd", "ratchet", "run", "--json"], [], True),
        (["/v/bin/gtd", "ratchet", "run", "--json", "--json"], [], False),
        (["/v/bin/gtd", "ratchet", "run", "--verbose"], [], False),
        (["/v/bin/gtd", "ratchet", "snapshot"], [], False),
        (["-m", "ratchet", "run"], ["python", "-m", "gtd", "ratchet", "run"], True),
        (["-m", "ratchet", "run"], ["python", "-m", "other", "ratchet", "run"], False),
        (["/x/pytest", "ratchet", "run"], [], False),
    ],
)
def test_only_gtd_ratchet_run_starts_early(
    argv: list[str], orig: list[str], expected: bool
) -> None:
    assert early.wanted(argv, orig) is expected


# -- the spawned child's output and end -------------------------------------------------


def _spawn(code: str) -> spawned.Spawned:
    """As the early start spawns: through ``posix_spawn``, into long pipes."""
    out_r, out_w = pipes.long_pipe()
    err_r, err_w = pipes.long_pipe()
    pid = os.posix_spawn(
        sys.executable,
        [sys.executable, "-c", code],
        dict(os.environ),
        file_actions=[(os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2)],
        setsid=True,
    )
    os.close(out_w)
    os.close(err_w)
    return spawned.Spawned(pid, ("python", "-c"), out_r, err_r, time.monotonic())


@pytest.fixture(params=["pidfd", "no-pidfd"])
def exits(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A child's end seen through a pidfd (Linux), and as elsewhere (macOS: no
    pidfd_open, the child looked at in sleeps without being reaped)."""
    if request.param == "no-pidfd":
        monkeypatch.delattr(os, "pidfd_open", raising=False)


@pytest.mark.usefixtures("exits")
def test_a_spawned_child_reads_as_text_mode_does() -> None:
    child = _spawn(
        "import sys; sys.stdout.buffer.write(b'a\\r\\nb\\rc\\xff\\n'); "
        "sys.stderr.write('warn\\n'); sys.exit(3)"
    )
    result = child.finish(60)
    assert result.returncode == 3
    assert result.stdout == "a\nb\nc\ufffd\n"
    assert result.stderr == "warn\n"
    assert not result.timed_out


@pytest.mark.usefixtures("exits")
def test_a_spawned_child_past_its_timeout_is_ended_with_its_group() -> None:
    child = _spawn(
        "import subprocess, sys, time; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "print(p.pid, flush=True); time.sleep(60)"
    )
    result = child.finish(2.0)
    assert result.timed_out
    assert result.returncode == -signal.SIGTERM
    grandchild = int(result.stdout.split()[0])
    assert ended(grandchild)


@pytest.mark.usefixtures("exits")
def test_a_process_left_running_holding_the_output_neither_holds_the_run_nor_outlives_it() -> None:
    """A test that starts a server and never stops it, its output not captured
    (``pytest -s``): the server holds the run's output open. The run ends with
    the child, and the server with it."""
    child = _spawn(
        "import subprocess, sys; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "print(p.pid, flush=True)"
    )
    started = time.monotonic()
    result = child.finish(30.0)
    assert time.monotonic() - started < 10
    assert not result.timed_out
    assert result.returncode == 0
    left = int(result.stdout.split()[0])
    assert ended(left)


@pytest.mark.usefixtures("exits")
def test_only_the_end_of_a_long_output_is_kept() -> None:
    child = _spawn(
        "import sys\n"
        "for i in range(200000): sys.stdout.write(f'line {i:07d} ' + 'x' * 40 + '\\n')\n"
        "print('the end')"
    )
    result = child.finish(60)
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[-1] == "the end"
    assert lines[-2].startswith("line 0199999 ")
    assert lines[0].startswith("line ")  # from a line's start, though cut
    assert len(result.stdout.encode()) <= 1 << 20  # its last MiB
    assert len(lines) < 200000
