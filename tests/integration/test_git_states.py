"""Repository states a user (or an agent) can leave behind, each met the way the
issue describes: a clear answer that names the file and the fix, nothing lost, and
the loop going on once a person fixed it. Real git, real CLI."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from tests.conftest import Repo, run_gtd
from tests.integration.calc_project import MUL, MUL_TEST, gtd_json, make_project, run_cli


@pytest.fixture
def project(repo: Repo) -> Repo:
    return make_project(repo)


def good_work(repo: Repo) -> None:
    repo.write("calc.py", MUL)
    repo.write("tests/test_mul.py", MUL_TEST)


# -- signing --------------------------------------------------------------------------


def test_a_commit_git_cannot_sign_halts_with_why_and_resumes_when_fixed(project: Repo) -> None:
    project.git("config", "commit.gpgsign", "true")
    project.git("config", "gpg.program", "false")  # a gpg that always fails
    gtd_json(project, "cycle", "begin")
    good_work(project)
    answer = gtd_json(project, "cycle", "end")
    assert answer["status"] == "halted", answer
    assert "signing failed" in str(answer["reason"])
    assert "commit.gpgsign" in str(answer["reason"])
    again = gtd_json(project, "cycle", "begin")  # every tick says the same, nothing lost
    assert again["status"] == "halted", again
    assert (project.path / "tests/test_mul.py").read_text() == MUL_TEST
    project.git("config", "commit.gpgsign", "false")  # the person's fix
    resumed = gtd_json(project, "cycle", "begin")
    assert resumed["status"] == "task", resumed
    assert "committed" in str(resumed["recovered"])
    assert project.subjects()[1] == "T1: Add mul"


# -- detached HEAD --------------------------------------------------------------------


def test_a_detached_head_is_refused_before_a_cycle_starts(project: Repo) -> None:
    project.git("checkout", "-q", "--detach")
    res = run_gtd(project.path, "cycle", "begin")
    assert res.code == 1
    assert "HEAD is detached" in res.stderr
    assert "git switch" in res.stderr
    tick = run_gtd(project.path, "cycle", "begin", "--tick")
    assert tick.code == 0
    assert tick.stdout.startswith("status: error")
    project.git("checkout", "-q", "main")
    assert gtd_json(project, "cycle", "begin")["status"] == "task"


def test_setup_refuses_a_detached_head(repo: Repo) -> None:
    repo.write("README.md", "x\n")
    repo.write("PLAN.md", "- [ ] **T1**: a\n")
    repo.commit_all("initial")
    repo.git("checkout", "-q", "--detach")
    res = run_gtd(repo.path, "auto", "setup")
    assert res.code == 1
    assert "HEAD is detached" in res.stderr


# -- leftovers of a killed helper ------------------------------------------------------


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_killed_helpers_temp_file_beside_the_plan_is_removed(project: Repo) -> None:
    leftover = project.path / f".PLAN.md.gtd-tmp-{_dead_pid()}-0"
    leftover.write_text("half a plan")
    mine = project.path / ".PLAN.md.gtd-tmp-notes"  # not the helper's name pattern
    mine.write_text("a person's file")
    answer = gtd_json(project, "cycle", "begin")
    assert answer["status"] == "dirty", answer
    assert answer["paths"] == [mine.name]  # the leftover is gone, the person's file is not
    assert not leftover.exists()
    assert mine.read_text() == "a person's file"


def test_a_killed_setups_temp_file_beside_the_sandbox_settings_is_removed(
    project: Repo,
) -> None:
    """`gtd auto setup` killed while it wrote .claude/settings.local.json (the
    kill harness met it): the next `begin` removes its temp file, and only the
    helper's own name there, so the loop does not stall on a dirty tree."""
    claude = project.path / ".claude"
    claude.mkdir(exist_ok=True)
    leftover = claude / f".settings.local.json.gtd-tmp-{_dead_pid()}-3"
    leftover.write_text("{")
    other = claude / f".other.json.gtd-tmp-{_dead_pid()}-0"  # not a file the helper writes
    other.write_text("a person's file")
    answer = gtd_json(project, "cycle", "begin")
    assert answer["status"] == "dirty", answer
    assert answer["paths"] == [f".claude/{other.name}"]
    assert not leftover.exists()
    assert other.read_text() == "a person's file"


