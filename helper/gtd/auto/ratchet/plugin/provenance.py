"""Where the project's code comes from: the code objects the import system loaded
from each file of the room, the functions each module of the room held when its
import ended, and the files of the room run as code that the run itself wrote."""

from __future__ import annotations

import os
import stat
from types import CodeType, FunctionType
from typing import Any, cast

from .objects import _function_of
from .paths import _dirname, _isabs, _lstat, _norm, _under
from .terms import MISSING as _MISSING

# -- where the project's code comes from ---------------------------------------------
# Code compiled during the run can carry any file name: ``compile(text, file)``
# with the name (and first line) of a file of the room makes code that says it is
# that file's, then ``f.__code__ = ...`` or ``exec`` puts it where the tests call
# it (the assertion helper's body swapped, a good copy of the code under test read
# from outside). The file's name proves nothing; what the import system loaded
# from it does. Every code object made from a file of the room (its module's and
# all nested in it) is kept here, by file; at the end of the session a function of
# the project whose code names such a file and is none of them is reported.
# Likewise each module's functions as its import left them: one rebound since (an
# assertion helper replaced by a function of the package's own, whatever its
# name) is reported too. What the baseline's own run does of this is not held
# against a change (the helper compares the evidence with the baseline's).


class Provenance:
    """The code objects loaded from each file of the room, and the functions each
    module of the room held when its import ended."""

    def __init__(self, loader: Any) -> None:
        # the bytecode guard's loader class: its ``since_ns`` is when the run
        # began (the guard's check at the end sees it moved)
        self.loader = loader
        self.room: tuple[str, ...] = ()  # set once the import watch knows the room
        self.where: dict[str, object] = {}  # a file as named -> in_room's answer
        self.kept: list[CodeType] = []  # alive, so that an id stays theirs
        self.ids: dict[str, set[int]] = {}
        self.top: dict[str, CodeType] = {}  # a file of the room -> its module's code
        # id(module) -> (module, its name, {attribute: function}) at the import's end
        self.bound: dict[int, tuple[object, str, dict[str, FunctionType]]] = {}
        # Files of the room run as code that were written since the run began (or
        # are gone by its end): no sync wrote them, so no commit holds them — a
        # copy of code kept elsewhere, brought in by the code under test.
        self.fresh: dict[str, str] = {}  # room-relative path -> how
        self.looked: dict[str, str | None] = {}  # a code file as named -> how, or None
        self.chains: dict[str, str | None] = {}  # a folder of the room -> how, or None

    def in_room(self, file: object) -> str | None:
        # (absolute only: an origin such as "built-in" or "frozen" is no file, and
        # made absolute it would name one in the room, the working folder)
        if not self.room or not isinstance(file, str):
            return None
        known = self.where.get(file, _MISSING)
        if known is _MISSING:
            known = None
            if _isabs(file):
                norm = _norm(file)
                known = norm if _under(norm, self.room) else None
            self.where[file] = known
        return cast("str | None", known)

    def loaded(self, file: object, code: object) -> None:
        norm = self.in_room(str(file) if file is not None else None)
        if norm is None or type(code) is not CodeType:
            return
        self.kept.append(code)
        self.top[norm] = code
        _reach(code, self.ids.setdefault(norm, set()))

    def written(self, file: str) -> str | None:
        """How ``file``, run as code, came to be, where the run itself wrote it (or
        a symbolic link on its way, which could lead anywhere) or it is gone; None
        for a file the sync wrote or one outside the room."""
        if file in self.looked:
            return self.looked[file]
        how = None
        norm = self.in_room(file)
        since = self.loader.since_ns
        if norm is not None and since:
            how = self._entry(norm, since, own=True)
            if how is not None:
                root = next(r for r in self.room if _under(norm, (r,)))
                self.fresh[norm[len(root) :].lstrip(os.sep)] = how
        self.looked[file] = how
        return how

    def _entry(self, path: str, since: int, *, own: bool) -> str | None:
        """:meth:`written` for ``path`` inside the room: the file itself (``own``)
        by its change time, a folder on its way only if it is a link (a folder's
        own change time moves with every cache written into it); a member of an
        archive (``x.zip/m.py``) by the archive."""
        if not own and path in self.chains:
            return self.chains[path]
        folder = _dirname(path)
        how: str | None = None
        try:
            st = _lstat(path)
        except NotADirectoryError:  # inside an archive: the archive is the file
            return self._entry(folder, since, own=True)
        except OSError:
            how = "gone by the run's end"
        else:
            if (own or stat.S_ISLNK(st.st_mode)) and st.st_ctime_ns >= since:
                how = "written during the run"
        if how is None and folder not in self.room and _under(folder, self.room):
            how = self._entry(folder, since, own=False)
        if not own:
            self.chains[path] = how
        return how

    def executed(self, module: Any) -> None:
        if self.in_room(getattr(module, "__file__", None)) is None:
            return
        functions = {k: v for k, v in vars(module).items() if type(v) is FunctionType}
        self.bound[id(module)] = (module, str(module.__name__), functions)


def _reach(code: CodeType, ids: set[int]) -> None:
    """``code`` and every code object nested in it, by id, into ``ids``."""
    stack = [code]
    while stack:
        each = stack.pop()
        ids.add(id(each))
        stack.extend(c for c in each.co_consts if type(c) is CodeType)


def _module_code(module: object) -> set[int]:
    """The code a module's functions and classes reach: where a decorator's
    wrapper comes from, its code is nested in one of them."""
    ids: set[int] = set()
    for value in list(vars(module).values()):
        members = list(vars(value).values()) if isinstance(value, type) else [value]
        for member in members:
            function = _function_of(member)
            if function is not None:
                _reach(function.__code__, ids)
    return ids
