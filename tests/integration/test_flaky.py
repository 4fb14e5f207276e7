"""A baseline-passing test that fails once and passes when run again, through the
real CLI: the cycle passes, the answer and the sealed record name it as flaky, and
the advanced baseline keeps it as passing (so it stays protected)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import Repo
from tests.integration.calc_project import MUL, gtd_json, make_project

# Fails once: it takes the one byte waiting in a named pipe the test fills (the
# judged tests may write nothing outside the clean room, the judge's box sees to
# it; reading a pipe is no write). Later runs find it empty, and pass.
FLAKY = (
    "import os\n\n\ndef test_sometimes():\n"
    "    trigger = os.environ.get('GTD_TEST_FLAKY', '')\n"
    "    if trigger and os.path.exists(trigger):\n"
    "        fd = os.open(trigger, os.O_RDONLY | os.O_NONBLOCK)\n"
    "        try:\n"
    "            if os.read(fd, 1) == b'f':\n"
    "                raise AssertionError('failed once')\n"
    "        except BlockingIOError:\n"
    "            pass\n"
    "        finally:\n"
    "            os.close(fd)\n"
)
FLAKY_ID = "tests/test_flaky.py::test_sometimes"


def test_a_flaky_failure_passes_the_cycle_and_is_reported(repo: Repo) -> None:
    repo.write("tests/test_flaky.py", FLAKY)
    make_project(repo, rerun_failures=None)  # the default count users get
    import os
    import tempfile

    # Outside /tmp: the judged tests' /tmp is a private one in the box.
    folder = Path(tempfile.mkdtemp(prefix="gtd-flaky-", dir="/var/tmp"))
    trigger = folder / "fail-once"
    os.mkfifo(trigger)
    held = os.open(trigger, os.O_RDWR | os.O_NONBLOCK)  # keeps the pipe open, and fills it
    try:
        os.write(held, b"f")
        assert gtd_json(repo, "cycle", "begin")["status"] == "task"
        repo.write("calc.py", MUL)
        answer = gtd_json(repo, "cycle", "end", env={"GTD_TEST_FLAKY": str(trigger)})
        with pytest.raises(BlockingIOError):
            os.read(held, 1)  # the byte was taken: it did fail once
    finally:
        os.close(held)
        shutil.rmtree(folder, ignore_errors=True)
    assert answer["status"] == "passed", answer
    assert answer["flaky"] == [FLAKY_ID]
    records = [
        json.loads(x) for x in repo.git("show", "refs/gtd/state:records.jsonl").split("\n") if x
    ]
    assert records[-1]["flaky"] == [FLAKY_ID]
    sealed = json.loads(repo.git("show", "refs/gtd/state:snapshot.json"))
    assert sealed["baseline"]["tests"][FLAKY_ID] == "passed"
