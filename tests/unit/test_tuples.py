"""gtd.tuples.NamedTuple makes the classes typing.NamedTuple makes: the same fields,
defaults, methods and refusals, without typing's annotation checks."""

from __future__ import annotations

import pickle
import subprocess
import sys
import typing

import pytest

from gtd import tuples


def make(base: type) -> type:
    class Point(base):  # type: ignore[misc]
        """A point."""

        x: int
        y: int = 0
        label: str | None = None

        @property
        def norm(self) -> int:
            return abs(self.x) + abs(self.y)

        def moved(self, dx: int) -> Point:
            return self._replace(x=self.x + dx)  # type: ignore[no-any-return]

        @classmethod
        def origin(cls) -> Point:
            return cls(0)

    return Point


OURS, TYPING = make(tuples.NamedTuple), make(typing.NamedTuple)


@pytest.mark.parametrize("cls", [OURS, TYPING])
def test_behaves_as_typing_makes_it(cls: typing.Any) -> None:
    p = cls(3, -4)
    assert p == (3, -4, None)
    assert (p.x, p.y, p.label, p.norm) == (3, -4, None, 7)
    assert p.moved(1) == cls(4, -4)
    assert cls.origin() == (0, 0, None)
    assert cls._fields == ("x", "y", "label")
    assert cls._field_defaults == {"y": 0, "label": None}
    assert p._asdict() == {"x": 3, "y": -4, "label": None}
    assert cls.__doc__ == "A point."
    written = {k: getattr(v, "__forward_arg__", v) for k, v in cls.__annotations__.items()}
    assert written == {"x": "int", "y": "int", "label": "str | None"}  # typing: ForwardRefs
    assert isinstance(p, tuple)
    assert repr(p) == "Point(x=3, y=-4, label=None)"


def test_the_same_attributes_as_typing() -> None:
    # typing also records the class statement's bases (``NamedTuple``): nothing reads it.
    assert set(vars(OURS)) == set(vars(TYPING)) - {"__orig_bases__"}
    assert OURS.__qualname__ == TYPING.__qualname__
    assert OURS.__module__ == TYPING.__module__ == __name__


def test_pickles_as_a_module_level_class() -> None:
    from gtd.git_parse import GitObject  # one of the helper's

    obj = GitObject("0" * 40, "blob", b"data")
    assert pickle.loads(pickle.dumps(obj)) == obj


def test_refuses_what_typing_refuses() -> None:
    with pytest.raises(TypeError, match="Non-default namedtuple field b cannot follow"):

        class Bad(tuples.NamedTuple):
            a: int = 0
            b: int  # type: ignore[misc]  # the type checker refuses it too

    with pytest.raises(AttributeError, match="Cannot overwrite NamedTuple attribute _replace"):

        class Worse(tuples.NamedTuple):
            a: int

            def _replace(self) -> None: ...  # type: ignore[misc]

    with pytest.raises(TypeError, match="only inherit from NamedTuple"):

        class Mixed(tuples.NamedTuple, dict[str, int]):  # type: ignore[misc]
            a: int


def test_the_helper_does_not_use_typing_namedtuple() -> None:
    # The reason the module exists: typing's version costs ~9 ms of every ratchet run.
    code = (
        "import typing, collections\n"
        "made = []\n"
        "real = typing.NamedTupleMeta.__new__\n"
        "typing.NamedTupleMeta.__new__ = lambda *a: made.append(a[1]) or real(*a)\n"
        "import gtd.cli.ratchet_cmd, gtd.auto.ratchet.check, gtd.auto.state\n"
        "print(made)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
