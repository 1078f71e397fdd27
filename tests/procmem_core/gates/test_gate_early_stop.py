"""Accept boundaries that stop early when nothing changed: the quickstart's design question
answered for the fewest expected pairs (goal figures exact and by simulation), the frontier,
the Wald-Wolfowitz bound, the objective and the accept statistic."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.gates import (
    ACCEPT_CODE,
    REVERT_CODE,
    CalibratedSPRTGate,
    DesignQuestion,
    RevisionStats,
    TwoSampleGate,
    design_gate,
    make_gate,
    wald_wolfowitz_bound,
    worst_case,
)
from procmem_core.gates.cap_scan import cap_scan
from procmem_core.gates.design import answer, families
from procmem_core.gates.design_scans import SEARCH_POINTS
from procmem_core.gates.early_stop import (
    FrontierPoint,
    Objective,
    _loosest,
    choose,
    frontier,
    null_runs_bound,
    null_runs_ceiling,
)
from procmem_core.gates.pairbound import decision_divergence
from procmem_core.gates.pairbound import null_runs_bound as pair_bound
from procmem_core.gates.twostats import drop_statistics
from procmem_core.gates.worst import P0Range
from simulators.scenarios.gate import GateScenario

QUICKSTART = DesignQuestion(concurrent=0.5, max_runs=200)
STEP_PAIRS_NULL = 153.0
RANGE = P0Range(0.3, 0.95)


@pytest.fixture(scope="module")
def prescribed():
    """The concurrent two-sample family's answer to the quickstart's question."""
    fam = next(
        f for f in families(QUICKSTART) if f.name == "two_sample" and f.design == "concurrent"
    )
    return answer(fam, QUICKSTART)


@pytest.mark.slow
def test_goal_figures_hold_exactly(prescribed):
    """Rebuilt from its config: worst false revert <= 0.05 and power >= 0.8 bounded between
    grid points, expected pairs when nothing changed <= 0.6 x STEP's 153 at every p0 (bounded
    between grid points), within 1.3 x the Wald-Wolfowitz bound at the achieved rates."""
    a = prescribed
    assert a.feasible and a.config["accept_level"] > -10  # it does stop early to accept
    gate = make_gate(**a.config)
    fr = worst_case(gate, 0.0, 20, RANGE, target=0.05)
    pw = worst_case(gate, 0.15, 20, RANGE, target=0.8)
    assert fr.bound <= 0.05 and pw.bound >= 0.8
    worst, ceiling = null_runs_ceiling(gate, RANGE, 20)
    assert worst <= ceiling <= 0.6 * STEP_PAIRS_NULL
    b = null_runs_bound(gate, RANGE.grid(41), 0.15, 20)
    assert b.worst_ratio <= 1.3 and b.ratio <= b.worst_ratio
    assert b.bound < b.runs <= ceiling
    # both arms counted: at share 0.5 each arm holds more runs than the pairs it needs
    assert a.runs_null[0] == pytest.approx(a.runs_null[1]) and a.runs_null[0] > b.runs
    assert a.runs_alt[0] > 0.0 and a.frontier


@pytest.mark.slow
def test_prescribed_gate_matches_simulation(prescribed):
    """The prescribed gate simulated (4,000 replications per drop) at the p0 where its
    expected pairs are largest: revert rates and runs within 4 SE of the exact values."""
    gate = make_gate(**prescribed.config)
    at = prescribed.bound.p0
    res = GateScenario(
        gate=gate, replications=4_000, drops=(0.0, 0.15), design="concurrent",
        concurrent_share=0.5, ledger_size=20, p_prior=round(at, 3),
    ).run(11)  # fmt: skip
    m = res.metrics
    names = [k[: -len("_exact")] for k in m if k.endswith("_exact")]
    assert {"false_revert_rate", "mean_runs_null", "mean_runs_alt"} <= set(names)
    for name in names:
        sim, se, exact = m[name], m[f"{name}_se"], m[f"{name}_exact"]
        assert abs(sim - exact) <= 4 * se + 1e-12, (name, sim, exact, se)
    assert m["mean_runs_null_exact"] <= 0.6 * STEP_PAIRS_NULL


def test_cap_scan_runs_equal_the_capped_gates_recursion():
    """Every cap's expected runs from one scan equal the capped gate's own recursion."""
    kw = dict(min_drop=0.2, max_runs=40, ledger=10, p0_low=0.3, p0_high=0.9, accept_shrink=4.0)
    grid = P0Range(0.3, 0.9).grid(5)
    res = cap_scan(TwoSampleGate(**kw, accept_level=-1.2, final_level=0.0), grid, 0.2, 0.05)
    for k in (12, 25, 40):
        gate = TwoSampleGate(**{**kw, "max_runs": k}, accept_level=-1.2, final_level=res.final[k])
        null = gate.operating_curve(grid, 0.0, 10)
        alt = gate.operating_curve(grid, 0.2, 10)
        assert res.false_revert[k] == pytest.approx(null.p_revert.max(), abs=1e-12)
        assert res.power[k] == pytest.approx(alt.p_revert.min(), abs=1e-12)
        assert res.runs_null[k] == pytest.approx(null.expected_runs.max(), rel=1e-12)
        assert res.runs_alt[k] == pytest.approx(alt.expected_runs.max(), rel=1e-12)


def test_cap_scan_stops_where_early_reverts_pass_alpha_with_the_same_answer():
    """With ``beta`` the scan stops at the first cap whose early reverts pass alpha (they
    only grow with the cap): no cap meets the targets either way, and every cap before it
    has the full scan's figures."""
    gate = TwoSampleGate(ledger=60, max_runs=60, accept_level=-60.0, final_level=0.0,
                         p0_low=0.3, p0_high=0.95)  # fmt: skip
    grid = P0Range(0.3, 0.95).grid(13)
    full = cap_scan(gate, grid, 0.15, 0.05)
    fast = cap_scan(gate, grid, 0.15, 0.05, 0.2)
    assert np.all(np.diff(full.early[gate.min_runs :]) >= 0.0)
    first = int(np.flatnonzero(full.early > 0.05)[0])  # 29 here
    assert 10 < first < 60 and fast.early[first] == full.early[first]
    assert np.all(np.isnan(fast.final[first:])) and not np.isnan(full.final[first:]).any()
    np.testing.assert_array_equal(fast.final[:first], full.final[:first])
    np.testing.assert_array_equal(fast.power[:first], full.power[:first])
    assert not np.any(full.power[:first] >= 0.8)  # neither scan finds a cap


