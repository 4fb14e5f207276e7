"""Whether a human review turn is feedback or approval (gtd 2.x's
"substantive" rule of the human review gate).

A ``gtd(human): review`` turn is *substantive* (feedback) when it changes any file
besides ``.gtd/REVIEW.md``, or when its REVIEW.md change is more than checkbox flips.
Deleting REVIEW.md, an empty turn and a checkbox-only edit all approve.

Checkbox-only: the removed and added lines pair up in order (so there are as many of
each); a pair that is identical once a trailing ``\\r`` is stripped is ignored (line
endings are not an edit); every other pair must be two checkbox lines — ``^(\\s*-
\\[)([xX ])\\](.*)$`` — with the same prefix and text, differing only in the mark;
and there must be at least one such flip.
"""

from __future__ import annotations

import re

from gtd.step.errors import StepError
from gtd.step.events import Commit, LineDiff
from gtd.step.steering import REVIEW
from gtd.step.subjects import Turn

__all__ = ["CHECKBOX", "is_checkbox_only", "is_substantive", "needs_review_diff"]

CHECKBOX = re.compile(r"^(\s*- \[)([xX ])\](.*)$")


def is_checkbox_only(diff: LineDiff) -> bool:
    if len(diff.removed) != len(diff.added):
        return False
    flips = 0
    for old_line, new_line in zip(diff.removed, diff.added, strict=True):
        old, new = old_line.rstrip("\r"), new_line.rstrip("\r")
        if old == new:
            continue
        before, after = CHECKBOX.match(old), CHECKBOX.match(new)
        if before is None or after is None:
            return False
        if before.group(1) != after.group(1) or before.group(3) != after.group(3):
            return False
        flips += 1
    return flips > 0


def needs_review_diff(commit: Commit) -> bool:
    """True when classifying ``commit`` as HEAD needs :attr:`Commit.review_diff`."""
    return commit.parsed == Turn("human", "review") and commit.status_of(REVIEW) == "M"


def is_substantive(commit: Commit) -> bool:
    """For a ``gtd(human): review`` turn: does it carry feedback?"""
    if any(change.path != REVIEW for change in commit.change_list):
        return True
    status = commit.status_of(REVIEW)
    if status is None or status == "D":
        return False
    if status == "A":
        # The record was committed at `gtd: awaiting review`; a turn that creates it
        # anew carries content the human wrote, not checkbox flips.
        return True
    if commit.review_diff is None:
        raise StepError(
            "input",
            f"HEAD {commit.sha[:12]} changes {REVIEW} but its changed lines were not "
            "gathered (review_diff is missing)",
        )
    return not is_checkbox_only(commit.review_diff)
