"""Fixtures for step mode's integration tests: a real repository with a tiny real
test suite (``python3 check.py``: green iff ``value.txt`` says ``ok``) and an
in-process ``gtd`` runner (the CLI's own ``main``; git and the test command still run
as real subprocesses)."""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gtd.cli import main
from tests.conftest import Repo

CHECK = """\
import pathlib, sys
value = pathlib.Path("value.txt")
if not value.exists() or value.read_text().strip() != "ok":
    print("FAILED test_value: value.txt is not ok")
    sys.exit(1)
"""


@dataclass
class Out:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        return json.loads(self.stdout)

    @property
    def committed(self) -> list[str]:
        return [
            line.removeprefix("committed: ")
            for line in self.stdout.splitlines()
            if line.startswith("committed: ")
        ]


Gtd = Callable[..., Out]


def call_gtd(cwd: Path, *args: str) -> Out:
    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    code: int = 0
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(list(args))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.chdir(old)
    return Out(code, out.getvalue(), err.getvalue())


class StepRepo(Repo):
    def gtd(self, *args: str) -> Out:
        return call_gtd(self.path, *args)

    def ok(self, *args: str) -> Out:
        res = self.gtd(*args)
        assert res.code == 0, f"gtd {args} failed: {res.stderr}{res.stdout}"
        return res

    def first_parent(self) -> list[str]:
        return self.git("log", "--first-parent", "--format=%s").splitlines()[::-1]

    def config(self, **extra: Any) -> None:
        data = {"testCommand": "python3 check.py", **extra}
        self.write(".gtdrc.json", json.dumps(data) + "\n")

    def exists(self, rel: str) -> bool:
        return (self.path / rel).exists()

    def read(self, rel: str) -> str:
        return (self.path / rel).read_text()

    def remove(self, rel: str) -> None:
        (self.path / rel).unlink()


@pytest.fixture
def step_repo(tmp_path: Path) -> StepRepo:
    """A repository on ``main`` with the check suite and a config, one commit."""
    path = tmp_path / "repo"
    path.mkdir()
    r = StepRepo(path)
    r.git("init", "-q", "-b", "main")
    r.write("check.py", CHECK)
    r.write("value.txt", "bad\n")
    r.config()
    r.commit_all("chore: init")
    return r


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[..., StepRepo]:
    def make(name: str = "bare") -> StepRepo:
        path = tmp_path / name
        path.mkdir()
        r = StepRepo(path)
        r.git("init", "-q", "-b", "main")
        return r

    return make
