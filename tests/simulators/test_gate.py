"""GateScenario against the exact lattice recursion (sprt_operating_point, margin)."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.gates import (
    DECISION_COLUMNS,
    CalibratedSPRTGate,
    CostGate,
    DiscordantSPRTGate,
    MarginGate,
    MixtureEGate,
    SPRTGate,
    TwoSampleGate,
)
from simulators.feedback import Feedback
from simulators.scenarios.gate import GateScenario

NAMES = ("false_revert_rate", "missed_regression_rate", "mean_runs_null", "mean_runs_alt")


def within(m: dict, name: str) -> None:
    sim, se, exact = m[name], m[f"{name}_se"], m[f"{name}_exact"]
    assert abs(sim - exact) <= 4 * se + 1e-12, (name, sim, exact, se)


@pytest.mark.parametrize("at_cap", ["llr", "accept", "revert"])
@pytest.mark.parametrize("p_prior", [0.6, 0.85])
def test_sprt_matches_exact_operating_point_for_every_cap_rule(at_cap, p_prior):
    gate = SPRTGate(at_cap=at_cap, max_runs=30)
    res = GateScenario(
        gate=gate, p_prior=p_prior, drops=(0.0, 0.1, 0.15, 0.25), replications=50_000
    ).run(7)
    m = res.metrics
    for name in NAMES:
        within(m, name)
    ops = res.tables["operating_points"]
    assert list(ops.true_drop) == [0.0, 0.1, 0.15, 0.25]
    assert (abs(ops.revert_rate - ops.revert_rate_exact) <= 4 * ops.revert_rate_se + 1e-12).all()
    assert (abs(ops.mean_runs - ops.mean_runs_exact) <= 4 * ops.mean_runs_se + 1e-12).all()
    assert ops.revert_rate_wald.notna().all()


def test_margin_gate_matches_exact():
    m = (
        GateScenario(gate=MarginGate(margin=0.1, min_runs=5, max_runs=40), replications=20_000)
        .run(3)
        .metrics
    )
    for name in NAMES:
        within(m, name)


def test_gate_decisions_table_is_one_row_per_replication_and_drop():
    res = GateScenario(replications=500, drops=(0.0, 0.05, 0.15), table_rows=300).run(1)
    t = res.tables["gate_decisions"]
    assert len(t) == 3 * 300
    assert list(t.columns[: len(DECISION_COLUMNS)]) == list(DECISION_COLUMNS)
    for col in ("replication", "true_drop", "p_prior", "p_new", "sessions"):
        assert col in t.columns
    assert set(t.verdict) <= {"accept", "revert"}
    assert (t.runs_used >= 3).all() and (t.runs_used <= 50).all()
    lna, lnb = SPRTGate().boundaries
    crossed = t[t.reason_code == "revert_boundary"]
    assert len(crossed) > 0
    assert (crossed.statistic >= lna).all() and (crossed.verdict == "revert").all()
    accepted = t[t.reason_code == "accept_boundary"]
    assert len(accepted) > 0
    assert (accepted.statistic <= lnb).all() and (accepted.verdict == "accept").all()
    capped = t[t.reason_code == "at_cap"]
    assert len(capped) > 0
    assert (capped.runs_used == 50).all()
    assert ((capped.statistic > lnb) & (capped.statistic < lna)).all()


def test_no_exact_values_outside_the_exact_regime():
    for kwargs in ({"heterogeneity": 0.2}, {"feedback": Feedback.of(false_negative=0.1)}):
        m = GateScenario(ledger_size=30, replications=1000, **kwargs).run(0).metrics
        assert "false_revert_rate_exact" not in m
        assert {"false_revert_rate", "false_revert_rate_se"} <= set(m)


def test_ledger_estimated_p0_has_an_exact_mixture_that_simulation_matches():
    """p0 from a 20-run ledger (plug-in): the exact mixture over Binomial(20, 0.8) and the
    simulation agree within 4 SE (20,000 replications: SE about 0.0024 at 0.14, so a
    0.01 error in the false-revert rate fails)."""
    m = GateScenario(ledger_size=20, replications=20_000).run(3).metrics
    for name in ("false_revert_rate", "revert_rate_alt"):
        assert abs(m[name] - m[f"{name}_exact"]) <= 4 * m[f"{name}_se"]
    assert 0.12 < m["false_revert_rate_exact"] < 0.16


def test_short_ledger_inflates_false_reverts():
    known = GateScenario(p_prior=0.7, replications=20_000).run(2).metrics
    short = GateScenario(p_prior=0.7, ledger_size=10, replications=20_000).run(2).metrics
    gap = short["false_revert_rate"] - known["false_revert_rate"]
    assert gap > 4 * np.hypot(short["false_revert_rate_se"], known["false_revert_rate_se"])


def test_lower_bound_prior_reduces_false_reverts_against_plugin():
    plug = GateScenario(gate=SPRTGate(prior="plugin"), ledger_size=20, replications=20_000)
    low = GateScenario(gate=SPRTGate(prior="lower_bound"), ledger_size=20, replications=20_000)
    a, b = plug.run(4).metrics, low.run(4).metrics
    assert b["false_revert_rate"] < a["false_revert_rate"]
    assert b["missed_regression_rate"] > a["missed_regression_rate"]


def test_heterogeneous_pools_spread_outcomes():
    flat = GateScenario(replications=20_000).run(5).metrics
    pooled = GateScenario(heterogeneity=0.3, pool_size=5, replications=20_000).run(5).metrics
    gap = pooled["false_revert_rate"] - flat["false_revert_rate"]
    assert gap > 4 * np.hypot(pooled["false_revert_rate_se"], flat["false_revert_rate_se"])


def test_feedback_noise_costs_sessions_and_shifts_rates():
    fb = Feedback.of(false_negative=0.1, missing=0.5, delay=2)
    m = GateScenario(feedback=fb, replications=5000).run(6).metrics
    assert m["mean_sessions_null"] > 2 * m["mean_runs_null"]
    assert "false_revert_rate_exact" not in m
    clean = GateScenario(replications=5000).run(6).metrics
    assert m["false_revert_rate"] > clean["false_revert_rate"]  # false negatives look like drops


def test_cost_gate_reverts_expensive_revisions():
    sc = GateScenario(
        ledger_size=40, cost_gate=CostGate(tolerance=0.25), cost_increase=1.0, cost_sd=0.2,
        replications=300,
    )  # fmt: skip
    res = sc.run(8)
    t = res.tables["gate_decisions"]
    assert (t.reason_code == "cost_exceeded").mean() > 0.5
    assert res.metrics["false_revert_rate"] > 0.5


def test_prior_below_min_drop_is_handled_not_a_crash():
    res = GateScenario(p_prior=0.1, replications=2000).run(0)
    ops = res.tables["operating_points"]
    assert list(ops.p_new) == [0.1, 0.0]
    m = res.metrics
    assert m["missed_regression_rate"] == pytest.approx(1 - ops.revert_rate.iloc[1])
    within(m, "false_revert_rate")
    within(m, "mean_runs_alt")


def test_same_seed_same_metrics_other_seed_differs():
    sc = GateScenario(replications=3000, chunk_size=1000)
    assert sc.run(10).metrics == sc.run(10).metrics
    assert sc.run(10).metrics != sc.run(11).metrics


def test_small_chunks_cover_every_replication():
    sc = GateScenario(replications=50, chunk_size=16)
    assert len(sc.run(0).tables["gate_decisions"]) == 100


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"gate": "sprt"}, "gate"),
        ({"gate": CostGate()}, "gate"),
        ({"p_prior": 1.5}, "p_prior"),
        ({"drops": (0.0, 1.2)}, "drops"),
        ({"drops": "0.1"}, "drops"),
        ({"drops": (-0.1,)}, "drops"),
        ({"ledger_size": 0}, "ledger_size"),
        ({"heterogeneity": 1.0}, "heterogeneity"),
        ({"pool_size": 0}, "pool_size"),
        ({"feedback": 0.1}, "feedback"),
        ({"cost_gate": CostGate()}, "cost_gate"),
        ({"cost_gate": SPRTGate(), "ledger_size": 5}, "cost_gate"),
        ({"cost_sd": -1.0}, "cost_sd"),
        ({"min_drop": 0.0}, "min_drop"),
        ({"replications": 1}, "replications"),
        ({"table_rows": -1}, "table_rows"),
    ],
)
def test_invalid_parameters(kwargs, fragment):
    with pytest.raises(ParameterError, match=fragment):
        GateScenario(**kwargs)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [(-1.0, "cost_increase=-1.0 .*> -1"), (-2.5, "cost_increase=-2.5 .*> -1"),
     ("0.5", "cost_increase='0.5'"), (None, "cost_increase=None"),
     (float("inf"), "cost_increase=inf")],
)  # fmt: skip
def test_a_bad_cost_increase_is_refused_naming_its_value(value, fragment):
    """The check read ``cost_increase + 1``: -1.0 was refused as 'cost_increase=0.0 ...
    > 0', and a string or None raised a bare TypeError."""
    with pytest.raises(ParameterError, match=fragment):
        GateScenario(cost_increase=value)


