"""The closed loop's records: a session's log (``SessionLog``, and its columns for the
metrics, ``SessionColumns``), a proposed revision with its true effect (``RevisionTruth``),
and the sources a session's regret comes from (``REGRET_SOURCES``). ``loop_world`` writes
them; ``loop`` and ``loop_tables`` read them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class RevisionTruth:
    """A proposed revision and its known true effect on the success rate."""

    key: str  # namespace/key
    revision: int
    prior_revision: int
    kind: str
    p_prior: float
    p_new: float
    session: int
    outcome: str = "pending"

    @property
    def correct_verdict(self) -> str:
        return "revert" if self.kind == "harmful" else "accept"


@dataclass
class SessionLog:
    task: int
    key: str | None  # procedure followed (None: worked without one)
    withheld: str | None
    followed: bool
    ok: bool
    p_true: float
    p_oracle: float
    recorded: bool
    shown: str | None = None  # the top match shown (another task's when not followed)
    prior_served: bool = False  # the pending revision's prior graph was served
    on_trial: bool = False  # followed a revision that was pending (its gate undecided)
    available: int = 0  # the task's procedures not quarantined when the pack was made
    rated: bool = True  # the session's outcome was reported (the feedback's arrival channels)
    rating: bool = False  # what the report said (the label channels), when rated

    @property
    def source(self) -> str:
        """Where this session's regret comes from (``REGRET_SOURCES``)."""
        if self.withheld is not None:
            return "withheld"
        if self.followed:
            if self.prior_served:
                return "followed the prior (concurrent control)"
            if self.on_trial:
                return "followed a revision on trial"
            return "followed the best" if self.p_true >= self.p_oracle else "followed a worse one"
        if self.available == 0:
            return "all the task's procedures quarantined"
        if self.shown is None:
            return "nothing matched"
        return "another task's procedure ranked first"


SESSION_FIELDS = tuple(SessionLog.__dataclass_fields__)
"""A session row's values, in order: the ``LoopWorld`` keeps each session as a tuple of
these (``SessionLog(*row)`` is the record)."""


@dataclass(frozen=True)
class SessionColumns:
    """Columns of a session log, in session order: ``ok``, ``off`` (no procedure of the
    task followed and none withheld), ``withheld``, ``followed``, ``prior_served``,
    ``on_trial``, ``rated`` and ``rating`` as bools; ``p_true`` and ``p_oracle`` as floats;
    ``task`` and ``available`` as ints; ``key_code``, ``withheld_code`` and ``shown_code``:
    the procedure's index in ``keys`` (the world's ``task_of`` order), -1 for none."""

    ok: np.ndarray
    off: np.ndarray
    withheld: np.ndarray
    prior_served: np.ndarray
    p_true: np.ndarray
    p_oracle: np.ndarray
    followed: np.ndarray
    on_trial: np.ndarray
    rated: np.ndarray
    rating: np.ndarray
    task: np.ndarray
    available: np.ndarray
    key_code: np.ndarray
    withheld_code: np.ndarray
    shown_code: np.ndarray

    @classmethod
    def of_rows(cls, rows: list[tuple], keys: list[str]) -> SessionColumns:
        """The columns of session rows (``SESSION_FIELDS`` order), transposed once."""
        n = len(rows)
        cols = list(zip(*rows, strict=True)) if n else [()] * len(SESSION_FIELDS)
        (task, key, withheld, followed, ok, p_true, p_oracle, _, shown, prior, trial,
         available, rated, rating) = cols  # fmt: skip
        code = {k: i for i, k in enumerate(keys)}

        def codes(col: tuple) -> np.ndarray:
            return np.fromiter((-1 if k is None else code[k] for k in col), np.int64, n)

        withheld_code, followed_ = codes(withheld), np.array(followed, dtype=bool)
        has_withheld = withheld_code >= 0
        return cls(
            np.array(ok, dtype=bool), ~followed_ & ~has_withheld, has_withheld,
            np.array(prior, dtype=bool), np.array(p_true, dtype=float),
            np.array(p_oracle, dtype=float), followed_, np.array(trial, dtype=bool),
            np.array(rated, dtype=bool), np.array(rating, dtype=bool),
            np.array(task, dtype=np.int64), np.array(available, dtype=np.int64),
            codes(key), withheld_code, codes(shown),
        )  # fmt: skip

    def sources(self) -> np.ndarray:
        """Each session's regret source as its index in ``REGRET_SOURCES``
        (``SessionLog.source``, column by column)."""
        followed = self.followed & ~self.withheld
        conditions = [
            self.withheld,
            followed & self.prior_served,
            followed & self.on_trial,
            followed & (self.p_true >= self.p_oracle),
            followed,
            self.available == 0,
            self.shown_code < 0,
        ]
        order = [4, 3, 2, 0, 1, 5, 7]  # REGRET_SOURCES' index of each condition
        return np.select(conditions, order, default=6)


REGRET_SOURCES = (
    "followed the best",
    "followed a worse one",
    "followed a revision on trial",
    "followed the prior (concurrent control)",
    "withheld",
    "all the task's procedures quarantined",
    "another task's procedure ranked first",
    "nothing matched",
)
"""Every session falls in one (``SessionLog.source``): what the agent did and why."""
