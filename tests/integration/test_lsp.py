"""`gtd lsp` at the protocol level: a real subprocess spoken to in JSON-RPC with
Content-Length framing, as an editor would."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from gtd.steering import check
from tests.conftest import Repo

TIMEOUT = 20.0

GOOD_REVIEW = (
    "# Review: abc\n\n<!-- base: def -->\n\n## Parser\n\nWhy.\n\n"
    "- [ ] ./a.py#3 — the regex\n- [x] ./b.py\n\n## Docs\n\n- [x] ./docs/x.md\n"
)
GOOD_TODO = (
    "# Plan\n\n## Open Questions\n\n### Which DB?\n\nSuggested default: sqlite\n\n"
    "### Auth?\n\nAnswer: none\n"
)


class Client:
    def __init__(self, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gtd", "lsp"],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ},
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.notifications: list[dict[str, Any]] = []
        self.server_requests: list[dict[str, Any]] = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                header = out.readline()
                if not header:
                    return
                if header in (b"\r\n", b"\n"):
                    break
                name, _, value = header.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value.strip())
            assert length is not None
            self.messages.put(json.loads(out.read(length)))

    def send_raw(self, body: bytes) -> None:
        stdin: IO[bytes] | None = self.proc.stdin
        assert stdin is not None
        stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        stdin.flush()

    def send(self, payload: dict[str, Any]) -> None:
        self.send_raw(json.dumps({"jsonrpc": "2.0", **payload}).encode())

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request and wait for its response, answering the server's own
        requests (showDocument...) and keeping its notifications on the way."""
        self.next_id += 1
        rid = self.next_id
        self.send({"id": rid, "method": method, "params": params})
        while True:
            message = self.messages.get(timeout=TIMEOUT)
            if message.get("id") == rid and "method" not in message:
                return message
            self._other(message)

    def _other(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:
            self.server_requests.append(message)
            self.send({"id": message["id"], "result": {"success": True}})
        elif "method" in message:
            self.notifications.append(message)

    def wait_notification(self, method: str, uri: str | None = None) -> dict[str, Any]:
        def wanted(m: dict[str, Any]) -> bool:
            return m["method"] == method and (uri is None or m["params"].get("uri") == uri)

        for i, message in enumerate(self.notifications):
            if wanted(message):
                return self.notifications.pop(i)
        while True:
            message = self.messages.get(timeout=TIMEOUT)
            if "method" in message and "id" not in message and wanted(message):
                return message
            self._other(message)

    def open(self, path: Path, text: str) -> str:
        uri = path.as_uri()
        self.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "markdown", "version": 1, "text": text}},
        )
        return uri


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".gtd").mkdir(parents=True)
    return root


@pytest.fixture
def client(workspace: Path) -> Iterator[Client]:
    c = Client(workspace)
    response = c.request(
        "initialize",
        {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}},
    )
    assert "capabilities" in response["result"]
    c.notify("initialized", {})
    yield c
    if c.proc.poll() is None:
        c.proc.kill()
    c.proc.wait(timeout=TIMEOUT)


def _shutdown(c: Client) -> int:
    assert c.request("shutdown")["result"] is None
    c.notify("exit", None)
    return c.proc.wait(timeout=TIMEOUT)


def test_capabilities_and_clean_shutdown(client: Client) -> None:
    assert _shutdown(client) == 0


def test_initialize_advertises_the_features(workspace: Path) -> None:
    c = Client(workspace)
    try:
        caps = c.request("initialize", {"processId": None, "capabilities": {}})["result"][
            "capabilities"
        ]
        assert caps["documentSymbolProvider"]
        assert caps["codeActionProvider"]
        assert "gtd.openSteeringFile" in caps["executeCommandProvider"]["commands"]
        assert caps["textDocumentSync"]
    finally:
        c.proc.kill()
        c.proc.wait()


def test_diagnostics_are_the_validators_findings(client: Client, workspace: Path) -> None:
    text = "# Review: abc\n## Chunk\n- [ ] a.py\n"
    uri = client.open(workspace / ".gtd" / "REVIEW.md", text)
    diags = client.wait_notification("textDocument/publishDiagnostics", uri)["params"][
        "diagnostics"
    ]
    assert [(d["range"]["start"]["line"] + 1, d["message"]) for d in diags] == [
        (f.line, f.message) for f in check("review", text)
    ]
    assert all(d["source"] == "gtd" and d["severity"] == 1 for d in diags)

    # Fix it in the editor: the diagnostics clear.
    client.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"text": GOOD_REVIEW}],
        },
    )
    params = client.wait_notification("textDocument/publishDiagnostics", uri)["params"]
    assert params["diagnostics"] == []


