"""Tokens from Claude Code's transcripts (gtd.auto.transcripts): one count per
message id however many lines its blocks took, API errors and synthetic turns
left out, the cycle's window, and a long transcript read from its end."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gtd.auto import harness, transcripts
from gtd.auto.harness import _epoch
from gtd.auto.prices import Tokens


def entry(
    mid: str, at: str, *, model: str = "claude-opus-5-5", n: int = 100, **extra: object
) -> str:
    usage = {
        "input_tokens": n,
        "output_tokens": n // 10,
        "cache_creation_input_tokens": 7,
        "cache_read_input_tokens": 3 * n,
        "output_tokens_details": {"thinking_tokens": 0},
    }
    message = {"id": mid, "model": model, "role": "assistant", "usage": usage, "content": []}
    return json.dumps({"type": "assistant", "timestamp": at, "message": message, **extra})


T0 = "2026-01-15T10:00:00.000Z"
T1 = "2026-01-15T10:00:05.500Z"
T2 = "2026-01-15T10:00:09.000Z"


def test_a_message_written_as_several_lines_counts_once() -> None:
    lines = [entry("msg_1", T0), entry("msg_1", T0), entry("msg_1", T1), entry("msg_2", T1, n=10)]
    found = transcripts.messages(lines)
    assert sorted(found) == ["msg_1", "msg_2"]
    assert transcripts.tokens_by_model(found, 0) == {"claude-opus-5-5": Tokens(110, 11, 14, 330)}


def test_errors_synthetic_turns_and_other_lines_spend_nothing() -> None:
    lines = [
        entry("msg_1", T0),
        entry("msg_err", T0, isApiErrorMessage=True),
        entry("msg_syn", T0, model="<synthetic>"),
        json.dumps({"type": "user", "timestamp": T0, "message": {"content": "hi"}}),
        '{"type":"assistant","usage": cut off mid-wri',
        json.dumps({"type": "cost-state", "totalCostUSD": 3.2}),
    ]
    assert list(transcripts.messages(lines)) == ["msg_1"]


def test_the_window_takes_the_messages_written_in_it() -> None:
    found = transcripts.messages([entry("a", T0), entry("b", T1, n=10), entry("c", T2, n=1)])
    since, until = _epoch(T0) + 1, _epoch(T2) - 1
    assert transcripts.tokens_by_model(found, since, until) == {
        "claude-opus-5-5": Tokens(10, 1, 7, 30)
    }


def test_models_are_kept_apart() -> None:
    found = transcripts.messages([entry("a", T0), entry("b", T1, model="claude-haiku-4-5", n=10)])
    assert list(transcripts.tokens_by_model(found, 0)) == ["claude-opus-5-5", "claude-haiku-4-5"]


def test_a_long_transcript_is_read_back_to_the_window(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(transcripts, "_CHUNK", 1024)
    path = tmp_path / "s.jsonl"
    old = [entry(f"old{i}", T0) for i in range(200)]
    new = [entry(f"new{i}", T2) for i in range(30)]
    path.write_text("\n".join(old + new) + "\n")
    lines = transcripts.lines_since(path, _epoch(T1))
    got = transcripts.messages(lines)
    assert {k for k in got if k.startswith("new")} == {f"new{i}" for i in range(30)}
    assert len(lines) < len(old)  # it stopped once it was past the window
    # and the whole file when the window starts before it
    assert len(transcripts.lines_since(path, 0)) == 230


def test_the_session_files_and_their_agent_types(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-repo"
    sub = folder / "sess-1234" / "subagents"
    sub.mkdir(parents=True)
    (folder / "sess-1234.jsonl").write_text(entry("m", T0) + "\n")
    (sub / "agent-a1.jsonl").write_text(entry("i", T0) + "\n")
    (sub / "agent-a1.meta.json").write_text(json.dumps({"agentType": "gtd:implementer"}))
    (sub / "agent-a2.jsonl").write_text(entry("r", T0) + "\n")
    (sub / "agent-a2.meta.json").write_text(json.dumps({"agentType": "gtd:reviewer"}))
    (sub / "agent-old.jsonl").write_text(entry("o", T0) + "\n")
    os.utime(sub / "agent-old.jsonl", (1000, 1000))  # an earlier cycle's
    files = transcripts.session_files("sess-1234", 2000, tmp_path)
    assert files.main == folder / "sess-1234.jsonl"
    assert files.agents == (
        ("gtd:implementer", sub / "agent-a1.jsonl"),
        ("gtd:reviewer", sub / "agent-a2.jsonl"),
    )
    assert transcripts.session_files("other", 0, tmp_path) == transcripts.Files(None, ())
    assert transcripts.session_files("x", 0, tmp_path / "nowhere") == transcripts.Files(None, ())


def test_a_cycles_spending_splits_tick_implementer_and_reviewer(tmp_path: Path) -> None:
    """gtd.auto.cycle.spent over a session's files: the window keeps the earlier
    tick's last reply out, and each share is priced from the table."""
    from gtd.auto.config import AutoConfig
    from gtd.auto.cycle import spent

    folder = tmp_path / "projects" / "-repo"
    sub = folder / "sess-1234" / "subagents"
    sub.mkdir(parents=True)
    before, during = "2026-01-15T09:59:59.000Z", "2026-01-15T10:00:03.000Z"
    (folder / "sess-1234.jsonl").write_text(
        "\n".join([entry("prev", before, n=5000), entry("t1", during), entry("t1", during)])
    )
    (sub / "agent-i.jsonl").write_text(entry("i1", during, n=2000) + "\n")
    (sub / "agent-i.meta.json").write_text(json.dumps({"agentType": "gtd:implementer"}))
    (sub / "agent-r.jsonl").write_text(entry("r1", during, n=10) + "\n")
    (sub / "agent-r.meta.json").write_text(json.dumps({"agentType": "gtd:reviewer"}))
    since = _epoch("2026-01-15T10:00:00.000Z")
    got = spent.from_session("sess-1234", since, since + 60, AutoConfig(), tmp_path)
    assert got is not None
    assert got.total[:4] == (100 + 2000 + 10, 10 + 200 + 1, 21, 300 + 6000 + 30)
    assert got.tick is not None
    assert got.tick[:4] == (100, 10, 7, 300)
    assert got.review is not None
    assert got.review[:4] == (10, 1, 7, 30)
    tokens = got.total
    usd = (
        tokens.input * 4 + tokens.output * 20 + tokens.cache_write * 5 + tokens.cache_read * 0.2
    ) / 1e6
    assert got.total.usd == pytest.approx(usd, abs=1e-6)
    # no reviewer ran: no reviewer's share (not a zero one)
    (sub / "agent-r.jsonl").unlink()
    again = spent.from_session("sess-1234", since, since + 60, AutoConfig(), tmp_path)
    assert again is not None
    assert again.review is None
    assert spent.from_session("gone", since, since + 60, AutoConfig(), tmp_path) is None


