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


@dataclass(frozen=True)
class SessionColumns:
    """Columns of a session log, in session order: ``ok``, ``off`` (no procedure of the
    task followed and none withheld), ``withheld`` and ``prior_served`` as bools,
    ``p_true`` and ``p_oracle`` as floats."""

    ok: np.ndarray
    off: np.ndarray
    withheld: np.ndarray
    prior_served: np.ndarray
    p_true: np.ndarray
    p_oracle: np.ndarray

    @classmethod
    def of(cls, sessions: list[SessionLog]) -> SessionColumns:
        return cls(
            np.array([x.ok for x in sessions], dtype=bool),
            np.array([not x.followed and x.withheld is None for x in sessions], dtype=bool),
            np.array([x.withheld is not None for x in sessions], dtype=bool),
            np.array([x.prior_served for x in sessions], dtype=bool),
            np.array([x.p_true for x in sessions], dtype=float),
            np.array([x.p_oracle for x in sessions], dtype=float),
        )


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
