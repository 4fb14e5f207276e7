"""What the checks ask of any object: the file its code comes from, whether it
is behaviour or data, how to name it in evidence, the plain function it runs."""

from __future__ import annotations

from types import FunctionType, ModuleType
from typing import Any, cast

from .paths import _abs


def _code_file(value: object) -> str | None:
    """The file a function's code comes from; None for code generated at run time
    (``<string>``: a dataclass's methods) and for what has no code."""
    for attr in ("fget", "__func__"):
        inner = getattr(value, attr, None)
        if inner is not None and inner is not value:
            return _code_file(inner)
    code = getattr(value, "__code__", None)
    file = getattr(code, "co_filename", None)
    if not isinstance(file, str) or file.startswith("<"):
        return None
    return _abs(file)


def _watchable(value: object) -> bool:
    """Behaviour, not data: pytest keeps flags of its own on some classes."""
    return callable(value) or hasattr(value, "__get__")


def _describe(value: object) -> str:
    if isinstance(value, ModuleType):
        return f"the module {value.__name__} ({getattr(value, '__file__', None) or 'no file'})"
    file = _code_file(value)
    if file:
        return file
    module = getattr(value, "__module__", None)
    return f"{type(value).__name__} from {module}" if module else type(value).__name__


def _function_in(obj: object) -> object:
    """A method's function; any other callable itself. (A plain function, nearly
    every test's, is asked nothing: ``getattr`` with a default makes and clears
    an AttributeError inside.)"""
    if type(obj) is FunctionType:
        return obj
    return getattr(obj, "__func__", obj)


def _member(owner: object, name: str) -> object:
    """What a class (or a module) holds under ``name``, as its body made it: no
    descriptor run, no instance made (a staticmethod's function)."""
    if not isinstance(owner, (type, ModuleType)):
        return None
    value = vars(owner).get(name)
    if value is None and isinstance(owner, type):
        from inspect import getattr_static  # an inherited test: rare

        value = getattr_static(owner, name, None)
    return _function_in(value)


def _reloaded(now: object, before: FunctionType) -> bool:
    """Whether ``now`` is ``before``, or what reloading its module made of it: the
    same code (compiled again from the same text), globals, defaults and cells.
    A module reloaded in a test leaves its old functions wherever they were
    imported to."""
    if now is before:
        return True
    return (
        type(now) is FunctionType
        and now.__code__ == before.__code__
        and now.__globals__ is before.__globals__
        and now.__defaults__ == before.__defaults__
        and now.__kwdefaults__ == before.__kwdefaults__
        and now.__closure__ is None
        and before.__closure__ is None
    )


def _function_of(member: object) -> FunctionType | None:
    """The plain function a module or class attribute runs: itself, a static or
    class method's, a property's getter. By type alone: an attribute lookup on
    any other object could run code of its own (and costs a raised error)."""
    kind = type(member)
    if kind is FunctionType:
        return cast(FunctionType, member)
    if kind is staticmethod or kind is classmethod:
        inner = cast(Any, member).__func__
    elif issubclass(kind, property):
        inner = cast(property, member).fget
    else:
        return None
    return inner if type(inner) is FunctionType else None


def _by_qualname(module: object, qualname: str) -> object:
    """What ``module`` holds under a function's qualified name (None for one
    defined in a function, a lambda, or one no longer there)."""
    found: object = module
    for part in qualname.split("."):
        if part.startswith("<"):
            return None
        found = getattr(found, part, None)
    return found
