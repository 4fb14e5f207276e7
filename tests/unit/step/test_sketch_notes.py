"""Which files of a human's sketch the grilling prompt asks the agent to fold into
the plan and delete (gtd.step.prompts.sketch_notes, notes_step). Pure."""

from __future__ import annotations

import pytest

from gtd.step.prompts import notes_step, sketch_notes


@pytest.mark.parametrize(
    ("added", "notes"),
    [
        (["IDEA.md"], ["IDEA.md"]),
        (["notes/idea.txt", "calc.py"], ["notes/idea.txt"]),
        (["README.md", "CHANGELOG.md", "LICENSE.txt", "docs/api.md"], []),
        ([".gtd/TODO.md", "src/app.py", "tests/test_app.py"], []),
        (["design.rst", "plan.markdown"], ["design.rst", "plan.markdown"]),
    ],
)
def test_notes_are_text_files_that_are_not_the_projects_own(
    added: list[str], notes: list[str]
) -> None:
    assert sketch_notes(added) == notes


def test_the_step_names_each_note() -> None:
    assert notes_step([]) == ""
    assert notes_step(["IDEA.md", "notes.txt"]) == (
        "5. `IDEA.md`, `notes.txt` only describe the request: carry what they say into "
        "`.gtd/TODO.md`, then delete them; an unchanged note is left out of the "
        "squashed commit. If one is documentation the project keeps, move it under `docs/`."
    )
