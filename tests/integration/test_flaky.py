"""A baseline-passing test that fails once and passes when run again, through the
real CLI: the cycle passes, the answer and the sealed record name it as flaky, and
the advanced baseline keeps it as passing (so it stays protected)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Repo
from tests.integration.calc_project import MUL, gtd_json, make_project

FLAKY = (
    "import os\n\n\ndef test_sometimes():\n"
    "    trigger = os.environ.get('GTD_TEST_FLAKY', '')\n"
    "    if trigger and os.path.exists(trigger):\n"
    "        os.remove(trigger)\n"
    "        raise AssertionError('failed once')\n"
)
FLAKY_ID = "tests/test_flaky.py::test_sometimes"


def test_a_flaky_failure_passes_the_cycle_and_is_reported(repo: Repo, tmp_path: Path) -> None:
    repo.write("tests/test_flaky.py", FLAKY)
    make_project(repo)
    trigger = tmp_path / "fail-once"
    trigger.write_text("")
    assert gtd_json(repo, "cycle", "begin")["status"] == "task"
    repo.write("calc.py", MUL)
    answer = gtd_json(repo, "cycle", "end", env={"GTD_TEST_FLAKY": str(trigger)})
    assert not trigger.exists()  # it did fail once
    assert answer["status"] == "passed", answer
    assert answer["flaky"] == [FLAKY_ID]
    records = [
        json.loads(x) for x in repo.git("show", "refs/gtd/state:records.jsonl").split("\n") if x
    ]
    assert records[-1]["flaky"] == [FLAKY_ID]
    sealed = json.loads(repo.git("show", "refs/gtd/state:snapshot.json"))
    assert sealed["baseline"]["tests"][FLAKY_ID] == "passed"
