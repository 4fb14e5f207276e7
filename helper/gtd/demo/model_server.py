"""A scripted Anthropic Messages API server for driving the real `claude` CLI: the
model of `gtd demo --claude` and of the end-to-end tests (tests/e2e).

Loopback only (127.0.0.1, a free port). The script is an ordered list of rules;
each model request is answered by the first rule that matches it and has uses
left. A rule matches on the request's *latest* message (the user's prompt, or the
tool results the CLI sends back), on the system prompt (which tells the main
conversation from a subagent's), or on any predicate. Its answer is a list of
content blocks: text and tool calls, streamed as real SSE events; or a `Refusal`,
the HTTP error the API answers instead (`rate_limited`: 429, with the reset header
a subscription gets; `overloaded`: 529).

A model request no rule matches gets an error text as its answer and is recorded
in `off_script`, so a test can fail with the conversation that went astray. Every
request (model or not) is kept in `requests` for assertions.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Json = dict[str, Any]
OFF_SCRIPT = "OFF-SCRIPT"


# -- what a request looks like ------------------------------------------------------


def block_text(block: Any) -> str:
    """The readable text of one content block (tool results and tool calls included)."""
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_result":
        content = block.get("content", "")
        if isinstance(content, list):
            return "\n".join(block_text(b) for b in content)
        return str(content)
    if kind == "tool_use":
        return f"{block.get('name')} {json.dumps(block.get('input', {}), ensure_ascii=False)}"
    if kind == "tool_reference":  # ToolSearch's answer: a deferred tool now loaded
        return f"tool_reference: {block.get('tool_name')}"
    return ""


def message_text(message: Json) -> str:
    content = message.get("content", "")
    if isinstance(content, str):
        return content
    return "\n".join(block_text(b) for b in content)


@dataclass
class Request:
    """One POST /v1/messages the CLI made."""

    index: int
    body: Json

    @property
    def system(self) -> str:
        system = self.body.get("system", "")
        if isinstance(system, list):
            return "\n".join(block_text(b) for b in system)
        return str(system)

    @property
    def messages(self) -> list[Json]:
        return list(self.body.get("messages", []))

    @property
    def latest(self) -> list[Json]:
        """The messages since the model last spoke: the prompt, or the tool results
        (with any system turns the CLI put beside them)."""
        msgs = self.messages
        cut = max((i for i, m in enumerate(msgs) if m.get("role") == "assistant"), default=-1)
        return msgs[cut + 1 :]

    @property
    def last(self) -> str:
        return "\n".join(message_text(m) for m in self.latest)

    @property
    def conversation(self) -> str:
        return "\n".join(message_text(m) for m in self.messages)

    @property
    def tools(self) -> list[str]:
        return [str(t.get("name")) for t in self.body.get("tools", [])]

    def tool_results(self) -> list[Json]:
        """The tool_result blocks of the latest message."""
        return [
            b
            for m in self.latest
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        ]


# -- the script ---------------------------------------------------------------------


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class ToolUse:
    name: str
    input: Json


@dataclass(frozen=True)
class Refusal:
    """The API refusing the request instead of answering: HTTP ``status`` with the
    Messages API's error body (``error.type``, ``error.message``) and ``headers``
    (``retry-after``, ``anthropic-ratelimit-unified-reset``, ...): a rate or usage
    limit (429), an overloaded API (529). A reply holding one answers with it alone."""

    status: int
    kind: str
    message: str
    headers: tuple[tuple[str, str], ...] = ()


def rate_limited(reset_epoch: int | None = None, message: str | None = None) -> Refusal:
    """A 429 as the API sends it to a subscription past its limit (with the epoch
    second it resets at) or to an API key over its rate (without)."""
    headers: tuple[tuple[str, str], ...] = ()
    if reset_epoch is not None:
        headers = (
            ("anthropic-ratelimit-unified-status", "rejected"),
            ("anthropic-ratelimit-unified-reset", str(reset_epoch)),
            ("anthropic-ratelimit-unified-representative-claim", "five_hour"),
        )
    return Refusal(429, "rate_limit_error", message or "Rate limited (scripted)", headers)


def overloaded() -> Refusal:
    return Refusal(529, "overloaded_error", "Overloaded (scripted)")


Block = Text | ToolUse
# Sequences (covariant): a rule's reply of text and tool calls alone is one too.
Reply = Sequence[Block | Refusal] | Callable[[Request], Sequence[Block | Refusal]]


@dataclass
class Rule:
    """Answer `reply` to a model request whose latest message contains every string
    of `last`, whose system prompt contains `system` and lacks `not_system`, and for
    which `when` holds. `times` limits how often it fires (None: unlimited).
    `usage`: token counts the answer says it used on top of what its sizes give
    (the Messages API's keys, e.g. ``{"output_tokens": 40000}``): a scenario that
    needs a known, large cost (a budget's) sets it on one answer."""

    name: str
    reply: Reply
    last: tuple[str, ...] = ()
    system: str | None = None
    not_system: str | None = None
    when: Callable[[Request], bool] | None = None
    times: int | None = 1
    usage: Json | None = None
    # Seconds the answer is held before it is sent: a model that takes its time,
    # so that requests of agents running at once are seen to overlap.
    delay_s: float = 0.0
    used: int = 0

    def matches(self, req: Request) -> bool:
        if self.times is not None and self.used >= self.times:
            return False
        if any(s not in req.last for s in self.last):
            return False
        if self.system is not None and self.system not in req.system:
            return False
        if self.not_system is not None and self.not_system in req.system:
            return False
        return self.when is None or self.when(req)


def is_model_turn(req: Request) -> bool:
    """A request of the agent loop (it offers tools), not a side query such as a
    title or a quota probe. Only these must be on the script."""
    return bool(req.body.get("tools"))


@dataclass
class Exchange:
    request: Request
    rule: str | None
    reply: list[Block | Refusal]
    usage: Json | None = None  # what the answer said it used (None: refused)
    extra: Json | None = None  # the rule's own counts, added to the sizes' (Rule.usage)
    delay_s: float = 0.0  # the rule's (Rule.delay_s)
    # When the request came in and when its answer was sent (time.monotonic()):
    # which requests were under way at once (ModelServer.overlapping).
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None


@dataclass
class ModelServer:
    rules: list[Rule] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)
    requests: list[Json] = field(default_factory=list)  # every HTTP request, raw
    off_script: list[Request] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    # -- lifecycle

    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ModelServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting

    def script(self, *rules: Rule) -> None:
        with self._lock:
            self.rules.extend(rules)

    def unused(self) -> list[str]:
        """Rules that were meant to fire (times set) but did not."""
        return [r.name for r in self.rules if r.times is not None and r.used == 0]

    def model_requests(self) -> list[Request]:
        return [e.request for e in self.exchanges]

    def answer(self, body: Json) -> tuple[str | None, list[Block | Refusal]]:
        with self._lock:
            req = Request(len(self.exchanges), body)
            if not is_model_turn(req):
                exchange = Exchange(req, None, [Text("ok")])
                self.exchanges.append(exchange)
                return None, exchange.reply
            for rule in self.rules:
                if rule.matches(req):
                    rule.used += 1
                    reply = list(rule.reply(req) if callable(rule.reply) else rule.reply)
                    self.exchanges.append(
                        Exchange(req, rule.name, reply, extra=rule.usage, delay_s=rule.delay_s)
                    )
                    return rule.name, reply
            self.off_script.append(req)
            text = (
                f"{OFF_SCRIPT}: no rule matches request #{req.index}; "
                f"latest message: {req.last[-600:]!r}"
            )
            self.exchanges.append(Exchange(req, None, [Text(text)]))
            return None, [Text(text)]

    def overlapping(
        self, which: Callable[[Exchange], bool] = lambda e: True
    ) -> list[tuple[Exchange, Exchange]]:
        """Pairs of answered exchanges (of those ``which`` keeps) that were under
        way at once: each began before the other's answer was sent. Two agents
        working concurrently show as such pairs; one agent's turns never do (it
        waits for each answer before it asks again)."""
        with self._lock:
            done = [e for e in self.exchanges if e.ended is not None and which(e)]
        return [
            (a, b)
            for i, a in enumerate(done)
            for b in done[i + 1 :]
            if a.started < (b.ended or 0) and b.started < (a.ended or 0)
        ]

    def describe(self) -> str:
        """The model conversation as short lines, for failure messages."""
        lines = []
        for e in self.exchanges:
            said = "; ".join(
                b.text[:120]
                if isinstance(b, Text)
                else f"HTTP {b.status} {b.kind}"
                if isinstance(b, Refusal)
                else f"{b.name}({json.dumps(b.input)[:160]})"
                for b in e.reply
            )
            last = e.request.last.replace("\n", " ")[-200:]
            lines.append(f"#{e.request.index} [{e.rule}] <- {last!r}\n    -> {said}")
        return "\n".join(lines)


# -- the wire format ----------------------------------------------------------------


def _content(reply: list[Block], ids: Iterator[int]) -> list[Json]:
    out: list[Json] = []
    for block in reply:
        if isinstance(block, Text):
            out.append({"type": "text", "text": block.text})
        else:
            out.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_e2e{next(ids):06d}",
                    "name": block.name,
                    "input": block.input,
                }
            )
    return out