# --- the concurrent design and the gates that compare the arms -------------------------

CONCURRENT = dict(design="concurrent", concurrent_share=0.5)


def agree(m: dict) -> list[str]:
    """Every metric with an exact counterpart, checked within 4 SE."""
    names = [k[: -len("_exact")] for k in m if k.endswith("_exact")]
    for name in names:
        within(m, name)
    return names


@pytest.mark.parametrize(
    ("gate", "kwargs"),
    [
        (TwoSampleGate(max_runs=40), dict(CONCURRENT, ledger_size=20, p_prior=0.55)),
        (TwoSampleGate(max_runs=40, ledger=50), dict(CONCURRENT, ledger_size=50, p_prior=0.85)),
        (TwoSampleGate(max_runs=40, design="fixed"), dict(ledger_size=20, p_prior=0.7)),
        (TwoSampleGate(max_runs=40, design="fixed"), dict(CONCURRENT, ledger_size=20)),
        (DiscordantSPRTGate(), dict(design="concurrent", concurrent_share=0.3, p_prior=0.6)),
        (DiscordantSPRTGate(), dict(CONCURRENT, ledger_size=20, p_prior=0.9)),
        (MixtureEGate(accept_below=0.2), dict(CONCURRENT, p_prior=0.75)),
        (CalibratedSPRTGate(max_runs=40, ledger=20), dict(ledger_size=20, p_prior=0.6)),
        (SPRTGate(), dict(design="concurrent", concurrent_share=0.25, ledger_size=20)),
    ],
)
def test_every_gate_matches_its_exact_operating_point_in_both_designs(gate, kwargs):
    """Simulation (20,000 replications per drop) against the exact recursion, within 4 SE:
    revert rates, runs to a decision and, in the concurrent design, the runs of each arm
    (sessions allocated by the concurrent share)."""
    res = GateScenario(gate=gate, replications=20_000, drops=(0.0, 0.15), **kwargs).run(5)
    names = agree(res.metrics)
    assert {"false_revert_rate", "revert_rate_alt", "mean_runs_null"} <= set(names)
    if kwargs.get("design") == "concurrent":
        assert {"mean_prior_runs_null", "mean_revision_runs_alt"} <= set(names)
        t = res.tables["gate_decisions"]
        assert {"revision_runs_total", "prior_concurrent_runs"} <= set(t.columns)
        assert (t.revision_runs_total >= t.runs_used).all()


