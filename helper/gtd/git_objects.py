"""git objects made in memory: their ids, and a pack stream that one `git
unpack-objects` writes them from. A seal of the helper's state is a few blobs,
their tree and a commit: one git process for all of them instead of one apiece
(`hash-object` each blob, `mktree`, `commit-tree`), the same loose objects git
would have written, byte for byte."""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Sequence

# The kinds an object of the helper's may be, by their number in a pack.
_KINDS = {"commit": 1, "tree": 2, "blob": 3}


def algorithm(oid: str) -> str:
    """The hash a repository names its objects with, told by one of its ids."""
    return "sha256" if len(oid) == 64 else "sha1"


def object_id(kind: str, data: bytes, algo: str) -> str:
    """The id git gives an object of ``kind`` holding ``data``."""
    return hashlib.new(algo, b"%s %d\0%s" % (kind.encode(), len(data), data)).hexdigest()


def tree(entries: Sequence[tuple[str, str, str]]) -> bytes:
    """A tree object's content from (mode, name, oid) entries of blobs (names
    without '/', sorted as git sorts a tree of files: by their bytes)."""
    rows = sorted((n.encode("utf-8", "surrogateescape"), mode, oid) for mode, n, oid in entries)
    return b"".join(
        b"%s %s\0%s" % (mode.lstrip("0").encode(), name, bytes.fromhex(oid))
        for name, mode, oid in rows
    )


def commit(tree_id: str, parents: Sequence[str], ident: str, when: str, message: str) -> bytes:
    """A commit object's content, as `git commit-tree` writes it with ``ident``
    ("name <email>") as author and committer at ``when`` ("<epoch> <±hhmm>")."""
    head = [f"tree {tree_id}", *(f"parent {p}" for p in parents)]
    head += [f"author {ident} {when}", f"committer {ident} {when}"]
    return ("\n".join(head) + "\n\n" + message).encode("utf-8")


def pack(objects: Sequence[tuple[str, bytes]], algo: str) -> bytes:
    """A version 2 pack of (kind, content) objects, none a delta."""
    out = [b"PACK", struct.pack(">II", 2, len(objects))]
    for kind, data in objects:
        size = len(data)
        byte = (_KINDS[kind] << 4) | (size & 0x0F)
        size >>= 4
        header = bytearray()
        while size:
            header.append(byte | 0x80)
            byte, size = size & 0x7F, size >> 7
        header.append(byte)
        out += [bytes(header), zlib.compress(data, 1)]
    body = b"".join(out)
    return body + hashlib.new(algo, body).digest()
