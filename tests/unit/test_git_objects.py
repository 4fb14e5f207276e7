"""gtd.git_objects against git itself: the ids, the tree and the commit it makes
in memory are the ones `hash-object`, `mktree` and `commit-tree` write, and one
`unpack-objects` writes them all, in SHA-1 and SHA-256 repositories alike."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gtd import git_objects
from gtd.git import Git

WHEN = "1700000000 +0130"
IDENT = "gtd <gtd@localhost>"


def _git(repo: Path, *args: str, data: bytes | None = None, **env: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, input=data, capture_output=True, check=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(repo), **env},
    )  # fmt: skip
    return done.stdout.decode().strip()


def _repo(tmp_path: Path, algo: str) -> Path:
    repo = tmp_path / algo
    try:
        _git(tmp_path, "init", "-q", f"--object-format={algo}", str(repo))
    except subprocess.CalledProcessError:
        pytest.skip(f"this git makes no {algo} repository")
    return repo


@pytest.mark.parametrize("algo", ["sha1", "sha256"])
def test_a_seal_made_in_memory_is_what_git_makes(tmp_path: Path, algo: str) -> None:
    repo = _repo(tmp_path, algo)
    blobs = {"journal.json": b'{"cycle": 1}\n', "records.jsonl": b"", "b-\xc3\xa9.txt": b"x" * 5000}
    ours = {n: git_objects.object_id("blob", d, algo) for n, d in blobs.items()}
    theirs = {n: _git(repo, "hash-object", "-w", "--stdin", data=d) for n, d in blobs.items()}
    assert ours == theirs
    rows = [("100644", n, o) for n, o in ours.items()]
    tree = git_objects.tree(rows)
    listing = "".join(f"100644 blob {o}\t{n}\0" for _, n, o in rows).encode()
    made_tree = _git(repo, "mktree", "-z", data=listing)
    assert git_objects.object_id("tree", tree, algo) == made_tree
    dated = {
        "GIT_AUTHOR_NAME": "gtd", "GIT_AUTHOR_EMAIL": "gtd@localhost",
        "GIT_COMMITTER_NAME": "gtd", "GIT_COMMITTER_EMAIL": "gtd@localhost",
        "GIT_AUTHOR_DATE": WHEN, "GIT_COMMITTER_DATE": WHEN,
    }  # fmt: skip
    first = _git(repo, "commit-tree", made_tree, data=b"first\n", **dated)
    second = _git(repo, "commit-tree", made_tree, "-p", first, data=b"cycle 1: check\n", **dated)
    body = git_objects.commit(made_tree, [first], IDENT, WHEN, "cycle 1: check\n")
    assert git_objects.object_id("commit", body, algo) == second


@pytest.mark.parametrize("algo", ["sha1", "sha256"])
def test_one_unpack_writes_every_object_git_can_then_read(tmp_path: Path, algo: str) -> None:
    repo = _repo(tmp_path, algo)
    parent = _git(repo, "commit-tree", _git(repo, "mktree", data=b""), data=b"root\n",
                  GIT_AUTHOR_NAME="a", GIT_AUTHOR_EMAIL="a@b", GIT_COMMITTER_NAME="a",
                  GIT_COMMITTER_EMAIL="a@b")  # fmt: skip
    big = bytes(range(256)) * 300  # a size of several varint bytes, incompressible-ish
    blob_ids = [git_objects.object_id("blob", d, algo) for d in (b"a\n", big)]
    tree = git_objects.tree([("100644", "a", blob_ids[0]), ("100644", "big", blob_ids[1])])
    tree_id = git_objects.object_id("tree", tree, algo)
    body = git_objects.commit(tree_id, [parent], IDENT, WHEN, "seal\n")
    objects = [("blob", b"a\n"), ("blob", big), ("tree", tree), ("commit", body)]
    ids = Git(repo).write_objects(objects, algo)
    assert ids[:2] == blob_ids
    assert ids[2] == tree_id
    shown = subprocess.run(
        ["git", "cat-file", "blob", f"{ids[3]}:big"], cwd=repo, capture_output=True, check=True
    ).stdout
    assert shown == big
    assert _git(repo, "log", "--format=%an <%ae> %ad|%s", "--date=raw", ids[3]).splitlines()[0] == (
        f"gtd <gtd@localhost> {WHEN}|seal"
    )
    _git(repo, "update-ref", "refs/heads/main", ids[3])
    assert _git(repo, "fsck", "--strict", "--no-dangling") == ""


def test_an_object_of_no_known_kind_is_refused() -> None:
    with pytest.raises(KeyError):
        git_objects.pack([("tag-ish", b"x")], "sha1")