def test_pair_bound_reduces_to_wald_wolfowitz_and_grows_with_the_nuisance():
    """At q = p (the prior's rate known) the bound is Wald-Wolfowitz's one-sample bound;
    an alternative between the arms gives a larger one; the ledger lowers it."""
    p, a, b = 0.6, 0.05, 0.2
    one = wald_wolfowitz_bound(p, p - 0.15, a, b)[0]
    at_q = pair_bound(np.array([p]), np.array([a]), np.array([p]), np.array([b]), 0.15, 0, True)
    assert at_q[0] == pytest.approx(one, rel=1e-12)
    qs = np.linspace(0.3, 0.95, 66)
    wide = pair_bound(np.array([p]), np.array([a]), qs, np.full(66, b), 0.15, 0, True)
    ledger = pair_bound(np.array([p]), np.array([a]), qs, np.full(66, b), 0.15, 20, True)
    assert wide[0] > 1.5 * one and one < ledger[0] < wide[0]
    assert decision_divergence(0.05, 0.2) == pytest.approx(
        0.95 * np.log(0.95 / 0.2) + 0.05 * np.log(0.05 / 0.8), rel=1e-12
    )


def test_accept_statistic_shrinks_the_variance_towards_one_half():
    """``accept_shrink = c``: variance ``pc (1 - pc)``, ``pc = (a + B + c)/(n + k + 2c)``;
    None is ``lambda_ref`` (variance 1/4), ``c = 1`` is ``lambda`` itself."""
    k, a, b, n, d = 10, 9, 19, 30, 0.15
    lam, ref, _ = drop_statistics(k, a, b, n, d)
    centred = d * (b / n - a / k - d / 2)
    assert ref == pytest.approx(centred / (0.25 * (1 / n + 1 / k)), rel=1e-12)
    assert drop_statistics(k, a, b, n, d, 1.0)[1] == pytest.approx(lam, rel=1e-12)
    pc = (a + b + 4) / (n + k + 8)
    shrunk = drop_statistics(k, a, b, n, d, 4.0)[1]
    assert shrunk == pytest.approx(centred / (pc * (1 - pc) * (1 / n + 1 / k)), rel=1e-12)


