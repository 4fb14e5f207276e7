"""SHA-256 hex digests, without loading OpenSSL on the way.

``import hashlib`` loads OpenSSL's libcrypto to offer every algorithm it has:
~4 ms, more than the digests a ratchet run takes together, and paid on every run
(the clean room's name is a digest of the repository's path). CPython's own
SHA-256 module gives the same digests and loads in well under a millisecond; its
name changed in 3.12, and an interpreter built without it falls back to hashlib.
"""

from __future__ import annotations

import functools

TYPE_CHECKING = False  # typing's own to the type checker (see gtd.hints)
if TYPE_CHECKING:
    from typing import Any, Protocol

    class Hash(Protocol):
        def update(self, data: bytes, /) -> None: ...
        def hexdigest(self) -> str: ...


@functools.cache
def _sha256() -> Any:
    try:
        from _sha2 import sha256  # type: ignore[import-not-found]  # CPython 3.12 and later
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found]  # 3.11
        except ImportError:
            from hashlib import sha256
    return sha256


@functools.cache
def _sha1() -> Any:
    try:
        from _sha1 import sha1  # type: ignore[import-not-found]
    except ImportError:
        from hashlib import sha1
    return sha1


def blob_hash(size: int, length: int) -> Hash:
    """A hash object to feed a blob's ``size`` bytes: their ``hexdigest`` is the id
    git gives that blob in a repository whose ids are ``length`` hex digits long
    (40: SHA-1, 64: SHA-256)."""
    hash_object: Hash = (_sha1() if length == 40 else _sha256())(b"blob %d\0" % size)
    return hash_object


def sha256(data: bytes = b"") -> Hash:
    """A SHA-256 hash object (``update``, ``hexdigest``), as hashlib's."""
    hash_object: Hash = _sha256()(data)
    return hash_object


def raw(data: bytes, length: int) -> bytes:
    """The digest of ``data`` git's object format of ``length``-byte ids uses:
    SHA-1 (20) or SHA-256 (32), as bytes (an index file's trailing checksum)."""
    made: bytes = (_sha1() if length == 20 else _sha256())(data).digest()
    return made
