"""The gate scenario's tables, built from its per-drop simulation arrays ``sims``
(``{drop: {name: array}}``): ``operating_points`` (one row per true drop) and
``gate_decisions`` (one row per replication and drop, the one schema of
``procmem_core.gates.DECISION_COLUMNS``)."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import pandas as pd

from procmem_core.gates import (
    ACCEPT_CODE,
    DECISION_COLUMNS,
    REASONS,
    REVERT_CODE,
    Gate,
    verdict_names,
)
from simulators.result import mean_and_se, rate_and_se


class GateScenarioFields(Protocol):
    """What the tables read of a ``GateScenario`` (a protocol, so this module does not
    import the scenario that imports it)."""

    @property
    def gate(self) -> Gate: ...
    @property
    def p_prior(self) -> float: ...
    @property
    def drop_grid(self) -> tuple[float, ...]: ...
    @property
    def ledger_size(self) -> int | None: ...
    @property
    def concurrent(self) -> bool: ...
    @property
    def replications(self) -> int: ...
    @property
    def table_rows(self) -> int: ...
    def p_new_grid(self) -> np.ndarray: ...


OUTCOME_OF = {0: "pending", 1: "accepted", 2: "reverted"}
TRUTH_COLUMNS = ("replication", "true_drop", "p_prior", "p_new", "sessions")
"""What the scenario knows beside each decision (after ``gates.DECISION_COLUMNS``)."""
CONCURRENT_COLUMNS = ("revision_runs_total", "prior_concurrent_runs")
"""Runs each arm had when the decision landed (the concurrent design only)."""


def operating_points_table(
    scenario: GateScenarioFields, sims: dict, exact: dict, means: dict | None = None
) -> pd.DataFrame:
    """One row per true drop: simulated revert and accept rates, runs and sessions (each
    with its SE; ``means[drop][key]``, where given, is ``mean_and_se(sims[drop][key])``
    computed already), the exact values (``exact``: ``{drop: (P(revert), E[runs])}``, NaN
    outside the exact regime) and Wald's approximations (p0 known only)."""
    approx = None
    if scenario.ledger_size is None:
        approx = scenario.gate.approximate_operating_point(scenario.p_new_grid(), scenario.p_prior)
    rows = []
    for i, d in enumerate(scenario.drop_grid):
        sim = sims[d]
        reps = sim["verdict"].size
        rev, rev_se = rate_and_se(np.count_nonzero(sim["verdict"] == REVERT_CODE), reps)
        acc, acc_se = rate_and_se(np.count_nonzero(sim["verdict"] == ACCEPT_CODE), reps)
        have = means[d] if means else {k: mean_and_se(sim[k]) for k in ("runs", "sessions")}
        (runs, runs_se), (sess, sess_se) = have["runs"], have["sessions"]
        ex = exact.get(d, (np.nan, np.nan))
        rows.append(
            {
                "true_drop": d,
                "p_prior": scenario.p_prior,
                "p_new": max(0.0, scenario.p_prior - d),
                "replications": reps,
                "revert_rate": rev,
                "revert_rate_se": rev_se,
                "accept_rate": acc,
                "accept_rate_se": acc_se,
                "mean_runs": runs,
                "mean_runs_se": runs_se,
                "mean_sessions": sess,
                "mean_sessions_se": sess_se,
                "revert_rate_exact": ex[0],
                "mean_runs_exact": ex[1],
                "revert_rate_wald": np.nan if approx is None else float(approx.p_revert[i]),
                "mean_runs_wald": np.nan if approx is None else float(approx.expected_runs[i]),
            }
        )
    return pd.DataFrame(rows)


def decisions_table(scenario: GateScenarioFields, sims: dict) -> pd.DataFrame:
    """The first ``table_rows`` replications' decisions at every drop, in the one
    ``gate_decisions`` schema (``DECISION_COLUMNS``), then the truth the simulation knows
    and, in the concurrent design, each arm's runs at the decision."""
    extra = CONCURRENT_COLUMNS if scenario.concurrent else ()
    keep = min(scenario.table_rows, scenario.replications)
    frames = []
    for d in scenario.drop_grid:
        sim = {k: v[:keep] for k, v in sims[d].items()}
        runs = sim["runs"].astype(np.int64)  # kept as a smaller integer type
        reason = np.asarray(sim["reason"], dtype=object)
        frames.append(
            pd.DataFrame(
                {
                    "key": "",
                    "namespace": "",
                    "prior_revision": 1,
                    "revision": 2,
                    "gate": scenario.gate.name,
                    "verdict": verdict_names(sim["verdict"]),
                    "reason": [REASONS[r] for r in reason],
                    "runs_used": runs,
                    "statistic": sim["stat"],
                    "prior_runs": scenario.ledger_size or 0,
                    "prior_successes": sim["prior_s"],
                    "revision_runs": runs,
                    "revision_successes": sim["s"],
                    "outcome": [OUTCOME_OF[int(v)] for v in sim["verdict"]],
                    "reason_code": reason,
                    "p0_used": sim["p0"],
                    "replication": np.arange(keep),
                    "true_drop": d,
                    "p_prior": scenario.p_prior,
                    "p_new": max(0.0, scenario.p_prior - d),
                    "sessions": sim["sessions"],
                    "revision_runs_total": sim["rev_runs"],
                    "prior_concurrent_runs": sim["prior_runs"],
                },
                columns=[*DECISION_COLUMNS, *TRUTH_COLUMNS, *extra],
            )
        )
    return pd.concat(frames, ignore_index=True)
