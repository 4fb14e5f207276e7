"""What a headless cycle cost (docs/cost.md): `gtd loop --agent CMD` reads the
agent's own usage line (or Claude Code's JSON result: tests/e2e/test_cost.py),
adds the reviewer's, prices it and seals it with the cycle; an agent that says
nothing leaves the tokens unknown, said so in the report."""

from __future__ import annotations

import json
import sys

import pytest
import yaml

from gtd.auto import state
from gtd.auto.memory import CycleRecord
from gtd.git import Git
from tests.conftest import Repo, run_gtd
from tests.integration.calc_project import MUL, MUL_TEST, make_project

USAGE = {"input": 12000, "output": 800, "cache_write": 300, "cache_read": 40000}
REVIEW_USAGE = {"input": 3000, "output": 50, "cache_write": 0, "cache_read": 1000}
# claude-sonnet-4-5 at $3 / $15 / $3.75 / $0.3 per million tokens
AGENT_USD = (12000 * 3 + 800 * 15 + 300 * 3.75 + 40000 * 0.3) / 1e6
REVIEW_USD = (3000 * 3 + 50 * 15 + 1000 * 0.3) / 1e6

AGENT = f"""\
import json, sys
from pathlib import Path
brief = sys.stdin.read()
if "review-brief" in brief or "Verdict" in brief:
    print(json.dumps({{"gtd_usage": {{**{REVIEW_USAGE!r}, "model": "claude-sonnet-4-5"}}}}))
    print("Verdict: approve")
else:
    Path("calc.py").write_text({MUL!r})
    Path("tests/test_mul.py").write_text({MUL_TEST!r})
    print(json.dumps({{"gtd_usage": {{**{USAGE!r}, "model": "claude-sonnet-4-5"}}}}))
"""
SILENT_AGENT = f"""\
import sys
from pathlib import Path
sys.stdin.read()
Path("calc.py").write_text({MUL!r})
Path("tests/test_mul.py").write_text({MUL_TEST!r})
print("done")
"""


def loop(repo: Repo, source: str, config: str = "") -> None:
    make_project(repo, config_extra=config)
    script = repo.path.parent / "agent.py"
    script.write_text(source)
    res = run_gtd(repo.path, "loop", "--agent", f"{sys.executable} {script}", "--max-cycles", "1")
    assert res.code == 0, res.stderr
    assert res.stdout.startswith("cycle 1 T1 passed"), res.stdout


def sealed(repo: Repo) -> CycleRecord:
    found = [r for r in state.read(Git(repo.path)).records if isinstance(r, CycleRecord)]
    assert len(found) == 1
    return found[0]


def test_the_agents_usage_line_and_the_reviewers_are_sealed_with_the_cycle(repo: Repo) -> None:
    loop(repo, AGENT, "review:\n  agent: true\n")
    rec = sealed(repo)
    assert rec.review == "approve"
    assert rec.usage is not None
    assert rec.usage_review is not None
    assert rec.usage[:4] == tuple(
        a + b for a, b in zip(USAGE.values(), REVIEW_USAGE.values(), strict=True)
    )
    assert rec.usage.usd == pytest.approx(AGENT_USD + REVIEW_USD, abs=1e-6)
    assert rec.usage.models == ("claude-sonnet-4-5",)
    assert rec.usage_review[:4] == tuple(REVIEW_USAGE.values())
    assert rec.usage_tick is None
    mem = yaml.safe_load((repo.path / ".deepflow/auto-memory.yaml").read_text())
    assert mem["task_costs"]["T1"]["tokens"] == rec.usage.tokens
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    assert f"| {rec.usage.tokens:,} | ${AGENT_USD + REVIEW_USD:,.4f} |" in report
    assert "| Reviewer (in agent work) |" in report


def test_a_subscription_and_its_own_prices(repo: Repo) -> None:
    config = (
        "billing: subscription\n"
        "prices:\n  claude-sonnet-4-5: {input: 1, output: 1, cache_write: 1, cache_read: 1}\n"
    )
    loop(repo, AGENT, config)
    rec = sealed(repo)
    assert rec.usage is not None
    assert rec.usage.usd == pytest.approx(sum(USAGE.values()) / 1e6, abs=1e-6)
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    assert "| Tokens | Cost (API-equivalent) |" in report
    assert "| Total cost (API-equivalent) |" in report


def test_an_agent_that_reports_nothing_leaves_the_tokens_unknown(repo: Repo) -> None:
    loop(repo, SILENT_AGENT)
    assert sealed(repo).usage is None
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    assert "| Tokens | unknown: the harness reported none (docs/cost.md) |" in report
    assert "| Tokens | Cost |" not in report
    mem = yaml.safe_load((repo.path / ".deepflow/auto-memory.yaml").read_text())
    assert "task_costs" not in mem
    assert "tokens" not in mem["cycles"][0]


def test_an_unpriced_model_counts_its_tokens_with_no_cost(repo: Repo) -> None:
    line = json.dumps({"gtd_usage": {"input": 500, "output": 20, "model": "local-llm"}})
    loop(repo, SILENT_AGENT.replace('print("done")', f"print({line!r})"))
    rec = sealed(repo)
    assert rec.usage is not None
    assert (rec.usage.tokens, rec.usage.usd, rec.usage.models) == (520, None, ("local-llm",))
    report = (repo.path / ".deepflow/auto-report.md").read_text()
    assert "| Total cost | unknown for 520 tokens (no price for local-llm) |" in report


def test_prices_the_agent_writes_into_the_config_are_not_used(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The price table is the sealed config's: an agent that rewrites the live
    file to make its own run free changes nothing of what is recorded. (Run
    unfenced, GTD_SANDBOX=off: the fence would refuse the write itself.)"""
    free = "prices:\n  claude-sonnet-4-5: {input: 0, output: 0, cache_write: 0, cache_read: 0}\n"
    cheat = SILENT_AGENT.replace(
        'print("done")',
        f"config = Path('.deepflow/config.yaml')\n"
        f"config.write_text(config.read_text() + {free!r})\n"
        f"print({json.dumps({'gtd_usage': {**USAGE, 'model': 'claude-sonnet-4-5'}})!r})\n",
    )
    make_project(repo)
    script = repo.path.parent / "agent.py"
    script.write_text(cheat)
    monkeypatch.setenv("GTD_SANDBOX", "off")
    res = run_gtd(repo.path, "loop", "--agent", f"{sys.executable} {script}", "--max-cycles", "1")
    assert res.code in (0, 5), res.stderr
    log = (repo.path / ".deepflow/agent-logs/cycle-1.log").read_text()
    assert "exit 0\n" in log, log
    rec = sealed(repo)
    assert rec.usage is not None
    assert rec.usage.usd == pytest.approx(AGENT_USD, abs=1e-6)
