"""The calculator project's templates are shared by every test process of a run."""

from __future__ import annotations

import pytest

from tests.conftest import run_wide_dir
from tests.integration import calc_project


@pytest.fixture(scope="session", autouse=True)
def _calc_templates(tmp_path_factory: pytest.TempPathFactory) -> None:
    calc_project.share_templates(run_wide_dir(tmp_path_factory, "calc-templates"))