# Known token counts in every answer, all four kinds non-zero, so the cost a run
# records can be checked against what the model said (tests/e2e/test_cost.py):
# input from the request's size, output from the answer's, a fixed cache write
# and a cache read that grows with the conversation.
CACHE_WRITE = 40


def _usage(body: Json, reply: list[Block], extra: Json | None = None) -> Json:
    messages = body.get("messages", [])
    size = len(json.dumps(messages))
    said = sum(len(b.text) if isinstance(b, Text) else len(json.dumps(b.input)) for b in reply)
    usage = {
        "input_tokens": max(1, size // 4),
        "output_tokens": 10 + said // 4,
        "cache_creation_input_tokens": CACHE_WRITE,
        "cache_read_input_tokens": 100 * len(messages),
    }
    for kind, count in (extra or {}).items():
        usage[kind] += int(count)  # (a kind the API does not send is a script's mistake)
    return usage


def message(body: Json, reply: list[Block], ids: Iterator[int], extra: Json | None = None) -> Json:
    content = _content(reply, ids)
    stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    return {
        "id": f"msg_e2e{next(ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "scripted"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": _usage(body, reply, extra),
    }


def sse_events(msg: Json) -> Iterator[tuple[str, Json]]:
    """The event stream of a whole message, as the Messages API sends it."""
    start = {**msg, "content": [], "stop_reason": None}
    start["usage"] = {**msg["usage"], "output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for i, block in enumerate(msg["content"]):
        if block["type"] == "text":
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": {**block, "text": ""}},
            )
            text = block["text"]
            for k in range(0, max(len(text), 1), 400):
                delta = {"type": "text_delta", "text": text[k : k + 400]}
                yield (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": i, "delta": delta},
                )
        else:
            head = {**block, "input": {}}
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": head},
            )
            raw = json.dumps(block["input"])
            for k in range(0, len(raw), 200):
                delta = {"type": "input_json_delta", "partial_json": raw[k : k + 200]}
                yield (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": i, "delta": delta},
                )
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": msg["usage"]["output_tokens"]},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _send(
            self,
            code: int,
            payload: bytes,
            ctype: str = "application/json",
            headers: tuple[tuple[str, str], ...] = (),
        ) -> None:
            self.send_response(code)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("request-id", "req_e2e")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        def _json(self, code: int, data: Json) -> None:
            self._send(code, json.dumps(data).encode())

        def _body(self) -> Json:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                data = json.loads(raw) if raw else {}
            except ValueError:
                data = {"_raw": raw.decode(errors="replace")}
            return data if isinstance(data, dict) else {"_body": data}

        def _record(self, body: Json | None) -> None:
            with server._lock:
                server.requests.append({"method": self.command, "path": self.path, "body": body})

        def do_HEAD(self) -> None:
            self._record(None)
            self._send(200, b"")

        def do_GET(self) -> None:
            self._record(None)
            if self.path.split("?")[0].rstrip("/").endswith("/models"):
                self._json(200, {"data": [], "has_more": False, "first_id": None})
                return
            self._json(200, {})

        def do_POST(self) -> None:
            body = self._body()
            self._record(body)
            path = self.path.split("?")[0]
            try:
                if path.endswith("/v1/messages/count_tokens"):
                    tokens = len(json.dumps(body)) // 4
                    self._json(200, {"input_tokens": max(1, tokens)})
                elif path.endswith("/v1/messages"):
                    self._messages(body)
                else:
                    self._json(200, {})
            except (BrokenPipeError, ConnectionResetError):
                pass
            except Exception as exc:  # a bug in a scripted reply: fail loudly
                server.errors.append(f"{type(exc).__name__}: {exc}")
                raise

        def _messages(self, body: Json) -> None:
            _, answered = server.answer(body)
            with server._lock:  # this request's (another thread may have answered since)
                exchange = next(
                    (e for e in reversed(server.exchanges) if e.request.body is body), None
                )
            try:
                self._answer(body, answered, exchange)
            finally:
                if exchange is not None and exchange.ended is None:
                    exchange.ended = time.monotonic()

        def _answer(
            self, body: Json, answered: list[Block | Refusal], exchange: Exchange | None
        ) -> None:
            if exchange is not None and exchange.delay_s > 0:
                time.sleep(exchange.delay_s)  # outside the lock: others are answered meanwhile
            if exchange is not None:
                # Stamped before the bytes go out: once they have, the client may ask
                # again, and that request must not look as if it overlapped this one.
                exchange.ended = time.monotonic()
            refusal = next((b for b in answered if isinstance(b, Refusal)), None)
            if refusal is not None:
                error = {"type": refusal.kind, "message": refusal.message}
                payload = json.dumps({"type": "error", "error": error}).encode()
                self._send(refusal.status, payload, headers=refusal.headers)
                return
            reply = [b for b in answered if not isinstance(b, Refusal)]
            msg = message(body, reply, server._ids, exchange.extra if exchange else None)
            if exchange is not None:
                exchange.usage = msg["usage"]
            if not body.get("stream"):
                self._json(200, msg)
                return
            payload = "".join(
                f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in sse_events(msg)
            ).encode()
            self._send(200, payload, "text/event-stream; charset=utf-8")

    return Handler
