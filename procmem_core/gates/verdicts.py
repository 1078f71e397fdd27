"""What a gate answers, in one vocabulary for the store, the simulators and the reports.

- verdicts: ``continue``, ``accept``, ``revert`` and their int8 codes (every array of
  verdicts uses the codes: 0 continue, 1 accept, 2 revert);
- reasons: why a gate gave its verdict, as a code from ``REASONS`` (the same code whether
  the store asked one revision or a simulator a million), with a sentence beside it;
- ``RevisionStats`` (a gate's input), ``Evidence`` (what one decision saw, for its
  sentence), ``GateDecision`` (its answer for one revision) and ``BatchDecision`` (its
  answers for many); ``first_codes``, ``successes_at`` and ``first_decision`` read a
  batch's first decision off per-run verdict codes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from procmem_core.errors import ParameterError, check_int, check_number
from procmem_core.frozen import quick_init

CONTINUE = "continue"
ACCEPT = "accept"
REVERT = "revert"

CONTINUE_CODE = np.int8(0)
ACCEPT_CODE = np.int8(1)
REVERT_CODE = np.int8(2)

VERDICT_CODES: dict[str, int] = {CONTINUE: 0, ACCEPT: 1, REVERT: 2}
"""Verdict name -> int8 code used in every array of verdicts."""
VERDICT_NAMES: tuple[str, str, str] = (CONTINUE, ACCEPT, REVERT)
"""int8 code -> verdict name (``VERDICT_NAMES[code]``)."""

REASONS: dict[str, str] = {
    "too_few_runs": "fewer than min_runs runs of the revision",
    "undecided": "the statistic is between the boundaries",
    "revert_boundary": "the statistic crossed the revert boundary",
    "accept_boundary": "the statistic crossed the accept boundary",
    "at_cap": "undecided at max_runs: the cap rule decided",
    "too_few_costs": "too few costed successful runs to compare costs",
    "cost_within": "the revision's success cost is within tolerance",
    "cost_exceeded": "the revision's success cost exceeds the prior's by more than tolerance",
    "vetoed": "another gate (the cost gate) reverted first",
}
"""Reason code -> what it means. Every gate's ``decide`` and ``reason_codes`` use these."""


def verdict_names(codes: np.ndarray) -> np.ndarray:
    """int8 verdict codes as an array of names (for tables)."""
    return np.asarray(VERDICT_NAMES, dtype=object)[np.asarray(codes, dtype=np.int8)]


def outcome_tuple(field: str, values: Any) -> tuple[bool, ...]:
    """``values`` as a tuple of bools: each a bool or a number equal to 0 or 1. Any other
    value (2, 0.5, NaN, a string) is refused, not read as a success by its truth value
    (``decide_batch`` refuses such outcomes too, ``lattice.check_outcomes``)."""
    try:
        items = tuple(values)
    except TypeError:
        raise ParameterError(field, values, "a sequence of outcomes (True/False or 1/0)") from None
    for x in items:
        if not isinstance(x, str) and (x is True or x is False or x == 0 or x == 1):
            continue
        raise ParameterError(field, x, "an outcome: True/False (or 1/0)")
    return tuple(bool(x) for x in items)


@dataclass(frozen=True)
class RevisionStats:
    """Ledger statistics of one revision: runs, successes, the cost of each successful run
    that reported a cost, and (for gates that need the order) the outcomes.

    ``outcomes``: the revision's run outcomes in ledger order (empty when not given).
    ``concurrent``: for the prior revision only, the outcomes of its runs recorded while
    the revision was pending (the concurrent-control design), in ledger order.
    """

    runs: int
    successes: int
    success_costs: tuple[float, ...] = ()
    outcomes: tuple[bool, ...] = ()
    concurrent: tuple[bool, ...] = ()

    def __post_init__(self) -> None:
        check_int("runs", self.runs)
        check_int("successes", self.successes, maximum=int(self.runs))
        try:
            costs = tuple(float(c) for c in self.success_costs)
        except (TypeError, ValueError):
            raise ParameterError(
                "success_costs", self.success_costs, "a sequence of numbers"
            ) from None
        if any(not math.isfinite(c) or c < 0.0 for c in costs):
            raise ParameterError("success_costs", self.success_costs, "finite numbers >= 0")
        if len(costs) > self.successes:
            raise ParameterError(
                "success_costs",
                f"{len(costs)} costs",
                f"at most one cost per successful run ({self.successes})",
            )
        object.__setattr__(self, "success_costs", costs)
        for name in ("outcomes", "concurrent"):
            object.__setattr__(self, name, outcome_tuple(name, getattr(self, name)))
        if self.outcomes and (len(self.outcomes), sum(self.outcomes)) != (
            self.runs,
            self.successes,
        ):
            raise ParameterError(
                "outcomes",
                f"{len(self.outcomes)} outcomes, {sum(self.outcomes)} successes",
                f"as many as runs ({self.runs}) and successes ({self.successes})",
            )

    @classmethod
    def of_ledger(
        cls,
        runs: int,
        successes: int,
        success_costs: tuple[float, ...],
        outcomes: tuple[bool, ...],
        concurrent: tuple[bool, ...] = (),
    ) -> RevisionStats:
        """Statistics the store counted from its own ledger, which hold the invariants
        ``__post_init__`` checks by construction (ints, float costs of successful runs,
        bool outcomes agreeing with the counts): built without checking them again, once
        per ledger event while a revision is judged (``graph.revision``)."""
        stats = object.__new__(cls)
        stats.__dict__.update(
            runs=runs, successes=successes, success_costs=success_costs, outcomes=outcomes,
            concurrent=concurrent,
        )  # fmt: skip
        return stats

    @property
    def success_rate(self) -> float:
        """``successes / runs`` (NaN with no runs)."""
        return self.successes / self.runs if self.runs else float("nan")


