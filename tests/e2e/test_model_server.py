"""The scripted server on its own (no claude needed): the wire format the CLI reads,
rule matching, and the off-script record."""

from __future__ import annotations

import json
import urllib.request
from typing import Any
from unittest.mock import ANY

from gtd.demo.model_server import OFF_SCRIPT, ModelServer, Rule, Text, ToolUse

TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}]


def post(srv: ModelServer, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
    req = urllib.request.Request(
        srv.url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=10) as res:
        return str(res.headers["Content-Type"]), res.read()


def events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for chunk in raw.decode().strip().split("\n\n"):
        name, data = chunk.split("\n")
        out.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return out


def test_streams_text_and_tool_calls_as_the_messages_api_does() -> None:
    with ModelServer() as srv:
        srv.script(
            Rule("run", [Text("ok"), ToolUse("Bash", {"command": "gtd cycle end"})], last=("go",))
        )
        body = {"messages": [{"role": "user", "content": "go"}], "tools": TOOLS, "stream": True}
        ctype, raw = post(srv, "/v1/messages?beta=true", body)
    assert ctype.startswith("text/event-stream")
    evs = events(raw)
    names = [n for n, _ in evs]
    assert names[0] == "message_start"
    assert names[-2:] == ["message_delta", "message_stop"]
    assert evs[-2][1]["delta"]["stop_reason"] == "tool_use"
    starts = [d["content_block"] for n, d in evs if n == "content_block_start"]
    assert [b["type"] for b in starts] == ["text", "tool_use"]
    partial = "".join(
        d["delta"]["partial_json"]
        for n, d in evs
        if n == "content_block_delta" and d["delta"]["type"] == "input_json_delta"
    )
    assert json.loads(partial) == {"command": "gtd cycle end"}
    assert srv.off_script == []
    assert srv.requests[0]["path"] == "/v1/messages?beta=true"


def test_non_streaming_and_side_endpoints() -> None:
    with ModelServer() as srv:
        srv.script(Rule("hi", [Text("hello")], last=("hi",)))
        body = {"messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}
        _, raw = post(srv, "/v1/messages", body)
        msg = json.loads(raw)
        _, counted = post(srv, "/v1/messages/count_tokens", body)
        # a side query without tools (a title, a probe) is answered, not on the script
        _, side = post(srv, "/v1/messages", {"messages": [{"role": "user", "content": "x"}]})
    assert msg["content"] == [{"type": "text", "text": "hello"}]
    assert msg["stop_reason"] == "end_turn"
    assert json.loads(counted)["input_tokens"] > 0
    assert json.loads(side)["content"][0]["text"] == "ok"
    assert srv.off_script == []


def test_a_request_no_rule_matches_is_recorded_and_answered_with_an_error_text() -> None:
    with ModelServer() as srv:
        srv.script(Rule("once", [Text("first")], last=("again",)))
        body = {"messages": [{"role": "user", "content": "again"}], "tools": TOOLS}
        post(srv, "/v1/messages", body)
        _, raw = post(srv, "/v1/messages", body)  # the rule is used up
    assert OFF_SCRIPT in json.loads(raw)["content"][0]["text"]
    assert [r.index for r in srv.off_script] == [1]
    assert "#1 [None]" in srv.describe()


def test_a_refusal_is_the_apis_error_with_its_headers() -> None:
    from urllib.error import HTTPError

    from gtd.demo.model_server import overloaded, rate_limited

    with ModelServer() as srv:
        srv.script(Rule("limit", [rate_limited(1800000000)]), Rule("busy", [overloaded()]))
        body = {"messages": [{"role": "user", "content": "go"}], "tools": TOOLS, "stream": True}
        answers = []
        for _ in range(2):
            try:
                post(srv, "/v1/messages", body)
            except HTTPError as exc:
                answers.append((exc.code, dict(exc.headers), json.loads(exc.read())))
    (limit, headers, error), (busy, _, overload) = answers
    assert limit == 429
    assert headers["anthropic-ratelimit-unified-reset"] == "1800000000"
    assert headers["anthropic-ratelimit-unified-status"] == "rejected"
    assert error == {"type": "error", "error": {"type": "rate_limit_error", "message": ANY}}
    assert busy == 529
    assert overload["error"]["type"] == "overloaded_error"
    assert [e.rule for e in srv.exchanges] == ["limit", "busy"]


def test_a_rules_usage_is_added_to_what_the_answer_says_it_used() -> None:
    """A budget scenario gives one answer a known, large cost: the streamed
    `message_start` and `message_delta` carry it, and the exchange records it."""
    with ModelServer() as srv:
        srv.script(
            Rule("plain", [Text("a")], last=("one",)),
            Rule("dear", [Text("a")], last=("two",), usage={"output_tokens": 40_000}),
        )
        plain = {"messages": [{"role": "user", "content": "one"}], "tools": TOOLS, "stream": True}
        dear = {**plain, "messages": [{"role": "user", "content": "two"}]}
        _, raw_plain = post(srv, "/v1/messages", plain)
        _, raw_dear = post(srv, "/v1/messages", dear)
    said = [dict(events(raw)) for raw in (raw_plain, raw_dear)]
    outputs = [s["message_delta"]["usage"]["output_tokens"] for s in said]
    assert outputs[1] == outputs[0] + 40_000
    assert (
        said[1]["message_start"]["message"]["usage"]["input_tokens"]
        == (said[0]["message_start"]["message"]["usage"]["input_tokens"])
    )
    assert [e.usage["output_tokens"] for e in srv.exchanges if e.usage] == outputs


def test_requests_under_way_at_once_are_seen_to_overlap() -> None:
    """Two agents asking at once (two threads, a model that takes its time) make
    overlapping exchanges; one agent asking turn after turn makes none. What the
    e2e test of a wave reads to show its implementers ran concurrently."""
    from concurrent.futures import ThreadPoolExecutor

    def ask(srv: ModelServer, word: str) -> None:
        body = {"messages": [{"role": "user", "content": word}], "tools": TOOLS}
        post(srv, "/v1/messages", body)

    with ModelServer() as srv:
        srv.script(
            Rule("a", [Text("a done")], last=("task A",), delay_s=0.4, times=None),
            Rule("b", [Text("b done")], last=("task B",), delay_s=0.4, times=None),
        )
        ask(srv, "task A")
        ask(srv, "task A")  # one agent, turn after turn
        assert srv.overlapping() == []
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda w: ask(srv, w), ["task A", "task B"]))
        pairs = srv.overlapping()
        assert [(a.rule, b.rule) for a, b in pairs] in ([("a", "b")], [("b", "a")])
        a, b = pairs[0]
        assert a.ended is not None
        assert b.ended is not None
        assert a.ended - a.started >= 0.4  # held as the rule says
        assert srv.overlapping(lambda e: e.rule == "a") == []
