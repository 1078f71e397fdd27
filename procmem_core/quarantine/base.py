"""``QuarantinePolicy``: how a quarantined graph procedure gets traffic and is released.

The seed (loom-procedures.txt, "Matching"): "Quarantined: its last strike_limit runs all
failed; the next success lifts it." A pack that never serves a quarantined procedure
makes that success impossible, so quarantine is absorbing (docs/statistics.md,
"Quarantine"). A policy says, for one quarantined procedure:

- in the pack (``eligible``, ``floor``): whether this session may serve it, given the
  sessions it has waited since its last run, and the probation floor ``f`` every one of
  the pack's ``n`` candidates gets (``quarantine.select``: ``f + (1 - n f) w``);
- in the store (``on_run``, called by ``record_run`` before a run on a quarantined graph
  is folded): what the run does to the quarantine, and the reason when it releases it;
- in the exact analysis (``exit_chain``): the same rules as a Markov chain on the
  quarantined phase (``quarantine.fate``).

Time is counted in the procedure's *sessions*: packs in which it is a candidate. A
class joins ``QUARANTINE_POLICIES`` by defining ``name``; ``conf/quarantine/<name>.yaml``
names it (``make_quarantine_policy(**config)`` builds it, every key checked).
"""

from __future__ import annotations

import dataclasses
import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np

from procmem_core.registry import Registry

QUARANTINE_POLICIES: Registry[QuarantinePolicy] = Registry("quarantine", "procmem_core.quarantine")
"""Every quarantine exit policy by name (``make_quarantine_policy`` builds one)."""


@dataclass(frozen=True)
class ExitChain:
    """The quarantined phase as a Markov chain over ``r`` states, entered at state 0 in the
    session after the quarantining run: ``stay[i, j]`` the probability of moving from
    quarantined state i to j in one session, ``release[i]`` of leaving quarantine (to a
    failure streak of 0), ``serve[i]`` of the procedure being run in state i.
    ``stay.sum(1) + release == 1``."""

    stay: np.ndarray
    release: np.ndarray
    serve: np.ndarray


class QuarantineView(Protocol):
    """What a policy reads of one quarantined graph state (the store's ``GraphState`` or a
    pack's ``Match``): ``probe_runs`` and ``probe_successes`` since the quarantine (or since
    the last failed set of probes)."""

    probe_runs: int
    probe_successes: int


@dataclass(frozen=True)
class QuarantinePolicy(ABC):
    """The verbs every exit policy implements (see the module docstring)."""

    name: ClassVar[str]
    serves_quarantined: ClassVar[bool] = True
    """False for the seed's policy: the pack then matches exactly as before."""
    lifts_below_limit: ClassVar[bool] = True
    """True: ``evolve`` lifts a quarantine whose streak is below the strike limit (the
    seed's recomputation); False: only a run the policy releases on lifts it."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            QUARANTINE_POLICIES.add(cls)

    floor: ClassVar[float] = 0.0
    """The probation floor f each pack candidate gets (0: no floor, no draw)."""
    candidates: ClassVar[int] = 1
    """n: how many of the top matches the floor spreads over (quarantined included)."""

    @abstractmethod
    def eligible(self, view: QuarantineView, waited: int, strike_limit: int) -> bool:
        """May a pack serve this quarantined procedure like any other now? ``waited``: the
        sessions it was a candidate and not run since its last run."""

    @abstractmethod
    def on_run(self, state: Any, ok: bool) -> str | None:
        """Called by ``record_run`` with the quarantined graph state before the run is
        folded; updates the state's quarantine fields and returns the release reason, or
        None when the procedure stays quarantined."""

    @abstractmethod
    def exit_chain(self, p: float, strike_limit: int) -> ExitChain:
        """The quarantined phase of a procedure whose runs succeed with probability p."""

    def config(self) -> dict[str, Any]:
        """``make_quarantine_policy(**policy.config())`` rebuilds the policy."""
        return {"name": self.name, **dataclasses.asdict(self)}

    def describe(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(self).items())
        return f"{self.name}({params})"


def release(state: Any) -> None:
    """Lift the quarantine of ``state`` and clear its probe counters."""
    state.quarantined = False
    state.probe_runs = 0
    state.probe_successes = 0


def make_quarantine_policy(name: str | None = None, **params: Any) -> QuarantinePolicy:
    """Build a policy by name ("seed", "probation", "half_open", "decay") with its
    parameters; an unregistered name or an unknown key is refused naming it."""
    return QUARANTINE_POLICIES.build(name, **params)


@dataclass(frozen=True, kw_only=True)
class QuarantineRelease:
    """One release the store made: the procedure, the graph revision, the run that
    released it, the policy's name and its reason."""

    key: str
    namespace: str
    revision: int
    run_id: int
    policy: str
    reason: str


LOGGER = logging.getLogger("procmem.quarantine")


def log_release(r: QuarantineRelease) -> None:
    """Log one release at INFO on the ``procmem.quarantine`` logger."""
    LOGGER.info(
        "released %s/%s (revision %d) at run %d by policy %s: %s",
        r.namespace, r.key, r.revision, r.run_id, r.policy, r.reason,
    )  # fmt: skip


def policy_sees_run(policy: QuarantinePolicy, state: Any, run: Any) -> list[QuarantineRelease]:
    """Show ``policy`` a run about to be folded into a quarantined graph ``state``: [] or
    the one release it made (``run`` is the ledger's ``RunRecord``)."""
    reason = policy.on_run(state, run.ok)
    if reason is None:
        return []
    return [
        QuarantineRelease(
            key=run.key, namespace=run.namespace, revision=state.revision,
            run_id=run.run_id, policy=policy.name, reason=reason,
        )
    ]  # fmt: skip
