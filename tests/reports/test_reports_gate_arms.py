"""The gate sweep's ranking counts both arms of a concurrent design (issue 30 item 4).

A gate that reads pairs (the exact two-sample test) logs ``mean_runs_*`` as the pairs it
read, and ``mean_revision_runs_*`` / ``mean_prior_runs_*`` as the sessions each arm ran:
the arm waiting for its pair keeps running. The worst-case rows the sweep ranks dropped
the per-arm figures, so the ranking minimised pairs alone and its sentence said "those
runs count the revision's sessions only", which they do not: below, the two-sample test
reads 24.1 pairs when nothing changed while its arms run 26.8 + 26.7 sessions (ledger 20),
and the ranking compared its 24.1 with the SPRT's 22.4 where the sessions are 53.4 and
44.8."""

from __future__ import annotations

import pandas as pd
import pytest

from procmem_core.gates import SPRTGate, TwoSampleGate
from reports.recommend import GateTargets
from reports.sections.gate_sweep import ranking_blocks, sweep_recommendation
from reports.sections.gate_tables import gate_runs
from reports.sections.gate_worst import worst_rows
from reports.source import Sweep
from simulators.scenarios.gate import GateScenario

REPS = 2000
CONCURRENT = dict(design="concurrent", concurrent_share=0.5)


def _sweep() -> Sweep:
    """The seed's SPRT and a two-sample test, both in the concurrent design, at ledgers 20
    and 40 (the two conditions), read back as the report reads MLflow."""
    rows, tables = [], {}
    for ledger in (20, 40):
        for run_id, gate in ((f"s{ledger}", SPRTGate()), (f"t{ledger}", TwoSampleGate(beta=0.4))):
            kwargs = dict(ledger_size=ledger, **CONCURRENT)
            res = GateScenario(gate=gate, replications=REPS, drops=(0.0, 0.15), **kwargs).run(3)
            row = {"run_id": run_id, "run_name": run_id, "scenario": "gate", "status": "FINISHED"}
            row |= {f"params.gate.{k}": v for k, v in gate.config().items()}
            row |= {"params.scenario.replications": REPS, "params.scenario.p_prior": 0.8}
            row |= {f"params.scenario.{k}": v for k, v in kwargs.items()}
            row |= res.metrics
            rows.append(row)
            tables[run_id] = dict(res.tables)
    runs = pd.DataFrame(rows)
    params = tuple(c for c in runs.columns if c.startswith("params."))
    named = {k for r in rows for k in r} - set(params)
    named -= {"run_id", "run_name", "scenario", "status"}
    return Sweep("fake", "p" * 32, "parent", runs, params, tuple(sorted(named)), tables)


@pytest.fixture(scope="module")
def gates():
    return gate_runs(_sweep())


def test_worst_rows_carry_both_arms_from_the_condition_where_their_sum_is_largest(gates):
    rows = gates.rows.assign(replications=REPS)
    worst = worst_rows(rows).set_index("config")
    for config, g in rows.groupby("config"):
        for label in ("null", "alt"):
            rev, prior = (g[f"mean_{a}_runs_{label}"].astype(float) for a in ("revision", "prior"))
            top = (rev + prior).idxmax()
            w = worst.loc[config]
            assert w[f"mean_revision_runs_{label}"] == rev[top]
            assert w[f"mean_prior_runs_{label}"] == prior[top]
            assert w[f"mean_prior_runs_{label}_se"] == g.at[top, f"mean_prior_runs_{label}_se"]
            assert w[f"sessions_{label}_condition"] == g.at[top, "condition"]


def test_the_ranking_counts_both_arms_and_its_sentence_gives_them(gates):
    rows = gates.rows.assign(replications=REPS)
    worst = worst_rows(rows)
    rec = sweep_recommendation(worst, GateTargets(), gates.default_label, 100)
    g = rows[rows["config"] == rec.label]
    both = g["mean_revision_runs_null"].astype(float) + g["mean_prior_runs_null"].astype(float)
    # the ranking's objective (and its 'sessions if unchanged' column) is both arms' sessions
    objective = rec.ranked.set_index("config").at[rec.label, "objective"]
    assert objective == pytest.approx(both.max(), rel=1e-12)
    assert objective > float(rec.pick["mean_runs_null"])  # more sessions than pairs
    table = next(b for b in ranking_blocks(rec, worst, GateTargets(), 2) if hasattr(b, "frame"))
    assert round(both.max(), 2) in list(table.frame["sessions if unchanged"])
    # the sentence gives both arms and the calendar, not a claim that nothing is left out
    s = rec.sentence
    assert "revision's sessions only" not in s and "per-arm figures" not in s
    top = both.idxmax()
    rev, prior = (float(g.at[top, f"mean_{a}_runs_null"]) for a in ("revision", "prior"))
    assert (
        f"a decision costs {rev + prior:.1f} sessions when nothing changed "
        f"({g.at[top, 'condition']}: {rev:.1f} + {prior:.1f}, "
        f"{(rev + prior) / 100:.3g} days at 100 sessions/day)"
    ) in s
    assert "per arm: revision + prior" in s


def test_a_fixed_design_sweep_gives_its_sessions_in_days():
    """A sweep of fixed-design gates only (gate_tuning's) logs no per-arm runs: its ranking
    sentence gave the runs and no calendar time, where docs/reports.md says every gate
    sentence gives the days at --sessions-per-day (issue 30 item 4). Its runs are its
    sessions, all on the revision."""
    rows, tables = [], {}
    for run_id, gate in (("a", SPRTGate()), ("b", SPRTGate(alpha=0.1))):
        res = GateScenario(gate=gate, replications=REPS, drops=(0.0, 0.15)).run(3)
        row = {"run_id": run_id, "run_name": run_id, "scenario": "gate", "status": "FINISHED"}
        row |= {f"params.gate.{k}": v for k, v in gate.config().items()}
        row |= {"params.scenario.replications": REPS, "params.scenario.p_prior": 0.8,
                "params.scenario.design": "fixed"}  # fmt: skip
        row |= res.metrics
        rows.append(row)
        tables[run_id] = dict(res.tables)
    runs = pd.DataFrame(rows)
    assert not any("prior_runs" in c for c in runs.columns)  # the fixed design logs none
    params = tuple(c for c in runs.columns if c.startswith("params."))
    named = tuple(sorted(set(runs.columns) - set(params) - {"run_id", "run_name", "scenario",
                                                             "status"}))  # fmt: skip
    gates = gate_runs(Sweep("fake", "p" * 32, "parent", runs, params, named, tables))
    rec = sweep_recommendation(worst_rows(gates.rows.assign(replications=REPS)),
                               GateTargets(), gates.default_label, 50)  # fmt: skip
    null, alt = float(rec.pick["mean_runs_null"]), float(rec.pick["mean_runs_alt"])
    assert (
        f"a decision costs {null:.1f} sessions when nothing changed ({null:.1f} + 0.0, "
        f"{null / 50:.3g} days at 50 sessions/day) and {alt:.1f} sessions at the drop "
        f"({alt:.1f} + 0.0, {alt / 50:.3g} days at 50 sessions/day), all on the revision, "
        "none on the prior: no concurrent control"
    ) in rec.sentence
