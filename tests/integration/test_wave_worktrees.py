"""The helper's own worktrees for a wave (gtd.auto.cycle.worktrees), on real
repositories: made at a tip on a branch of the helper's, listed, and every one of
them removed, whatever a kill left, while a person's worktrees, branches and
uncommitted work stay exactly as they were. Kills are real: a subprocess stopped
at each named point, and at random moments during the checkout."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gtd.auto.cycle import worktrees
from gtd.errors import RepoError
from gtd.git import Git
from tests.conftest import Repo


@pytest.fixture
def person(repo: Repo, tmp_path: Path) -> tuple[Repo, Repo]:
    """A repository with a few commits, and the person's own worktree on their
    branch `feature`, with an uncommitted file in it."""
    repo.write("app.py", "x = 1\n")
    repo.write("tests/test_app.py", "def test_x():\n    assert True\n")
    repo.commit_all("first")
    repo.write("app.py", "x = 2\n")
    repo.commit_all("second")
    theirs = Repo(tmp_path / "theirs")
    repo.git("worktree", "add", "-q", "-b", "feature", str(theirs.path))
    theirs.write("notes.txt", "mine, uncommitted\n")
    return repo, theirs


def _git(repo: Repo) -> Git:
    return Git(repo.path, hardened=True)


def _people(repo: Repo) -> tuple[str, str, str]:
    """What of the person's must never change: their refs (the helper's own aside),
    their worktrees as git lists them, and the main tree's status."""
    refs = repo.git("for-each-ref", "--format=%(objectname) %(refname)")
    mine = "\n".join(line for line in refs.splitlines() if " refs/gtd/" not in line)
    listed = repo.git("worktree", "list", "--porcelain")
    theirs = "\n\n".join(b for b in listed.split("\n\n") if "/gtd/waves/" not in b)
    return mine, theirs, repo.status()


def _assert_nothing_left(repo: Repo) -> None:
    git = _git(repo)
    assert worktrees.listing(git) == []
    assert git.refs("refs/gtd/wave/") == []
    assert "/gtd/waves/" not in repo.git("worktree", "list", "--porcelain")
    admin = Path(repo.git("rev-parse", "--git-common-dir").strip())
    admin = admin if admin.is_absolute() else repo.path / admin
    for entry in (admin / "worktrees").iterdir() if (admin / "worktrees").is_dir() else ():
        gitdir = (entry / "gitdir").read_text() if (entry / "gitdir").exists() else ""
        assert "/gtd/waves/" not in gitdir, entry
        locked = (entry / "locked").read_text() if (entry / "locked").exists() else ""
        assert locked != worktrees.reason(git), entry
        assert os.listdir(entry), entry  # an empty entry is a killed add's
    home = worktrees.home(git)
    assert not home.exists() or os.listdir(home) == []


def test_a_task_gets_a_checkout_of_the_tip_on_a_branch_of_the_helpers(
    person: tuple[Repo, Repo],
) -> None:
    repo, _ = person
    before = _people(repo)
    first = repo.git("rev-parse", "HEAD~1").strip()
    git = _git(repo)
    place = worktrees.create(git, "T3", first)
    assert place.ref == "refs/gtd/wave/T3"
    assert git.rev(place.ref) == first
    assert (place.path / "app.py").read_text() == "x = 1\n"  # the tip asked for, not HEAD
    assert place.path.parent == worktrees.home(git)
    # In the helper's cache folder, outside the person's tree and git's folder
    # (which Claude Code's sandbox denies whole), keyed like the clean rooms.
    cache = Path(os.environ["XDG_CACHE_HOME"])
    assert place.path.parent.parent.parent == cache / "gtd" / "waves"
    assert place.path.parent.name == "main"
    assert place.path.parent.parent.name.startswith(f"{repo.path.name}-")
    assert not worktrees.owned(git, repo.path / ".git")
    assert repo.path not in place.path.parents
    assert worktrees.listing(git) == [place]
    # Locked, with the loop's reason: a person's prune leaves it.
    listed = repo.git("worktree", "list", "--porcelain")
    assert "locked gtd-wave main" in listed
    repo.git("worktree", "prune")
    assert worktrees.listing(git) == [place]
    # Nothing of the person's moved: no branch, no status line, the same worktrees.
    assert _people(repo) == before
    assert "T3" not in repo.git("branch", "--all")
    assert worktrees.owned(git, place.path / "app.py")
    assert not worktrees.owned(git, repo.path)


