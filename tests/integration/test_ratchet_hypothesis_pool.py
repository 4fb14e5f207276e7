"""The plugin stays out of hypothesis's pool of the project's literals.

hypothesis draws part of its examples from the literals of every loaded module
whose file is outside site-packages and the standard library: the project's own
code, as it takes it, and the plugin's wherever the helper is not installed
there (an editable checkout, as here). A judged run whose pool holds the
plugin's literals draws other examples than the bare run: another suite's work
(attrs' ~2 %), and a bug behind one of the project's literals drawn less often.
A probe project's test reads the pool hypothesis draws from, bare and under
the plugin, through the helper's own run files."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from gtd import proc
from gtd.auto.ratchet import early, report_listener
from tests.conftest import Repo

pytestmark = pytest.mark.slow

LABELS = '''\
"""Labels for items."""


def shout(count: int) -> int:
    if count == 48611:
        return count
    return count + 1
'''
# The pool, as hypothesis takes it when it draws an example.
PROBE = """\
import json
import os

from hypothesis.internal.conjecture.providers import _get_local_constants

import inventory.labels


def test_pool():
    pool = _get_local_constants()
    with open(os.environ["PROBE_POOL"], "w") as handle:
        json.dump(sorted(repr(value) for value in pool), handle)
"""
PYTEST = f"{shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider -p no:xdist"


@pytest.fixture
def probe(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> Repo:
    pytest.importorskip(
        "hypothesis.internal.conjecture.providers",
        reason="needs hypothesis (the pool is its own)",
    )
    from hypothesis.internal.conjecture import providers

    if not hasattr(providers, "_get_local_constants"):
        pytest.skip("this hypothesis draws no examples from the project's literals")
    for name in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTHONPATH"):
        monkeypatch.delenv(name, raising=False)
    repo.write("inventory/__init__.py", "")
    repo.write("inventory/labels.py", LABELS)
    repo.write("tests/test_probe.py", PROBE)
    repo.write("pytest.ini", "[pytest]\npythonpath = .\n")
    return repo


def _pool(root: Path, out: Path, *, judged: bool) -> list[str]:
    argv, _ = proc.command_argv(f"{PYTEST} tests/test_probe.py")
    env = {"PROBE_POOL": str(out)}
    if judged:
        listener = report_listener.start(report_listener.Request(root))
        result = proc.run(argv, root, env={**listener.env, **env}, pass_fds=listener.pass_fds)
        report = listener.finish()
        assert report.source == "plugin", result.output
        # The plugin's file, as the baseline records it: the entry module's path.
        files = {p.file for p in report.sessions[0].plugins if p.name == early.PLUGIN_NAME}
        assert files == {early.PLUGIN_SOURCE}
    else:
        result = proc.run(argv, root, env=env)
    assert result.returncode == 0, result.output
    pool: list[str] = json.loads(out.read_text())
    return pool


def test_a_judged_runs_pool_holds_the_projects_literals_and_none_of_the_plugins(
    probe: Repo, tmp_path: Path
) -> None:
    assert "/site-packages/" not in early.PLUGIN_SOURCE, "an installed helper proves nothing"
    bare = _pool(probe.path, tmp_path / "bare.json", judged=False)
    assert "48611" in bare  # the probe sees the project's literals
    judged = _pool(probe.path, tmp_path / "judged.json", judged=True)
    assert judged == bare, f"the plugin's literals in the pool: {sorted(set(judged) - set(bare))}"
