"""Merging gtd's sandbox block into a person's Claude Code settings and taking it
out again: whatever the person had is exactly as it was, keys, values and list
entries alike, and a value they changed in between is theirs and stays."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gtd.auto.sandbox import EXCLUDED, merge, unmerge

BLOCK: dict[str, Any] = {
    "enabled": True,
    "autoAllowBashIfSandboxed": True,
    "failIfUnavailable": True,
    "excludedCommands": list(EXCLUDED),
    "filesystem": {"denyWrite": ["/r/.git", "/r/tests/test_calc.py"]},
}

PERSONS: list[dict[str, Any]] = [
    {},
    {"permissions": {"allow": ["Bash(npm test:*)"]}},
    {"sandbox": {"enabled": False, "excludedCommands": ["docker:*"]}},
    {"sandbox": {"filesystem": {"denyWrite": ["/r/.git", "~/.ssh"], "allowWrite": ["/x"]}}},
    {"sandbox": {"network": {"allowedDomains": ["pypi.org"]}}, "env": {"A": "1"}},
    {"sandbox": {"autoAllowBashIfSandboxed": False, "filesystem": {}}},
    {"sandbox": {"excludedCommands": "not a list"}},
]


def test_every_person_shape_comes_back_exactly() -> None:
    for person in PERSONS:
        merged, leaves = merge(person, BLOCK)
        assert merged["sandbox"]["enabled"] is True
        assert set(EXCLUDED) <= set(merged["sandbox"]["excludedCommands"])
        assert "/r/tests/test_calc.py" in merged["sandbox"]["filesystem"]["denyWrite"]
        # the record survives a round trip through its JSON file
        leaves = json.loads(json.dumps(leaves))
        assert unmerge(merged, leaves) == person, person


def test_a_list_entry_the_person_had_is_not_taken_out() -> None:
    person = {"sandbox": {"filesystem": {"denyWrite": ["/r/.git"]}}}
    merged, leaves = merge(person, BLOCK)
    assert merged["sandbox"]["filesystem"]["denyWrite"].count("/r/.git") == 1
    assert unmerge(merged, leaves) == person


def test_what_the_person_changed_meanwhile_stays_theirs() -> None:
    merged, leaves = merge({"model": "opus"}, BLOCK)
    merged["sandbox"]["enabled"] = False  # the person turned it off by hand
    merged["sandbox"]["excludedCommands"].append("make:*")
    merged["theme"] = "dark"
    out = unmerge(merged, leaves)
    assert out == {
        "model": "opus",
        "theme": "dark",
        "sandbox": {"enabled": False, "excludedCommands": ["make:*"]},
    }


def test_a_value_the_person_had_comes_back() -> None:
    person = {"sandbox": {"enabled": False, "failIfUnavailable": False}}
    merged, leaves = merge(person, BLOCK)
    assert merged["sandbox"]["failIfUnavailable"] is True
    assert unmerge(merged, leaves) == person


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
_keys = st.sampled_from(["sandbox", "enabled", "filesystem", "denyWrite", "excludedCommands", "x"])


@given(st.dictionaries(_keys, _json | st.dictionaries(_keys, _json), max_size=4))
def test_any_settings_round_trip(person: dict[str, Any]) -> None:
    merged, leaves = merge(person, BLOCK)
    assert unmerge(merged, json.loads(json.dumps(leaves))) == person


def test_a_block_merged_at_the_top_comes_out_exactly() -> None:
    """The user settings' key (gtd.auto.user_settings) is merged at the top,
    beside the person's own permissions."""
    person = {"permissions": {"allow": ["Bash(make:*)"]}, "theme": "dark"}
    block = {"permissions": {"denyInsteadOfPrompting": True}}
    merged, leaves = merge(person, block, ())
    assert merged["permissions"] == {"allow": ["Bash(make:*)"], "denyInsteadOfPrompting": True}
    assert unmerge(merged, leaves) == person
    none, leaves = merge({}, block, ())
    assert unmerge(none, leaves) == {}
