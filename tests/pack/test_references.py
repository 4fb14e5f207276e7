"""Every pointer into the project's documents resolves: ``docs/X.md, "Section"`` in
code and comments, ``README "Section"``, and markdown links ``X.md#anchor`` in the
docs name a heading that exists. The design notes the project started from are
not in the repository, so nothing may cite them (``DESIGN §n``)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    *(ROOT / "helper").rglob("*.py"),
    *(ROOT / "scripts").rglob("*"),
    *(ROOT / "tests").rglob("*.py"),
    ROOT / "pyproject.toml",
    ROOT / "install.py",
]
DOCS = [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]

# `docs/step-mode.md, "Config"` (one or more sections: `"A" and "B"`).
SECTION_REF = re.compile(r'((?:docs/)?[\w-]+\.md), ((?:"[^"\n]+"(?:,? and |, )?)+)')
README_REF = re.compile(r'README "([^"\n]+)"')
DESIGN_REF = re.compile(r"\bDESIGN(?:\.md)?\s*§|\bDESIGN\.md\b")
LINK = re.compile(r"\]\(([\w./-]+\.md)#([^)\s]+)\)")


def _headings(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)  # code blocks hold no headings
    return {m.group(1).strip() for m in re.finditer(r"^#+ (.+)$", text, re.M)}


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to -."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, IsADirectoryError):
        return ""


def _sources() -> list[Path]:
    here = Path(__file__).resolve()  # this file's own examples are not references
    return [p for p in SOURCES if p.is_file() and "__pycache__" not in p.parts and p != here]


def test_section_references_name_existing_headings() -> None:
    broken = []
    for source in _sources():
        text = " ".join(_text(source).split())  # a reference may wrap across lines
        for match in SECTION_REF.finditer(text):
            name, sections = match.group(1), re.findall(r'"([^"]+)"', match.group(2))
            doc = ROOT / name if name.startswith("docs/") or name == "README.md" else None
            if doc is None or not doc.is_file():
                broken.append((source.name, name, "not a document of the repository"))
                continue
            broken += [
                (source.name, name, section)
                for section in sections
                if section not in _headings(doc)
            ]
        for match in README_REF.finditer(text):
            if match.group(1) not in _headings(ROOT / "README.md"):
                broken.append((source.name, "README.md", match.group(1)))
        if DESIGN_REF.search(text):
            broken.append((source.name, "DESIGN", "the design notes are not in the repository"))
    assert not broken


def test_links_between_docs_name_existing_anchors() -> None:
    broken = []
    for doc in DOCS:
        for target, anchor in LINK.findall(doc.read_text(encoding="utf-8")):
            path = (doc.parent / target).resolve()
            slugs = {_slug(h) for h in _headings(path)} if path.is_file() else set()
            if anchor not in slugs:
                broken.append((doc.name, target, anchor))
    assert not broken


# `tests/redteam/test_links.py::test_legit_link_inside_the_repository` in a table row.
TEST_REF = re.compile(r"`(tests/[\w/]+\.py)::(test_\w+)")


def _threat_rows() -> list[str]:
    text = (ROOT / "docs" / "threat-model.md").read_text(encoding="utf-8")
    return [ln for ln in text.splitlines() if ln.startswith("| ") and "---" not in ln][1:]


def test_the_threat_models_table_names_tests_that_exist() -> None:
    """Each row's test is a test function of that file, so a renamed or deleted
    test cannot leave a class of attack pointing at nothing."""
    rows = _threat_rows()
    assert len(rows) > 20
    missing = []
    for row in rows:
        for file, name in TEST_REF.findall(row):
            path = ROOT / file
            source = path.read_text(encoding="utf-8") if path.is_file() else ""
            if not re.search(rf"^def {name}\(", source, re.M):
                missing.append((file, name))
    assert not missing


def test_every_closed_class_in_the_threat_model_names_a_test() -> None:
    """A class called closed is closed by something a test shows; only an open
    route may name none."""
    unproved = [
        row.split(" | ")[0]
        for row in _threat_rows()
        if row.rstrip(" |").split(" | ")[-1].startswith("closed") and not TEST_REF.search(row)
    ]
    assert not unproved
