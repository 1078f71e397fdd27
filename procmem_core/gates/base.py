"""The gate base: what every revision gate provides, so nothing outside asks which gate it is.

``ProcedureStore.evolve`` asks a gate after runs of a pending revision land, passing the
prior revision's and the revision's ledger statistics; the gate answers with a
``GateDecision``. Simulators ask the same gate about a million outcome sequences at once,
the exact analysis asks for its operating point, the reports for its label, its targets
and its lower bound. ``Gate`` holds only the verbs callers outside ``gates/`` use:

- ``decide(prior, revision, p0=None)``: one revision, with a reason code and a sentence;
  ``verdict(prior, revision)``: its verdict alone (what the store asks at every event);
- ``decide_batch(outcomes, p0, costs=..., prior_costs=...)``: many replications, the
  same rule; ``decide_evidence``: the same from both arms' raw evidence, with
  ``arm_runs`` the runs of each arm a decision needed;
- ``estimate_p0(successes, runs)``: the prior's rate from its ledger;
- ``operating_point(p, p0, prior_runs=None)``, ``operating_curve(p0, drop, prior_runs)``:
  exact P(revert), P(accept), E[runs] (``exact`` says whether the gate has them);
  ``approximate_operating_point``: a closed form beside them (the SPRT: Wald's);
- ``targets`` (``ErrorTargets(alpha, beta, min_drop)``, None for a gate without them),
  ``design_drop`` and ``expected_runs_lower_bound(p0, alpha, beta)``: Wald-Wolfowitz;
- ``config()``, ``describe()``: its parameters (``make_gate(**config())`` rebuilds it)
  and a label that reads as words.

The flags ``exact``, ``veto_only``, ``compares_arms``, ``wald_nominal`` and ``designs``
say what a caller may ask. The families below give the rest: ``LatticeGate`` (a verdict
that depends only on the revision's (runs, successes) and p0: a subclass gives its
per-run ``rule``, its ``statistic``, which boundary was ``crossed`` and the sentence that
``explain``s it), ``PairedGate`` (discordant pairs), ``TwoSampleGate`` and ``CostGate``;
every ``explain`` takes ``(reason_code, evidence: Evidence)``. A family that decides
from per-run codes has ``run_codes`` (``combine.decide_together`` asks it).
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.display import record_html
from procmem_core.errors import ParameterError, ProcmemError, check_probability
from procmem_core.gates import lattice
from procmem_core.gates.llr import sprt_hypotheses, wald_wolfowitz_bound
from procmem_core.gates.targets import ErrorTargets, targets_of
from procmem_core.gates.verdicts import (
    BatchDecision,
    GateDecision,
    RevisionStats,
    ledger_counts,
)
from procmem_core.registry import Registry

GATES: Registry[Gate] = Registry("gate", "procmem_core.gates")
"""Every concrete gate by name (``gates.registry.make_gate`` builds one)."""


class GateError(ProcmemError):
    """A gate was asked for something it does not have (an exact operating point, a bound)."""


@dataclass(frozen=True)
class OperatingPoint:
    """A gate's operating point at true success probability ``p`` of the revision.

    ``p_revert`` and ``p_accept`` (they sum to 1 when the cap forces a decision) and
    ``expected_runs`` (runs until the decision, the forced one at the cap included).
    ``method`` is "exact" (lattice recursion) or "wald" (Wald's untruncated
    approximations). Fields are floats for a scalar ``p``, arrays for an array ``p``.
    ``prior_runs`` is the prior ledger's size when p0 was estimated from one (None: known).
    """

    p: float | np.ndarray
    p0: float
    p_revert: float | np.ndarray
    p_accept: float | np.ndarray
    expected_runs: float | np.ndarray
    method: str
    prior_runs: int | None = None
    expected_prior_runs: float | np.ndarray | None = None
    """Concurrent runs of the prior the gate used (two-sample gates; None: it uses none)."""

    def _repr_html_(self) -> str:
        """A notebook's view: the fields, then one row per ``p`` for an array ``p``."""
        return record_html(self)