def test_work_in_a_checkout_stays_there(person: tuple[Repo, Repo]) -> None:
    repo, _ = person
    before = _people(repo)
    place = worktrees.create(_git(repo), "T1", "HEAD")
    (place.path / "app.py").write_text("x = 3\n")
    (place.path / "new.py").write_text("y = 1\n")
    subprocess.run(["git", "add", "-A"], cwd=place.path, check=True)
    assert _people(repo) == before  # the main tree's status too
    assert (repo.path / "app.py").read_text() == "x = 2\n"


def test_remove_all_takes_every_one_and_nothing_of_the_persons(
    person: tuple[Repo, Repo], tmp_path: Path
) -> None:
    repo, theirs = person
    # A person's worktree whose folder they deleted: its entry is theirs to prune.
    gone = Repo(tmp_path / "gone")
    repo.git("worktree", "add", "-q", "--detach", str(gone.path))
    subprocess.run(["rm", "-rf", str(gone.path)], check=True)
    # And one whose name looks like the helper's, elsewhere.
    lookalike = tmp_path / f"{worktrees.PREFIX}T1"
    repo.git("worktree", "add", "-q", "-b", "gtd-wave-T1", str(lookalike))
    before = _people(repo)
    git = _git(repo)
    for task in ("T1", "T2", "T5"):
        worktrees.create(git, task, "HEAD")
    (worktrees.home(git) / f"{worktrees.PREFIX}T2" / "work.py").write_text("z\n")
    removed = worktrees.remove_all(git)
    assert sum(line.startswith("worktree ") for line in removed) == 3
    assert sum(line.startswith("branch ") for line in removed) == 3
    _assert_nothing_left(repo)
    assert _people(repo) == before
    assert (theirs.path / "notes.txt").read_text() == "mine, uncommitted\n"
    assert (lookalike / "app.py").exists()
    assert "prunable" in repo.git("worktree", "list", "--porcelain")  # theirs, left
    assert worktrees.remove_all(git) == []  # idempotent
    assert worktrees.create(git, "T1", "HEAD").task == "T1"  # and the names are free again


def test_a_leftover_is_refused_until_removed(person: tuple[Repo, Repo]) -> None:
    repo, _ = person
    git = _git(repo)
    worktrees.create(git, "T1", "HEAD")
    with pytest.raises(RepoError, match="left from an earlier run"):
        worktrees.create(git, "T1", "HEAD")
    worktrees.remove_all(git)
    git.update_refs([("refs/gtd/wave/T1", repo.git("rev-parse", "HEAD").strip(), "")])
    with pytest.raises(RepoError, match="left from an earlier run"):
        worktrees.create(git, "T1", "HEAD")


@pytest.mark.parametrize("task", ["", "../x", "T1/..", "-T1", "a b", "T1\n"])
def test_a_task_id_that_is_not_one_path_component_is_refused(
    person: tuple[Repo, Repo], task: str
) -> None:
    repo, _ = person
    with pytest.raises(ValueError, match="not a task id"):
        worktrees.create(_git(repo), task, "HEAD")
    _assert_nothing_left(repo)


def test_a_tip_that_is_no_commit_is_refused(person: tuple[Repo, Repo]) -> None:
    repo, _ = person
    with pytest.raises(RepoError, match="no commit"):
        worktrees.create(_git(repo), "T1", "0" * 40)
    _assert_nothing_left(repo)


def _admin(repo: Repo) -> Path:
    return repo.path / ".git" / "worktrees"


