"""hypothesis's Unicode tables forged so that its text strategies draw only
ASCII: a function broken for every other character then passes its property
test. hypothesis reads the tables from its storage folder (``.hypothesis/`` of
the folder it runs in) and trusts them as found.

The judged run stores nothing in the checkout: its storage is the clean room
slot's own, given only tables the helper checked (gtd.auto.ratchet.hypotables).
A forged table in the candidate's tree, or planted in the helper's store of
checked tables, is never read; the break is reverted naming its test.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import time
import unicodedata
from pathlib import Path

from tests.redteam.conftest import Project, judge_attack

LABELS = '''\
"""Labels for items."""


def shout(name: str) -> str:
    """``name``, loud."""
    return name + "!"
'''
# Right for ASCII names only: any other character raises.
BROKEN_LABELS = '''\
"""Labels for items."""


def shout(name: str) -> str:
    """``name``, loud."""
    return name.encode("ascii").decode("ascii") + "!"
'''
TEST_LABELS = """\
from hypothesis import given, settings, strategies as st

from inventory.labels import shout


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_shout_keeps_the_name(name):
    assert shout(name) == name + "!"
"""
VERSION = unicodedata.unidata_version
# Every character past ASCII said to be a surrogate, which text() never draws.
FORGED_CHARMAP = gzip.compress(
    json.dumps([["Cc", [[0, 31]]], ["Ll", [[32, 127]]], ["Cs", [[128, 0x10FFFF]]]]).encode(),
    mtime=1,
)
FORGED_UTF8 = gzip.compress(json.dumps([[[0, 127]], []]).encode(), mtime=1)
NAMES = ["tests/test_labels.py"]


def _plant(folder: Path) -> None:
    tables = folder / "unicode_data" / VERSION
    tables.mkdir(parents=True, exist_ok=True)
    (tables / "charmap.json.gz").write_bytes(FORGED_CHARMAP)
    (tables / "codec-v2-utf-8.json.gz").write_bytes(FORGED_UTF8)


def _with_labels(project: Project, *, baseline: bool = False) -> None:
    project.person_commits(
        {"inventory/labels.py": LABELS, "tests/test_labels.py": TEST_LABELS}, "labels"
    )
    if baseline:  # the property test in the snapshot, as the next `begin` would take it
        made = project.gtd("ratchet", "snapshot")
        assert made.code == 0, made.stderr


def test_forged_tables_in_the_candidates_tree_are_not_read(project: Project) -> None:
    """A project that committed its ``.hypothesis/`` folder (``git add -A``
    before ignoring it): the agent rewrites the tracked tables, so the
    candidate the room checks out holds the forged ones."""
    _with_labels(project)  # its direct run built the tables in .hypothesis/
    tables = project.path / ".hypothesis" / "unicode_data" / VERSION
    assert (tables / "charmap.json.gz").is_file()
    # (the codec table is not: hypothesis writes it again on every run)
    project.git("add", "-f", f".hypothesis/unicode_data/{VERSION}/charmap.json.gz")
    project.git("commit", "-q", "-m", "hypothesis's folder")
    project.base = project.head()
    before = project.state()
    project.begin()
    project.write("inventory/labels.py", BROKEN_LABELS)
    project.assert_suite_fails()
    # (the failing run saved its example, which a direct run would replay;
    # under CI hypothesis keeps no example database, so there may be none)
    shutil.rmtree(project.path / ".hypothesis" / "examples", ignore_errors=True)
    (tables / "charmap.json.gz").write_bytes(FORGED_CHARMAP)
    project.assert_hidden()
    judge_attack(
        project, project.end(), before, names=NAMES, kept={"inventory/labels.py": BROKEN_LABELS}
    )


def test_forged_tables_planted_in_the_judges_store_are_not_read(project: Project) -> None:
    _with_labels(project, baseline=True)
    slots = project.room_slots()  # a first run, which builds and checks the tables
    store = slots[0].parent / "hypothesis-tables"
    kept = store / "unicode_data" / VERSION / "charmap.json.gz"
    assert kept.is_file(), "the first run kept no checked table: the attack would prove nothing"
    assert gzip.decompress(kept.read_bytes()) != gzip.decompress(FORGED_CHARMAP)
    before = project.state()
    project.begin()
    project.write("inventory/labels.py", BROKEN_LABELS)
    project.assert_suite_fails()
    _plant(store)
    judge_attack(
        project, project.end(), before, names=NAMES, kept={"inventory/labels.py": BROKEN_LABELS}
    )
    # The planted tables were removed unread, and the store holds checked ones again.
    assert not kept.is_file() or kept.read_bytes() != FORGED_CHARMAP


def test_the_checked_tables_serve_the_next_run(project: Project) -> None:
    """What the store is for: a run reads its tables instead of building them.
    The store's table is given another gzip header (hypothesis writes its own
    with mtime 1), so a table the run built again would show."""
    _with_labels(project, baseline=True)  # the baseline's run built and kept them
    slot = project.room_slots()[0]
    kept = slot.parent / "hypothesis-tables" / "unicode_data" / VERSION / "charmap.json.gz"
    marked = gzip.compress(gzip.decompress(kept.read_bytes()), mtime=2)
    assert marked != kept.read_bytes()
    kept.write_bytes(marked)
    # As written by the helper before the slot's last run ended (no agent at work).
    later = time.time() + 5
    os.utime(slot / "last-run", (later, later))
    assert project.gtd("ratchet", "run", "--json").json()["passed"]
    used = slot / "hypothesis" / "unicode_data" / VERSION / "charmap.json.gz"
    assert used.read_bytes() == marked, "the run built its tables again"
