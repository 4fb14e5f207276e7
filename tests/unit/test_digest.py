"""gtd.digest gives hashlib's digests, whole and in parts, and git's blob ids."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from gtd import digest


@pytest.mark.parametrize("data", [b"", b"abc", bytes(range(256)) * 300])
def test_the_same_digest_as_hashlib(data: bytes) -> None:
    assert digest.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()


def test_in_parts() -> None:
    hash_object = digest.sha256(b"first ")
    hash_object.update(b"second")
    assert hash_object.hexdigest() == hashlib.sha256(b"first second").hexdigest()


def test_hashlib_loads_on_the_first_digest_not_with_the_module() -> None:
    # A `cycle begin` that answers busy loads modules that hash but never hashes.
    code = (
        "import sys; from gtd import digest; print('hashlib' in sys.modules); "
        "digest.sha256(b'x'); print('hashlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


@pytest.mark.parametrize("length", [40, 64])
def test_blob_ids_are_gits(length: int) -> None:
    data = b"some bytes\n"
    hash_object = digest.blob_hash(len(data), length)
    hash_object.update(data)
    kind = hashlib.sha1 if length == 40 else hashlib.sha256
    assert hash_object.hexdigest() == kind(b"blob %d\0" % len(data) + data).hexdigest()
    assert digest.raw(data, length // 2) == kind(data).digest()