def test_a_git_lock_of_the_helpers_killed_child_is_removed(project: Repo) -> None:
    """A git child of the helper killed while it held .git/index.lock: the helper
    noted the child when it started, so the lock is provably its own."""
    lock = project.path / ".git/index.lock"
    notes = project.path / ".git/gtd-children"
    notes.mkdir(exist_ok=True)
    (notes / str(_dead_pid())).write_text("0\n")
    lock.write_text("")
    assert gtd_json(project, "cycle", "begin")["status"] == "task"
    assert not lock.exists()


def test_a_lock_on_the_helpers_private_index_left_by_its_killed_child_is_removed(
    project: Repo,
) -> None:
    """The revert keeps the work through a private index in .git/gtd/; a git child
    killed while it wrote that index leaves keep.index.lock (the kill harness met
    it): the next `begin` removes it as the helper's own and finishes the revert."""
    base = project.git("rev-parse", "HEAD").strip()
    gtd_json(project, "cycle", "begin")
    project.write("calc.py", "def add(a, b):\n    return None\n")
    crashed = run_cli(project, "cycle", "end", "--json", env={"GTD_CRASH_AT": "verdict"})
    assert crashed.code == 1, crashed.stdout
    notes = project.path / ".git/gtd-children"
    notes.mkdir(exist_ok=True)
    (notes / str(_dead_pid())).write_text("0\n")
    lock = project.path / ".git/gtd/keep.index.lock"
    lock.parent.mkdir(exist_ok=True)
    lock.write_text("")

    answer = gtd_json(project, "cycle", "begin")

    assert answer["status"] == "task", answer
    assert "reverted" in str(answer["recovered"]), answer
    assert not lock.exists()
    assert project.git("rev-parse", "HEAD").strip() == base
    assert "return None" in project.git("show", "refs/gtd/reverted/cycle-1:calc.py")


@pytest.mark.parametrize("note", ["child", "pending"])
def test_a_lock_its_killed_child_took_at_once_is_removed(project: Repo, note: str) -> None:
    """`git checkout-index` takes index.lock the moment it starts, within the
    kernel's coarse file clock of the helper's note (the kill harness met a lock
    stamped a few milliseconds before the note); and a helper killed between
    starting its child and naming it leaves only its pending note."""
    lock = project.path / ".git/index.lock"
    lock.write_text("")
    stamp = lock.stat().st_mtime_ns + 5_000_000  # the note taken 5 ms after the lock
    notes = project.path / ".git/gtd-children"
    notes.mkdir(exist_ok=True)
    name = str(_dead_pid()) if note == "child" else f"pending-{_dead_pid()}-0"
    (notes / name).write_text(f"{stamp}\n")
    assert gtd_json(project, "cycle", "begin")["status"] == "task"
    assert not lock.exists()
    assert not (notes / name).exists()


def _room_slots(repo: Repo) -> list[Path]:
    """The repository's clean-room slots, found by its git directory's digest."""
    rooms = Path(os.environ["XDG_CACHE_HOME"]) / "gtd" / "rooms"
    digest = hashlib.sha256(os.path.realpath(repo.path / ".git").encode()).hexdigest()
    return sorted(rooms.glob(f"*-{digest[:16]}/[0-9]"))


