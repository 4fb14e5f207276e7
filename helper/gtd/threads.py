"""Two calls that mostly wait on a subprocess each, run side by side in threads:
:func:`both` now, :class:`Later` from a moment another module knows of."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, TypeVar

    _A = TypeVar("_A")
    _B = TypeVar("_B")


def both(first: Callable[[], _A], second: Callable[[], _B]) -> tuple[_A, _B]:
    """``first()`` and ``second()`` at once, ``first`` in a thread: for two calls
    that mostly wait on a subprocess each (two git reads of different things), so
    the two processes run side by side. An exception of either is raised here,
    once both have ended."""
    import threading

    got: list[_A] = []
    failed: list[BaseException] = []

    def work() -> None:
        try:
            got.append(first())
        except BaseException as exc:  # handed to the caller below
            failed.append(exc)

    thread = threading.Thread(target=work, name="gtd-both", daemon=True)
    thread.start()
    try:
        other = second()
    finally:
        thread.join()
    if failed:
        raise failed[0]
    return got[0], other


class Later:
    """A call started when :meth:`start` is called (in a thread: a call that
    mostly waits on a subprocess) and whose value :meth:`result` waits for;
    ``result`` alone makes the call where it was never started. For work that
    may begin at a moment another module knows of (when a test command exits)
    while its value is wanted later. An exception is raised by ``result``."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self._call = call
        self._got: list[Any] = []
        self._failed: list[BaseException] = []
        self._thread: Any = None

    def start(self) -> None:
        if self._thread is not None:
            return
        import threading

        self._thread = threading.Thread(target=self._work, name="gtd-later", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        try:
            self._got.append(self._call())
        except BaseException as exc:  # handed to the caller of result()
            self._failed.append(exc)

    def wait(self) -> None:
        """The call, if started, ended (its value or exception dropped)."""
        if self._thread is not None and self._thread is not True:
            self._thread.join()

    def result(self) -> Any:
        if self._thread is None:
            self._thread = True  # made here, no thread
            self._work()
        elif self._thread is not True:
            self._thread.join()
        if self._failed:
            raise self._failed[0]
        return self._got[0]
