"""``@frozen``: a frozen dataclass whose ``__repr__``, ``__eq__`` and ``__hash__`` are shared.

``dataclasses`` writes and compiles the source of every method it adds, for every
class, while the module that declares it is imported: six methods for a frozen
class. A short run imports about a hundred of them, and that compiling was a
quarter of its start-up. ``@frozen`` lets ``dataclasses`` add only what depends on
the fields' names (``__init__`` and the guards that make instances read-only) and
gives the class three methods written once here, which behave as the generated
ones: the same text, equality only between instances of the same class, the hash
of the compared fields (a field declared ``compare=False``, ``repr=False`` or with
its own ``hash`` is treated as ``dataclasses`` treats it). A method the class
defines itself is kept.

Type checkers see a frozen dataclass (``dataclass_transform``); at run time it is
one (``dataclasses.fields``, ``replace`` and ``asdict`` work as ever).
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

__all__ = ["frozen"]

T = TypeVar("T")


@overload
def frozen(cls: type[T], /) -> type[T]: ...


@overload
def frozen(*, kw_only: bool = False) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: Any = None, /, *, kw_only: bool = False) -> Any:
    """Declare a frozen dataclass (``@frozen`` or ``@frozen(kw_only=True)``)."""

    def wrap(plain: type[T]) -> type[T]:
        made = dataclasses.dataclass(frozen=True, kw_only=kw_only, repr=False, eq=False)(plain)
        _share_methods(made)
        return made

    return wrap if cls is None else wrap(cls)


def _share_methods(cls: type[Any]) -> None:
    fields = dataclasses.fields(cls)
    shown = tuple(f.name for f in fields if f.repr)
    compared = _getter(f.name for f in fields if f.compare)
    hashed = _getter(f.name for f in fields if (f.compare if f.hash is None else f.hash))
    own = vars(cls)

    def __eq__(self: Any, other: object) -> bool:  # noqa: N807 (a method, set below)
        if other.__class__ is not self.__class__:
            return NotImplemented
        return bool(compared(self) == compared(other))

    def __hash__(self: Any) -> int:  # noqa: N807
        return hash(hashed(self))

    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:  # noqa: N807
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{self.__class__.__qualname__}({inner})"

    # As ``dataclasses`` decides: a ``__hash__`` the class wrote is kept (the ``None``
    # Python puts beside a hand-written ``__eq__`` is not one).
    own_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    if "__eq__" not in own:
        cls.__eq__ = __eq__  # type: ignore[assignment]
    if not own_hash:
        cls.__hash__ = __hash__  # type: ignore[assignment]
    if "__repr__" not in own:
        cls.__repr__ = __repr__  # type: ignore[assignment]


def _getter(names: Any) -> Callable[[Any], tuple[Any, ...]]:
    """A function giving the values of ``names`` as a tuple (``attrgetter`` in C)."""
    names = tuple(names)
    if not names:
        return lambda _: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return attrgetter(*names)
