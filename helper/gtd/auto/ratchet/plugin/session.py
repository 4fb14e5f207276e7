"""The state of one pytest process's plugin: the settings, the sink, the
selection, the watchers the plugin composed, and the plugins pytest
registered. Made at import (pytest_report's start) and handed to every part
that needs it; no part keeps one of its own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .bytecode import BytecodeGuard
from .selection import Selection
from .sink import Output, Sink

if TYPE_CHECKING:
    from .identities import PluginFiles
    from .imports import ImportWatch
    from .provenance import Provenance
    from .recorder import Recorder
    from .settings import Settings
    from .values import Values


class State:
    """What this pytest process's plugin knows; made at import."""

    def __init__(
        self,
        settings: Settings,
        plugin_file: str,
        provenance: Provenance,
        values: Values,
        files: PluginFiles,
    ) -> None:
        self.settings = settings
        self.sink = Sink(Output(settings))
        self.plugin_file = plugin_file  # the entry point's file
        wants = settings.files is not None or settings.ids is not None
        self.selection = Selection(settings) if wants else None
        self.provenance = provenance
        self.values = values
        self.guard = BytecodeGuard(settings, self.sink, provenance, values)
        self.files = files
        self.started = False  # the session began: a plugin registered from now on is late
        self.registered: dict[int, tuple[str, str | None, list[str], bool]] = {}
        self.conftests: dict[str, None] = {}  # files, in load order
        # id(implementation) -> (hook, implementation, its function), taken when
        # the plugin registered: before any conftest is imported (see Identities)
        self.early_impls: dict[int, tuple[str, Any, object]] = {}
        self.recorder: Recorder | None = None
        self.watch: ImportWatch | None = None

    # The session's id and its output, as the state has always offered them: code
    # in the process can read both wherever they are kept (the reader, not this
    # plugin, is what a forged line meets).
    @property
    def session(self) -> str:
        return self.sink.session

    @property
    def out(self) -> Output:
        return self.sink.out
