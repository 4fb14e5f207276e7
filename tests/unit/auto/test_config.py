"""`.deepflow/config.yaml`: defaults, values, the template, errors with line numbers,
and where the test command came from (detection itself: tests/unit/test_detect.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtd.auto.config import AutoConfig, load_auto_config, template_text
from gtd.errors import InputError
from gtd.paths import CONFIG as CONFIG_PATH


def write(root: Path, text: str) -> None:
    path = root / CONFIG_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_missing_file_means_defaults(tmp_path: Path) -> None:
    assert load_auto_config(tmp_path) == AutoConfig()


def test_template_is_valid_and_states_the_defaults(tmp_path: Path) -> None:
    text = template_text()
    write(tmp_path, text)
    assert load_auto_config(tmp_path) == AutoConfig()
    for key in (
        "build_command",
        "test_command",
        "typecheck_command",
        "lint_command",
        "timeout_seconds: 600",
        "junit_xml",
        "circuit_breaker_threshold: 3",
        "agent_timeout_minutes: 45",
        "max_file_mb: 100",
        "protect: []",
    ):
        assert key in text


def test_protect_patterns_are_kept_in_order_once(tmp_path: Path) -> None:
    write(tmp_path, "ratchet:\n  protect: [fixtures/, '*.golden', fixtures/, ' /top.json ']\n")
    assert load_auto_config(tmp_path).protect == ("fixtures/", "*.golden", "/top.json")


def test_full_config(tmp_path: Path) -> None:
    write(
        tmp_path,
        """\
