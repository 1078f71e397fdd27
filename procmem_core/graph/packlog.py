"""The pack log a ``ProcedureStore`` keeps: one row per session whose pack the engine built.

The session log's sessions table (docs/logs.md) needs, per session, the procedure its pack
top-matched, whether the explore rate withheld it, the rate in force and, once rated, the
outcome. ``ContextPacker.pack(..., session_id=...)`` records the first four through
``ProcedureStore.log_pack`` and the agent reports the outcome through
``rate_session``; ``procmem_core.logs.store`` reads the rows back as the sessions table, so
a deployment on procmem's engine needs no export step.

Keys are refs (``namespace/key``), as the pack reports them. ``time`` is an integer (the
caller's clock) or an ISO 8601 timestamp (default: now in UTC, written without an
offset); ``rated_at`` likewise (default: now when the session's time is a timestamp,
else empty).

Every backend uses this module: the in-memory store keeps the rows in a dict, the SQLite
and PostgreSQL journals in their table ``pack_log`` (``PACK_LOG_SQL``; schema version 3
of the store file, SQLite files of versions 1 and 2 gain the table on open).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from procmem_core.errors import (
    AccessDenied,
    ParameterError,
    check_bool,
    check_probability,
    check_text,
)
from procmem_core.graph.access import check_principal, require_role
from procmem_core.limits import MAX_REF, check_identifier

PACK_LOG_SQL = """
CREATE TABLE IF NOT EXISTS pack_log (
    seq {serial}, session_id TEXT NOT NULL UNIQUE, time{clock} NOT NULL,
    top_key TEXT NOT NULL, withheld INTEGER NOT NULL, explore_rate {real} NOT NULL,
    shown_keys TEXT NOT NULL, user_id TEXT, agent TEXT, outcome INTEGER, rated_at{clock})
"""
"""The table, formatted with a ``graph.dialect.Dialect`` (``Dialect.words()``)."""
COLUMNS = ("session_id", "time", "top_key", "withheld", "explore_rate", "shown_keys",
           "user_id", "agent", "outcome", "rated_at")  # fmt: skip


@dataclass(frozen=True)
class PackRecord:
    """One session's pack: its top match (ref, "" for none), whether it was withheld, the
    explore rate, the refs shown, and the outcome (0/1, None until rated)."""

    session_id: str
    time: int | str
    top_key: str
    withheld: bool
    explore_rate: float
    shown_keys: tuple[str, ...] = ()
    user_id: str | None = None
    agent: str | None = None
    outcome: int | None = None
    rated_at: int | str | None = None

    def row(self, clock: Callable[[Any], Any] = lambda v: v) -> tuple[Any, ...]:
        """The record as a ``pack_log`` row (``COLUMNS``); ``clock`` adapts ``time`` and
        ``rated_at`` to the backend's column (``clock_of``)."""
        values = [getattr(self, c) for c in COLUMNS]
        values[1], values[9] = clock(self.time), clock(self.rated_at)
        values[3] = int(self.withheld)
        values[5] = json.dumps(list(self.shown_keys))
        return tuple(values)

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> PackRecord:
        d = dict(zip(COLUMNS, row, strict=True))
        return cls(**{**d, "withheld": bool(d["withheld"]),
                      "shown_keys": tuple(json.loads(d["shown_keys"]))})  # fmt: skip


def now() -> str:
    """Now in UTC as ISO 8601 without an offset (numpy parses those without a warning)."""
    return datetime.now(UTC).replace(tzinfo=None).isoformat(timespec="microseconds")


