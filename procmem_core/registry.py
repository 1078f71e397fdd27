"""Name -> class registries, one per swappable part (gates, flat rules, estimators, ...).

A class joins its registry by defining a ``name`` (its base's ``__init_subclass__`` calls
``Registry.add``); the registry imports every module of its package on first use, so a
new part is one new module, found without editing any list. A config file names a part
(``name: sprt``) and ``Registry.build`` makes it, checking every key before construction.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

from procmem_core.errors import ParameterError

T = TypeVar("T")


class Registry(Generic[T]):
    """The classes of one kind, by name; ``package`` is where their modules live."""

    def __init__(self, kind: str, package: str) -> None:
        self.kind = kind
        self.package = package
        self._classes: dict[str, type[T]] = {}
        self._discovered = False

    def add(self, cls: type[T]) -> type[T]:
        """Register ``cls`` under ``cls.name`` (a second class with the same name is refused)."""
        name = cls.__dict__.get("name")
        if not isinstance(name, str) or not name:
            raise ParameterError(f"{self.kind}.name", name, "a non-empty string class attribute")
        known = self._classes.get(name)
        if known is not None and known.__qualname__ != cls.__qualname__:
            raise ParameterError(
                f"{self.kind}.name", name, f"already registered by {known.__qualname__}"
            )
        self._classes[name] = cls
        return cls

    def _discover(self) -> None:
        if self._discovered:
            return
        self._discovered = True
        pkg = importlib.import_module(self.package)
        for info in pkgutil.iter_modules(pkg.__path__):
            importlib.import_module(f"{self.package}.{info.name}")

    def classes(self) -> dict[str, type[T]]:
        """Every registered class by name (after importing the package's modules)."""
        self._discover()
        return dict(sorted(self._classes.items()))

    def names(self) -> tuple[str, ...]:
        return tuple(self.classes())

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __contains__(self, name: object) -> bool:
        return name in self.classes()

    def __getitem__(self, name: str) -> type[T]:
        return self.get(name)

    def items(self):
        return self.classes().items()

    def values(self):
        return self.classes().values()

    def get(self, name: Any, field: str | None = None) -> type[T]:
        """The class registered as ``name``; a clear error naming the options otherwise."""
        classes = self.classes()
        if name not in classes:
            raise ParameterError(
                field or self.kind, name, f"a registered {self.kind}: one of {sorted(classes)}"
            )
        return classes[name]

    def build(self, name: Any, **params: Any) -> T:
        """``cls(**params)`` for the class named ``name``, after checking every key."""
        cls = self.get(name, "name")
        allowed = tuple(f.name for f in dataclasses.fields(cls) if f.init)
        for key, value in params.items():
            if key not in allowed:
                raise ParameterError(
                    key, value, f"not a parameter of the {name} {self.kind} {allowed}"
                )
        return cls(**params)