ratchet:
  build_command: make build
  test_command: "pytest -q"
  typecheck_command: mypy .
  lint_command: ruff check . && ruff format --check .
  timeout_seconds: 90.5
  junit_xml: reports/*.xml
quality:
  test_command: ignored because ratchet.test_command wins
circuit_breaker_threshold: 5
cycle:
  agent_timeout_minutes: 20
commit:
  max_file_mb: 2.5
""",
    )
    assert load_auto_config(tmp_path) == AutoConfig(
        build_command="make build",
        test_command="pytest -q",
        typecheck_command="mypy .",
        lint_command="ruff check . && ruff format --check .",
        timeout_s=90.5,
        junit_xml="reports/*.xml",
        circuit_breaker_threshold=5,
        agent_timeout_minutes=20,
        max_file_mb=2.5,
        test_command_source="config",
        test_command_reason="ratchet.test_command in .deepflow/config.yaml",
    )


def test_quality_test_command_is_deepflows_fallback(tmp_path: Path) -> None:
    write(tmp_path, "quality:\n  test_command: npm test\nratchet:\n  test_command: null\n")
    cfg = load_auto_config(tmp_path)
    assert (cfg.test_command, cfg.test_command_source) == ("npm test", "quality")


def test_detected_when_unset(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module x\n")
    write(tmp_path, "circuit_breaker_threshold: 2\n")
    cfg = load_auto_config(tmp_path)
    assert (cfg.test_command, cfg.test_command_source) == ("go test ./...", "detected")
    assert cfg.circuit_breaker_threshold == 2


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("ratchet:\n  test_command: [unclosed\n", 3, "YAML syntax error"),
        ("ratchet:\n\ttest_command: x\n", 2, "YAML syntax error"),
        ("- a\n- b\n", 1, "top level must be a mapping"),
        ("just text\n", 1, "top level must be a mapping"),
        ("ratchet:\n  test_comand: pytest\n", 2, "unknown key ratchet.test_comand"),
        ("retchet:\n  test_command: pytest\n", 1, "unknown key retchet"),
        ("quality:\n  build_command: make\n", 2, "unknown key quality.build_command"),
        ("ratchet: pytest\n", 1, "ratchet must be a mapping"),
        ("ratchet:\n  test_command: true\n", 2, "must be a command string or null"),
        ("ratchet:\n  test_command: 5\n", 2, "must be a command string or null"),
        ("ratchet:\n  test_command: ''\n", 2, "must be a command string or null"),
        ("ratchet:\n  lint_command: ruff 'check\n", 2, "cannot split the command"),
        ("ratchet:\n  junit_xml: [a, b]\n", 2, "must be a file path or glob"),
        ("ratchet:\n  timeout_seconds: 0\n", 2, "number of seconds > 0"),
        ("ratchet:\n  timeout_seconds: -5\n", 2, "number of seconds > 0"),
        ("ratchet:\n  timeout_seconds: '600'\n", 2, "number of seconds > 0"),
        ("ratchet:\n  timeout_seconds: .inf\n", 2, "must be finite"),
        ("commit:\n  max_file_mb: 0\n", 2, "number of megabytes > 0"),
        ("circuit_breaker_threshold: 0\n", 1, "integer ≥ 1"),
        ("circuit_breaker_threshold: 2.5\n", 1, "integer ≥ 1"),
        ("circuit_breaker_threshold: yes\n", 1, "integer ≥ 1, not a boolean (true)"),
        ("\n\ncycle:\n  agent_timeout_minutes: -1\n", 4, "integer ≥ 1"),
        ("circuit_breaker_threshold: 3\ncircuit_breaker_threshold: 4\n", 2, "duplicate key"),
        ("? [a, b]\n: 1\n", 1, "YAML error: while constructing a mapping found unhashable key"),
        ("1: x\n", 1, "unknown key 1"),
        ("ratchet:\n  protect: fixtures/\n", 2, "must be a list of patterns"),
        ("ratchet:\n  protect:\n    - golden/\n    - ../up\n", 3, "protect[1] must stay inside"),
        ("ratchet:\n  protect: ['a\\']\n", 2, "is not a gitignore pattern"),
        ("ratchet:\n  protect: ['!']\n", 2, "is not a gitignore pattern"),
        ("ratchet:\n  protect: [5]\n", 2, "must be a gitignore-style pattern"),
        ("parallel: 0\n", 1, "parallel must be an integer from 1 to 16"),
        ("\nparallel: 17\n", 2, "parallel must be an integer from 1 to 16"),
        ("parallel: two\n", 1, "parallel must be an integer from 1 to 16"),
        ("parallel: 2.5\n", 1, "parallel must be an integer from 1 to 16"),
        ("parallel: true\n", 1, "parallel must be an integer from 1 to 16"),
        ("paralel: 2\n", 1, "unknown key paralel"),
        ("test_runs: 0\n", 1, "test_runs must be an integer from 1 to 64"),
        ("\ntest_runs: 65\n", 2, "test_runs must be an integer from 1 to 64"),
        ("test_runs: all\n", 1, "test_runs must be an integer from 1 to 64"),
        ("test_runs: 1.5\n", 1, "test_runs must be an integer from 1 to 64"),
    ],
)
def test_errors_name_the_line(tmp_path: Path, text: str, line: int, fragment: str) -> None:
    write(tmp_path, text)
    with pytest.raises(InputError) as info:
        load_auto_config(tmp_path)
    err = info.value
    assert err.path == CONFIG_PATH
    assert err.line == line, err.render()
    assert fragment in err.message
    assert err.message.startswith(f"{CONFIG_PATH}:{line}: ")


def test_parallel_is_read_and_one_by_default(tmp_path: Path) -> None:
    assert load_auto_config(tmp_path).parallel == 1
    write(tmp_path, "parallel: 3\n")
    assert load_auto_config(tmp_path).parallel == 3


def test_parallel_at_its_default_leaves_the_sealed_config_as_before(tmp_path: Path) -> None:
    """A repository set up before `parallel:` existed sealed a config without it:
    at the default it still compares equal (setup does not take the baseline
    again); set, it is sealed and read back."""
    from gtd.auto.config import from_json, to_json

    sealed = to_json(AutoConfig())
    assert "parallel" not in sealed
    assert from_json(sealed) == AutoConfig()
    write(tmp_path, "parallel: 4\n")
    chosen = load_auto_config(tmp_path)
    assert to_json(chosen)["parallel"] == 4
    assert from_json(to_json(chosen)) == chosen


def test_test_runs_default_to_one_per_two_cores_and_seal_only_when_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from gtd.auto.config import from_json, test_runs, to_json

    for cores, expected in ((None, 1), (1, 1), (2, 1), (3, 1), (8, 4)):
        monkeypatch.setattr(os, "cpu_count", lambda c=cores: c)
        assert test_runs(tmp_path) == expected, cores
    assert load_auto_config(tmp_path).test_runs is None
    assert "test_runs" not in to_json(AutoConfig())
    write(tmp_path, "parallel: 2\ntest_runs: 3\n")
    assert test_runs(tmp_path) == 3
    chosen = load_auto_config(tmp_path)
    assert chosen.test_runs == 3
    assert from_json(to_json(chosen)) == chosen


def test_test_runs_alone_reads_the_same_errors(tmp_path: Path) -> None:
    """The room's own read of the key (no detection, run before every judged
    run) refuses what the whole config's read refuses, naming the line."""
    from gtd.auto.config import test_runs

    write(tmp_path, "\ntest_runs: 0\n")
    with pytest.raises(InputError) as info:
        test_runs(tmp_path)
    assert info.value.line == 2
    assert "test_runs must be an integer from 1 to 64" in info.value.message


def test_unknown_key_hint_lists_known_keys(tmp_path: Path) -> None:
    write(tmp_path, "cycle:\n  agent_timeout: 5\n")
    with pytest.raises(InputError) as info:
        load_auto_config(tmp_path)
    assert info.value.hint is not None
    assert "cycle.agent_timeout_minutes" in info.value.hint


def test_empty_and_comment_only_files_are_defaults(tmp_path: Path) -> None:
    write(tmp_path, "# nothing yet\n")
    assert load_auto_config(tmp_path) == AutoConfig()
    write(tmp_path, "ratchet:\ncycle:\n")  # empty sections are null
    assert load_auto_config(tmp_path) == AutoConfig()


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / CONFIG_PATH
    path.parent.mkdir()
    path.write_bytes(b"ratchet:\n  test_command: \xff\n")
    with pytest.raises(InputError, match="not UTF-8"):
        load_auto_config(tmp_path)


def test_pure_python_loader_gives_the_same_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    write(tmp_path, "ratchet:\n  timeout_seconds: 0\n")
    with pytest.raises(InputError) as info:
        load_auto_config(tmp_path)
    assert info.value.line == 2


# -- the test command's origin and links -------------------------------------------------


def test_a_configured_command_says_where_it_came_from(tmp_path: Path) -> None:
    write(tmp_path, "ratchet:\n  test_command: make test\n")
    cfg = load_auto_config(tmp_path)
    assert cfg.test_command_reason == f"ratchet.test_command in {CONFIG_PATH}"
    write(tmp_path, "quality:\n  test_command: npm test\n")
    assert (
        load_auto_config(tmp_path).test_command_reason == f"quality.test_command in {CONFIG_PATH}"
    )


def make_venv(folder: Path) -> None:
    """The two things that make a folder a virtualenv to the detector."""
    (folder / "bin").mkdir(parents=True)
    (folder / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (folder / "bin" / "python").write_text("")


def test_a_detected_virtualenv_is_linked_and_the_reason_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    (tmp_path / "conftest.py").write_text("")
    make_venv(tmp_path / ".venv")
    cfg = load_auto_config(tmp_path)
    assert cfg.test_command == ".venv/bin/python -m pytest"
    assert cfg.test_command_source == "detected"
    assert cfg.links == (".venv",)
    assert cfg.test_command_reason is not None
    assert ".venv/" in cfg.test_command_reason


def test_a_configured_command_from_a_virtualenv_links_it_once(tmp_path: Path) -> None:
    make_venv(tmp_path / "venv")
    write(
        tmp_path,
        "ratchet:\n  test_command: venv/bin/python -m pytest\n"
        "  lint_command: venv/bin/ruff check .\n  link: [venv, node_modules]\n",
    )
    assert load_auto_config(tmp_path).links == ("venv", "node_modules")
    write(tmp_path, "ratchet:\n  test_command: venv/bin/python -m pytest\n")
    assert load_auto_config(tmp_path).links == ("venv",)
    # A program in a folder that is no virtualenv links nothing.
    write(tmp_path, "ratchet:\n  test_command: scripts/run-tests.sh\n")
    assert load_auto_config(tmp_path).links == ()


# -- prices and billing (docs/cost.md) ----------------------------------------------


def test_prices_and_billing_are_read(tmp_path: Path) -> None:
    write(
        tmp_path,
        "billing: subscription\nprices:\n"
        "  local-llm: {input: 0.5, output: 1, cache_write: 0, cache_read: 0}\n"
        "  claude-opus-5-5:\n    input: 3\n    output: 15\n    cache_write: 3.75\n"
        "    cache_read: 0.3\n",
    )
    config = load_auto_config(tmp_path)
    assert config.billing == "subscription"
    assert config.prices == (
        ("local-llm", 0.5, 1.0, 0.0, 0.0),
        ("claude-opus-5-5", 3.0, 15.0, 3.75, 0.3),
    )
    assert AutoConfig().billing == "api"


@pytest.mark.parametrize(
    ("text", "line", "said", "hint"),
    [
        (
            "prices:\n  m: {input: 1, output: 2, cache_write: 3}\n",
            2,
            "prices.m lacks `cache_read`",
            "give all four prices",
        ),
        (
            "prices:\n  m: {input: -1, output: 2, cache_write: 3, cache_read: 0}\n",
            2,
            "prices.m.input must be a number of dollars per million tokens ≥ 0",
            "US dollars per million tokens",
        ),
        (
            "prices:\n  m: {input: cheap, output: 2, cache_write: 3, cache_read: 0}\n",
            2,
            "prices.m.input must be a number",
            "US dollars per million tokens",
        ),
        (
            "prices:\n  m: {inptu: 1, output: 2, cache_write: 3, cache_read: 0}\n",
            2,
            "unknown key prices.m.inptu",
            "give all four prices",
        ),
        ("prices: [claude]\n", 1, "prices must be a mapping of model names", None),
        ("billing: monthly\n", 1, "billing must be one of api, subscription", None),
    ],
)
def test_bad_prices_say_where_and_what_to_do(
    tmp_path: Path, text: str, line: int, said: str, hint: str | None
) -> None:
    write(tmp_path, text)
    with pytest.raises(InputError) as caught:
        load_auto_config(tmp_path)
    rendered = caught.value.render()
    assert rendered.startswith(f"{CONFIG_PATH}:{line}: {said}"), rendered
    if hint is not None:
        assert hint in rendered, rendered
