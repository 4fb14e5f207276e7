"""Git objects written by hand, as an agent would forge them: loose objects under
any id, whatever their bytes hash to (git trusts an object's name when it reads
one). Plain functions of the red-team tests; nothing of gtd is imported."""

from __future__ import annotations

import hashlib
import os
import zlib
from pathlib import Path

from tests.redteam.conftest import Project

Entry = tuple[str, str, str]  # (mode, name, oid); a folder's mode is "40000"


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def tree_id(data: bytes) -> str:
    return hashlib.sha1(b"tree %d\0" % len(data) + data).hexdigest()


def loose_path(p: Project, oid: str) -> Path:
    return p.path / ".git" / "objects" / oid[:2] / oid[2:]


def forge_loose(p: Project, oid: str, kind: str, data: bytes) -> Path:
    """Write the loose object ``oid`` holding ``data`` (of type ``kind``), whatever
    ``data`` hashes to."""
    path = loose_path(p, oid)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.chmod(0o644)
        path.unlink()
    path.write_bytes(zlib.compress(kind.encode() + b" %d\0" % len(data) + data))
    path.chmod(0o444)
    return path


def raw_tree(entries: list[Entry]) -> bytes:
    """A raw tree of (mode, name, oid) entries in git's order (a folder sorts as
    its name with a slash)."""

    def key(entry: Entry) -> bytes:
        mode, name, _ = entry
        return name.encode() + (b"/" if mode == "40000" else b"")

    return b"".join(
        mode.encode() + b" " + name.encode() + b"\0" + bytes.fromhex(oid)
        for mode, name, oid in sorted(entries, key=key)
    )


def true_blob(p: Project, data: bytes) -> str:
    oid = blob_id(data)
    forge_loose(p, oid, "blob", data)
    return oid


def a_tree(p: Project, entries: list[Entry]) -> str:
    data = raw_tree(entries)
    oid = tree_id(data)
    forge_loose(p, oid, "tree", data)  # a true object
    return oid


def forge_package_extra(p: Project, extra: list[Entry]) -> str:
    """The loose object of the tree id ``inventory/`` now hashes to (read from the
    working tree), rewritten to list ``extra`` entries besides its own: git checks
    the hash of a root tree it is named (it parses it as an object), never of a
    folder's tree it reaches from there, and `write-tree` keeps an existing
    object, so the candidate and the kept tree list them."""
    folder = p.path / "inventory"
    entries = [
        ("100644", name, blob_id((folder / name).read_bytes()))
        for name in sorted(os.listdir(folder))
        if name != "__pycache__"
    ]
    oid = tree_id(raw_tree(entries))
    forge_loose(p, oid, "tree", raw_tree(entries + extra))
    return oid
