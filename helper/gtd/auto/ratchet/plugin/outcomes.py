"""The outcome watch: what each test raised, against the report every hook made
of it (registered only where a plugin of the project's could turn one into
the other)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest

from .paths import _abs, _both, _dirname, _under
from .shapes import _environment_roots

if TYPE_CHECKING:
    from collections.abc import Generator

    from .identities import PluginFiles
    from .provenance import Provenance
    from .sink import Sink


class OutcomeWatch:
    """What each test raised, against the report every hook made of it: a
    failure reported as a pass is evidence. A plugin of the project's (a support
    module a conftest loads, whose code the change may edit) can turn a failing
    call's report into a pass, or swallow what the test raised in a wrapper of
    its call. The innermost wrapper of ``pytest_runtest_call`` sees the test's
    own exception; the outermost of ``pytest_runtest_makereport`` sees the call
    before any other wrapper and the report after all of them. Registered
    only where a plugin of the project's implements either hook (:meth:`needed`:
    four generator wrappers a test, ~30 M instructions on 500 tests)."""

    def __init__(self, sink: Sink) -> None:
        from _pytest.outcomes import Skipped, XFailed

        self.sink = sink
        self.not_failures = (Skipped, XFailed)  # pytest.skip(), pytest.xfail()
        self.raised: set[str] = set()  # node ids whose call raised, until reported

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, None]:
        outcome = yield
        excinfo = outcome.excinfo
        if excinfo is not None and not isinstance(excinfo[1], self.not_failures):
            self.raised.add(item.nodeid)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: Any) -> Generator[None, Any, None]:
        excinfo = call.excinfo
        raised = excinfo is not None and not isinstance(excinfo.value, self.not_failures)
        if call.when == "call" and item.nodeid in self.raised:
            self.raised.discard(item.nodeid)
            raised = True
        outcome = yield
        if raised:
            try:
                report = outcome.get_result()
            except BaseException:
                return  # the hook failed: pytest reports that itself
            if getattr(report, "outcome", None) == "passed":
                self.sink.evidence("passed-with-failure", item.nodeid, f"{call.when}, raised")

    @staticmethod
    def needed(pm: Any, provenance: Provenance, files: PluginFiles) -> bool:
        """Whether a plugin of the project's implements either hook: one from a
        file of the room (a conftest, a module of the package), or of no file.
        Installed plugins' code is the environment's, which cannot change
        unseen (hypothesis's and xdist's wrap the report in every run here: the
        watch would cost such a run ~30 M instructions on 500 tests). A
        virtualenv linked into the room (``.venv``) puts its plugins' files
        under the room's path: they are the environment's all the same, as the
        import watch takes them. Where the room is not known, any plugin but
        pytest's own."""
        import _pytest

        home = _dirname(_abs(_pytest.__file__)) + os.sep
        room = provenance.room
        environment = tuple(f for p in _environment_roots() for f in _both(p))
        for name in ("pytest_runtest_makereport", "pytest_runtest_call"):
            caller = getattr(pm.hook, name, None)
            for impl in caller.get_hookimpls() if caller is not None else ():
                file = files.of(impl.plugin)
                if file is None:
                    return True
                if room:
                    norm = provenance.in_room(file)
                    if norm is not None and not _under(norm, environment):
                        return True
                elif not file.startswith(home):
                    return True
        return False
