"""Check a request body against the provider SDK's own parameter types.

The openai and anthropic SDKs describe request parameters as typed dicts; the
google-genai SDK as pydantic models. :func:`assert_conforms` walks a body that
reached the test server through those types: a missing required key, a key the
SDK does not know, a wrong type or a literal out of range fails the test with
the path to the offending value. No JSON shape is written by hand.
"""

from __future__ import annotations

import collections.abc
import types
import typing
from typing import Any

import pydantic
import typing_extensions

_WRAPPERS = {typing.Required, typing.NotRequired, typing_extensions.Required}
_WRAPPERS |= {typing_extensions.NotRequired, typing.ClassVar}
_SEQUENCES = {list, tuple, collections.abc.Iterable, collections.abc.Sequence}
_MAPPINGS = {dict, collections.abc.Mapping}


class Mismatch(AssertionError):
    """The body does not fit the SDK type."""


def assert_conforms(typed: Any, body: Any) -> None:
    """Raise :class:`Mismatch` naming the path where ``body`` leaves ``typed``."""
    problem = _check(typed, body, "body")
    if problem is not None:
        raise Mismatch(problem)


def _check(typed: Any, value: Any, path: str) -> str | None:  # noqa: C901 - one type form a branch
    origin = typing.get_origin(typed)
    args = typing.get_args(typed)
    if typed is Any or typed is object:
        return None
    if origin is typing.Annotated or origin in _WRAPPERS:
        return _check(args[0], value, path)
    if origin in (typing.Union, types.UnionType):
        problems = [_check(arm, value, path) for arm in args]
        if any(p is None for p in problems):
            return None
        # The arm that got furthest into the value says best what is wrong.
        return max((p for p in problems if p), key=lambda p: len(p.split(":")[0]))
    if origin is typing.Literal or origin is typing_extensions.Literal:
        return None if value in args else f"{path}: {value!r} is not one of {args}"
    if typing_extensions.is_typeddict(typed):
        return _check_typeddict(typed, value, path)
    if isinstance(typed, type) and issubclass(typed, pydantic.BaseModel):
        if typed.model_config.get("extra") != "forbid":
            # The typed-dict SDKs also accept their lenient response models in
            # requests; a body must fit a request parameter type instead.
            return f"{path}: {typed.__name__} is a response model"
        try:
            typed.model_validate(value)
        except pydantic.ValidationError as error:
            return f"{path}: {error}"
        return None
    if origin in _SEQUENCES:
        if not isinstance(value, list):
            return f"{path}: expected a list, got {type(value).__name__}"
        item = args[0] if args else Any
        return next(
            (p for i, v in enumerate(value) if (p := _check(item, v, f"{path}[{i}]"))), None
        )
    if origin in _MAPPINGS:
        return None if isinstance(value, dict) else f"{path}: expected an object"
    return _check_plain(typed, value, path)


def _check_typeddict(typed: Any, value: Any, path: str) -> str | None:
    if not isinstance(value, dict):
        return f"{path}: expected an object for {typed.__name__}, got {type(value).__name__}"
    hints = typing.get_type_hints(typed, include_extras=True)
    unknown = sorted(set(value) - set(hints))
    if unknown:
        return f"{path}: {typed.__name__} has no key {unknown[0]!r}"
    missing = sorted(k for k, hint in hints.items() if _required(typed, hint) and k not in value)
    if missing:
        return f"{path}: {typed.__name__} needs {missing[0]!r}"
    for key, item in value.items():
        problem = _check(hints[key], item, f"{path}.{key}")
        if problem is not None:
            return problem
    return None


def _required(typed: Any, hint: Any) -> bool:
    # The SDKs write Required[...] inside string annotations, which the typed
    # dict's own __required_keys__ does not see on every Python version.
    origin = typing.get_origin(hint)
    if origin in (typing.Required, typing_extensions.Required):
        return True
    if origin in (typing.NotRequired, typing_extensions.NotRequired):
        return False
    return bool(typed.__total__)


def _check_plain(typed: Any, value: Any, path: str) -> str | None:
    if typed is type(None):
        return None if value is None else f"{path}: expected null"
    if typed is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif typed is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(typed, type):
        ok = isinstance(value, typed)
    else:
        return None  # a form no request of ours uses (a TypeVar, a callable)
    return None if ok else f"{path}: expected {typed.__name__}, got {value!r}"
