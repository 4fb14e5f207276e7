"""hypothesis's cache of the project's literals forged so that a bug behind one
of them is never tried. hypothesis draws some examples from the constants of
the project's own modules (``48611`` below), which it finds by parsing
each module's source and caches in ``constants/<sha1 of the source>`` of its
storage folder, read back as found: a cache entry for the broken module that
leaves its literal out hides the bug from a property test.

The judged run's storage is the clean room slot's own, emptied before every
run, and the helper gives it only the Unicode tables it checked
(gtd.auto.ratchet.hypotables): no ``constants/`` entry is carried from one run
to the next, whoever wrote it. Checking one would cost what making it does (the
module parsed by the project's hypothesis), so none is kept; the judged run
parses the project's modules every time (~0.05 s for attrs' 19).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.redteam.conftest import Project, judge_attack

LABELS = '''\
"""Labels for items."""


def shout(count: int) -> int:
    """One more than ``count``."""
    return count + 1
'''
# Wrong for one count only, a literal of the module: hypothesis finds it by
# drawing the module's constants (derandomized below: found on every run).
BROKEN_LABELS = '''\
"""Labels for items."""


def shout(count: int) -> int:
    """One more than ``count``."""
    if count == 48611:
        return count
    return count + 1
'''
TEST_LABELS = """\
from hypothesis import given, settings, strategies as st

from inventory.labels import shout


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.integers())
def test_shout_counts_one_more(count):
    assert shout(count) == count + 1
"""
NAMES = ["tests/test_labels.py"]


def _forge(storage: Path) -> None:
    """The broken module's cache entry, without its literal."""
    key = hashlib.sha1(BROKEN_LABELS.encode()).hexdigest()[:16]
    entry = storage / "constants" / key
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.write_text("[1]\n")


def _break_and_forge(project: Project, storage: Path, proof: Path) -> None:
    project.begin()
    project.write("inventory/labels.py", BROKEN_LABELS)
    project.assert_suite_fails()
    # Proof that the entry hides the bug: a direct run given a storage folder
    # that holds it (and no saved example of the failure) passes.
    _forge(proof)
    project.assert_hidden(env={"HYPOTHESIS_STORAGE_DIRECTORY": str(proof)})
    _forge(storage)


def test_forged_constants_in_the_judged_runs_storage_are_not_read(
    project: Project, tmp_path: Path
) -> None:
    """Planted where the judged run keeps its storage, as an earlier run of the
    candidate's code could have written it."""
    project.person_commits(
        {"inventory/labels.py": LABELS, "tests/test_labels.py": TEST_LABELS}, "labels"
    )
    assert project.gtd("ratchet", "snapshot").code == 0
    slot = project.room_slots()[0]
    assert (slot / "hypothesis").is_dir(), "no storage of the slot: the attack proves nothing"
    before = project.state()
    _break_and_forge(project, slot / "hypothesis", tmp_path / "proof")
    judge_attack(
        project, project.end(), before, names=NAMES, kept={"inventory/labels.py": BROKEN_LABELS}
    )


def test_forged_constants_in_the_candidates_tree_are_not_read(
    project: Project, tmp_path: Path
) -> None:
    """A project that committed its ``.hypothesis/`` folder, with an entry for
    the broken module in it: the candidate's tree, checked out in the room,
    holds the forged entry, which a direct run in the tree reads."""
    project.person_commits(
        {"inventory/labels.py": LABELS, "tests/test_labels.py": TEST_LABELS}, "labels"
    )
    _forge(project.path / ".hypothesis")
    project.git("add", "-f", ".hypothesis/constants")
    project.git("commit", "-q", "-m", "hypothesis's folder")
    project.base = project.head()
    before = project.state()
    project.begin()
    project.write("inventory/labels.py", BROKEN_LABELS)
    clean = {"HYPOTHESIS_STORAGE_DIRECTORY": str(tmp_path / "clean")}
    assert project.run_suite(clean).returncode != 0, "the break did not fail the suite"
    project.assert_hidden()  # the tree's own storage: the forged entry
    judge_attack(
        project, project.end(), before, names=NAMES, kept={"inventory/labels.py": BROKEN_LABELS}
    )