def test_paired_gate_sessions_follow_the_share():
    """With share q the arms hold max(k, NegBin) runs: the prior's share of the runs the
    gate's pairs need grows as q moves from 1/2 (the other arm waits)."""
    gate = DiscordantSPRTGate()
    half = GateScenario(gate=gate, replications=5000, **CONCURRENT).run(2).metrics
    skew = GateScenario(gate=gate, replications=5000, design="concurrent",
                        concurrent_share=0.1).run(2).metrics  # fmt: skip
    assert skew["mean_revision_runs_null"] > 5 * skew["mean_prior_runs_null"] / 1.2
    assert skew["mean_sessions_null"] > 2.5 * half["mean_sessions_null"]


def test_one_sample_gates_keep_their_fixed_design_numbers():
    """The fixed design draws exactly what it did before designs existed: same metrics."""
    fixed = GateScenario(ledger_size=20, replications=3000).run(9).metrics
    assert "mean_prior_runs_null" not in fixed
    assert fixed == GateScenario(ledger_size=20, replications=3000, design="fixed").run(9).metrics


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"design": "paired"}, "design"),
        ({"design": "concurrent"}, "concurrent_share"),
        ({"design": "concurrent", "concurrent_share": 1.0}, "concurrent_share"),
        ({"concurrent_share": 0.5}, "concurrent_share"),
        ({"gate": DiscordantSPRTGate()}, "design"),
        ({"gate": TwoSampleGate(max_runs=20, design="fixed")}, "ledger_size"),
        (
            {
                "gate": DiscordantSPRTGate(),
                "ledger_size": 5,
                "cost_gate": CostGate(),
                "design": "concurrent",
                "concurrent_share": 0.5,
            },
            "cost_gate",
        ),
    ],
)
def test_invalid_designs(kwargs, fragment):
    with pytest.raises(ParameterError, match=fragment):
        GateScenario(**kwargs)


