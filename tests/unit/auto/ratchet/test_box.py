"""The judge's box: the command line it makes, the words it finds for how a
test process ended, the machine's own bwrap (or its absence), the config keys,
and the bounded check.log."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from gtd import proc
from gtd.auto.config import AutoConfig, load_auto_config
from gtd.auto.ratchet import box, checklog
from gtd.auto.ratchet.model import CommandRun
from gtd.errors import InputError
from gtd.executables import which

BOXED = box.Box("/usr/bin/bwrap", 512 << 20, False, None, "/usr/bin/prlimit")
BWRAP = which("bwrap", os.environ.get("PATH"))
WORKS = BWRAP is not None and box.probe(BWRAP) is None
if not WORKS and os.environ.get("GTD_BOX_REQUIRED"):
    raise RuntimeError("the judge's box cannot start here, and CI needs it")
needs_bwrap = pytest.mark.skipif(not WORKS, reason="bwrap cannot make a box here")


def test_unboxed_the_command_is_left_as_it_is() -> None:
    assert box.wrap(box.UNBOXED, ["pytest", "-q"], "/r", writable=["/r"]) == ["pytest", "-q"]


def test_the_boxed_command_line() -> None:
    argv = box.wrap(
        BOXED,
        ["/tmp/env/bin/python", "-m", "pytest"],
        "/cache/room/tree",
        writable=["/cache/room/tree", "/cache/room/reports/run"],
        readable=["/tmp/live", "/home/me/repo"],
        environ={"TMPDIR": "/var/tmp/me", "PYTEST_DEBUG_TEMPROOT": "/tmp/pt", "HOME": "/home/me"},
    )
    assert argv[:3] == ["/usr/bin/prlimit", f"--as={512 << 20}", "--"]
    assert argv[3] == "/usr/bin/bwrap"
    text = " ".join(argv)
    for part in (
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-net",
        "--ro-bind / /",
        "--tmpfs /tmp",
        "--ro-bind-try /tmp/live /tmp/live",
        "--ro-bind-try /tmp/env /tmp/env",  # the command's environment, under /tmp
        "--bind /cache/room/tree /cache/room/tree",
        "--bind /cache/room/reports/run /cache/room/reports/run",
        "--setenv TMPDIR /tmp",  # read-only where it was: the private /tmp instead
        "--dir /tmp/pt",  # under /tmp: made again, empty
        "--chdir /cache/room/tree -- /tmp/env/bin/python -m pytest",
    ):
        assert part in text, part
    assert "/home/me/repo" not in text  # visible already: only /tmp's are hidden
    # The private /tmp comes before what is bound on top of it.
    assert argv.index("--tmpfs") < argv.index("--ro-bind-try") < argv.index("--bind")


def test_a_helper_installed_under_tmp_stays_visible_in_the_box(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The test process loads the plugin's parts by path from the helper's
    package: a clone under /tmp (a CI checkout, say) hidden by the private /tmp
    ran the plugin without its watches, and an in-process attack landed."""
    monkeypatch.setattr(box, "_HELPER", "/tmp/clone/helper/gtd")
    text = " ".join(box.wrap(BOXED, ["pytest"], "/r", writable=["/r"]))
    assert "--ro-bind-try /tmp/clone/helper/gtd /tmp/clone/helper/gtd" in text


def test_network_and_no_memory_limit() -> None:
    argv = box.wrap(BOXED._replace(network=True, memory_bytes=0), ["t"], "/r", writable=["/r"])
    assert argv[0] == "/usr/bin/bwrap"
    assert "--unshare-net" not in argv
    assert "--unshare-pid" in argv


def test_without_prlimit_a_python_sets_the_limit() -> None:
    argv = box.wrap(BOXED._replace(prlimit=None), ["t"], "/r", writable=["/r"])
    assert "RLIMIT_AS" in argv[4]
    assert argv[5:7] == [str(512 << 20), "/usr/bin/bwrap"]


@pytest.mark.parametrize(
    ("code", "boxed", "expected"),
    [
        (-9, False, signal.SIGKILL),
        (137, True, signal.SIGKILL),
        (139, False, signal.SIGSEGV),  # a shell's word for it
        (130, False, None),  # 128 + SIGINT from a shell: not among the common ones
        (1, True, None),
        (0, False, None),
        (255, True, None),
    ],
)
def test_the_signal_behind_an_exit_status(code: int, boxed: bool, expected: int | None) -> None:
    assert box.signal_of(code, boxed) == expected


def _run(code: int, tail: str = "", timed_out: bool = False) -> CommandRun:
    return CommandRun("test", "pytest", code, 1.0, 30.0, timed_out, None, tail)