def check_time(field: str, value: Any) -> int | str:
    """An integer (not a bool) or an ISO 8601 timestamp string."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            datetime.fromisoformat(value)
            return value
        except ValueError:
            pass
    raise ParameterError(field, value, "expected an integer or an ISO 8601 timestamp")


def _check_ref(field: str, value: Any) -> str:
    """A procedure ref as the log keeps it: text of at most ``MAX_REF`` characters with no
    NUL (which PostgreSQL cannot store; other characters are kept as they are)."""
    check_text(field, value, MAX_REF)
    if "\x00" in value:
        raise ParameterError(field, value, "a procedure ref (no NUL character)")
    return value


def _optional_text(field: str, value: Any) -> str | None:
    return None if value is None else check_identifier(field, value)


def check_session_fields(session_id: Any, time: Any, user_id: Any) -> None:
    """The caller's fields of a pack-log row, checked before the pack draws anything
    (identifiers, ``limits.check_identifier``)."""
    check_identifier("session_id", session_id)
    if time is not None:
        check_time("time", time)
    _optional_text("user_id", user_id)


def pack_record(
    session_id: str,
    top_key: str,
    withheld: bool,
    explore_rate: float,
    shown_keys: Sequence[str] = (),
    time: int | str | None = None,
    user_id: str | None = None,
    agent: str | None = None,
) -> PackRecord:
    """A checked record (a withheld session needs a ``top_key``)."""
    check_identifier("session_id", session_id)
    if not isinstance(top_key, str):
        raise ParameterError("top_key", top_key, "expected a procedure ref or ''")
    if top_key:
        _check_ref("top_key", top_key)
    withheld = check_bool("withheld", withheld)
    if withheld and not top_key:
        raise ParameterError("top_key", top_key, "a procedure ref when withheld is True")
    rate = check_probability("explore_rate", explore_rate, open_high=True)
    if isinstance(shown_keys, str) or not isinstance(shown_keys, Sequence):
        raise ParameterError("shown_keys", shown_keys, "expected a list of procedure refs")
    shown = tuple(_check_ref(f"shown_keys[{i}]", k) for i, k in enumerate(shown_keys))
    when = now() if time is None else check_time("time", time)
    user, who = _optional_text("user_id", user_id), _optional_text("agent", agent)
    return PackRecord(session_id, when, top_key, withheld, rate, shown, user, who)


def rated(record: PackRecord, outcome: Any, rated_at: int | str | None) -> PackRecord:
    """``record`` with its outcome (0/1 or a bool); refused when it already has one."""
    if record.outcome is not None:
        raise ParameterError(
            "session_id", record.session_id, f"a session not rated yet (rated {record.outcome})"
        )
    if isinstance(outcome, bool) or outcome in (0, 1):
        outcome = int(outcome)
    else:
        raise ParameterError("outcome", outcome, "expected 0, 1, True or False")
    if rated_at is None:
        rated_at = now() if isinstance(record.time, str) else None
    else:
        rated_at = check_time("rated_at", rated_at)
    return replace(record, outcome=outcome, rated_at=rated_at)


def unknown(session_id: str) -> ParameterError:
    return ParameterError("session_id", session_id, "a session the pack log holds")


class HiddenSession(ParameterError, AccessDenied):
    """No session with this id that the principal can read: raised alike for a session
    never logged and for one whose row names a namespace the principal holds no role in
    (or names none and was logged by another agent), so session ids (chosen by callers,
    shared by every tenant) tell neither whether another tenant logged one nor where."""

    def __init__(self, session_id: str, principal: str) -> None:
        allowed = f"a session the pack log holds that principal {principal!r} can read"
        super().__init__("session_id", session_id, allowed)


def readable_by(record: PackRecord, principal: str, grants: Any) -> bool:
    """Whether ``principal`` may read the row: a role in every namespace it names, or,
    naming none, it logged the row."""
    spaces = namespaces_of(record)
    if not spaces:
        return record.agent == principal
    return all(ns in grants.get(principal, {}) for ns in spaces)


def clock_of(cur: Any) -> Callable[[Any], Any]:
    """How ``cur``'s backend stores a clock value: as it is on SQLite; a PostgreSQL cursor
    (``graph.postgres.Cursor``) names its own (JSONB) as ``clock``."""
    return getattr(cur, "clock", lambda v: v)


def insert(cur: Any, record: PackRecord) -> None:
    """Append one row (a session id the log already holds is refused)."""
    hit = cur.execute("SELECT 1 FROM pack_log WHERE session_id = ?", (record.session_id,))
    if hit.fetchone() is not None:
        raise ParameterError("session_id", record.session_id, "a session id not logged yet")
    marks = ", ".join("?" * len(COLUMNS))
    row = record.row(clock_of(cur))
    cur.execute(f"INSERT INTO pack_log ({', '.join(COLUMNS)}) VALUES ({marks})", row)


def fetch(cur: Any, session_id: str) -> PackRecord:
    row = cur.execute(
        f"SELECT {', '.join(COLUMNS)} FROM pack_log WHERE session_id = ?", (session_id,)
    ).fetchone()
    if row is None:
        raise unknown(session_id)
    return PackRecord.from_row(row)


def update(cur: Any, record: PackRecord) -> None:
    cur.execute(
        "UPDATE pack_log SET outcome = ?, rated_at = ? WHERE session_id = ?",
        (record.outcome, clock_of(cur)(record.rated_at), record.session_id),
    )


def read_all(cur: Any) -> tuple[PackRecord, ...]:
    rows = cur.execute(f"SELECT {', '.join(COLUMNS)} FROM pack_log ORDER BY seq")
    return tuple(PackRecord.from_row(r) for r in rows)


def namespaces_of(record: PackRecord) -> tuple[str, ...]:
    """The namespaces a session's row names (its top match's and its shown refs')."""
    refs = (record.top_key, *record.shown_keys)
    return tuple(sorted({r.split("/", 1)[0] for r in refs if r and "/" in r}))


