"""Fixtures for the end-to-end tests: the scripted model server (started and
stopped per test) and a skip, with the reason shown, when `claude` is missing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gtd.demo.model_server import ModelServer
from tests.claude_cli import claude_or_skip


@pytest.fixture
def claude() -> str:
    return claude_or_skip()


@pytest.fixture
def server(claude: str) -> Iterator[ModelServer]:
    with ModelServer() as srv:
        yield srv
