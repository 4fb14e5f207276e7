"""What each task of a wave cost (docs/cost.md, docs/parallel.md): the windows of
a wave's cycles overlap, so each task is charged its own implementer (the
subagent whose prompt names its brief), an even share of the tick's turns that
launched the wave, and the tick's turns and reviewer after the task before it;
the wave's tasks add up to the transcripts' total, counted once. Real git
repositories, the real CLI run by a stand-in Claude Code client (its session
found through /proc), transcripts laid out as Claude Code 2.1.332 writes them
(tests/e2e/test_cost.py checks that layout against the pinned CLI)."""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from gtd.auto import state
from gtd.auto.memory import CycleRecord
from gtd.git import Git
from tests.conftest import Repo
from tests.integration.session_client import Client
from tests.integration.test_waves import MUL, MUL_TEST, SUB, SUB_TEST, project, write

SESSION = "5e55e55e-0000-4000-8000-00000000a11e"
MODEL = "claude-opus-5-5"


def stamp() -> str:
    """Now, as Claude Code stamps an entry (milliseconds, UTC)."""
    time.sleep(0.01)  # every message at its own millisecond, after what came before
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def said(mid: str, counts: tuple[int, int, int, int]) -> str:
    usage = dict(
        zip(
            ("input_tokens", "output_tokens", "cache_creation_input_tokens",
             "cache_read_input_tokens"),
            counts,
            strict=True,
        )
    )  # fmt: skip
    message = {"id": mid, "model": MODEL, "role": "assistant", "usage": usage, "content": []}
    return json.dumps({"type": "assistant", "timestamp": stamp(), "message": message})


class Transcripts:
    """A session's transcripts under a Claude config folder."""

    def __init__(self, base: Path, repo: Path) -> None:
        folder = base / "projects" / str(repo).replace("/", "-").replace(".", "-")
        self.main = folder / f"{SESSION}.jsonl"
        self.subagents = folder / SESSION / "subagents"
        self.subagents.mkdir(parents=True)
        self.total = [0, 0, 0, 0]

    def tick(self, mid: str, counts: tuple[int, int, int, int]) -> None:
        self._add(self.main, said(mid, counts), counts)

    def agent(self, name: str, kind: str, prompt: str) -> Path:
        path = self.subagents / f"agent-{name}.jsonl"
        (self.subagents / f"agent-{name}.meta.json").write_text(json.dumps({"agentType": kind}))
        first = {"type": "user", "isSidechain": True, "timestamp": stamp(),
                 "message": {"role": "user", "content": prompt}}  # fmt: skip
        path.write_text(json.dumps(first) + "\n")
        return path

    def said_by(self, path: Path, mid: str, counts: tuple[int, int, int, int]) -> None:
        self._add(path, said(mid, counts), counts)

    def _add(self, path: Path, line: str, counts: tuple[int, int, int, int]) -> None:
        with open(path, "a") as out:
            out.write(line + "\n")
        self.total = [a + b for a, b in zip(self.total, counts, strict=True)]


def launch(
    client: Client, talk: Transcripts, repo: Repo, env: dict[str, str]
) -> tuple[list[str], Path, Path]:
    """`begin` a wave of two in the session, then the tick's turn that launches
    both implementers in one message (odd counts: the even split has a
    remainder to place) and each implementer's transcript: the worktrees and the
    two transcripts."""
    begun = client.run(repo.path, "cycle", "begin", "--json", env=env)
    assert begun.code == 0, begun.stderr
    answer = begun.json
    assert answer["status"] == "wave", answer
    briefs = answer["briefs"]
    talk.tick("msg_launch", (7, 3, 5, 101))
    first = talk.agent("a1", "gtd:implementer", f"Read {briefs[0]} and follow it exactly.")
    second = talk.agent("b2", "gtd:implementer", f"Read {briefs[1]} and follow it exactly.")
    return answer["worktrees"], first, second


def cycles(repo: Repo) -> dict[int, CycleRecord]:
    found = state.read(Git(repo.path)).records
    return {r.cycle: r for r in found if isinstance(r, CycleRecord)}


def tokens(rec: Any) -> tuple[int, int, int, int]:
    assert rec is not None
    return (rec.input, rec.output, rec.cache_write, rec.cache_read)


