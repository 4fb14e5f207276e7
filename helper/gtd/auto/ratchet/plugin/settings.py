"""What the helper asked of this run, read once from the file the environment
names."""

from __future__ import annotations

import json
import os
from typing import Any

from .paths import _both, _join
from .terms import C


class Settings:
    """What the helper asked for, read once from the file the environment names."""

    def __init__(self, data: dict[str, Any], since_ns: int | None = None) -> None:
        # When the run began: the settings file's change time (the helper writes
        # it after syncing the room, before any of the room's code runs).
        self.since_ns = since_ns
        self.report: str | None = data.get(C.SETTING_REPORT)
        self.junit: str | None = data.get(C.SETTING_JUNIT)
        self.site: str | None = data.get(C.SETTING_SITE)
        self.root = str(data.get(C.SETTING_ROOT) or os.getcwd())
        files, ids = data.get(C.SETTING_FILES), data.get(C.SETTING_IDS)
        self.files = None if files is None else [str(f) for f in files]
        self.ids = None if ids is None else [str(i) for i in ids]
        self.forbidden = tuple(
            form for path in data.get(C.SETTING_FORBIDDEN) or () for form in _both(str(path))
        )
        live, room = data.get(C.SETTING_LIVE), data.get(C.SETTING_ROOM)
        self.redirect = (str(live), str(room)) if live and room else None
        since = data.get(C.SETTING_ENV_SINCE)
        self.env_since: int | None = since if type(since) is int else None
        guarded = data.get(C.SETTING_GUARDED)
        folders: dict[str, str] = {}
        self.guarded = (
            None
            if guarded is None
            else frozenset(
                form for rel in guarded for form in _both(_join(self.root, str(rel)), folders)
            )
        )


def read_settings() -> Settings | None:
    path = os.environ.get(C.ENV_SETTINGS)
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
            since_ns = os.fstat(handle.fileno()).st_ctime_ns
        if not isinstance(data, dict) or data.get(C.SETTING_VERSION) != C.VERSION:
            return None
        return Settings(data, since_ns)
    except Exception:  # unreadable: no report at all, and the JUnit XML stays on
        return None