DESIGNS = ("fixed", "concurrent")
"""How the prior arm accrues evidence: "fixed" (its ledger of ``prior_runs`` runs is all
there is, the seed's structure) or "concurrent" (while the revision is pending the prior
also serves a share of the sessions, so both revisions accrue runs side by side)."""


@dataclass(frozen=True)
class OperatingCurve:
    """A gate's operating characteristic along ``p = max(0, p0 - drop)`` for many ``p0``.

    ``p_revert``, ``p_accept``, ``expected_runs`` (the gate's decision count: revision
    runs, or pairs for a paired gate) and ``expected_prior_runs`` (concurrent runs of the
    prior it used) are arrays shaped like ``p0``. ``observations`` is the most Bernoulli
    outcomes the decision can depend on (ledger included): ``gates.worst`` bounds the
    curve between grid points with it. ``p0_dependent`` is True when the rule itself uses
    the true p0 (p0 known), so no bound between grid points applies.
    """

    p0: np.ndarray
    drop: float
    p_revert: np.ndarray
    p_accept: np.ndarray
    expected_runs: np.ndarray
    expected_prior_runs: np.ndarray
    prior_runs: int | None
    observations: int
    p0_dependent: bool
    stop: np.ndarray | None = None
    """``stop[i, k]`` = P(decision at run k) at ``p0[i]``, where the gate computes it."""

    def _repr_html_(self) -> str:
        """A notebook's view: the fields, then one row per ``p0``."""
        return record_html(self)


def check_p_values(p: float | np.ndarray) -> np.ndarray:
    """``p`` as a float array, every value in [0, 1]."""
    arr = np.asarray(p, dtype=float)
    bad = ~((arr >= 0.0) & (arr <= 1.0))
    if np.any(bad):
        raise ParameterError("p", float(arr[bad].ravel()[0]), "probabilities in [0, 1]")
    return arr


def make_point(
    p: np.ndarray,
    p0: float,
    revert: np.ndarray,
    accept: np.ndarray,
    runs: np.ndarray,
    method: str,
    prior_runs: int | None = None,
) -> OperatingPoint:
    """An ``OperatingPoint`` shaped like ``p`` (floats for a scalar)."""
    if p.ndim == 0:
        revert, accept, runs = float(revert[0]), float(accept[0]), float(runs[0])
        p = float(p)
    else:
        revert, accept, runs = (x.reshape(p.shape) for x in (revert, accept, runs))
    return OperatingPoint(p, p0, revert, accept, runs, method, prior_runs)


