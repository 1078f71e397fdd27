"""What a store opened on a file or a database keeps once it is closed.

``ProcedureStore``, ``MemoryStore``, ``LearningsQueue`` and ``DistillLedger`` opened with
``open(path)`` write through a journal; an in-memory store has none (``_journal`` None).
A closed store used to set its journal to None, so it became an in-memory store: a later
``add``, ``record_run``, ``set`` or ``propose`` (say, from a thread still at work when
another closed the store) answered as stored and was lost with the process. ``close``
now leaves a ``ClosedJournal`` in its place: closing again does nothing, and any call
that reaches the journal (every write; the procedure store's reads, which sync from it
first) raises ``StoreClosed`` naming the store and its file, and changes nothing.
"""

from __future__ import annotations

from typing import NoReturn

from procmem_core.errors import ProcmemError


class StoreClosed(ProcmemError):
    """A call on a store whose file or database was closed."""


class ClosedJournal:
    """A closed store's journal (module docstring): ``close`` is a no-op, anything else
    raises ``StoreClosed``."""

    def __init__(self, store: str, journal: object) -> None:
        path = getattr(journal, "path", None)  # a PostgreSQL URI may hold a password
        self.where = f"its file {str(path)!r}" if path is not None else "its database"
        self.store = store

    def close(self) -> None:
        """Closing a closed store again does nothing."""

    def __getattr__(self, name: str) -> NoReturn:
        if name.startswith("__"):  # copy, pickle and friends probe for these
            raise AttributeError(name)
        raise StoreClosed(
            f"{self.store} was closed: nothing is read from or written to {self.where} "
            "any more (open the store again)"
        )


def close_journal(store: str, journal: object) -> object:
    """Close a store's ``journal`` and return what the store keeps in its place: None
    stays None (an in-memory store), a ``ClosedJournal`` stays as it is (closing twice),
    any other journal is closed and replaced by a ``ClosedJournal``."""
    if journal is None or isinstance(journal, ClosedJournal):
        return journal
    journal.close()
    return ClosedJournal(store, journal)
