"""``@frozen`` and ``@mutable``: dataclasses whose ``__repr__``, ``__eq__`` (and hash) are shared.

``dataclasses`` writes and compiles the source of every method it adds, for every
class, while the module that declares it is imported: six methods for a frozen
class. A short run imports about a hundred of them, and that compiling was a
quarter of its start-up. ``@frozen`` lets ``dataclasses`` add only what depends on
the fields' names (``__init__`` and the guards that make instances read-only) and
gives the class three methods written once here, which behave as the generated
ones: the same text, equality only between instances of the same class, the hash
of the compared fields (a field declared ``compare=False``, ``repr=False`` or with
its own ``hash`` is treated as ``dataclasses`` treats it). A method the class
defines itself is kept. ``@mutable`` is a plain ``@dataclass`` made the same way:
writable instances, no hash unless the class writes one (as ``dataclasses``
decides for a class with ``__eq__``).

Type checkers see dataclasses (``dataclass_transform``); at run time they are
(``dataclasses.fields``, ``replace`` and ``asdict`` work as ever).

On Python 3.11 (:data:`_FAST`) the class is made here, not by ``dataclasses``,
which spends some 60 microseconds a class looking for what these classes never
use: a short run declares over a hundred of them. :func:`_fast` does what
``dataclasses`` 3.11 does for a class with string annotations (the same fields,
defaults, ``__init__`` text, read-only guards of a frozen class,
``__match_args__`` and docstring; tests/test_valueclass.py compares every class
of the package both ways), and hands anything else to ``dataclasses``: an
``InitVar`` or ``KW_ONLY``, an annotation that is not a string, a method it
would refuse to overwrite, a mutable default, a non-default field after a
default one.
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
import re
import reprlib
import sys
import typing
from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError
from operator import attrgetter
from types import MemberDescriptorType
from typing import Any, TypeVar, dataclass_transform, overload

from attractor import methodcache

# Before any of the package's dataclasses is made: each module that declares one
# imports this module first.
methodcache.install()

__all__ = ["frozen", "mutable"]

T = TypeVar("T")


@overload
def frozen(cls: type[T], /) -> type[T]: ...


@overload
def frozen(*, kw_only: bool = False) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: Any = None, /, *, kw_only: bool = False) -> Any:
    """Declare a frozen dataclass (``@frozen`` or ``@frozen(kw_only=True)``)."""

    def wrap(plain: type[T]) -> type[T]:
        made = _fast(plain, kw_only, frozen=True) if _FAST else None
        if made is None:
            made = dataclasses.dataclass(frozen=True, kw_only=kw_only, repr=False, eq=False)(plain)
        _share_methods(made)
        return made

    return wrap if cls is None else wrap(cls)


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def mutable(cls: type[T], /) -> type[T]:
    """Declare a plain ``@dataclass`` (writable instances), made as :func:`frozen` makes
    its classes: the same ``__eq__`` and ``__repr__``, shared, and no hash unless the
    class defines one (as ``dataclasses`` does for a class it gives ``__eq__``)."""
    made = _fast(cls, False, frozen=False) if _FAST else None
    if made is None:
        made = dataclasses.dataclass(repr=False, eq=False)(cls)
    _share_methods(made, hashable=False)
    return made


def _share_methods(cls: type[Any], *, hashable: bool = True) -> None:
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
        cls.__hash__ = __hash__ if hashable else None  # type: ignore[assignment]
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


# -- the dataclass made here (Python 3.11) -------------------------------------------

#: Whether :func:`_fast` is used (the ``dataclasses`` it mirrors is 3.11's).
_FAST = sys.version_info[:2] == (3, 11)
#: How ``dataclasses`` reads a string annotation: ``[module.]name``.
_ANNOTATION = re.compile(r"^(?:\s*(\w+)\s*\.)?\s*(\w+)")
#: Annotations ``dataclasses`` gives a meaning of its own.
_SPECIAL = frozenset({"ClassVar", "InitVar", "KW_ONLY"})
_PLAIN_FIELD: Any = getattr(dataclasses, "_FIELD", None)
_CLASS_VAR: Any = getattr(dataclasses, "_FIELD_CLASSVAR", None)
_FACTORY: Any = getattr(dataclasses, "_HAS_DEFAULT_FACTORY", None)


#: The ``__dataclass_params__`` of every such class, frozen or not (3.11's: init, repr,
#: eq, order, unsafe_hash, frozen), shared: nothing writes them.
_PARAMS = {
    frozen: dataclasses._DataclassParams(True, False, False, False, False, frozen)  # type: ignore[attr-defined]
    for frozen in ((False, True) if _FAST else ())
}


def _fast(cls: type[T], kw_only: bool, *, frozen: bool) -> type[T] | None:
    """``cls`` made a dataclass (frozen or not) as ``dataclasses`` would (see the module
    doc), or None, ``cls`` untouched, when it needs something only ``dataclasses`` does."""
    own = cls.__dict__
    kept = ("__init__", "__slots__", *(("__setattr__", "__delattr__") if frozen else ()))
    if any(name in own for name in kept):
        return None
    fields = _inherited(cls, frozen)
    annotations = own.get("__annotations__", {})
    found = _own_fields(cls, annotations, kw_only)
    if fields is None or found is None:
        return None
    if any(isinstance(v, Field) and name not in annotations for name, v in own.items()):
        return None
    for f in found:
        fields[f.name] = f
    real = [f for f in fields.values() if f._field_type is _PLAIN_FIELD]  # type: ignore[attr-defined]
    positional = [f for f in real if f.init and not f.kw_only]
    if not _defaults_last(positional):
        return None  # dataclasses says which field
    # Decided: from here on as dataclasses does it.
    setattr(cls, "__dataclass_params__", _PARAMS[frozen])  # noqa: B010 (not declared on type)
    for f in found:
        if isinstance(getattr(cls, f.name, None), Field):
            if f.default is MISSING:
                delattr(cls, f.name)
            else:
                setattr(cls, f.name, f.default)
    setattr(cls, "__dataclass_fields__", fields)  # noqa: B010
    keywords = [f for f in real if f.init and f.kw_only]
    self_name = "__dataclass_self__" if "self" in fields else "self"
    init = _init(cls, real, positional, keywords, self_name, frozen)
    setattr(cls, "__init__", init)  # noqa: B010
    if frozen:
        _guards(cls, tuple(f.name for f in real))
    if not cls.__doc__:  # as dataclasses words it: the name and the signature
        try:
            text = str(inspect.signature(cls)).replace(" -> None", "")
        except (TypeError, ValueError):
            text = ""
        cls.__doc__ = cls.__name__ + text
    if "__match_args__" not in own:
        setattr(cls, "__match_args__", tuple(f.name for f in positional))  # noqa: B010
    abc.update_abstractmethods(cls)
    return cls


def _inherited(cls: type, frozen: bool) -> dict[str, Field[Any]] | None:
    """The fields of ``cls``'s dataclass bases, the nearest last (None: a base is frozen
    where ``cls`` is not, or the other way round: dataclasses refuses it)."""
    fields: dict[str, Field[Any]] = {}
    for base in cls.__mro__[-1:0:-1]:
        inherited = getattr(base, "__dataclass_fields__", None)
        if inherited is not None:
            if getattr(base, "__dataclass_params__").frozen != frozen:  # noqa: B009
                return None
            for f in inherited.values():
                fields[f.name] = f
    return fields


def _defaults_last(positional: list[Field[Any]]) -> bool:
    """Whether no positional field without a default follows one with a default."""
    seen_default = False
    for f in positional:
        if f.default is not MISSING or f.default_factory is not MISSING:
            seen_default = True
        elif seen_default:
            return False
    return True


def _own_fields(cls: type, annotations: dict[str, Any], kw_only: bool) -> list[Field[Any]] | None:
    """The fields ``cls`` declares (ClassVars among them, as dataclasses keeps them), or
    None for an annotation only dataclasses reads."""
    module = sys.modules.get(cls.__module__)
    namespace = module.__dict__ if module is not None else {}
    found = []
    for name, kind in annotations.items():
        if type(kind) is not str:
            return None
        match = _ANNOTATION.match(kind)
        special = None
        if match is not None and match.group(2) in _SPECIAL:
            special = match.group(2)
            plain = special == "ClassVar" and match.group(1) is None
            if not plain or namespace.get(special) is not typing.ClassVar:
                return None  # InitVar, KW_ONLY, a module-qualified or renamed ClassVar
        default = getattr(cls, name, MISSING)
        if isinstance(default, Field):
            f = default
        else:
            if isinstance(default, MemberDescriptorType):
                default = MISSING
            f = dataclasses.field(default=default)  # type: ignore[arg-type]
        if special is not None:  # a ClassVar: no default factory, no kw_only
            if f.default_factory is not MISSING or f.kw_only is not MISSING:
                return None
        elif f.default.__class__.__hash__ is None:
            return None  # a mutable default: dataclasses refuses it
        # Set on the class's own Field objects as dataclasses sets them; should the class
        # go to dataclasses after all, it sets the same again.
        f.name, f.type = name, kind
        f._field_type = _CLASS_VAR if special else _PLAIN_FIELD  # type: ignore[attr-defined]
        if not special and f.kw_only is MISSING:
            f.kw_only = kw_only
        found.append(f)
    return found


def _init(
    cls: type,
    fields: list[Field[Any]],
    positional: list[Field[Any]],
    keywords: list[Field[Any]],
    self_name: str,
    frozen: bool,
) -> Callable[..., None]:
    """``__init__``, from the text dataclasses 3.11 writes."""
    names: dict[str, Any] = {f"_type_{f.name}": f.type for f in fields}
    names.update(MISSING=MISSING, _HAS_DEFAULT_FACTORY=_FACTORY)
    names["__dataclass_builtins_object__"] = object
    body = []
    for f in fields:
        default = f"_dflt_{f.name}"
        if f.default_factory is not MISSING:
            names[default] = f.default_factory
            value = f"{default}() if {f.name} is _HAS_DEFAULT_FACTORY else {f.name}"
            value = value if f.init else f"{default}()"
        elif f.init:
            if f.default is not MISSING:
                names[default] = f.default
            value = f.name
        else:
            continue
        if frozen:
            body.append(
                f"__dataclass_builtins_object__.__setattr__({self_name},{f.name!r},{value})"
            )
        else:
            body.append(f"{self_name}.{f.name}={value}")
    if hasattr(cls, "__post_init__"):
        body.append(f"{self_name}.__post_init__()")
    params = [self_name, *map(_param, positional)]
    if keywords:
        params += ["*", *map(_param, keywords)]
    names["_return_type"] = None
    lines = "\n".join(f"  {line}" for line in body or ["pass"])
    text = f" def __init__({','.join(params)})->_return_type:\n{lines}"
    text = f"def __create_fn__({', '.join(names)}):\n{text}\n return __init__"
    module = sys.modules.get(cls.__module__)
    space: dict[str, Any] = {}
    methodcache.run(text, module.__dict__ if module is not None else {}, space)
    init: Callable[..., None] = space["__create_fn__"](**names)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _param(f: Field[Any]) -> str:
    if f.default is not MISSING:
        default = f"=_dflt_{f.name}"
    elif f.default_factory is not MISSING:
        default = "=_HAS_DEFAULT_FACTORY"
    else:
        default = ""
    return f"{f.name}:_type_{f.name}{default}"


def _guards(cls: type, names: tuple[str, ...]) -> None:
    """The read-only guards dataclasses gives a frozen class, as closures."""

    def __setattr__(self: Any, name: str, value: Any) -> None:  # noqa: N807
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)  # type: ignore[arg-type]

    def __delattr__(self: Any, name: str) -> None:  # noqa: N807
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)  # type: ignore[arg-type]

    for method in (__setattr__, __delattr__):
        method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
        setattr(cls, method.__name__, method)