@pytest.mark.parametrize(("name", "text"), [("TODO.md", GOOD_TODO), ("REVIEW.md", GOOD_REVIEW)])
def test_a_valid_file_has_no_diagnostics(
    client: Client, workspace: Path, name: str, text: str
) -> None:
    uri = client.open(workspace / ".gtd" / name, text.replace("\n", "\r\n"))
    params = client.wait_notification("textDocument/publishDiagnostics", uri)["params"]
    assert params["diagnostics"] == []


def test_todo_diagnostics_have_column_ranges(client: Client, workspace: Path) -> None:
    uri = client.open(workspace / ".gtd" / "TODO.md", "## Open Questions\n### Ä\n  nöpe\n")
    (diag,) = client.wait_notification("textDocument/publishDiagnostics", uri)["params"][
        "diagnostics"
    ]
    assert diag["range"] == {
        "start": {"line": 2, "character": 2},
        "end": {"line": 2, "character": 6},
    }


def test_other_documents_are_ignored(client: Client, workspace: Path) -> None:
    uri = client.open(workspace / "TODO.md", "")
    assert (
        client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})["result"]
        == []
    )
    # The empty root TODO.md got no diagnostics; a steering file opened after it does.
    steering = client.open(workspace / ".gtd" / "TODO.md", "")
    message = client.wait_notification("textDocument/publishDiagnostics")
    assert message["params"]["uri"] == steering


def test_document_symbols(client: Client, workspace: Path) -> None:
    todo = client.open(workspace / ".gtd" / "TODO.md", GOOD_TODO)
    result = client.request("textDocument/documentSymbol", {"textDocument": {"uri": todo}})
    assert [
        (s["name"], s["detail"], s["selectionRange"]["start"]["line"]) for s in result["result"]
    ] == [
        ("Which DB? [suggested]", "sqlite", 4),
        ("Auth? [answered]", "none", 8),
    ]
    review = client.open(workspace / ".gtd" / "REVIEW.md", GOOD_REVIEW)
    chunks = client.request("textDocument/documentSymbol", {"textDocument": {"uri": review}})[
        "result"
    ]
    assert [c["name"] for c in chunks] == ["Parser (1/2)", "Docs (1/1)"]
    assert [(p["name"], p.get("detail")) for p in chunks[0]["children"]] == [
        ("[ ] ./a.py#3", "the regex"),
        ("[x] ./b.py", None),
    ]
    assert chunks[0]["range"]["start"]["line"] == 4
    assert chunks[0]["children"][0]["range"]["start"]["line"] == 8


def _apply(text: str, edits: list[dict[str, Any]]) -> str:
    lines = text.split("\n")
    for edit in edits:
        start, end = edit["range"]["start"], edit["range"]["end"]
        assert start["line"] == end["line"]
        row = lines[start["line"]]
        lines[start["line"]] = row[: start["character"]] + edit["newText"] + row[end["character"] :]
    return "\n".join(lines)


def test_code_actions_tick_a_pointer_and_a_chunk(client: Client, workspace: Path) -> None:
    uri = client.open(workspace / ".gtd" / "REVIEW.md", GOOD_REVIEW)

    def actions(line: int) -> list[dict[str, Any]]:
        pos = {"line": line, "character": 0}
        found: list[dict[str, Any]] = client.request(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": uri},
                "range": {"start": pos, "end": pos},
                "context": {"diagnostics": []},
            },
        )["result"]
        return found

    on_pointer = actions(8)
    assert [a["title"] for a in on_pointer] == ["Tick ./a.py#3", "Tick all in 'Parser'"]
    ticked = _apply(GOOD_REVIEW, on_pointer[0]["edit"]["changes"][uri])
    assert "- [x] ./a.py#3 — the regex" in ticked
    assert check("review", ticked) == ()

    on_docs = actions(11)
    assert [a["title"] for a in on_docs] == ["Untick all in 'Docs'"]
    unticked = _apply(GOOD_REVIEW, on_docs[0]["edit"]["changes"][uri])
    assert "- [ ] ./docs/x.md" in unticked

    assert actions(0) == []


def _run(cwd: Path, *argv: str) -> str:
    res = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)
    assert res.returncode == 0, res.stderr
    return res.stdout


def _open_steering_file(client: Client) -> tuple[str | None, str | None]:
    """The command's result, and the message it showed instead (if any)."""
    result = client.request("workspace/executeCommand", {"command": "gtd.openSteeringFile"})
    if result["result"] is not None:
        return result["result"], None
    return None, client.wait_notification("window/showMessage")["params"]["message"]