def test_debris_of_every_shape_is_removed(person: tuple[Repo, Repo]) -> None:
    """What kills leave: a checkout whose folder went (entry only), a checkout git
    has no entry for, a branch without a checkout, an entry with only its lock,
    an empty entry, a file in the loop's folder."""
    repo, _ = person
    before = _people(repo)
    git = _git(repo)
    home = worktrees.home(git)
    a = worktrees.create(git, "T1", "HEAD")
    subprocess.run(["rm", "-rf", str(a.path)], check=True)
    b = worktrees.create(git, "T2", "HEAD")
    entry_b = next(e for e in _admin(repo).iterdir() if e.name.startswith(f"{worktrees.PREFIX}T2"))
    subprocess.run(["rm", "-rf", str(entry_b)], check=True)
    git.update_refs([("refs/gtd/wave/T9", repo.git("rev-parse", "HEAD").strip(), "")])
    lock_only = _admin(repo) / f"{worktrees.PREFIX}T4"
    lock_only.mkdir()
    (lock_only / "locked").write_text(worktrees.reason(git))
    (_admin(repo) / f"{worktrees.PREFIX}T6").mkdir()
    cut = _admin(repo) / f"{worktrees.PREFIX}T7"  # killed while git wrote its lock
    cut.mkdir()
    (cut / "locked").write_text("")
    # A person's `git worktree add` killed as early, of a folder named like ours:
    # git's own word in the lock, so it is theirs to prune.
    early = _admin(repo) / f"{worktrees.PREFIX}T8"
    early.mkdir()
    (early / "locked").write_text("initializing")
    (home / "stray.txt").write_text("?")
    assert b.path.exists()
    worktrees.remove_all(git)
    _assert_nothing_left(repo)
    assert not b.path.exists()
    assert (early / "locked").read_text() == "initializing"
    subprocess.run(["rm", "-rf", str(early)], check=True)
    assert _people(repo) == before
    assert repo.git("worktree", "list", "--porcelain").count("worktree ") == 2


def test_a_forged_entry_never_leads_the_removal_into_a_persons_folder(
    person: tuple[Repo, Repo],
) -> None:
    """An entry locked with the loop's reason whose gitdir names the person's
    worktree: the entry goes, their folder stays."""
    repo, theirs = person
    git = _git(repo)
    worktrees.create(git, "T1", "HEAD")
    theirs_entry = next(e for e in _admin(repo).iterdir() if e.name == "theirs")
    (theirs_entry / "locked").write_text(worktrees.reason(git))
    worktrees.remove_all(git)
    assert (theirs.path / "notes.txt").read_text() == "mine, uncommitted\n"
    assert (theirs.path / "app.py").exists()


def test_each_loop_removes_only_its_own(person: tuple[Repo, Repo], tmp_path: Path) -> None:
    """A linked worktree runs a loop of its own: its waves are named by its id,
    and neither loop's cleanup touches the other's."""
    repo, theirs = person
    main, linked = _git(repo), Git(theirs.path, hardened=True)
    ours = worktrees.create(main, "T1", "HEAD")
    other = worktrees.create(linked, "T1", "HEAD")
    assert other.ref.startswith("refs/gtd/worktrees/theirs/wave/")
    assert other.path.parent.name == "theirs"
    assert worktrees.listing(main) == [ours]
    assert worktrees.listing(linked) == [other]
    worktrees.remove_all(main)
    assert worktrees.listing(main) == []
    assert worktrees.listing(linked) == [other]
    assert (other.path / "app.py").exists()
    assert linked.rev(other.ref) is not None
    worktrees.remove_all(linked)
    assert worktrees.listing(linked) == []
    assert (theirs.path / "notes.txt").exists()


# -- kills -----------------------------------------------------------------------------

_CREATE = (
    "import sys; from pathlib import Path; from gtd.git import Git; "
    "from gtd.auto.cycle import worktrees; "
    "worktrees.create(Git(Path(sys.argv[1]), hardened=True), 'T1', 'HEAD')"
)