def test_a_rate_simulated_at_0_carries_the_binomial_se_at_its_exact_value():
    """gate_tuning logged false_revert_rate 0 with SE 0 beside an exact 6.5e-05 (4,000
    replications: 0 reverts has probability (1 - 6.5e-05)^4000 = 0.77), so its z was
    infinite. A rate at 0 or 1 carries ``sqrt(e (1 - e) / R)`` at its exact value ``e``;
    any other rate keeps its plug-in ``sqrt(r (1 - r) / R)``."""
    gate = SPRTGate(alpha=0.01, beta=0.1, max_runs=30, min_drop=0.1, at_cap="accept")
    reps = 4000
    m = GateScenario(gate=gate, replications=reps).run(0).metrics
    e = m["false_revert_rate_exact"]
    assert 0 < e < 1e-3 and m["false_revert_rate"] == 0.0  # the case gate_tuning met
    assert m["false_revert_rate_se"] == pytest.approx(np.sqrt(e * (1 - e) / reps), rel=1e-12)
    r = m["revert_rate_alt"]
    assert 0 < r < 1
    assert m["revert_rate_alt_se"] == pytest.approx(np.sqrt(r * (1 - r) / reps), rel=1e-12)


def test_a_biased_judge_reads_the_user_not_the_revision():
    """A judge errs by who the user is (``BiasedJudge``: a failure reported as a success
    with probability ``leniency * b``, ``b`` the user's own rate, the prior's). The
    revision's runs were judged as if the user's rate were the revision's: at p_prior 0.8,
    drop 0.15 and leniency 0.5 the simulated revert rate was 0.510 (the exact one at the
    revision's 0.65) where the runs' reported rate 0.738 gives 0.182."""
    gate = SPRTGate(at_cap="accept")
    feedback = Feedback.of(leniency=0.5, harshness=0.4)
    m = GateScenario(gate=gate, p_prior=0.8, feedback=feedback, replications=20_000,
                     table_rows=0).run(3).metrics  # fmt: skip
    for name, drop in (("false_revert_rate", 0.0), ("revert_rate_alt", 0.15)):
        reported = float(feedback.positive_rate(0.8 - drop, 0.8))  # the user is the prior's
        exact = float(gate.operating_point(np.array([reported]), 0.8, None).p_revert[0])
        assert abs(m[name] - exact) <= 4 * m[f"{name}_se"], (name, m[name], exact)
