"""The plugin's JSON lines → results, items, sessions and evidence, with
repository-relative ids; forged, cut and unfinished lines never make a run look
better than it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gtd.auto.ratchet import contract as C
from gtd.auto.ratchet.report_lines import Reading, parse
from gtd.auto.ratchet.results import Item, Result


class Lines:
    """Lines of one session, as the plugin writes them."""

    def __init__(self, root: Path | str, sid: str = "s1", worker: str | None = None) -> None:
        self.sid = sid
        self.counts: dict[str, str] = {}
        self.out = [
            self._line(
                C.START,
                v=C.VERSION,
                pid=7,
                worker=worker,
                root=str(root),
                ini=None,
                plugin="/x/pytest_report.py",
                via="pipe",
                sel=None,
            )
        ]

    def _line(self, line_kind: str, /, **fields: Any) -> str:
        return json.dumps({C.KIND: line_kind, C.SESSION: self.sid, **fields})

    def test(self, node_id: str, outcome: str, when: str = "call", **extra: str) -> Lines:
        rank = C.OUTCOMES.index
        if node_id not in self.counts or rank(outcome) > rank(self.counts[node_id]):
            self.counts[node_id] = outcome
        self.out.append(self._line(C.TEST, id=node_id, o=outcome, w=when, **extra))
        return self

    def raw(self, line_kind: str, /, **fields: Any) -> Lines:
        self.out.append(self._line(line_kind, **fields))
        return self

    def end(self, counts: dict[str, int] | None = None, **fields: Any) -> list[str]:
        if counts is None:
            counts = {}
            for outcome in self.counts.values():
                counts[outcome] = counts.get(outcome, 0) + 1
        return [*self.out, self._line(C.END, exit=0, counts=counts, **fields)]


def test_every_outcome_with_its_details(tmp_path: Path) -> None:
    lines = (
        Lines(tmp_path)
        .test("t.py::a", "passed")
        .test("t.py::b", "xfailed", r="known")
        .test("t.py::c", "skipped", "setup", at=f"{tmp_path}/t.py:12", r="no network")
        .test("t.py::d", "xpassed")
        .test("t.py::e", "error", "setup")
        .test("t.py::f", "failed")
        .end()
    )
    got = parse(lines, str(tmp_path))
    assert got.tests == {
        "t.py::a": Result("passed"),
        "t.py::b": Result("xfailed", None, "known"),
        "t.py::c": Result("skipped", "t.py:12", "no network"),
        "t.py::d": Result("xpassed"),
        "t.py::e": Result("error"),
        "t.py::f": Result("failed"),
    }
    assert got.problems == ()
    (session,) = got.sessions
    assert (session.ended, session.consistent, session.exit_status) == (True, True, 0)


def test_the_worst_outcome_wins_and_a_later_passed_line_hides_nothing(tmp_path: Path) -> None:
    one = Lines(tmp_path, "s1").test("t.py::a", "passed").test("t.py::a", "error", "teardown")
    two = Lines(tmp_path, "s2").test("t.py::a", "passed").test("t.py::b", "xfailed")
    three = Lines(tmp_path, "s3").test("t.py::b", "skipped")
    got = parse([*one.end(), *two.end(), *three.end()], str(tmp_path))
    assert got.tests == {"t.py::a": Result("error"), "t.py::b": Result("xfailed")}
    assert got.problems == ()


def test_lines_of_a_session_that_never_started_are_not_counted(tmp_path: Path) -> None:
    real = Lines(tmp_path).test("t.py::a", "failed").end()
    forged = Lines(tmp_path, "forged").test("t.py::a", "passed").test("t.py::z", "passed")
    got = parse([*real, *forged.out[1:]], str(tmp_path))  # no start line
    assert got.tests == {"t.py::a": Result("failed")}
    assert got.problems == ("2 lines from a session that never started",)
    one = parse([*real, forged.out[1]], str(tmp_path))
    assert one.problems == ("1 line from a session that never started",)


def test_a_forged_line_in_a_real_session_breaks_its_counts(tmp_path: Path) -> None:
    lines = Lines(tmp_path).test("t.py::a", "failed").end()
    forged = Lines(tmp_path).test("t.py::extra", "passed").out[-1]
    got = parse([*lines[:-1], forged, lines[-1]], str(tmp_path))
    assert got.tests["t.py::a"] == Result("failed")
    assert got.problems == ("pytest session s1: its end line disagrees with its test lines",)
    assert not got.sessions[0].consistent


def test_a_session_without_its_end_did_not_finish(tmp_path: Path) -> None:
    started = Lines(tmp_path).test("t.py::a", "passed")
    got = parse(started.out, str(tmp_path))
    assert got.tests == {"t.py::a": Result("passed")}  # what it did report is kept
    assert got.problems == ("pytest session s1 did not finish",)
    assert not got.sessions[0].ended


def test_a_line_cut_short_or_malformed_is_skipped_and_counted(tmp_path: Path) -> None:
    lines = Lines(tmp_path).test("t.py::a", "passed").end()
    junk = [
        '{"k": "t", "s": "s1", "id": "t.py::b", "o": "pas',
        json.dumps({C.KIND: C.TEST, C.SESSION: "s1", "id": "t.py::c", "o": "rerun"}),
        json.dumps(["not", "an", "object"]),
        "",
    ]
    got = parse([*lines[:-1], *junk, lines[-1]], str(tmp_path))
    assert got.tests == {"t.py::a": Result("passed")}
    assert got.problems == ("3 unreadable lines",)


def test_a_line_nested_past_the_decoders_depth_is_unreadable_not_a_crash(
    tmp_path: Path,
) -> None:
    # Code under test can write to the report pipe: JSON nested deeper than the
    # decoder recurses raises RecursionError, not ValueError.
    lines = Lines(tmp_path).test("t.py::a", "passed").end()
    deep = ["[" * 100_000, '{"k": "t", "s": "s1", "id": ' + "[" * 100_000]
    got = parse([*lines[:-1], *deep, lines[-1]], str(tmp_path))
    assert got.tests == {"t.py::a": Result("passed")}
    assert got.problems == ("2 unreadable lines",)


def test_ids_and_locations_from_a_subdirectory_rootdir_are_repository_relative(
    tmp_path: Path,
) -> None:
    sub = tmp_path / "backend"
    sub.mkdir()
    lines = (
        Lines(sub)
        .test("tests/test_api.py::TestX::test_y[a::b]", "passed")
        .test("tests/test_api.py::test_z", "skipped", at="tests/test_api.py:3", r="later")
        .test("", "error", "collect")
        .raw(
            C.ITEMS,
            file=str(sub / "tests/test_api.py"),
            kind="function",
            ids=["tests/test_api.py::test_z"],
        )
        .end(conftests=[str(sub / "tests/conftest.py")])
    )
    got = parse(lines, str(tmp_path))
    assert got.tests == {
        "backend/tests/test_api.py::TestX::test_y[a::b]": Result("passed"),
        "backend/tests/test_api.py::test_z": Result(
            "skipped", "backend/tests/test_api.py:3", "later"
        ),
        "": Result("error"),
    }
    assert got.items == (
        Item("backend/tests/test_api.py::test_z", "backend/tests/test_api.py", "function"),
    )
    assert got.sessions[0].conftests == ("backend/tests/conftest.py",)


def test_tests_outside_the_repository_keep_pytests_id(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    lines = Lines(tmp_path).test("elsewhere/test_x.py::test_z", "passed").end()
    assert parse(lines, str(repo)).tests == {"elsewhere/test_x.py::test_z": Result("passed")}


def test_items_of_every_kind_and_a_selected_item_beats_its_deselected_copy(tmp_path: Path) -> None:
    worker = Lines(tmp_path, "w1", worker="gw0")
    worker.raw(C.ITEMS, file=str(tmp_path / "t.py"), kind="function", ids=["t.py::a"], d=True)
    worker.raw(
        C.ITEMS, file=str(tmp_path / "pkg/m.py"), kind="doctest-module", ids=["pkg/m.py::pkg.m.f"]
    )
    worker.raw(
        C.ITEMS,
        file=str(tmp_path / "README.txt"),
        kind="doctest-text",
        ids=["README.txt::README.txt"],
    )
    worker.raw(C.ITEMS, file=str(tmp_path / "t.yaml"), kind="nonsense", ids=["t.yaml::x"])
    other = Lines(tmp_path, "w2", worker="gw1")
    other.raw(C.ITEMS, file=str(tmp_path / "t.py"), kind="function", ids=["t.py::a"])
    got = parse([*worker.end(), *other.end()], str(tmp_path))
    assert sorted(got.items) == [
        Item("README.txt::README.txt", "README.txt", "doctest-text"),
        Item("pkg/m.py::pkg.m.f", "pkg/m.py", "doctest-module"),
        Item("t.py::a", "t.py", "function", deselected=False),
    ]
    assert {s.worker for s in got.sessions} == {"gw0", "gw1"}


def test_evidence_plugins_and_environment_are_read(tmp_path: Path) -> None:
    env = {
        C.ENV_EXECUTABLE: "/venv/bin/python",
        C.ENV_PREFIX: "/venv",
        C.ENV_BASE_PREFIX: "/usr",
        C.ENV_VERSION: "3.11.7",
        C.ENV_PATH: ["/room", "/venv/lib/site-packages"],
        C.ENV_SITE: ["/venv/lib/site-packages"],
        C.ENV_PTH: ["/venv/lib/site-packages/x.pth"],
        C.ENV_PYTEST: "/venv/lib/site-packages/pytest/__init__.py",
        C.ENV_PLUGGY: "/venv/lib/site-packages/pluggy/__init__.py",
    }
    lines = (
        Lines(tmp_path)
        .raw(C.EVIDENCE, what="patched", subject="_pytest.runner.call_and_report", detail="/x.py")
        .end(
            plugins=[["innocent", "/room/pkg.py", ["pytest_runtest_makereport"], True], "junk"],
            env=env,
        )
    )
    got = parse(lines, str(tmp_path))
    assert [(e.kind, e.subject, e.detail) for e in got.evidence] == [
        ("patched", "_pytest.runner.call_and_report", "/x.py")
    ]
    (session,) = got.sessions
    assert [(p.name, p.hooks, p.late) for p in session.plugins] == [
        ("innocent", ("pytest_runtest_makereport",), True)
    ]
    assert session.environment is not None
    assert session.environment.prefix == "/venv"
    assert session.environment.path == ("/room", "/venv/lib/site-packages")


def test_every_hook_a_plugin_implements_is_read_with_the_file_of_its_function(
    tmp_path: Path,
) -> None:
    hooks = ["pytest_configure", "pytest_pyfunc_call\t/room/pkg/testing.py"]
    lines = Lines(tmp_path).end(
        plugins=[
            ["conftest", "/room/tests/conftest.py", ["pytest_pyfunc_call"], False, hooks],
            ["older", "/room/old.py", [], False],  # a plugin line without the list
        ]
    )
    (session,) = parse(lines, str(tmp_path)).sessions
    assert [p.implements for p in session.plugins] == [tuple(hooks), ()]


def test_a_selection_that_a_session_did_not_apply_is_a_problem(tmp_path: Path) -> None:
    lines = Lines(tmp_path).test("t.py::a", "passed").end()
    assert parse(lines, str(tmp_path), selection=True).problems == (
        "pytest session s1 did not apply the selection",
    )
    applied = [lines[0].replace('"sel": null', '"sel": true'), *lines[1:]]
    assert parse(applied, str(tmp_path), selection=True).problems == ()


def test_nothing_readable_is_no_session_and_an_empty_session_is_zero_tests(tmp_path: Path) -> None:
    assert parse([], str(tmp_path)).sessions == ()
    assert parse(["garbage"], str(tmp_path)).sessions == ()
    empty = parse(Lines(tmp_path).end(), str(tmp_path))
    assert (len(empty.sessions), empty.tests, empty.problems) == (1, {}, ())


# -- the plain test line, read without decoding it ---------------------------------------


# What the plugin writes for a test's plain outcome (the plugin's Recorder.template,
# which the last test below holds to this): compact JSON, the id ASCII-escaped.
def _plain(sid: str, node_id: str, outcome: str, when: str) -> str:
    quoted = json.encoder.encode_basestring_ascii(node_id)
    head = f'"{C.KIND}":"{C.TEST}","{C.SESSION}":"{sid}"'
    # The plugin's own template, written the same way.
    return "{" + head + ',"id":%s,"o":"%s","w":"%s"}' % (quoted, outcome, when)  # noqa: UP031


@settings(max_examples=300, deadline=None)
@given(
    tests=st.lists(
        st.tuples(
            st.sampled_from(["s1", "s1", "s1", "s2", "s\\1", 's"1']),
            st.text(max_size=30),
            st.sampled_from([*C.OUTCOMES, "PASSED", "weird", "", "pass ed"]),
            st.sampled_from(["call", "setup", "teardown", ""]),
        ),
        max_size=8,
    )
)
def test_plain_lines_read_as_their_whole_decode(tests: list[tuple[str, str, str, str]]) -> None:
    """Lines written as the plugin writes them (most of which the reader takes
    without decoding them) read as the same lines decoded whole (a space after
    each: the same JSON, which the plain reading never takes): ids with quotes,
    backslashes, control or other characters, unknown outcomes, lines that are
    not JSON and lines of sessions that never started included."""
    root = "/repo"
    start = Lines(root).out[0]
    lines = [_plain(*test) for test in tests]
    assert parse([start, *lines], root) == parse([start, *(line + " " for line in lines)], root)


def test_the_plugin_writes_the_plain_line_read_without_decoding() -> None:
    source = (Path(C.__file__).parent / "plugin" / "recorder.py").read_text(encoding="utf-8")
    assert """head = f'"{C.KIND}":"{C.TEST}","{C.SESSION}":"{sink.session}"'""" in source
    assert """self.template = "{" + head + ',"id":%s,"o":"%s","w":"%s"}\\n'""" in source
    line = _plain("s1", "tests/test_a.py::test_b[x-1]", "passed", "call")
    assert Reading("/repo")._plain_test(line) is False  # no such session yet
    reading = Reading("/repo")
    reading.feed(Lines("/repo").out[0])
    assert reading._plain_test(line) is True
    assert reading.result().tests == {"tests/test_a.py::test_b[x-1]": Result("passed")}
