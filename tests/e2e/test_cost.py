"""What a cycle cost, through the real Claude Code CLI and the scripted model,
whose every answer carries known token counts (gtd.demo.model_server._usage).

In session, the cycle's tokens are the sum of what the model said it used in
that cycle's turns: the tick's own (from the request carrying the tick's command
to the one that ran the cycle's last `gtd cycle end`), the implementer's and the
reviewer's; its cost is the price table's arithmetic. Headless, `gtd loop` reads
the same from `claude -p --output-format json`'s result. The sealed records, the
memory file and the report say the same numbers (docs/cost.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gtd.auto import records, report, state
from gtd.auto.memory import CycleRecord
from gtd.demo.model_rules import implementer_rules, review_rules, role, rule, tick_rules
from gtd.demo.model_server import Exchange, ModelServer, Text, ToolUse, is_model_turn
from gtd.git import Git
from tests.e2e.harness import (
    assert_on_script,
    claude_env,
    make_project,
    memory,
    run_claude,
    run_loop,
)
from tests.e2e.test_auto_cycle import breaking_edits, good_edits
from tests.e2e.test_harness_failures import ONE_TASK

pytestmark = pytest.mark.slow

TICK = "/gtd:auto-cycle"
# Dollars per million tokens of the model Claude Code 2.1.332 asks for by default,
# as its catalog lists them (input, output, 5-minute cache write, cache read):
# written out here so the test checks the shipped table, not itself.
OPUS_5_5 = (4.0, 20.0, 5.0, 0.2)
KINDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def counts(exchanges: list[Exchange]) -> tuple[int, int, int, int]:
    used = [e.usage for e in exchanges if e.usage is not None and is_model_turn(e.request)]
    return tuple(sum(int(u[k]) for u in used) for k in KINDS)  # type: ignore[return-value]


def usd(tokens: tuple[int, ...]) -> float:
    return sum(n * p for n, p in zip(tokens, OPUS_5_5, strict=True)) / 1_000_000


def windows(server: ModelServer) -> dict[int, list[Exchange]]:
    """Each cycle's model turns: from its tick's first request to the request
    that ran its last `gtd cycle end --cycle N`, the subagents' between."""
    ex = server.exchanges
    ends: dict[int, int] = {}
    for i, e in enumerate(ex):
        for b in e.reply:
            if isinstance(b, ToolUse) and b.name == "Bash":
                words = str(b.input.get("command", "")).split()
                if words[:4] == ["gtd", "cycle", "end", "--cycle"]:
                    ends[int(words[4])] = i
    out: dict[int, list[Exchange]] = {}
    after = -1
    for cycle, last in sorted(ends.items()):
        start = next(
            i
            for i in range(after + 1, last + 1)
            if role(ex[i].request) == "main"
            and "<command-name>/gtd:auto-cycle</command-name>" in ex[i].request.last
        )
        out[cycle] = ex[start : last + 1]
        after = last
    return out


def sealed_cycles(repo: Path) -> dict[int, Any]:
    st = state.read(Git(repo))
    return {r.cycle: r for r in st.records if isinstance(r, CycleRecord)}