def _spawn(root: Path, crash_at: str | None = None) -> subprocess.Popen[bytes]:
    env = {**os.environ}
    env.pop("GTD_CRASH_AT", None)
    if crash_at:
        env["GTD_CRASH_AT"] = crash_at
    return subprocess.Popen(
        [sys.executable, "-c", _CREATE, str(root)],
        env=env,
        start_new_session=True,  # as the helper's own children run (gtd.proc)
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize("point", ["wave-branch", "wave-checkout"])
def test_a_kill_at_each_point_of_creation_is_cleaned(person: tuple[Repo, Repo], point: str) -> None:
    repo, theirs = person
    before = _people(repo)
    child = _spawn(repo.path, point)
    _, err = child.communicate(timeout=120)
    assert child.returncode == -signal.SIGKILL, err.decode()
    git = _git(repo)
    assert git.refs("refs/gtd/wave/") == ["refs/gtd/wave/T1"]  # it did get that far
    worktrees.remove_all(git)
    _assert_nothing_left(repo)
    assert _people(repo) == before
    assert (theirs.path / "notes.txt").read_text() == "mine, uncommitted\n"
    assert (worktrees.create(git, "T1", "HEAD").path / "app.py").exists()


# Slow: a harness (eight kills at random moments of a 1,500-file checkout,
# ~15 s). The quick loop keeps the same guarantee at each named point of the
# creation (test_a_kill_at_each_point_of_creation_is_cleaned).
@pytest.mark.slow
def test_kills_at_random_moments_of_the_checkout_are_cleaned(
    person: tuple[Repo, Repo],
) -> None:
    """The helper killed (`kill -9` of it alone) anywhere between its start and
    a finished checkout of a tree of 1,500 files. Its git child, in a session of
    its own, runs on: the cleanup waits for it. Every time, it leaves nothing of
    the helper's and all of the person's."""
    repo, theirs = person
    for i in range(1500):
        repo.write(f"pkg/m{i // 100}/f{i}.py", f"v = {i}\n" * 20)
    repo.commit_all("many files")
    before = _people(repo)
    # How long a whole creation takes here, to spread the kills over it.
    started = time.monotonic()
    whole = _spawn(repo.path)
    assert whole.wait(timeout=120) == 0, whole.stderr.read().decode() if whole.stderr else ""
    span = time.monotonic() - started
    git = _git(repo)
    assert worktrees.listing(git)
    worktrees.remove_all(git)
    rng = random.Random(46)
    midway = 0
    for _ in range(8):
        child = _spawn(repo.path)
        time.sleep(rng.uniform(0.3 * span, span))
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        killed = child.wait(timeout=60) == -signal.SIGKILL
        midway += killed and bool(git.refs("refs/gtd/wave/"))
        worktrees.remove_all(git)
        _assert_nothing_left(repo)
        time.sleep(0.3)  # nothing of a git still running turns up later either
        _assert_nothing_left(repo)
        assert _people(repo) == before
        assert (theirs.path / "notes.txt").read_text() == "mine, uncommitted\n"
    # Some kills landed after the branch and before the end (else the loop
    # proved nothing).
    assert midway, "no kill landed during the creation"
    place = worktrees.create(git, "T1", "HEAD")
    assert (place.path / "pkg" / "m14" / "f1499.py").exists()


@pytest.mark.parametrize("level", [2, 1, 0])
def test_a_link_planted_for_the_loops_folder_is_never_followed(
    person: tuple[Repo, Repo], tmp_path: Path, level: int
) -> None:
    """A link in place of one of the helper's folders (the waves home, the
    repository's, the loop's), to a person's folder that holds what looks like
    a wave's checkout and entry: the cleanup takes the link away and deletes
    nothing where it leads."""
    repo, _ = person
    git = _git(repo)
    home = worktrees.home(git)
    planted = [home, home.parent, home.parent.parent][level]
    target = tmp_path / "precious"
    inside = target / os.path.relpath(home, planted)
    (inside / f"{worktrees.PREFIX}T1").mkdir(parents=True)
    (inside / f"{worktrees.PREFIX}T1" / "keep.txt").write_text("mine\n")
    (inside / "loose.txt").write_text("mine too\n")
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.symlink_to(target, target_is_directory=True)
    entry = _admin(repo) / "planted"
    entry.mkdir(parents=True)
    (entry / "gitdir").write_text(str(inside / f"{worktrees.PREFIX}T1" / ".git") + "\n")
    removed = worktrees.remove_all(git)
    assert (inside / f"{worktrees.PREFIX}T1" / "keep.txt").read_text() == "mine\n"
    assert (inside / "loose.txt").read_text() == "mine too\n"
    assert not planted.is_symlink()
    assert any("no folder of the helper's" in line for line in removed)
    assert entry.exists()  # not the loop's: its gitdir leads elsewhere now
    assert worktrees.create(git, "T1", "HEAD").path.is_dir()