def test_causes() -> None:
    unboxed = box.UNBOXED
    assert box.cause(_run(-9), unboxed) == (
        "the test process was killed by SIGKILL (exit status -9): likely killed from "
        "outside: the system's out-of-memory killer or a person"
    )
    assert "the box's memory limit of 512 MiB (ratchet.memory_limit_mb) ends an allocation" in (
        box.cause(_run(137), BOXED)
    )
    assert box.cause(_run(-9, timed_out=True), BOXED) == (
        "the test process was ended at the timeout of 30 s"
    )
    assert box.cause(_run(1, "E   MemoryError"), BOXED) == (
        "the test process ran out of memory: it reached the memory limit of 512 MiB "
        "(ratchet.memory_limit_mb)"
    )
    assert "possibly an allocation refused by the memory limit" in box.cause(_run(139), BOXED)
    assert "stopped from outside" in box.cause(_run(-15), unboxed)
    assert box.cause(_run(3), unboxed) == "the test process exited with status 3"


def test_memory_note_only_under_a_limit() -> None:
    failed = _run(1, "FAILED tests/t.py::test_x - MemoryError")
    assert box.memory_note(failed, BOXED) == (
        "MemoryError: a test reached the memory limit of 512 MiB (ratchet.memory_limit_mb)"
    )
    assert box.memory_note(failed, BOXED._replace(memory_bytes=0)) is None
    assert box.memory_note(_run(1, "AssertionError"), BOXED) is None
    assert box.memory_note(None, BOXED) is None


def test_wall_notes_name_the_wall_only_in_the_box() -> None:
    assert box.wall_note(_run(1, "MemoryError"), BOXED) == box.memory_note(
        _run(1, "MemoryError"), BOXED
    )
    written = _run(1, "E   OSError: [Errno 30] Read-only file system: '/home/me/x'")
    assert str(box.wall_note(written, BOXED)).startswith("Read-only file system: a test wrote")
    assert box.wall_note(written, box.UNBOXED) is None
    refused = _run(1, "E   ConnectionRefusedError: [Errno 111] Connection refused")
    assert "network of its own" in str(box.wall_note(refused, BOXED))
    assert box.wall_note(refused, BOXED._replace(network=True)) is None  # not the box's doing
    unreachable = _run(1, "OSError: [Errno 101] Network is unreachable")
    assert "(ratchet.network)" in str(box.wall_note(unreachable, BOXED))
    assert box.wall_note(_run(1, "AssertionError"), BOXED) is None


def test_the_listing_of_leftovers_wraps_the_command_as_pid_1() -> None:
    argv = box.wrap(BOXED, ["pytest", "-q"], "/r", writable=["/r"], left_fd=7)
    assert "--as-pid-1" in argv
    cut = argv.index("--chdir") + 2  # (--chdir /r --)
    assert argv[cut : cut + 3] == ["--", "/bin/sh", "-c"]
    cut += 1
    assert argv[cut + 3 :] == ["gtd-box", "7", "pytest", "-q"]
    assert "--as-pid-1" not in box.wrap(BOXED, ["pytest"], "/r", writable=["/r"])


def test_switched_off_by_config() -> None:
    plan = box.plan(AutoConfig(box=False))
    assert not plan.boxed
    assert plan.described == "judge not boxed: ratchet.box is false"


def test_without_bwrap_the_run_is_unboxed_and_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    plan = box.plan(AutoConfig())
    assert not plan.boxed
    assert plan.described.startswith("judge not boxed: bwrap not found; install bubblewrap")
    assert "apt install bubblewrap" in plan.described