def test_choose_follows_the_objective():
    pts = (
        FrontierPoint(150, -4.0, 85.0, 88.0, 0.05, 0.8),
        FrontierPoint(175, -1.8, 62.2, 83.0, 0.05, 0.81),
        FrontierPoint(200, -1.6, 62.0, 85.0, 0.05, 0.81),
    )
    assert choose(pts, Objective("null_runs")).max_runs == 175  # within 1 %: smaller cap
    assert choose(pts, Objective("max_runs")).max_runs == 150
    assert choose(pts, Objective("mixed", 0.9)).max_runs == 175  # 73.5 vs 91.5, 75.8
    assert choose(pts, Objective("mixed", 0.5)).max_runs == 150  # 117.5 vs 118.6
    assert choose(pts, Objective("mixed", 0.0)).max_runs == 150


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"objective": "fastest"}, "objective"),
        ({"objective": "mixed", "weight": 1.5}, "weight"),
        ({"objective": "mixed", "weight": -0.1}, "weight"),
        # a weight the objective would ignore (the command line refused it; the API did not)
        ({"objective": "null_runs", "weight": 0.3}, "weight.*only the mixed objective"),
        ({"objective": "max_runs", "weight": 0.0}, "weight.*only the mixed objective"),
    ],
)
def test_bad_objective_is_refused(kwargs, fragment):
    with pytest.raises(ParameterError, match=fragment):
        DesignQuestion(**kwargs)


def test_crossing_boundaries_are_refused_naming_both_levels():
    with pytest.raises(ParameterError, match=r"accept_level.*2\.5.*revert_level=2"):
        TwoSampleGate(accept_level=2.5, revert_level=2.0, final_level=1.0)
    with pytest.raises(ParameterError, match="accept_shrink"):
        TwoSampleGate(accept_shrink=0.5, final_level=1.0)


@pytest.mark.parametrize("cls", [TwoSampleGate, CalibratedSPRTGate])
@pytest.mark.parametrize(
    ("field", "value"),
    [("final_level", float("nan")), ("final_level", "1.0"), ("final_level", True),
     ("accept_level", True), ("revert_level", False)],
)  # fmt: skip
def test_hand_given_levels_that_are_not_numbers_are_refused(cls, field, value):
    """A level given by hand is a number: a NaN final level made the calibrated SPRT's exact
    analysis lose mass (P(revert) + P(accept) 0.047 at ledger 5, max_runs 5) and the
    two-sample test never revert at its cap ("revert iff lambda >= nan"); a string or a
    bool was taken as given."""
    kwargs = {"final_level": 1.0, "max_runs": 5, "ledger": 5, field: value}
    with pytest.raises(ParameterError, match=field) as err:
        cls(**kwargs)
    assert err.value.field == field and "a number" in err.value.allowed


def test_an_accept_reason_states_the_accept_statistic_it_compared():
    """The accept reason gives the accept statistic against ``accept_level`` (it said "the
    observed drop is below the accept boundary -1.0": a drop of -0.3 is no such thing, and
    the statistic it compared was not shown); the observed drop is given beside it."""
    gate = TwoSampleGate(max_runs=40, ledger=10, revert_level=2.0, accept_level=-1.0,
                         final_level=0.5, accept_shrink=4.0, recalibrate=False)  # fmt: skip
    conc = (True, False) * 5
    for k in range(3, 11):
        prior = RevisionStats(runs=10 + k, successes=5 + sum(conc[:k]), concurrent=conc[:k])
        d = gate.decide(prior, RevisionStats(runs=k, successes=k, outcomes=(True,) * k))
        if d.verdict == "accept":
            break
    b, n = 5 + sum(conc[:k]), 10 + k
    stat = float(drop_statistics(k, k, b, n, 0.15, 4.0)[1])
    assert d.reason_code == "accept_boundary" and stat <= -1.0
    assert d.reason.startswith(f"accept statistic={stat:.4f} <= accept_level=-1.0000")
    assert f"(the observed drop {b / n - 1:.4f})" in d.reason
    early = gate.decide(RevisionStats(runs=10, successes=5), RevisionStats(runs=0, successes=0))
    assert early.reason_code == "too_few_runs"  # no comparison yet: no drop to state


def test_a_bool_accept_shrink_is_refused():
    with pytest.raises(ParameterError, match="accept_shrink"):
        TwoSampleGate(accept_shrink=True, final_level=1.0)


@pytest.mark.slow
def test_max_runs_objective_keeps_the_former_answer():
    """``objective="max_runs"``: the former search (smallest cap, its loosest accept level,
    no shrinkage); the default objective stops earlier when nothing changed."""
    q = DesignQuestion(alpha=0.1, beta=0.3, min_drop=0.3, ledger=10, concurrent=0.5,
                       p0_low=0.4, p0_high=0.9, max_runs=40)  # fmt: skip
    old = DesignQuestion(**{**q.__dict__, "objective": "max_runs"})
    by_cap, by_null = design_gate(old), design_gate(q)
    pick = {a.design: a for a in by_cap.answers if a.family == "two_sample"}["concurrent"]
    new = {a.design: a for a in by_null.answers if a.family == "two_sample"}["concurrent"]
    assert pick.config.get("accept_shrink") is None and not pick.frontier
    # the frontier tries both accept statistics: here the variance at 1/4 stops sooner
    assert new.feasible and new.frontier and new.config["accept_shrink"] is None
    assert new.runs_null[0] <= pick.runs_null[0]
    assert new.max_runs >= pick.max_runs