def test_shares_add_up_to_the_whole() -> None:
    whole = {"claude-opus-5-5": Tokens(7, 3, 5, 101), "claude-haiku-4-5": Tokens(1, 0, 0, 2)}
    for n in (1, 2, 3, 5):
        parts = [transcripts.share(whole, n, i) for i in range(n)]
        assert transcripts.merged(*parts) == whole
        sizes = [sum(sum(t) for t in p.values()) for p in parts]
        assert max(sizes) - min(sizes) <= 8  # one token a count at most between shares
    assert transcripts.share(whole, 2, 0)["claude-opus-5-5"] == Tokens(4, 2, 3, 51)


def test_a_subagents_prompt_is_its_first_entry(tmp_path: Path) -> None:
    path = tmp_path / "agent-a.jsonl"
    first = {"type": "user", "message": {"role": "user", "content": "Read /x/T1-brief.md now."}}
    path.write_text(json.dumps(first) + "\n" + entry("m", T0) + "\n")
    assert harness.prompt(path) == "Read /x/T1-brief.md now."
    blocks = {"type": "user", "message": {"content": [{"type": "text", "text": "Read /y."}]}}
    path.write_text(json.dumps(blocks) + "\n")
    assert harness.prompt(path) == "Read /y."
    assert harness.prompt(tmp_path / "missing.jsonl") == ""
