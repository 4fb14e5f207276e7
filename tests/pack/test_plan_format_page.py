"""PLAN.md's format has one text: docs/plan-format.md, the page a person reads. The
plan-format skill (the planner's copy) is that page under the skill's frontmatter,
word for word; the page's list of note fields is the one `gtd plan check` accepts,
and its example passes the real check and picks the task the page says."""

from __future__ import annotations

import re
from pathlib import Path

from gtd.auto import plan_fields
from tests.conftest import Repo, run_gtd

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "plan-format.md"
SKILL = ROOT / "skills" / "plan-format" / "SKILL.md"


def test_the_skill_is_the_page_under_its_frontmatter() -> None:
    skill = SKILL.read_text(encoding="utf-8")
    assert skill.startswith("---\nname: plan-format\n")
    body = skill.split("\n---\n", 1)[1]
    assert body == PAGE.read_text(encoding="utf-8"), (
        "skills/plan-format/SKILL.md differs from docs/plan-format.md: edit the page, "
        "then copy it below the skill's frontmatter"
    )


def test_the_page_lists_the_note_fields_the_check_accepts() -> None:
    text = PAGE.read_text(encoding="utf-8")
    found = re.search(r"accepts these notes \([^)]*\): ([^.]+)\.", text)
    assert found, "docs/plan-format.md no longer lists the note fields"
    listed = [name.strip() for name in found.group(1).split(",")]
    assert listed == list(plan_fields.NOTES)


def test_the_pages_example_passes_the_real_check(repo: Repo) -> None:
    text = PAGE.read_text(encoding="utf-8")
    example = text.split("```markdown\n", 1)[1].split("\n```", 1)[0]
    repo.write("PLAN.md", example + "\n")
    check = run_gtd(repo.path, "plan", "check")
    assert check.code == 0, check.stdout + check.stderr
    said = re.search(r"Here (T\d+) runs next", text)
    assert said, "the page no longer says which task runs next"
    assert run_gtd(repo.path, "plan", "next", "--json").json["task"]["id"] == said.group(1)


def test_the_readme_sends_a_reader_to_the_page() -> None:
    """Every place the README speaks of PLAN.md's format links the page, and no
    other page is named as its home."""
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    spots = re.findall(r"(?:PLAN\.md's format|its format)[^;]*?\)", readme)
    assert len(spots) >= 2, spots
    for spot in spots:
        assert "[docs/plan-format.md](docs/plan-format.md)" in spot, spot