def test_null_runs_takes_the_accept_statistic_that_stops_sooner():
    """The frontier tries both accept statistics per cap (``early_stop.frontier``): at this
    question the variance at 1/4 stops sooner than the shrunk one (the search over the
    shrunk one alone answered 19.0 pairs when nothing changed, more than the ``max_runs``
    objective's 14.3; exact, certified)."""
    q = DesignQuestion(min_drop=0.3, ledger=40, p0_low=0.4, p0_high=0.95, max_runs=60)
    by_null = {a.design: a for a in design_gate(q).answers if a.family == "two_sample"}
    old = DesignQuestion(**{**q.__dict__, "objective": "max_runs"})
    by_cap = {a.design: a for a in design_gate(old).answers if a.family == "two_sample"}
    for design in ("fixed", "concurrent"):
        new, pick = by_null[design], by_cap[design]
        assert new.feasible and new.config["accept_shrink"] is None
        assert new.false_revert <= q.alpha and new.power >= 1 - q.beta
        assert new.runs_null[0] < pick.runs_null[0]
    assert by_null["fixed"].runs_null[0] == pytest.approx(12.74, abs=0.01)
    assert by_cap["fixed"].runs_null[0] == pytest.approx(14.28, abs=0.01)
    # the answer's frontier is, per cap, the better of the two statistics' loosest levels
    new = by_null["fixed"]
    fixed = next(f for f in families(q) if f.name == "two_sample" and f.design == "fixed")
    params = {**fixed.early_stop, "revert_level": new.config["revert_level"]}
    grid, caps = q.p0_range.grid(SEARCH_POINTS), np.array([p.max_runs for p in new.frontier])
    assert list(frontier(params, grid, q.alpha, q.beta, caps)) == list(new.frontier)
    shrunk = _loosest(params, grid, q.alpha, q.beta, caps)
    plain = _loosest({**params, "accept_shrink": None}, grid, q.alpha, q.beta, caps)
    assert [p.accept_shrink for p in shrunk] == [4.0] * len(shrunk)
    assert [p.accept_shrink for p in plain] == [None] * len(plain)
    for pt in new.frontier:
        runs = [p.runs_null for p in shrunk + plain if p.max_runs == pt.max_runs]
        assert pt.runs_null == min(runs)
    assert [p.accept_shrink for p in new.frontier] == [None]


@pytest.mark.parametrize(("p0", "p"), [(0.5, 0.5), (0.8, 0.55), (0.35, 0.6)])
def test_shrunk_accept_recursion_equals_every_path_through_decide_batch(p0, p):
    """With ``accept_shrink`` the recursion (P(revert), P(accept), E[runs]) equals the sum
    over every ledger, revision and concurrent path of the batch path's first decision."""
    small = dict(min_drop=0.3, max_runs=4, min_runs=1, revert_level=0.6, accept_level=-0.3)
    gate = TwoSampleGate(**small, final_level=0.2, ledger=2, accept_shrink=2.0)
    paths = np.array(np.meshgrid(*[[0, 1]] * 10, indexing="ij")).reshape(10, -1).T
    ledger, rev, conc = paths[:, :2], paths[:, 2:6], paths[:, 6:]
    w = np.prod(np.where(ledger, p0, 1 - p0), axis=1) * np.prod(np.where(rev, p, 1 - p), axis=1)
    w *= np.prod(np.where(conc, p0, 1 - p0), axis=1)
    d = gate.decide_batch(rev.astype(bool), ledger_successes=ledger.sum(axis=1), ledger_runs=2,
                          concurrent=conc.astype(bool))  # fmt: skip
    op = gate.operating_point(p, p0, prior_runs=2)
    assert op.p_revert == pytest.approx(w @ (d.verdict == REVERT_CODE), abs=1e-12)
    assert op.p_accept == pytest.approx(w @ (d.verdict == ACCEPT_CODE), abs=1e-12)
    assert op.expected_runs == pytest.approx(w @ d.runs_used, abs=1e-12)
    assert (d.verdict == ACCEPT_CODE).any() and (d.reason == "accept_boundary").any()
