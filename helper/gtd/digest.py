"""SHA-256 digests, and the ids git gives blobs and objects (SHA-1 or SHA-256
repositories), from hashlib. hashlib is imported on the first digest, not with
this module: a `cycle begin` that answers busy loads the modules that hash but
never hashes (docs/dependencies.md, "Start-up tricks")."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Protocol

    class Hash(Protocol):
        def update(self, data: bytes, /) -> None: ...
        def hexdigest(self) -> str: ...


def blob_hash(size: int, length: int) -> Hash:
    """A hash object to feed a blob's ``size`` bytes: their ``hexdigest`` is the id
    git gives that blob in a repository whose ids are ``length`` hex digits long
    (40: SHA-1, 64: SHA-256)."""
    import hashlib

    header = b"blob %d\0" % size
    return hashlib.sha1(header) if length == 40 else hashlib.sha256(header)


def sha256(data: bytes = b"") -> Hash:
    """A SHA-256 hash object (``update``, ``hexdigest``)."""
    import hashlib

    return hashlib.sha256(data)


def raw(data: bytes, length: int) -> bytes:
    """The digest of ``data`` git's object format of ``length``-byte ids uses:
    SHA-1 (20) or SHA-256 (32), as bytes (an index file's trailing checksum)."""
    import hashlib

    return (hashlib.sha1 if length == 20 else hashlib.sha256)(data).digest()
