"""A store for calibrations and design answers, shared by processes when a layer above asks.

A calibrated gate's levels for one ledger size (``two_sample._calibrated``,
``calibrated_sprt._calibrated``) and the design tool's answers to a question
(``design.design_gate``, ``prescribed.prescribed_answer``) and the flat rule's design
(``flat.design.design_rule``) are deterministic functions of their arguments that take
seconds. The calibrations and the pick are cached per process
(``lru_cache``); ``stored(kind)`` adds a second level:
``current()``, a ``CalibrationStore`` (``get(key) -> value | None``, ``put(key, value)``).
The default is an in-memory ``MemoryStore``; the experiments layer installs a ``FileStore``
(one gzipped JSON file per entry in a folder it owns) so the jobs of a sweep, each in its own
process, and later runs share the results. ``install`` also accepts the folder from the
environment variable ``CACHE_ENV`` (read once, when nothing is installed), so a job's
worker processes use the folder their job uses.

- The key is canonical JSON of the function's ``kind``, ``version()`` and every argument
  (defaults applied; floats as ``float.hex``, dataclasses with all their fields), so the
  entry depends on everything the result does. ``version()`` hashes ``CALIBRATION_VERSION``
  (bump it when the encoding changes), the numpy version and the source of every module in
  ``SOURCES`` (the gates and flat packages and what they import from procmem_core): a code change
  invalidates every entry, and ``prune`` removes the entries of other versions.
- Values round-trip bit for bit (``encode``/``decode``: floats as ``float.hex``, arrays as
  their raw bytes with dtype and shape; only procmem_core dataclasses are rebuilt).
- A ``FileStore`` writes a temporary file and ``os.replace``s it (atomic: concurrent
  writers of one key leave one whole entry). An entry that cannot be read, decoded or whose
  stored key differs is counted in ``STATS["corrupt"]``, logged and recomputed, never
  trusted; a failing write is logged and the job goes on.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import gzip
import hashlib
import importlib
import inspect
import json
import logging
import os
import re
import tempfile
import time
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from procmem_core.errors import ParameterError

log = logging.getLogger(__name__)

CALIBRATION_VERSION = 1
"""Bump when the encoding or the meaning of an entry changes (sources are hashed anyway)."""

CACHE_ENV = "PROCMEM_CALIBRATION_CACHE"
"""A folder for a ``FileStore``, read by ``current()`` when no store is installed."""

SOURCES = (
    "gates",
    "flat",
    "explore.py",
    "errors.py",
    "proportions.py",
    "holds.py",
    "display.py",
    "registry.py",
    "frozen.py",
)
"""The procmem_core files (a folder: its ``*.py``) whose source ``version()`` hashes: the
packages whose answers are stored (gates; flat, ``design.design_rule``) and every
procmem_core module they import."""

GZIP_LEVEL = 1
"""Fast compression: a certified calibration's certificate is mostly float bits."""

STATS: Counter[str] = Counter()
"""Per process: ``hit``, ``miss``, ``stored``, ``corrupt`` (entries not trusted)."""


class CalibrationStore(Protocol):
    """Where ``stored`` keeps results: ``get`` returns None when it has no valid entry."""

    def get(self, key: str) -> Any | None: ...

    def put(self, key: str, value: Any) -> None: ...


class MemoryStore:
    """The default store: a dict, in this process only."""

    def __init__(self) -> None:
        self.entries: dict[str, Any] = {}

    def get(self, key: str) -> Any | None:
        return self.entries.get(key)

    def put(self, key: str, value: Any) -> None:
        self.entries[key] = value


