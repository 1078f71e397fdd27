"""How a success-rate gate and a veto gate (the cost gate) decide a revision together.

``combine_gate_verdicts``: revert if either says revert (the veto applies at every run),
else accept if the primary gate accepts, else continue. The veto gate alone never
accepts nor delays an acceptance. ``decide_together`` applies that rule run by run to a
batch, as ``ProcedureStore.evolve`` does for one revision (``graph.revision``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from procmem_core.errors import ParameterError
from procmem_core.gates.base import Gate
from procmem_core.gates.lattice import check_outcomes, check_p0_array
from procmem_core.gates.verdicts import (
    ACCEPT_CODE,
    CONTINUE_CODE,
    REVERT_CODE,
    VERDICT_CODES,
    VERDICT_NAMES,
    BatchDecision,
    first_decision,
)


def combine_gate_verdicts(primary: str | ArrayLike, veto: str | ArrayLike) -> str | np.ndarray:
    """The store's rule for a pending revision (see the module doc).

    Takes two verdict names (returns a name) or arrays of int8 verdict codes (returns
    codes), so simulators apply the same rule.
    """
    if isinstance(primary, str) or isinstance(veto, str):
        combined = _COMBINED_NAMES.get((primary, veto))
        if combined is None:
            for name, v in (("primary", primary), ("cost", veto)):
                if v not in VERDICT_CODES:
                    raise ParameterError(name, v, f"one of {VERDICT_NAMES}")
        return combined
    p, c = np.asarray(primary), np.asarray(veto)
    out = np.where(
        (p == REVERT_CODE) | (c == REVERT_CODE),
        REVERT_CODE,
        np.where(p == ACCEPT_CODE, ACCEPT_CODE, CONTINUE_CODE),
    )
    return out.astype(np.int8)


_COMBINED_NAMES = {
    (p, v): VERDICT_NAMES[
        int(combine_gate_verdicts(np.int8(VERDICT_CODES[p]), np.int8(VERDICT_CODES[v])))
    ]
    for p in VERDICT_NAMES
    for v in VERDICT_NAMES
}
"""The rule on verdict names: the array rule above, tabulated once for every pair."""


def decide_together(
    primary: Gate,
    veto: Gate,
    outcomes: np.ndarray,
    p0: float | np.ndarray,
    costs: np.ndarray | None = None,
    prior_costs: np.ndarray | None = None,
) -> tuple[BatchDecision, np.ndarray]:
    """First run at which the combined verdict is not "continue", for each row.

    Both gates decide from per-run codes (``run_codes``: every one-sample gate and the
    cost gate). Returns the decision (statistic and reasons of the primary gate at that run,
    "cost_exceeded" where the veto reverted) and the mask of rows the veto decided (it
    reverted at a run where the primary gate alone did not).
    """
    outcomes = check_outcomes(outcomes)
    p0 = check_p0_array(p0, outcomes.shape[0])
    first = primary.run_codes(outcomes, p0, costs, prior_costs)
    t = first.shape[1]
    second = veto.run_codes(outcomes[:, :t], p0, None if costs is None else costs[:, :t],
                            prior_costs)  # fmt: skip
    both = combine_gate_verdicts(first, second)
    decision = first_decision(primary, both, outcomes[:, :t], p0)
    if t == 0:
        return decision, np.zeros(outcomes.shape[0], dtype=bool)
    rows = np.arange(outcomes.shape[0])
    col = np.clip(decision.runs_used - 1, 0, t - 1)
    by_veto = (decision.verdict == REVERT_CODE) & (first[rows, col] != REVERT_CODE)
    reason = np.where(by_veto, "cost_exceeded", decision.reason).astype(object)
    out = BatchDecision(
        decision.verdict, decision.runs_used, decision.statistic, reason, decision.successes
    )
    return out, by_veto