class Gate(ABC):
    """The verbs every revision gate implements (see the module docstring)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            GATES.add(cls)

    name: ClassVar[str]
    label: ClassVar[str]
    exact: ClassVar[bool] = False
    """True when ``operating_point`` is exact (a lattice recursion)."""
    veto_only: ClassVar[bool] = False
    """True for a gate that can revert but never accepts (the cost gate)."""
    compares_arms: ClassVar[bool] = False
    """True for a gate that compares the prior's runs (ledger, concurrent) with the
    revision's itself instead of taking a p0 (``decide_evidence`` is its batch verb)."""
    wald_nominal: ClassVar[bool] = False
    """True when ``targets`` are Wald's nominal rates for boundaries set as if p0 were
    known and the test untruncated, so the achieved rates can miss them (the SPRT); the
    report explains the gap for these gates."""
    designs: ClassVar[tuple[str, ...]] = DESIGNS
    """The designs (``DESIGNS``) the gate can decide in. A one-sample gate decides in both
    and, in the concurrent design, ignores the prior's concurrent runs (its p0 comes from
    the ledger); a gate that compares the two arms run by run needs "concurrent"."""

    def config(self) -> dict[str, Any]:
        """``{"name": ..., **field_values(gate)}``: ``make_gate(**gate.config())`` rebuilds
        the gate."""
        return {"name": self.name, **field_values(self)}

    def describe(self) -> str:
        """A label that reads as words, e.g. "SPRT, follow the LLR at the cap"."""
        return self.label

    @property
    def targets(self) -> ErrorTargets | None:
        """The gate's ``ErrorTargets`` from its ``alpha``, ``beta`` and ``min_drop`` fields
        (None: a gate without them states none; ``beta`` None: no power target)."""
        return targets_of(self)

    @property
    def design_drop(self) -> float | None:
        """The drop in success rate the gate is designed to catch, ``targets.min_drop``
        (None: it has none)."""
        targets = self.targets
        return None if targets is None else targets.min_drop

    @abstractmethod
    def estimate_p0(self, successes: ArrayLike, runs: ArrayLike) -> np.ndarray:
        """The prior revision's success rate from its ledger counts (scalars or arrays)."""

    @abstractmethod
    def decide(
        self, prior: RevisionStats, revision: RevisionStats, p0: float | None = None
    ) -> GateDecision:
        """The verdict after the revision's runs so far (call it after every run)."""

    def verdict(self, prior: RevisionStats, revision: RevisionStats) -> str:
        """``decide(prior, revision).verdict`` without the sentence: what the store asks at
        every ledger event while it replays a pending revision (a gate may answer faster;
        the answer must be the same)."""
        return self.decide(prior, revision).verdict

    @abstractmethod
    def decide_batch(
        self,
        outcomes: np.ndarray,
        p0: float | np.ndarray,
        costs: np.ndarray | None = None,
        prior_costs: np.ndarray | None = None,
    ) -> BatchDecision:
        """First decision of each row of ``outcomes`` (bool, replications x runs).

        ``p0``: a scalar or one value per row; ``costs``: the cost of each run (NaN where
        a run failed or reported none); ``prior_costs``: each row's prior success costs
        (NaN-padded). Gates that do not use costs ignore them.
        """

    def operating_point(
        self, p: float | np.ndarray, p0: float, prior_runs: int | None = None
    ) -> OperatingPoint:
        """Exact P(revert), P(accept), E[runs] at revision success rate(s) ``p``."""
        raise GateError(f"the {self.name} gate has no exact operating point")

    def approximate_operating_point(
        self, p: float | np.ndarray, p0: float
    ) -> OperatingPoint | None:
        """A closed-form approximation of the operating point, if the gate has one (the
        SPRT: Wald's), to report beside the exact one; None otherwise."""
        return None

    def decide_evidence(
        self,
        outcomes: np.ndarray,
        *,
        p0: float | np.ndarray | None = None,
        ledger_successes: ArrayLike | None = None,
        ledger_runs: int = 0,
        concurrent: np.ndarray | None = None,
    ) -> BatchDecision:
        """First decision of each row from the raw evidence of both arms.

        ``outcomes``: the revision's runs (replications, runs); ``p0``: the prior's rate
        when known; else ``ledger_successes`` (per row) of a ledger of ``ledger_runs``
        runs; ``concurrent``: the prior's runs while the revision is pending (the
        concurrent design). This default (one-sample gates) decides from
        ``estimate_p0`` of the ledger and ignores concurrent runs; two-sample gates
        override it.
        """
        outcomes = lattice.check_outcomes(outcomes)
        if p0 is None:
            if ledger_successes is None:
                raise ParameterError("p0", None, "p0, or the ledger's successes and runs")
            counts = ledger_counts(ledger_successes, outcomes.shape[0], ledger_runs)
            p0 = np.asarray(self.estimate_p0(counts, ledger_runs), dtype=float)
        return self.decide_batch(outcomes, p0)

    def arm_runs(self, runs_used: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """``(revision runs, concurrent prior runs)`` a decision at ``runs_used`` needed
        (a one-sample gate: the revision's runs and none of the prior's)."""
        runs = np.asarray(runs_used, dtype=np.int64)
        return runs, np.zeros_like(runs)

    def operating_curve(
        self, p0: ArrayLike, drop: float = 0.0, prior_runs: int | None = None
    ) -> OperatingCurve:
        """Exact P(revert), P(accept) and E[runs] at ``p = max(0, p0 - drop)`` for each p0
        (the prior's true rate; a ledger of ``prior_runs`` runs mixed in exactly). This
        default loops over ``operating_point``; lattice and two-sample gates vectorize it.
        """
        p0s = check_p_values(p0).ravel()
        drop = check_probability("drop", drop)
        points = [self.operating_point(max(0.0, x - drop), float(x), prior_runs) for x in p0s]
        prior = [0.0 if q.expected_prior_runs is None else q.expected_prior_runs for q in points]
        return OperatingCurve(
            p0s,
            drop,
            np.array([q.p_revert for q in points], dtype=float),
            np.array([q.p_accept for q in points], dtype=float),
            np.array([q.expected_runs for q in points], dtype=float),
            np.array(prior, dtype=float),
            prior_runs,
            ledger_and_runs(self, prior_runs),
            prior_runs is None,
        )

    def expected_runs_lower_bound(
        self, p0: float, alpha: float | None = None, beta: float | None = None
    ) -> tuple[float, float]:
        """Wald-Wolfowitz lower bounds on E[runs] at p0 and at ``p0 - design_drop`` of any
        test with error rates (alpha, beta): by default the gate's nominal targets; pass
        the achieved rates to compare a gate with what its own errors allow."""
        drop = self.design_drop
        if drop is None:
            raise GateError(f"the {self.name} gate has no design drop to bound runs against")
        targets = self.targets
        if alpha is None or beta is None:
            if targets.beta is None:
                raise GateError(f"the {self.name} gate states no error rates: give alpha, beta")
            alpha = targets.alpha if alpha is None else alpha
            beta = targets.beta if beta is None else beta
        p0c, p1 = (float(x) for x in sprt_hypotheses(check_probability("p0", p0), drop))
        return wald_wolfowitz_bound(p0c, p1, alpha, beta)


def field_values(gate: Gate) -> dict[str, Any]:
    """A gate's parameters as plain values: its dataclass fields, in order, a numpy scalar
    given for one as the Python number it holds (``make_gate(max_runs=np.int64(50))``'s
    config was not JSON)."""
    return {f.name: _plain(getattr(gate, f.name)) for f in dataclasses.fields(gate)}


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


R = TypeVar("R")


class Recursions:
    """Exact recursions remembered across gate objects: a design search builds the gate
    with the same parameters several times (a candidate, then the gate it certifies), and
    the recursion at 1/2 depends on nothing else (``gate_key``). The ``size`` most recent
    are kept; what is returned is shared, so callers only read it."""

    def __init__(self, size: int = 24) -> None:
        self.size = size
        self.store: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable, compute: Callable[[], R]) -> R:
        """The value remembered under ``key``, else ``compute()`` remembered."""
        if key in self.store:
            self.store.move_to_end(key)
            return self.store[key]
        value = compute()
        self.store[key] = value
        if len(self.store) > self.size:
            self.store.popitem(last=False)
        return value

    def peek(self, key: Hashable) -> Any:
        """The value remembered under ``key``, else None (nothing computed)."""
        return self.get(key, lambda: None) if key in self.store else None

    def clear(self) -> None:
        self.store.clear()


def gate_key(gate: Gate, *extra: Hashable, **fields: Any) -> tuple:
    """A gate's class and parameters (and ``extra``): equal for gates that decide alike;
    ``fields``: parameters read as these values instead (in their places)."""
    values = field_values(gate)
    if fields:
        values = {**values, **fields}
    return (type(gate).__name__, *values.items(), *extra)


def ledger_and_runs(gate: Gate, prior_runs: int | None) -> int:
    """The most Bernoulli outcomes a one-sample decision depends on: the ledger's
    ``prior_runs`` and the gate's ``max_runs`` (``OperatingCurve.observations``)."""
    return int(prior_runs or 0) + int(getattr(gate, "max_runs", 0))