def check_p0(p0: Any) -> float:
    """``decide``'s given ``p0`` as a float: a number in [0, 1], never a string (``"0.8"``
    was converted by the one-sample and paired gates and refused by the cost gate)."""
    return check_number("p0", p0, minimum=0.0, maximum=1.0)


def check_counts(successes: Any, runs: Any) -> None:
    """A ledger's counts for ``estimate_p0`` (scalars or arrays that broadcast): whole
    numbers with ``0 <= successes <= runs``; a ``ParameterError`` naming the first pair
    that is not (before, 25 of 20 runs gave p0 = 1.18, -1 of 20 a negative rate, and a
    negative ``runs`` a ``ZeroDivisionError``)."""
    if type(successes) is int and type(runs) is int:  # one ledger: no arrays
        if 0 <= successes <= runs:
            return
        s_all, n_all = np.asarray(float(successes)), np.asarray(float(runs))
        ok = np.asarray(False)
    else:
        s_all, n_all = np.broadcast_arrays(
            np.asarray(successes, dtype=float), np.asarray(runs, dtype=float)
        )
        ok = (s_all >= 0) & (s_all <= n_all) & (s_all == np.floor(s_all))
        ok &= n_all == np.floor(n_all)
        if ok.all():
            return
    i = np.flatnonzero(~ok.ravel())[0]
    shown = f"{s_all.ravel()[i]:g} of {n_all.ravel()[i]:g} runs"
    raise ParameterError("successes", shown, "whole numbers with 0 <= successes <= runs")


def raw_rate(successes: Any, runs: Any) -> np.ndarray:
    """The prior's raw rate ``s/n`` of checked counts (``check_counts``), NaN with no runs:
    the ``estimate_p0`` of the gates whose test does not read p0 (margin, cost, paired,
    two-sample), which report it beside a decision."""
    check_counts(successes, runs)
    s, n = np.asarray(successes, dtype=float), np.asarray(runs, dtype=float)
    return np.divide(s, n, out=np.full(np.broadcast(s, n).shape, np.nan), where=n > 0)


def ledger_counts(ledger_successes: Any, rows: int, ledger_runs: Any) -> np.ndarray:
    """The prior ledger's successes as one integer per row (0 with no ledger), what
    ``decide_evidence`` reads: whole numbers in ``[0, ledger_runs]``, one number or one
    per row. Anything else is a ``ParameterError`` naming the field (before, -1 or 5.5
    successes were read as they were or truncated, and a NaN cast to an integer)."""
    runs = check_int("ledger_runs", ledger_runs)
    if ledger_successes is None:
        if runs:
            raise ParameterError("ledger_successes", None, f"successes of {runs} runs")
        return np.zeros(rows, dtype=np.int64)
    arr = np.asarray(ledger_successes)
    if arr.dtype.kind not in "iuf" or arr.ndim > 1 or (arr.ndim == 1 and arr.shape != (rows,)):
        shown = f"array of dtype {arr.dtype} and shape {arr.shape}"
        raise ParameterError("ledger_successes", shown, f"a whole number or one per row ({rows},)")
    values = arr.astype(float)
    bad = ~((values >= 0) & (values <= runs) & (values == np.floor(values)))  # NaN: bad
    if bad.any():
        first = float(values[bad].flat[0] if values.ndim else values)
        raise ParameterError("ledger_successes", first, f"whole numbers in [0, {runs}]")
    return np.broadcast_to(arr.astype(np.int64), (rows,))


