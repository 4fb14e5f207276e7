"""The kill harness's templates: built once per test run and shared by every
xdist worker (the first to come builds them under a lock, the others wait)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from filelock import FileLock

from tests.conftest import run_wide_dir
from tests.kill import procs, scene

SEED_VAR = "GTD_KILL_SEED"


@pytest.fixture(scope="session")
def kill_setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[scene.Templates, int]:
    """The templates and the run's seed (``GTD_KILL_SEED``, else a random one,
    the same for every worker)."""
    if not procs.available():
        pytest.skip("the kill harness walks /proc to find a helper's process tree (Linux only)")
    shared = run_wide_dir(tmp_path_factory, "gtd-kill")
    done = shared / "built.json"
    with FileLock(str(shared / "build.lock")):
        if not done.exists():
            home = shared / "home"
            home.mkdir()
            gitconfig = home / ".gitconfig"
            gitconfig.write_text("[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n")
            env = {**os.environ, "HOME": str(home), "GIT_CONFIG_GLOBAL": str(gitconfig)}
            t = scene.build(shared / "templates", env)
            raw = os.environ.get(SEED_VAR)
            seed = int(raw) if raw else random.SystemRandom().randrange(2**32)
            data = {
                "seed": seed,
                "env": t.env,
                "dirs": {k: str(v) for k, v in t.dirs.items()},
                "seconds": t.seconds,
            }
            done.write_text(json.dumps(data))
    data = json.loads(done.read_text())
    t = scene.Templates(
        shared / "templates",
        data["env"],
        {k: Path(v) for k, v in data["dirs"].items()},
        data["seconds"],
    )
    return t, int(data["seed"])