class FileStore:
    """One gzipped JSON file per entry in ``folder`` (made on first write), named by the
    key's SHA-256; the file holds the key too, so an entry answers only its own key (gzip's
    CRC catches a damaged or truncated file)."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)

    def path(self, key: str) -> Path:
        return self.folder / f"{hashlib.sha256(key.encode()).hexdigest()}.json.gz"

    def get(self, key: str) -> Any | None:
        path = self.path(key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:  # unreadable (permissions, a folder in the way): recompute
            STATS["corrupt"] += 1
            log.warning("calibration cache: cannot read %s (%s)", path, exc)
            return None
        try:
            entry = json.loads(gzip.decompress(raw))
            if entry["key"] != key:
                raise ValueError("the entry's key differs from the file name's")
            return decode(entry["value"])
        except Exception as exc:  # any damage: recompute, never trust
            STATS["corrupt"] += 1
            log.warning("calibration cache: ignoring unreadable entry %s (%s)", path, exc)
            return None

    def put(self, key: str, value: Any) -> None:
        text = json.dumps({"key": key, "value": encode(value)})
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=".json.gz")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(gzip.compress(text.encode(), compresslevel=GZIP_LEVEL))
            os.replace(tmp, self.path(key))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


ENTRY_NAME = re.compile(r"[0-9a-f]{64}\.json\.gz")
"""The name of a ``FileStore`` entry; ``prune`` reads and removes only files named so
(and its own writers' temporary files), nothing else in the folder."""
_TEMP_NAME = re.compile(r"\.tmp-.*\.json\.gz")
_VERSION_AT = re.compile(rb'\{"key": "\[\\"[^"\\]*\\",\\"([0-9a-f]{64})\\"')
TEMP_MAX_AGE = 86_400.0
"""Seconds after which a writer's temporary file is a killed writer's leftover."""


def entry_version(path: str | os.PathLike) -> str | None:
    """The code version (``version()``) an entry was written under: ``entry_key``'s second
    field, read from the first bytes of the decompressed file; None if unreadable."""
    try:
        with gzip.open(path, "rb") as f:
            head = f.read(512)
    except (OSError, EOFError, zlib.error):
        return None
    m = _VERSION_AT.match(head)
    return m.group(1).decode() if m else None


@dataclass(frozen=True)
class Pruned:
    """What ``prune`` removed (or would remove) and kept: counts and bytes."""

    removed: int
    removed_bytes: int
    temporary: int
    kept: int
    kept_bytes: int


def prune(folder: str | os.PathLike, dry_run: bool = False) -> Pruned:
    """Remove the entries of the ``FileStore`` in ``folder`` that this code never reads:
    written under another ``version()`` (another state of the sources) or unreadable, and
    writers' temporary files older than ``TEMP_MAX_AGE``. Entries of this version stay, so
    a sweep running meanwhile loses nothing (it writes only this version's). Another
    checkout's entries are another version: prune from the checkout whose cache you keep."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ParameterError("folder", str(folder), "an existing calibration cache folder")
    current_version, now = version(), time.time()
    removed = removed_bytes = temporary = kept = kept_bytes = 0
    for path in sorted(folder.iterdir()):
        if not path.is_file():
            continue
        size = path.stat().st_size
        if ENTRY_NAME.fullmatch(path.name):
            if entry_version(path) == current_version:
                kept, kept_bytes = kept + 1, kept_bytes + size
                continue
            removed, removed_bytes = removed + 1, removed_bytes + size
        elif _TEMP_NAME.fullmatch(path.name) and now - path.stat().st_mtime > TEMP_MAX_AGE:
            temporary += 1
        else:
            continue
        if not dry_run:
            path.unlink(missing_ok=True)
    return Pruned(removed, removed_bytes, temporary, kept, kept_bytes)


_installed: CalibrationStore | None = None
_memory = MemoryStore()


def install(store: CalibrationStore | None) -> None:
    """Make ``store`` the one ``stored`` uses in this process (None: back to the default)."""
    global _installed
    _installed = store


def current() -> CalibrationStore:
    """The installed store, else a ``FileStore`` on ``$PROCMEM_CALIBRATION_CACHE`` (installed
    then), else the in-memory default."""
    if _installed is None and os.environ.get(CACHE_ENV):
        install(FileStore(os.environ[CACHE_ENV]))
    return _installed if _installed is not None else _memory


@functools.lru_cache(maxsize=1)
def version() -> str:
    """SHA-256 of ``CALIBRATION_VERSION``, numpy's version and the ``SOURCES``' text."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256(f"{CALIBRATION_VERSION}|numpy {np.__version__}".encode())
    for name in SOURCES:
        files = sorted((root / name).glob("*.py")) if (root / name).is_dir() else [root / name]
        for f in files:
            h.update(f"\0{f.relative_to(root).as_posix()}\0".encode() + f.read_bytes())
    return h.hexdigest()


def entry_key(kind: str, fn: Callable, args: tuple, kwargs: dict) -> str:
    """The canonical key of ``fn(*args, **kwargs)`` (defaults applied) under ``kind``."""
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    arguments = [[name, encode(value)] for name, value in bound.arguments.items()]
    return json.dumps([kind, version(), arguments], sort_keys=True, separators=(",", ":"))


def stored(kind: str) -> Callable[[Callable], Callable]:
    """Decorator: ``fn``'s result looked up in ``current()`` first, computed and put there
    otherwise (module docstring). A value that cannot be stored is returned anyway."""

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            store = current()
            key = entry_key(kind, fn, args, kwargs)
            found = store.get(key)
            if found is not None:
                STATS["hit"] += 1
                return found
            STATS["miss"] += 1
            value = fn(*args, **kwargs)
            try:
                store.put(key, value)
                STATS["stored"] += 1
            except Exception as exc:
                log.warning("calibration cache: could not store %s (%s)", kind, exc)
            return value

        return inner

    return wrap


def encode(value: Any) -> Any:
    """``value`` as JSON data that ``decode`` turns back into an equal value, bit for bit."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int) and not isinstance(value, np.integer):
        return value
    if isinstance(value, float) and type(value) is float:
        return {"f": value.hex()}
    if isinstance(value, np.ndarray | np.generic):
        arr = np.asarray(value)
        if arr.dtype.hasobject:
            raise TypeError(f"cannot store an object array ({arr.dtype})")
        data = base64.b64encode(np.ascontiguousarray(arr).tobytes()).decode()
        return {"a": arr.dtype.str, "shape": list(arr.shape), "b": data, "s": arr is not value}
    if isinstance(value, tuple | list):
        return {"t" if isinstance(value, tuple) else "l": [encode(v) for v in value]}
    if isinstance(value, dict):
        return {"d": [[encode(k), encode(v)] for k, v in value.items()]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _encode_dataclass(value)
    raise TypeError(f"cannot store a {type(value).__name__}")


def _encode_dataclass(value: Any) -> dict:
    cls = type(value)
    if not cls.__module__.startswith("procmem_core."):
        raise TypeError(f"only procmem_core dataclasses are stored, not {cls.__qualname__}")
    names = [f.name for f in dataclasses.fields(value)]
    extra = set(getattr(value, "__dict__", {})) - set(names)
    if extra:
        raise TypeError(f"{cls.__qualname__} has state outside its fields: {sorted(extra)}")
    fields = {n: encode(getattr(value, n)) for n in names}
    return {"dc": f"{cls.__module__}:{cls.__qualname__}", "fields": fields}


def decode(data: Any) -> Any:
    """The value ``encode`` wrote (``ValueError``/``TypeError`` on anything else)."""
    if data is None or isinstance(data, bool | str | int):
        return data
    if not isinstance(data, dict) or len(data) == 0:
        raise ValueError(f"not an encoded value: {data!r:.80}")
    if "f" in data:
        return float.fromhex(data["f"])
    if "a" in data:
        raw = base64.b64decode(data["b"], validate=True)
        arr = np.frombuffer(raw, dtype=np.dtype(data["a"])).reshape(data["shape"]).copy()
        return arr[()] if data["s"] else arr
    if "t" in data:
        return tuple(decode(v) for v in data["t"])
    if "l" in data:
        return [decode(v) for v in data["l"]]
    if "d" in data:
        return {decode(k): decode(v) for k, v in data["d"]}
    if "dc" in data:
        return _decode_dataclass(data["dc"], data["fields"])
    raise ValueError(f"not an encoded value: {data!r:.80}")


def _decode_dataclass(name: str, fields: dict) -> Any:
    module, _, qualname = name.partition(":")
    if not module.startswith("procmem_core."):
        raise ValueError(f"refusing to rebuild {name}: not a procmem_core class")
    cls = importlib.import_module(module)
    for part in qualname.split("."):
        cls = getattr(cls, part)
    if not dataclasses.is_dataclass(cls):
        raise ValueError(f"{name} is not a dataclass")
    names = {f.name for f in dataclasses.fields(cls)}
    if set(fields) != names:
        raise ValueError(f"{name}: stored fields {sorted(fields)} differ from {sorted(names)}")
    obj = object.__new__(cls)
    for key, value in fields.items():  # the stored fields as they were (no re-validation)
        object.__setattr__(obj, key, decode(value))
    return obj


__all__ = [
    "CACHE_ENV",
    "CALIBRATION_VERSION",
    "SOURCES",
    "STATS",
    "CalibrationStore",
    "FileStore",
    "MemoryStore",
    "Pruned",
    "current",
    "decode",
    "encode",
    "entry_version",
    "install",
    "prune",
    "stored",
    "version",
]