@pytest.mark.parametrize(
    "name",
    [
        "candidate.index.lock",
        pytest.param("compose.index.lock", marks=pytest.mark.slow),
        pytest.param("index.lock", marks=pytest.mark.slow),
    ],
)
def test_a_lock_a_killed_run_left_in_the_clean_room_is_removed(project: Repo, name: str) -> None:
    """A run killed while git wrote one of the room's private indexes (the
    candidate's, the judged trees', the checkout's) leaves its lock in the slot.
    The slot is held with flock, so no live run uses it: with no git child of
    the helper still running, the next run removes the lock and goes on."""
    assert gtd_json(project, "ratchet", "run")["passed"]
    slots = _room_slots(project)
    assert slots
    for slot in slots:
        (slot / name).write_text("")
    assert gtd_json(project, "ratchet", "run")["passed"]
    assert not (slots[0] / name).exists()  # the slot the run took
    gtd_json(project, "cycle", "begin")
    good_work(project)
    for slot in _room_slots(project):
        (slot / name).write_text("")
    answer = gtd_json(project, "cycle", "end")
    assert answer["status"] == "passed", answer


def test_a_room_a_killed_run_made_when_every_slot_was_held_is_swept(project: Repo) -> None:
    """With every slot held, a run judges in a room of its own (busy-*) and
    removes it; killed, it leaves it behind. The next run that finds every slot
    held sweeps such rooms whose lock is free, and leaves a young one alone."""
    import fcntl

    assert gtd_json(project, "ratchet", "run")["passed"]
    base = _room_slots(project)[0].parent
    holds = []
    for number in range(4):
        (base / str(number)).mkdir(exist_ok=True)
        handle = open(base / str(number) / "lock", "a")  # noqa: SIM115
        fcntl.flock(handle, fcntl.LOCK_EX)
        holds.append(handle)
    try:
        dead, young = base / "busy-dead", base / "busy-young"
        for room in (dead, young):
            (room / "tree").mkdir(parents=True)
            (room / "tree" / "big.bin").write_bytes(b"x" * 1000)
        old = time.time() - 3600
        os.utime(dead, (old, old))
        assert gtd_json(project, "ratchet", "run")["passed"]
        # The dead room is swept, the young one kept, the run's own removed.
        assert sorted(room.name for room in base.glob("busy-*")) == ["busy-young"]
    finally:
        for handle in holds:
            handle.close()


@pytest.mark.slow  # it waits out the 5 s a run gives a live git child
def test_a_clean_room_lock_is_kept_while_a_git_child_may_still_hold_it(project: Repo) -> None:
    """A killed helper's git child can outlive it by a moment: while a git child
    the helper noted is alive, a lock in the slot may be that child's, and stays."""
    assert gtd_json(project, "ratchet", "run")["passed"]
    lock = _room_slots(project)[0] / "candidate.index.lock"
    lock.write_text("")
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        notes = project.path / ".git/gtd-children"
        notes.mkdir(exist_ok=True)
        (notes / str(alive.pid)).write_text("0\n")
        res = run_gtd(project.path, "ratchet", "run", "--json")
        assert res.code != 0, res.stdout
        assert str(lock) in res.stdout + res.stderr
        assert lock.exists()
    finally:
        alive.kill()
        alive.wait()
    assert gtd_json(project, "ratchet", "run")["passed"]  # the child is gone: removed
    assert not lock.exists()


def test_a_git_lock_that_is_not_the_helpers_is_named_never_removed(project: Repo) -> None:
    lock = project.path / ".git/index.lock"
    gtd_json(project, "cycle", "begin")
    good_work(project)
    lock.write_text("")  # another git process, or a person's
    answer = gtd_json(project, "cycle", "end")
    assert answer["status"] == "halted", answer
    assert str(lock) in str(answer["reason"])
    assert lock.exists()
    lock.unlink()  # the person's fix
    after = gtd_json(project, "cycle", "begin")
    assert after["status"] == "task", after