def test_a_bwrap_that_cannot_make_a_box_is_named(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    problem = box.probe(str(fake))
    assert problem is not None
    assert "(bwrap: setting up uid map: Permission denied)" in problem
    assert "unprivileged user namespaces" in problem


@needs_bwrap
def test_the_default_limit_is_half_the_machine() -> None:
    plan = box.plan(AutoConfig())
    assert plan.boxed
    assert plan.memory_bytes == box.default_memory() > 0
    pages = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert abs(plan.memory_bytes * 2 - pages) <= 1
    assert box.plan(AutoConfig(memory_limit_mb=0)).memory_bytes == 0
    assert box.plan(AutoConfig(memory_limit_mb=100)).memory_bytes == 100 << 20


@needs_bwrap
def test_in_the_box_a_process_sees_its_limits(tmp_path: Path) -> None:
    """A real bwrap: the room writable, the rest read-only, /tmp private, no
    network, the address-space limit set, the process alone in its namespace."""
    room = tmp_path / "room"
    room.mkdir()
    (tmp_path / "secret").write_text("beside the room, under /tmp")
    outside = Path("/var/tmp") / f"gtd-box-outside-{os.getpid()}"  # writable out there
    plan = box.plan(AutoConfig(memory_limit_mb=300))
    script = (
        "import os, resource, socket\n"
        "open('inside', 'w').write('ok')\n"
        f"print('limit', resource.getrlimit(resource.RLIMIT_AS)[0])\n"
        f"print('secret', os.path.exists({str(tmp_path / 'secret')!r}))\n"
        "print('pids', sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n"
        f"try:\n    open({str(outside)!r}, 'w')\n"
        "except OSError as exc:\n    print('outside', exc.strerror)\n"
        "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n"
        "except OSError as exc:\n    print('network', exc.strerror)\n"
    )
    import sys

    argv = box.wrap(plan, [sys.executable, "-c", script], str(room), writable=[str(room)])
    result = proc.run(argv, room, timeout=60)
    assert result.returncode == 0, result.output
    said = result.stdout
    assert f"limit {300 << 20}" in said
    assert (room / "inside").read_text() == "ok"
    assert not outside.exists()
    assert "outside Read-only file system" in said
    assert "network Network is unreachable" in said
    pids = next(line for line in said.splitlines() if line.startswith("pids"))
    assert pids.startswith("pids [1, 2")  # its own namespace: bwrap's init, then it
    assert "secret False" in said  # a private /tmp: only the room is bound into it


def test_config_keys(tmp_path: Path) -> None:
    (tmp_path / ".deepflow").mkdir()
    config = tmp_path / ".deepflow/config.yaml"
    config.write_text(
        "ratchet:\n  test_command: pytest\n  box: false\n  memory_limit_mb: 2048\n  network: true\n"
    )
    loaded = load_auto_config(tmp_path)
    assert (loaded.box, loaded.memory_limit_mb, loaded.network) == (False, 2048.0, True)
    config.write_text("ratchet:\n  test_command: pytest\n")
    loaded = load_auto_config(tmp_path)
    assert (loaded.box, loaded.memory_limit_mb, loaded.network) == (True, None, False)
    config.write_text("ratchet:\n  test_command: pytest\n  memory_limit_mb: -1\n")
    with pytest.raises(InputError, match=r"memory_limit_mb"):
        load_auto_config(tmp_path)
    config.write_text("ratchet:\n  test_command: pytest\n  box: sometimes\n")
    with pytest.raises(InputError, match=r"ratchet.box"):
        load_auto_config(tmp_path)


def test_check_log_records_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checklog, "_state", {})
    log = tmp_path / "check.log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT)
    try:
        result = proc.Result(("pytest",), 1, "x" * 10 + "\n" + "y" * 80_000 + "\nlast\n", "", 1.5)
        checklog.record("test", "pytest -q", result)  # not the worker: nothing written
        assert log.read_bytes() == b""
        checklog.to(fd)
        checklog.note("judge boxed (…)")
        checklog.record("test", "pytest -q", result)
        text = log.read_text()
        assert text.startswith("gtd: judge boxed (…)\n$ pytest -q    # test: exit 1, 1.50 s\n")
        assert "[... earlier output left out ...]" in text
        assert text.endswith("last\n")
        assert len(text) < checklog.RECORD_MAX + 200
        for _ in range(40):
            checklog.record("test", "pytest -q", result)
        assert checklog.LOG_MAX <= log.stat().st_size < checklog.LOG_MAX + 100
        assert log.read_text().endswith("[gtd: check.log is full; later output left out]\n")
    finally:
        os.close(fd)


def test_what_the_command_names_under_tmp_stays_visible() -> None:
    argv = box.wrap(
        BOXED,
        ["/bin/sh", "-c", "/tmp/v/bin/python '/tmp/x/check.py' --rc=/tmp/c.ini -q && echo"],
        "/r",
        writable=["/r"],
    )
    bound = [argv[i + 1] for i, word in enumerate(argv) if word == "--ro-bind-try"]
    bound = [b for b in bound if b != box._HELPER]  # bound too when the clone is under /tmp
    assert bound == ["/tmp/v", "/tmp/x/check.py", "/tmp/c.ini"]  # a venv whole, by its bin/


def test_only_a_box_that_started_is_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    note = tmp_path / "cache/gtd/box-starts"
    fake = tmp_path / "bwrap"
    calls = tmp_path / "calls"
    fake.write_text(f"#!/bin/sh\necho x >> {calls}\nexit ${{BWRAP_EXIT:-0}}\n")
    fake.chmod(0o755)
    box.probe.cache_clear()
    monkeypatch.setenv("BWRAP_EXIT", "1")
    assert box.probe(str(fake)) is not None
    assert not note.exists()  # a failure is never remembered
    box.probe.cache_clear()
    monkeypatch.setenv("BWRAP_EXIT", "0")
    assert box.probe(str(fake)) is None
    assert note.read_bytes().startswith(str(fake).encode())
    box.probe.cache_clear()
    assert box.probe(str(fake)) is None
    assert calls.read_text() == "x\nx\n"  # the third process trusted the note
    fake.write_text(fake.read_text() + "\n")  # another bwrap (its size and ctime)
    box.probe.cache_clear()
    monkeypatch.setenv("BWRAP_EXIT", "1")
    assert box.probe(str(fake)) is not None  # asked again: the note was another's
    note.unlink()
    os.mkfifo(note)  # a named pipe where the note goes: never a read that blocks
    box.probe.cache_clear()
    assert box.probe(str(fake)) is not None
    box.probe.cache_clear()