def test_open_steering_file_follows_the_states_file(client: Client, workspace: Path) -> None:
    # Not a repository yet: nothing to resolve, said so.
    uri, message = _open_steering_file(client)
    assert uri is None
    assert message is not None
    assert "not inside a git repository" in message

    git = ("git", "-c", "user.name=t", "-c", "user.email=t@example.com")
    _run(workspace, "git", "init", "-q", "-b", "main")
    (workspace / ".gtdrc.json").write_text('{"testCommand": "true"}\n')
    _run(workspace, *git, "add", "-A")
    _run(workspace, *git, "commit", "-q", "-m", "chore: init")
    _, message = _open_steering_file(client)
    assert message == "gtd: idle (resting) has no steering file"

    # The human captures a request: grilling awaits the agent's plan in TODO.md.
    (workspace / "idea.md").write_text("an idea\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    step = subprocess.run(
        [sys.executable, "-m", "gtd", "step"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert step.returncode == 0, step.stderr
    status = json.loads(_run(workspace, sys.executable, "-m", "gtd", "status", "--json"))
    assert (status["state"], status["file"], status["mode"]) == ("grilling", ".gtd/TODO.md", "qa")
    _, message = _open_steering_file(client)
    assert message == "gtd: grilling is about .gtd/TODO.md, which does not exist yet"

    (workspace / ".gtd").mkdir(exist_ok=True)  # gtd prunes an empty .gtd/
    (workspace / ".gtd" / "TODO.md").write_text(GOOD_TODO)
    uri, _ = _open_steering_file(client)
    assert uri is not None
    assert uri.endswith("/.gtd/TODO.md")
    # The state names the file, not whatever is lying around: a REVIEW.md next to
    # the plan is an illegal combination, reported, never opened.
    (workspace / ".gtd" / "REVIEW.md").write_text(GOOD_REVIEW)
    _, message = _open_steering_file(client)
    assert message is not None
    assert "illegal combination" in message
    (workspace / ".gtd" / "REVIEW.md").unlink()

    # The shutdown round-trip flushes the showDocument requests the server sent.
    assert _shutdown(client) == 0
    shown = [
        r["params"]["uri"] for r in client.server_requests if r["method"] == "window/showDocument"
    ]
    assert [u.rsplit("/", 1)[1] for u in shown] == ["TODO.md"]
    assert not (workspace / ".gtd" / "REVIEW.md").exists()


def test_the_server_survives_garbage(client: Client, workspace: Path) -> None:
    client.send_raw(b"{this is not json")
    client.send_raw(b"[1, 2, 3]")
    client.send_raw(json.dumps({"jsonrpc": "2.0", "id": 999, "method": "no/such"}).encode())
    client.send({"method": "$/unknownNotification", "params": {}})
    bad = client.request("textDocument/documentSymbol", {"textDocument": 42})
    assert "error" in bad
    missing = client.request(
        "textDocument/documentSymbol",
        {"textDocument": {"uri": (workspace / ".gtd" / "REVIEW.md").as_uri()}},
    )
    assert missing["result"] == []
    not_a_file = client.request(
        "textDocument/documentSymbol", {"textDocument": {"uri": "untitled:Untitled-1"}}
    )
    assert not_a_file["result"] == []
    uri = client.open(workspace / ".gtd" / "REVIEW.md", "\x00\ufeff# Review:\r\r\n- [")
    assert client.wait_notification("textDocument/publishDiagnostics", uri)["params"]["diagnostics"]
    # ...and still answers a valid request.
    uri = client.open(workspace / ".gtd" / "TODO.md", GOOD_TODO)
    result = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    assert len(result["result"]) == 2
    assert _shutdown(client) == 0


def test_pygls_loads_only_for_gtd_lsp() -> None:
    code = (
        "import sys, gtd.cli.app, gtd.cli.validate_cmd, gtd.cli.lsp_cmd, gtd.steering.review, "
        "gtd.steering.questions; "
        "assert not {'pygls', 'lsprotocol'} & set(sys.modules), sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=TIMEOUT)


def test_steering_target_from_a_folder_inside_the_repository(repo: Repo) -> None:
    from gtd.lsp.server import steering_target

    repo.write(".gtdrc.json", '{"testCommand": "true"}\n')
    repo.write("docs/readme.md", "x\n")
    repo.commit_all("chore: init")
    repo.git("commit", "-q", "--allow-empty", "-m", "gtd: reviewing " + "0" * 40)
    # HEAD names a review; the agent has not drafted it yet.
    target, why = steering_target(repo.path / "docs")
    assert target is None
    assert why == "gtd: review is about .gtd/REVIEW.md, which does not exist yet"
    repo.write(".gtd/REVIEW.md", GOOD_REVIEW)
    target, why = steering_target(repo.path / "docs")
    assert (target, why) == (repo.path / ".gtd" / "REVIEW.md", "")
    assert not (repo.path / ".gtd" / "TODO.md").exists()