class PackLog:
    """The store's pack-log methods (a base of ``ProcedureStore``: its lock, its
    ``_journal`` (None in memory), its ``_packs`` dict and its ``_grants``).

    With a ``principal`` (auth on) a row is the business of the namespaces it names: logging
    it needs the viewer role in each (what a pack could show), rating it the writer role
    in each (as ``record_run``), and ``pack_log`` lists only the rows whose every
    namespace the principal can read. A row naming no namespace (nothing matched) belongs
    to the principal that logged it (its ``agent``)."""

    _journal: Any
    _packs: dict[str, PackRecord]
    _grants: dict[str, dict[str, str]]
    _refresh: Any

    def _session(
        self, cur: Any, session_id: str, principal: str | None, operation: str, role: str
    ) -> PackRecord:
        """The logged row of ``session_id`` (``cur``: the transaction's cursor, None in
        memory), checked for ``principal`` (``_allow``): ``HiddenSession`` when it is not
        there or the principal cannot read it."""
        found = self._packs.get(session_id) if cur is None else None
        if cur is not None:
            try:
                found = fetch(cur, session_id)
            except ParameterError:
                found = None
        if principal is not None and (
            found is None or not readable_by(found, principal, self._grants)
        ):
            raise HiddenSession(session_id, principal)
        if found is None:
            raise unknown(session_id)
        self._allow(principal, found, operation, role)
        return found

    def _allow(self, principal: str | None, record: PackRecord, operation: str, role: str):
        if principal is None:
            return
        spaces = namespaces_of(record)
        for ns in spaces:
            require_role(principal, ns, self._grants, operation, role)
        if not spaces and record.agent != principal:
            raise AccessDenied(
                f"{operation} refused: session {record.session_id!r} names no namespace and "
                f"was logged by {record.agent!r}, not by principal {principal!r}"
            )

    def log_pack(
        self,
        session_id: str,
        top_key: str,
        withheld: bool,
        explore_rate: float,
        shown_keys: Sequence[str] = (),
        time: int | str | None = None,
        user_id: str | None = None,
        agent: str | None = None,
        principal: str | None = None,
    ) -> PackRecord:
        """Record one session's pack (``ContextPacker.pack`` calls it given a
        ``session_id``); a session id already logged is refused. With a ``principal`` the
        row's agent is the principal."""
        principal = check_principal("principal", principal)
        if principal is not None:
            agent = principal
            self._refresh()  # grants another process may have made
        record = pack_record(session_id, top_key, withheld, explore_rate, shown_keys, time,
                             user_id, agent)  # fmt: skip
        self._allow(principal, record, "log_pack", "viewer")
        if self._journal is None:
            if session_id in self._packs:
                raise ParameterError("session_id", session_id, "a session id not logged yet")
            self._packs[session_id] = record
            return record
        with self._journal.transaction() as tx:
            insert(tx.cur, record)
        return record

    def rate_session(
        self,
        session_id: str,
        outcome: bool | int,
        rated_at: int | str | None = None,
        principal: str | None = None,
    ) -> PackRecord:
        """Attach the session's outcome (0/1) to its pack-log row, once."""
        principal = check_principal("principal", principal)
        if principal is not None:
            self._refresh()  # grants another process may have made
        if self._journal is None:
            found = self._session(None, session_id, principal, "rate_session", "writer")
            record = rated(found, outcome, rated_at)
            self._packs[session_id] = record
            return record
        with self._journal.transaction() as tx:
            found = self._session(tx.cur, session_id, principal, "rate_session", "writer")
            record = rated(found, outcome, rated_at)
            update(tx.cur, record)
        return record

    def _rated_in(
        self, w: Any, session_id: str, outcome: Any, principal: str | None = None
    ) -> PackRecord:
        """The session's record rated ``outcome`` inside the store write ``w`` (checked
        now; kept by ``_keep_rating`` once the write's other changes are made)."""
        cur = None if w.tx is None else w.tx.cur
        found = self._session(cur, session_id, principal, "complete_run", "writer")
        return rated(found, outcome, None)

    def _keep_rating(self, w: Any, record: PackRecord) -> None:
        if w.tx is None:
            self._packs[record.session_id] = record
        else:
            update(w.tx.cur, record)

    def pack_log(self, principal: str | None = None) -> tuple[PackRecord, ...]:
        """Every logged pack, in the order logged (with a ``principal``: the rows it may
        read, see the class doc)."""
        principal = check_principal("principal", principal)
        if self._journal is None:
            rows = tuple(self._packs.values())
        else:
            with self._journal.reading() as cur:
                rows = read_all(cur)
        if principal is None:
            return rows
        self._refresh()  # grants another process may have made
        readable = set(self._grants.get(principal, {}))
        return tuple(
            r
            for r in rows
            if (set(namespaces_of(r)) <= readable if namespaces_of(r) else r.agent == principal)
        )