def test_each_task_of_a_wave_is_charged_its_own_implementer_once(
    repo: Repo, tmp_path: Path
) -> None:
    project(repo)
    base = tmp_path / "claude"
    env = {"CLAUDE_CODE_SESSION_ID": SESSION, "CLAUDE_CONFIG_DIR": str(base)}
    talk = Transcripts(base, repo.path)
    with Client(tmp_path / "client") as client:
        trees, first, second = launch(client, talk, repo, env)
        talk.said_by(first, "msg_t1_a", (1000, 100, 10, 5000))
        talk.said_by(second, "msg_t2_a", (2000, 200, 20, 6000))
        talk.said_by(first, "msg_t1_b", (30, 3, 0, 700))
        talk.said_by(second, "msg_t2_b", (40, 4, 0, 800))
        write(trees[0], "mul.py", MUL)
        write(trees[0], "tests/test_mul.py", MUL_TEST)
        write(trees[1], "sub.py", SUB)
        write(trees[1], "tests/test_sub.py", SUB_TEST)
        talk.tick("msg_end_1", (11, 1, 0, 300))  # the tick asks for cycle 1's end

        one = client.run(repo.path, "cycle", "end", "--cycle", "1", "--json", env=env)
        assert one.code == 0, one.stderr
        assert one.json["status"] == "passed", one.json
        talk.tick("msg_end_2", (13, 2, 0, 400))  # reads its answer, asks for cycle 2's
        two = client.run(repo.path, "cycle", "end", "--cycle", "2", "--json", env=env)
        assert two.code == 0, two.stderr
        assert two.json["status"] == "passed", two.json

    found = cycles(repo)
    t1, t2 = found[1], found[2]
    assert (t1.wave, t2.wave) == (1, 1)
    # the launch (and cycle 1's own ask, before the first `end`) split in two
    shared = [7 + 11, 3 + 1, 5 + 0, 101 + 300]
    first_half = tuple(x - x // 2 for x in shared)  # the remainder to the first
    second_half = tuple(x // 2 for x in shared)
    assert tokens(t1.usage_tick) == first_half
    assert tokens(t2.usage_tick) == tuple(
        a + b for a, b in zip(second_half, (13, 2, 0, 400), strict=True)
    )
    assert tokens(t1.usage) == tuple(
        a + b + c for a, b, c in zip(first_half, (1000, 100, 10, 5000), (30, 3, 0, 700),
                                     strict=True)
    )  # fmt: skip
    assert tokens(t2.usage) == tuple(
        a + b + c + d
        for a, b, c, d in zip(
            second_half, (13, 2, 0, 400), (2000, 200, 20, 6000), (40, 4, 0, 800), strict=True
        )
    )
    assert t1.usage is not None
    assert t2.usage is not None
    assert list(tokens(t1.usage.plus(t2.usage))) == talk.total  # every message once
    assert t1.usage.models == (MODEL,)
    assert t1.usage.usd is not None
    assert t2.usage.usd is not None
    assert t1.usage.usd + t2.usage.usd == pytest.approx(
        (talk.total[0] * 4 + talk.total[1] * 20 + talk.total[2] * 5 + talk.total[3] * 0.2) / 1e6,
        abs=2e-6,  # each record's cost is sealed to the micro-dollar
    )


AGENT = f"""\
import json, sys
from pathlib import Path
brief = sys.stdin.read()
if "— T1:" in brief:
    Path("mul.py").write_text({MUL!r})
    Path("tests/test_mul.py").write_text({MUL_TEST!r})
    used = {{"input": 1200, "output": 300, "cache_write": 0, "cache_read": 5000}}
else:
    Path("sub.py").write_text({SUB!r})
    Path("tests/test_sub.py").write_text({SUB_TEST!r})
    used = {{"input": 700, "output": 90, "cache_write": 40, "cache_read": 2500}}
print(json.dumps({{"gtd_usage": {{**used, "model": "claude-sonnet-4-5"}}}}))
"""


def test_the_headless_loop_charges_each_task_its_own_agent(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.integration.calc_project import run_cli

    monkeypatch.setenv("GTD_SANDBOX", "off")  # (the wave's fence: docs/parallel.md)
    project(repo)
    script = repo.path.parent / "agent.py"
    script.write_text(AGENT)

    ran = run_cli(repo, "loop", "--agent", f"{sys.executable} {script}", "--parallel", "2")

    assert ran.code == 0, (ran.stdout, ran.stderr)
    found = cycles(repo)
    assert (found[1].task, found[1].status, found[1].wave) == ("T1", "passed", 1)
    assert (found[2].task, found[2].status, found[2].wave) == ("T2", "passed", 1)
    assert tokens(found[1].usage) == (1200, 300, 0, 5000)
    assert tokens(found[2].usage) == (700, 90, 40, 2500)


REFUSED = "API Error: Request rejected (429) · Rate limited"


def refused() -> str:
    """The entry Claude Code writes for a request the API refused after its retries."""
    text = [{"type": "text", "text": REFUSED}]
    message = {"model": "<synthetic>", "role": "assistant", "content": text}
    entry = {"type": "assistant", "isApiErrorMessage": True, "apiErrorStatus": 429,
             "apiErrorType": "rate_limit_error", "error": "rate_limit",
             "timestamp": stamp(), "message": message}  # fmt: skip
    return json.dumps(entry)


def test_in_a_session_each_task_reads_its_own_implementers_end(repo: Repo, tmp_path: Path) -> None:
    """T2's implementer dies of a rate limit, after T1's finished: T1 lands (the
    newest implementer transcript is T2's, not its own), T2 is paused, its work
    kept, and the pause holds."""
    project(repo)
    base = tmp_path / "claude"
    env = {"CLAUDE_CODE_SESSION_ID": SESSION, "CLAUDE_CONFIG_DIR": str(base)}
    talk = Transcripts(base, repo.path)
    with Client(tmp_path / "client") as client:
        trees, first, second = launch(client, talk, repo, env)
        write(trees[0], "mul.py", MUL)
        write(trees[0], "tests/test_mul.py", MUL_TEST)
        write(trees[1], "sub.py", SUB)
        talk.said_by(first, "msg_t1", (1000, 100, 10, 5000))
        talk.said_by(second, "msg_t2", (2000, 200, 20, 6000))
        with open(second, "a") as out:
            out.write(refused() + "\n")
        time.sleep(0.05)
        os.utime(second)  # the newest subagent transcript is T2's

        one = client.run(repo.path, "cycle", "end", "--cycle", "1", "--json", env=env)
        assert one.code == 0, one.stderr
        assert one.json["status"] == "passed", one.json
        two = client.run(repo.path, "cycle", "end", "--cycle", "2", "--json", env=env)
        assert two.code == 0, two.stderr
        assert two.json["status"] == "paused", two.json
        held = client.run(repo.path, "cycle", "begin", "--json", env=env)
        assert held.json["status"] == "paused", held.json

    assert repo.git("show", "refs/gtd/reverted/cycle-2:sub.py") == SUB
    found = cycles(repo)
    assert found[2].harness == "rate limit"
    assert tokens(found[2].usage)[0] == 2000 + 7 // 2  # its own work, and its share


def test_a_tick_stopped_mid_wave_pauses_every_task_and_charges_each_once(
    repo: Repo, tmp_path: Path
) -> None:
    """A usage limit ends the whole conversation: no `end` comes. The session's
    next `begin` finds the error in its transcript: each task of the wave is
    recorded paused, its work back to the queue and kept, not counted by the
    breaker; what the wave spent is charged once across its tasks."""
    project(repo)
    base = tmp_path / "claude"
    env = {"CLAUDE_CODE_SESSION_ID": SESSION, "CLAUDE_CONFIG_DIR": str(base)}
    talk = Transcripts(base, repo.path)
    with Client(tmp_path / "client") as client:
        trees, first, second = launch(client, talk, repo, env)
        write(trees[0], "mul.py", MUL)
        write(trees[1], "sub.py", SUB)
        talk.said_by(first, "msg_t1", (1000, 100, 10, 5000))
        talk.said_by(second, "msg_t2", (2000, 200, 20, 6000))
        with open(talk.main, "a") as out:
            out.write(refused() + "\n")

        again = client.run(repo.path, "cycle", "begin", "--json", env=env)

    assert again.code == 0, again.stderr
    assert again.json["status"] == "paused", again.json
    assert "T1 paused" in str(again.json.get("recovered")), again.json
    found = cycles(repo)
    assert [(found[c].task, found[c].status) for c in (1, 2)] == [
        ("T1", "paused"),
        ("T2", "paused"),
    ]
    assert repo.git("show", "refs/gtd/queued/T1:mul.py") == MUL
    assert repo.git("show", "refs/gtd/queued/T2:sub.py") == SUB
    assert found[1].usage is not None
    assert found[2].usage is not None
    assert list(tokens(found[1].usage.plus(found[2].usage))) == talk.total
    assert tokens(found[1].usage)[0] == 1000 + 4  # its implementer, half the launch
    memory = yaml.safe_load((repo.path / ".deepflow/auto-memory.yaml").read_text())
    assert not any(memory.get("consecutive_reverts", {}).values())  # not counted
    assert "- [ ] **T1**" in (repo.path / "PLAN.md").read_text()
