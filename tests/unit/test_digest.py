"""gtd.digest gives hashlib's SHA-256 digests, whole and in parts."""

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


def test_a_digest_does_not_load_openssl() -> None:
    # The reason the module exists: hashlib's import loads libcrypto (~4 ms a run).
    code = (
        "import sys; from gtd import digest; digest.sha256(b'x'); print('_hashlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
