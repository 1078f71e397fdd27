"""Stores that take threads: every public method under one re-entrant lock per store.

``@thread_safe()`` on a store class gives each instance a ``threading.RLock``
(``_lock``) and runs every public method (and ``__len__``), its own and inherited, under
it. So one store may be shared by the threads of an agent server: the in-memory caches,
the match index, the run-id counter and the SQLite connection (opened with
``check_same_thread=False``) are only ever used by one thread at a time, and a read sees
no write half done. The lock is re-entrant, so a method may call another.

Methods named in ``unlocked`` take the lock themselves for the part that reads or writes
the store, so that they hold no store lock while they call another store:
``MemoryStore.set_procedural`` (it delegates to ``set`` or to the procedure store's
``add``). A run's lesson goes to memory through ``reflections.complete_run``, a function
above both stores that calls the procedure store, then the memory store, holding neither
lock across the two. The only nesting left is ``LearningsQueue.review``
promoting into the memory store (queue, then memory), so the locks cannot deadlock.

Each wrapper has its method's own signature (``_locked``): it passes its arguments on by
position, so a call with many keywords (a pack's ``match``) builds no ``*args`` tuple or
``**kwargs`` dict on the way in.

Throughput: the calls of one store run one at a time (``benchmarks/bench_threads.py``
measures 1, 2 and 8 threads); a process that needs parallel writers opens one store per
process on one SQLite file (``graph.sqlite``).
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T", bound=type)
LOCKED_DUNDERS = ("__len__",)


def thread_safe(*, unlocked: tuple[str, ...] = ()) -> Callable[[T], T]:
    """Class decorator: see the module doc."""

    def apply(cls: T) -> T:
        for name in dir(cls):
            if name in unlocked or (name.startswith("_") and name not in LOCKED_DUNDERS):
                continue
            attr = inspect.getattr_static(cls, name)
            if inspect.isfunction(attr) and not getattr(attr, "_procmem_locked", False):
                setattr(cls, name, _locked(attr))
        init = cls.__init__

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            self._lock = threading.RLock()
            init(self, *args, **kwargs)

        cls.__init__ = __init__
        _picklable(cls)
        return cls

    return apply


def _picklable(cls: type) -> None:
    """Pickle a store without its lock and give the copy a new one (a store crosses to a
    worker process inside a scenario; a lock cannot be pickled, and the copy is another
    store whose threads need their own lock anyway)."""
    get, put = cls.__getstate__, getattr(cls, "__setstate__", None)

    def __getstate__(self: Any) -> Any:
        state = get(self)
        if isinstance(state, dict) and "_lock" in state:
            state = {k: v for k, v in state.items() if k != "_lock"}
        return state

    def __setstate__(self: Any, state: Any) -> None:
        if put is not None:
            put(self, state)
        else:
            self.__dict__.update(state)
        self._lock = threading.RLock()

    cls.__getstate__, cls.__setstate__ = __getstate__, __setstate__


def _locked(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` under ``self._lock``: a wrapper with the method's signature (its defaults
    the same objects) that calls it by position; a method taking ``*args``, ``**kwargs``
    or positional-only parameters gets the generic ``(self, *args, **kwargs)`` wrapper."""
    call = _same_signature(method)
    if call is None:

        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return method(self, *args, **kwargs)

    functools.update_wrapper(call, method)
    call._procmem_locked = True  # type: ignore[attr-defined]
    return call


def _same_signature(method: Callable[..., Any]) -> Callable[..., Any] | None:
    """The locked wrapper of ``method`` with its parameters spelled out (None when they
    cannot be: variadic or positional-only ones)."""
    params = list(inspect.signature(method).parameters.values())
    plain = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    if not params or any(p.kind not in plain or p.name.startswith("_") for p in params):
        return None  # (a name with "_" could shadow the wrapper's own ``_method``, ``_d<i>``)
    env: dict[str, Any] = {"_method": method}
    head, passed, star = [], [], False
    for i, p in enumerate(params):
        if p.kind is inspect.Parameter.KEYWORD_ONLY and not star:
            head.append("*")
            star = True
        if p.default is inspect.Parameter.empty:
            head.append(p.name)
        else:
            env[f"_d{i}"] = p.default
            head.append(f"{p.name}=_d{i}")
        passed.append(p.name if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
                      else f"{p.name}={p.name}")  # fmt: skip
    self_name = params[0].name
    source = (
        f"def call({', '.join(head)}):\n"
        f"    with {self_name}._lock:\n"
        f"        return _method({', '.join(passed)})\n"
    )
    exec(source, env)  # the source is built from the method's own signature
    return env["call"]
