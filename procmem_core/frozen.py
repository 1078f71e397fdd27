"""Frozen records built at the speed of plain ones.

A frozen dataclass's generated ``__init__`` stores each field through
``object.__setattr__`` (its own ``__setattr__`` refuses), one call per field: a record
of 21 fields, such as the ``Match`` every pack hands out, then costs several times a
plain object. ``quick_init`` gives a frozen dataclass an ``__init__`` with the same
signature (positional and keyword-only fields, defaults, default factories, fields
outside ``__init__``, ``__post_init__``) that writes the fields into the instance's
``__dict__`` in one pass: the same record, equal attribute for attribute, still frozen
afterwards (``tests/procmem_core/test_frozen.py``). It also gives the class
``from_values(*values)``: the same record from every ``__init__`` field by position, in
declaration order, for a hot caller that builds many (``ProcedureEntry.as_match``): a call
of 21 keywords matches each name against the signature, which costs about as much again.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["quick_init"]


def quick_init(cls: type[T]) -> type[T]:
    """Replace the ``__init__`` of frozen dataclass ``cls`` by one that fills
    ``__dict__`` directly (see the module doc). ``cls`` must be a frozen dataclass
    without ``__slots__`` and without ``InitVar`` fields."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen:
        raise TypeError(f"quick_init: {cls.__name__} is not a frozen dataclass")
    if "__slots__" in cls.__dict__:
        raise TypeError(f"quick_init: {cls.__name__} has __slots__ (no __dict__ to fill)")
    if any(isinstance(f.type, dataclasses.InitVar) for f in cls.__dataclass_fields__.values()):
        raise TypeError(f"quick_init: {cls.__name__} has an InitVar field")
    env: dict[str, Any] = {"_MISSING": dataclasses.MISSING}
    positional, keyword, body = [], [], ["    d = self.__dict__"]
    for f in dataclasses.fields(cls):
        n = f.name
        has_default = f.default is not dataclasses.MISSING
        has_factory = f.default_factory is not dataclasses.MISSING
        if has_default:
            env[f"_d_{n}"] = f.default
        if has_factory:
            env[f"_f_{n}"] = f.default_factory
        if not f.init:  # a plain default stays a class attribute, as the dataclass leaves it
            if has_factory:
                body.append(f"    d[{n!r}] = _f_{n}()")
            continue
        arg = f"{n}=_d_{n}" if has_default else f"{n}=_MISSING" if has_factory else n
        (keyword if f.kw_only else positional).append(arg)
        value = f"_f_{n}() if {n} is _MISSING else {n}" if has_factory else n
        body.append(f"    d[{n!r}] = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    exec(f"def __init__({signature}):\n" + "\n".join(body), env)
    names = ", ".join(f.name for f in dataclasses.fields(cls) if f.init)
    env["_new"], env["_cls"] = object.__new__, cls
    make = ["    self = _new(_cls)", *body, "    return self"]
    exec(f"def from_values({names}):\n" + "\n".join(make), env)
    cls.from_values = staticmethod(env["from_values"])
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    init.__signature__ = inspect.signature(cls.__init__)  # annotations and ``<factory>``
    cls.__init__ = init
    return cls