def check_stats(prior: Any, revision: Any) -> None:
    """``decide``'s two arguments are ``RevisionStats`` (a ``ParameterError`` naming the
    argument otherwise, not an ``AttributeError`` from inside the gate)."""
    for field, value in (("prior", prior), ("revision", revision)):
        if not isinstance(value, RevisionStats):
            raise ParameterError(field, value, "a RevisionStats(runs, successes, ...)")


@quick_init
@dataclass(frozen=True)
class Evidence:
    """What one decision saw, for its sentence (every gate's ``explain(reason_code,
    evidence)``): the revision's ``runs`` (pairs, for a paired gate) and ``successes``,
    the prior's rate ``p0`` and where it came from (``source``), the gate's
    ``statistic``; a two-sample gate adds the prior arm's ``prior_successes`` of
    ``prior_runs`` (ledger and concurrent runs), a paired gate the ``worse`` and
    ``better`` discordant pairs."""

    runs: int
    successes: int
    p0: float
    statistic: float
    source: str = "given"
    prior_runs: int = 0
    prior_successes: int = 0
    worse: int = 0
    better: int = 0


@quick_init
@dataclass(frozen=True, kw_only=True)
class GateDecision:
    """One gate's answer: ``verdict`` in {accept, revert, continue}, the ``reason_code``
    (a key of ``REASONS``), the sentence ``reason`` with the numbers, the runs it used, its
    statistic, and the p0 it compared with (NaN where it uses none)."""

    verdict: str
    reason_code: str
    reason: str
    runs_used: int
    statistic: float
    gate: str
    p0: float = float("nan")

    def __post_init__(self) -> None:
        if self.verdict not in VERDICT_CODES:
            raise ParameterError("verdict", self.verdict, f"one of {VERDICT_NAMES}")
        if self.reason_code not in REASONS:
            raise ParameterError("reason_code", self.reason_code, f"one of {tuple(REASONS)}")


@dataclass(frozen=True)
class BatchDecision:
    """Verdicts of many replications at once.

    ``verdict``: int8 codes (``VERDICT_NAMES[code]``: 0 continue, 1 accept, 2 revert);
    ``runs_used``: the run at which the verdict was reached (the runs observed, for rows
    still at "continue"); ``statistic``: the gate's statistic at that run; ``reason``: the
    reason code of each row (an object array of ``REASONS`` keys); ``successes``: the
    revision's successes at that run, where the gate counted them (None otherwise).
    """

    verdict: np.ndarray
    runs_used: np.ndarray
    statistic: np.ndarray
    reason: np.ndarray | None = None
    successes: np.ndarray | None = None

    def count(self, verdict: str) -> int:
        """Number of replications with this verdict."""
        if verdict not in VERDICT_CODES:
            raise ParameterError("verdict", verdict, f"one of {VERDICT_NAMES}")
        return int(np.count_nonzero(self.verdict == VERDICT_CODES[verdict]))

    def names(self) -> np.ndarray:
        """The verdicts as an array of strings (for tables)."""
        return verdict_names(self.verdict)


def first_codes(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(verdict, runs_used)``: each row's first non-continue code of per-run ``codes``
    (run ``j + 1`` in column ``j``), or continue with ``runs_used = T``."""
    rows, t = codes.shape
    if t == 0:
        return np.zeros(rows, dtype=np.int8), np.zeros(rows, dtype=np.int64)
    decided = codes != CONTINUE_CODE
    first = decided.argmax(axis=1)
    hit = decided[np.arange(rows), first]
    verdict = np.where(hit, codes[np.arange(rows), first], CONTINUE_CODE).astype(np.int8)
    return verdict, np.where(hit, first + 1, t).astype(np.int64)


def successes_at(outcomes: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """Successes among each row's first ``runs[i]`` outcomes."""
    if outcomes.shape[1] == 0:
        return np.zeros(outcomes.shape[0], dtype=np.int64)
    counts = np.cumsum(outcomes, axis=1)
    col = np.clip(np.asarray(runs) - 1, 0, outcomes.shape[1] - 1)
    return np.where(np.asarray(runs) > 0, counts[np.arange(outcomes.shape[0]), col], 0)


def first_decision(
    gate: Any, codes: np.ndarray, outcomes: np.ndarray, p0: np.ndarray
) -> BatchDecision:
    """The first non-continue code of each row of per-run ``codes`` as a decision, with
    ``gate``'s ``statistic`` and ``reason_codes`` at that run (a gate deciding from its
    ``run_codes``: the cost gate, or a gate and a veto together, ``gates.combine``)."""
    verdict, runs = first_codes(codes)
    successes = successes_at(outcomes, runs)
    return BatchDecision(
        verdict,
        runs,
        np.asarray(gate.statistic(successes, runs, p0), dtype=float),
        gate.reason_codes(successes, runs, p0, verdict),
        successes,
    )