@pytest.mark.parametrize("held", [False, True], ids=["older", "held-open"])
def test_a_forged_child_note_never_has_a_persons_lock_removed(project: Repo, held: bool) -> None:
    """An agent writes a note that claims a dead git child of the helper started
    at time 0: the helper must not take a person's lock for that child's. A lock
    older than the note itself is not the child's (the note's change time
    bounds the start it claims); one a running process holds open is live,
    whatever the note says, even when taken after the note."""
    children = project.path / ".git/gtd-children"
    children.mkdir(exist_ok=True)
    lock = project.path / ".git/index.lock"
    holder = None
    if held:
        (children / str(_dead_pid())).write_text("0\n")
        time.sleep(0.05)
        lock.write_text("a person's git holds this\n")
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys, time; f = open(sys.argv[1]); time.sleep(60)",
                str(lock),
            ]
        )
        time.sleep(0.5)  # the holder has it open
    else:
        lock.write_text("a person's git left this\n")
        os.utime(lock, ns=(time.time_ns() - 5_000_000_000,) * 2)  # made before the note
        (children / str(_dead_pid())).write_text("0\n")
    try:
        res = run_gtd(project.path, "cycle", "begin", "--json")
        assert lock.exists(), f"begin removed a lock the helper did not take: {res.stdout}"
        assert lock.read_text().startswith("a person's git")
    finally:
        if holder is not None:
            holder.kill()
            holder.wait()


# Each form of damage stays in the quick loop once: `garbage` here, the header with
# no entries in the test below; the other form of each runs in the slow set.
@pytest.mark.parametrize(
    "damage", [b"garbage", pytest.param(b"DIRC" + bytes(40), marks=pytest.mark.slow)]
)
def test_a_damaged_index_is_named_with_its_fix(project: Repo, damage: bytes) -> None:
    """An index git cannot read (an agent wrote over it, a crash mid-write by
    another tool): every command says which file and how to rebuild it, and
    nothing else is changed; the person's fix lets the loop go on."""
    index = project.path / ".git/index"
    index.write_bytes(damage)
    res = run_gtd(project.path, "cycle", "begin")
    assert res.code == 1, res.stdout
    assert "git cannot read its index (.git/index)" in res.stderr, res.stderr
    assert "git read-tree HEAD" in res.stderr
    assert index.read_bytes() == damage  # not the helper's to replace
    project.git("read-tree", "HEAD")  # the person's fix
    assert gtd_json(project, "cycle", "begin")["status"] == "task"


@pytest.mark.parametrize(
    "damage", [pytest.param(b"garbage", marks=pytest.mark.slow), b"DIRC" + bytes(40)]
)
def test_an_index_damaged_during_a_cycle_is_rebuilt_and_the_cycle_reverted(
    project: Repo, damage: bytes
) -> None:
    """Between `begin` (which refuses staged work: the index then held the base
    commit's tree) and `end`, the index became unreadable: the cycle's doing.
    `end` rebuilds it from the base, keeps the damaged file aside, reverts the
    cycle saying why, and the loop goes on without a person."""
    gtd_json(project, "cycle", "begin")
    good_work(project)
    (project.path / ".git/index").write_bytes(damage)
    answer = gtd_json(project, "cycle", "end")
    assert answer["status"] == "reverted", answer
    assert "git's index damaged during the cycle (.git/index)" in str(answer["reason"])
    aside = project.path / ".git/gtd/damaged-index/cycle-1"
    assert aside.read_bytes() == damage  # kept, never deleted
    kept = project.git("show", "refs/gtd/reverted/cycle-1:tests/test_mul.py")
    assert kept == MUL_TEST  # the work is in the kept ref
    assert project.status() == ""
    again = gtd_json(project, "cycle", "begin")
    assert again["status"] == "task", again
    good_work(project)
    assert gtd_json(project, "cycle", "end")["status"] == "passed"


# -- a nested repository the cycle made -------------------------------------------------


