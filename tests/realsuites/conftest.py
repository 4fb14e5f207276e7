"""The real projects, built once per session and shared by the xdist workers."""

from __future__ import annotations

import pickle
from collections.abc import Callable

import pytest

from tests.conftest import run_wide_dir
from tests.realsuites.projects import PROJECTS, Built, build


@pytest.fixture(scope="session")
def built_project(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Built]:
    """``name`` → its pristine and set-up repositories, built by whichever worker
    asks first (the others wait for it and reuse the result)."""
    from filelock import FileLock

    shared = run_wide_dir(tmp_path_factory, "realsuites")
    cache: dict[str, Built] = {}

    def get(name: str) -> Built:
        if name in cache:
            return cache[name]
        where = shared / name
        record = shared / f"{name}.pickle"
        with FileLock(str(shared / f"{name}.lock"), timeout=1800):
            if record.is_file():
                built: Built = pickle.loads(record.read_bytes())
            else:
                failed = shared / f"{name}.failed"
                if failed.is_file():  # another worker could not build it: say the same
                    pytest.skip(failed.read_text())
                try:
                    built = build(PROJECTS[name], where)
                except pytest.skip.Exception as exc:
                    failed.write_text(str(exc))
                    raise
                record.write_bytes(pickle.dumps(built))
        cache[name] = built
        return built

    return get