def test_in_session_each_cycle_costs_what_the_model_said(
    server: ModelServer, tmp_path: Path
) -> None:
    repo = make_project(tmp_path / "repo", config_extra="review:\n  agent: true\n")

    def edits(task: str, repo: Path) -> list[Any]:
        return good_edits(task, repo) if task == "T1" else breaking_edits(task, repo)

    server.script(
        *review_rules(repo, ["approve", "approve"]),
        *tick_rules(),
        *implementer_rules(repo, edits),
    )
    session = run_claude(server, repo, [TICK] * 2, base=tmp_path / "claude", persist=True)
    assert_on_script(server, session)
    assert {e.request.body.get("model") for e in server.exchanges} == {"claude-opus-5-5"}

    turns = windows(server)
    assert sorted(turns) == [1, 2]
    sealed = sealed_cycles(repo)
    mem = {c["cycle"]: c for c in memory(repo)["cycles"]}
    assert (mem[1]["status"], mem[2]["status"]) == ("passed", "reverted")
    text = (repo / ".deepflow/auto-report.md").read_text()
    for cycle, exchanges in turns.items():
        said = counts(exchanges)
        tick = counts([e for e in exchanges if role(e.request) == "main"])
        reviewer = counts([e for e in exchanges if role(e.request) == "reviewer"])
        assert all(said)
        assert all(tick)
        assert all(reviewer)
        rec = sealed[cycle]
        assert rec.usage is not None
        assert rec.usage_tick is not None
        assert rec.usage_review is not None
        assert (rec.usage.input, rec.usage.output, rec.usage.cache_write) == said[:3]
        assert rec.usage.cache_read == said[3]
        assert rec.usage.models == ("claude-opus-5-5",)
        assert rec.usage.usd == pytest.approx(usd(said), abs=1e-6)
        assert tuple(rec.usage_tick[:4]) == tick
        assert rec.usage_tick.usd == pytest.approx(usd(tick), abs=1e-6)
        assert tuple(rec.usage_review[:4]) == reviewer
        # the memory file and the report render the sealed numbers
        assert mem[cycle]["tokens"] == sum(said)
        # (an entry the file already held keeps its text: floats read back as text)
        assert float(mem[cycle]["usd"]) == pytest.approx(usd(said), abs=1e-6)
        row = next(x for x in text.splitlines() if x.startswith(f"| {cycle} | T{cycle} |"))
        assert row.endswith(f"| {sum(said):,} | ${usd(said):,.4f} |"), row
    # the tick's last answer (after `end`) belongs to no cycle: never counted twice
    both = counts(turns[1] + turns[2])
    assert sealed[1].usage.plus(sealed[2].usage)[:4] == both
    costs = memory(repo)["task_costs"]
    assert costs["T1"]["tokens"] == sum(counts(turns[1]))
    assert float(costs["T2"]["usd"]) == pytest.approx(usd(counts(turns[2])), abs=1e-6)
    assert "| Total cost |" in text
    assert "| Cost of reverted work |" in text
    assert "| Tick overhead vs agent work |" in text
    assert "## Cost Chart" in text
    assert "pie showData" in text

    # A report rebuilt from the sealed records alone shows the same rows.
    folded = records.fold(state.read(Git(repo)).records)
    again = report.render("again", folded, "2026-01-01T00:00:00Z")
    for cycle in turns:
        mine = next(x for x in text.splitlines() if x.startswith(f"| {cycle} | T{cycle} |"))
        theirs = next(x for x in again.splitlines() if x.startswith(f"| {cycle} | T{cycle} |"))
        assert mine.rsplit("|", 3)[1:] == theirs.rsplit("|", 3)[1:]


def test_headless_the_loop_reads_the_cost_from_claudes_json_result(
    server: ModelServer, tmp_path: Path
) -> None:
    repo = make_project(tmp_path / "repo", plan=ONE_TASK)
    server.script(
        rule("agent edits", [Text("Implementing."), *good_edits("T1", repo)], after="prompt"),
        rule("agent reports", [Text("Done.")], after="Write"),
    )
    env = claude_env(server, tmp_path / "claude")
    res = run_loop(repo, env)
    assert res.returncode == 0, res.stdout + res.stderr + server.describe()
    assert not server.off_script, server.describe()
    said = counts(server.exchanges)  # every request of the agent's run: one cycle
    assert all(said)
    rec = sealed_cycles(repo)[1]
    assert rec.status == "passed"
    assert rec.usage is not None
    assert tuple(rec.usage[:4]) == said
    assert rec.usage.usd == pytest.approx(usd(said), abs=1e-6)
    assert rec.usage_tick is None  # no main conversation of the loop's own
    text = (repo / ".deepflow/auto-report.md").read_text()
    row = next(x for x in text.splitlines() if x.startswith("| 1 | T1 |"))
    assert row.endswith(f"| {sum(said):,} | ${usd(said):,.4f} |"), row