# The quick loop keeps the batching with 300 files and the system's tar; the slow
# variant adds a file larger than a pack and a tar that fails.
@pytest.mark.parametrize(
    ("tar", "count"), [("system", 300), pytest.param("failing", 1500, marks=pytest.mark.slow)]
)
def test_a_large_nested_repository_is_kept_whole_by_few_git_processes(
    project: Repo, tmp_path: Path, tar: str, count: int
) -> None:
    """An agent that clones a project into the tree: the revert keeps every file
    of it (kinds, modes and names git cannot take by path included) and the whole
    folder as an archive (by the system's tar, or Python's where that fails),
    hashing the files in one git process, not one each."""
    gtd_json(project, "cycle", "begin")
    project.write("calc.py", "def add(a, b):\n    return a - b\n")  # the tests fail
    nested = project.path / "vendor/big"
    files = {f"pkg{i % 10}/m{i}.py": f"value = {i}\n" for i in range(count)}
    for rel, text in files.items():
        project.write(f"vendor/big/{rel}", text)
    project.write("vendor/big/run.sh", "#!/bin/sh\necho run\n").chmod(0o755)
    os.symlink("pkg0/m0.py", nested / "first.py")
    os.symlink("pkg1", nested / "second")
    os.mkfifo(nested / "fifo")
    large = os.urandom(33 << 20 if tar == "failing" else 16)  # over a pack: git reads it
    (nested / "large.bin").write_bytes(large)
    (nested / "line\nbreak.txt").write_text("a name with a line break\n")
    (nested / os.fsdecode(b"caf\xe9.txt")).write_text("latin-1 name\n")
    subprocess.run(["git", "init", "-q"], cwd=nested, check=True)
    subprocess.run(["git", "add", "-A"], cwd=nested, check=True)
    subprocess.run(
        ["git", "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "v"],
        cwd=nested,
        check=True,
    )
    trace = tmp_path / "git-trace"
    env = {"GIT_TRACE": str(trace)}
    if tar == "failing":
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        (bin_dir / "tar").write_text("#!/bin/sh\nexit 2\n")
        (bin_dir / "tar").chmod(0o755)
        env["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    answer = gtd_json(project, "cycle", "end", env=env)
    assert answer["status"] == "reverted", answer
    assert not nested.exists()
    kept = str(answer["kept"])

    listing = os.fsdecode(  # a name that is not UTF-8 among them
        subprocess.run(
            ["git", "ls-tree", "-r", "-z", kept, "--", "vendor/big"],
            cwd=project.path,
            capture_output=True,
            check=True,
        ).stdout
    )
    entries = {}
    for record in listing.split("\0"):
        if record:
            meta, _, path = record.partition("\t")
            mode, _, oid = meta.split(" ")
            entries[path.removeprefix("vendor/big/")] = (mode, oid)
    for rel in ("pkg3/m13.py", f"pkg9/m{count - 1}.py"):
        assert project.git("cat-file", "-p", entries[rel][1]) == files[rel]
    assert len([rel for rel in entries if rel.startswith("pkg")]) == len(files)
    assert entries["run.sh"][0] == "100755"
    assert entries["pkg0/m0.py"][0] == "100644"
    assert entries["first.py"][0] == entries["second"][0] == "120000"
    assert project.git("cat-file", "-p", entries["second"][1]) == "pkg1"
    assert project.git("cat-file", "-p", entries["line\nbreak.txt"][1]).startswith("a name")
    assert "fifo" not in entries
    size = project.git("cat-file", "-s", entries["large.bin"][1]).strip()
    assert size == str(len(large))
    assert entries["large.bin"][1] == hashlib.sha1(b"blob %d\0" % len(large) + large).hexdigest()
    assert (
        project.git("cat-file", "-p", entries[os.fsdecode(b"caf\xe9.txt")][1]) == "latin-1 name\n"
    )

    archive = subprocess.run(
        ["git", "cat-file", "blob", f"{kept}:.gtd-kept/vendor/big.tar"],
        cwd=project.path,
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as unpacked:
        names = set(unpacked.getnames())
    assert {"big/.git/HEAD", "big/pkg3/m13.py", "big/second", "big/fifo"} <= names

    calls = [line for line in trace.read_text().splitlines() if "built-in: git" in line]
    assert len([line for line in calls if "fast-import" in line]) == 1
    assert len(calls) < 100, len(calls)  # with one `hash-object` a file: over `count`
    assert gtd_json(project, "cycle", "begin")["status"] == "task"


# -- numbers too long to read -----------------------------------------------------------


def test_a_five_thousand_digit_number_in_the_config_is_an_error_with_its_line(
    project: Repo,
) -> None:
    project.write(".deepflow/config.yaml", "circuit_breaker_threshold: " + "9" * 5000 + "\n")
    project.commit_all("a huge threshold")
    res = run_gtd(project.path, "cycle", "begin")
    assert res.code == 1
    assert ".deepflow/config.yaml:1: a number is too long to read" in res.stderr
    assert "Traceback" not in res.stderr


def test_a_five_thousand_digit_number_in_an_imported_memory_is_an_error(repo: Repo) -> None:
    repo.write("calc.py", "x = 1\n")
    repo.write("PLAN.md", "- [ ] **T1**: a\n")
    repo.commit_all("initial")
    (repo.path / ".deepflow").mkdir()
    (repo.path / ".deepflow/auto-memory.yaml").write_text(
        "consecutive_reverts:\n  T1: " + "9" * 5000 + "\n"
    )
    res = run_gtd(repo.path, "auto", "setup")
    assert "Traceback" not in res.stderr + res.stdout
    assert ".deepflow/auto-memory.yaml" in res.stderr + res.stdout


# -- a repository this user cannot write -----------------------------------------------


def _as_other_user() -> list[str] | None:
    """Permission bits stop root from nothing: as root, run the helper as `nobody`."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]


def test_a_read_only_git_directory_is_a_clear_error_that_changes_nothing(
    project: Repo, tmp_path: Path
) -> None:
    prefix = _as_other_user()
    if prefix is None:
        pytest.skip("running as root without setpriv: cannot make .git read-only for the helper")
    gtd_json(project, "cycle", "begin")
    good_work(project)
    home = tmp_path / "other-home"
    cache = tmp_path / "other-cache"
    home.mkdir()
    cache.mkdir()
    opened: list[tuple[Path, int]] = []
    if prefix:
        subprocess.run(["chown", "-R", "65534:65534", str(project.path), str(home), str(cache)])
        for folder in [tmp_path, *tmp_path.parents]:  # let `nobody` reach the repository
            mode = folder.stat().st_mode & 0o777
            if not mode & 0o001:
                opened.append((folder, mode))
                folder.chmod(mode | 0o001)
    subprocess.run(["chmod", "-R", "a-w", str(project.path / ".git")])
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(cache)}
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    try:
        res = subprocess.run(
            [*prefix, sys.executable, "-m", "gtd", "cycle", "end"],
            cwd=project.path,
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(project.path / ".git")])
        for folder, mode in opened:
            folder.chmod(mode)
        if prefix:
            subprocess.run(["chown", "-R", f"{os.getuid()}:{os.getgid()}", str(project.path)])
    assert res.returncode == 1, res.stdout + res.stderr
    assert "git cannot write to the repository" in res.stderr
    assert "writable" in res.stderr
    assert "Traceback" not in res.stderr
    answer = gtd_json(project, "cycle", "end")  # writable again: the cycle is judged
    assert answer["status"] == "passed", answer


@pytest.mark.parametrize("command", ["write-tree", "read-tree", "add", "update-ref"])
def test_a_git_child_that_may_lock_is_noted_while_it_runs(
    project: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """What lets a killed child's lock be removed: the note exists the whole time
    the child runs (a `git write-tree` killed in a revert's private index left its
    lock unnoted once, and CI's kill trials stalled on it)."""
    from gtd.git import Git

    real = shutil.which("git")
    assert real is not None
    seen = tmp_path / "seen"
    notes = project.path / ".git/gtd-children"
    wrapper = tmp_path / "bin" / "git"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nls "{notes}" > "{seen}" 2>/dev/null\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    args = {
        "write-tree": ["write-tree"],
        "read-tree": ["read-tree", "HEAD"],
        "add": ["add", "-A"],
        "update-ref": ["update-ref", "refs/gtd/probe", "HEAD"],
    }[command]
    result = Git(project.path, hardened=True).call(*args)
    assert result.returncode == 0, result.stderr
    assert seen.read_text().split(), f"no note while `git {command}` ran"
    assert not any(notes.iterdir()), "the note outlived the child"
