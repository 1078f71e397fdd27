"""Calibration blocks (simulators.calibration_blocks): each added simulated-vs-exact figure
comes from fresh replications of its own, its exact value is the flat fate at its horizon
(checked here against a brute-force sum over every outcome sequence, not flat_fate's
recursion), and the job's own numbers do not move."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from procmem_core.errors import ParameterError
from procmem_core.flat import DEFAULT_RULE, DEFAULT_THRESHOLD
from reports.calibration import calibration
from simulators.calibration_blocks import (
    FLOOR,
    Figure,
    at_horizon,
    block_seed,
    figure_name,
    parse_name,
    pick_figures,
)
from simulators.scenarios.confidence import ConfidenceScenario
from simulators.scenarios.fate import ProcedureFateScenario
from simulators.users import UserPopulation

DESIGN = UserPopulation(
    helpful_share=0.5, harmful_share=0.5, helpful_effect=0.1, harmful_effect=0.1
)


def excluded_by(p: float, h: int) -> float:
    """P(below the threshold after h sessions) of one procedure under the seed's rule:
    the sum over all 2^h outcome sequences (outcomes after exclusion are drawn but not
    applied), each walked with the seed's float update."""
    total = 0.0
    for seq in itertools.product((True, False), repeat=h):
        conf = DEFAULT_RULE.start(None)
        for good in seq:
            if conf >= DEFAULT_THRESHOLD:
                conf = float(DEFAULT_RULE.update(np.array([conf]), np.array([good]))[0])
        if conf < DEFAULT_THRESHOLD:
            total += p ** sum(seq) * (1 - p) ** (h - sum(seq))
    return total


def base(name: str) -> str:
    return name.removesuffix("_se").removesuffix("_exact")


def blocks_of(metrics: dict[str, float]) -> dict[int, tuple[Figure, dict[str, float]]]:
    out = {}
    for name in metrics:
        parsed = parse_name(name)
        if parsed is not None:
            i, fig = parsed
            out[i] = (fig, {s: metrics[name + s] for s in ("", "_se", "_exact")})
    return out


def test_brute_force_matches_the_seed_notebook_numbers():
    assert excluded_by(0.7, 1) == pytest.approx(0.3)
    assert excluded_by(0.7, 2) == pytest.approx(0.3 + 0.7 * 0.3)  # 0.68 then 0.53


def test_fate_blocks_log_the_exact_share_at_their_horizon():
    sc = ProcedureFateScenario(p=0.7, sessions=10, replications=500, calibration_blocks=20)
    blocks = blocks_of(sc.run(11).metrics)
    assert sorted(blocks) == list(range(20))
    # 10 horizons, all within [FLOOR, 1 - FLOOR] at p = 0.7: each twice, in order
    assert [blocks[i][0].sessions for i in range(20)] == [h for h in range(1, 11) for _ in "ab"]
    for fig, got in blocks.values():
        assert fig.metric == "p_excluded"
        assert got["_exact"] == pytest.approx(excluded_by(0.7, fig.sessions), abs=1e-12)
        r = sc.calibration_replications
        assert got["_se"] == pytest.approx(np.sqrt(got[""] * (1 - got[""]) / r))
        assert abs(got[""] - got["_exact"]) < 5 * got["_se"]


def test_a_block_is_the_scenario_rerun_at_its_horizon_from_its_own_seed():
    sc = ProcedureFateScenario(p=0.652, sessions=8, replications=300, calibration_blocks=5)
    metrics = sc.run(4).metrics
    for i, (fig, got) in blocks_of(metrics).items():
        alone = at_horizon(sc, fig.sessions, sc.calibration_replications).run(block_seed(4, i))
        assert got[""] == alone.metrics["p_excluded"]
    # the job's own numbers are those of the job without blocks
    plain = replace(sc, calibration_blocks=0).run(4).metrics
    own = {k: v for k, v in metrics.items() if parse_name(base(k)) is None}
    assert own == plain
    assert len(set(metrics) - set(plain)) == 3 * 5


def test_block_seeds_differ_from_each_other_and_from_the_jobs_chunks():
    seeds = {block_seed(7, i) for i in range(100)}
    assert len(seeds) == 100
    chunk = np.random.SeedSequence(7).spawn(3)
    chunk_draws = {np.random.default_rng(c).random() for c in chunk}
    block_draws = {np.random.default_rng(np.random.SeedSequence(s)).random() for s in seeds}
    assert not chunk_draws & block_draws


def test_confidence_blocks_are_the_kept_and_excluded_shares_of_the_design_world():
    sc = ConfidenceScenario(
        population=DESIGN, procedures=1, sessions=12, replications=400,
        calibration_blocks=8, calibration_replications=600,
    )  # fmt: skip
    blocks = blocks_of(sc.run(3).metrics)
    assert len(blocks) == 8
    for fig, got in blocks.values():
        if fig.metric == "helpful_retained":  # a helpful procedure succeeds with 0.7
            want = 1 - excluded_by(0.7, fig.sessions)
        else:
            assert fig.metric == "harmful_excluded"  # a harmful one with 0.5
            want = excluded_by(0.5, fig.sessions)
        assert got["_exact"] == pytest.approx(want, abs=1e-12)
        assert FLOOR <= want <= 1 - FLOOR


def test_figures_skip_shares_near_0_or_1_and_spread_evenly():
    sc = ConfidenceScenario(
        population=DESIGN, procedures=1, sessions=12, replications=400, calibration_blocks=5
    )
    cands = [
        Figure(m, h)
        for h in range(1, 13)
        for m, e in (
            ("helpful_retained", 1 - excluded_by(0.7, h)),
            ("harmful_excluded", excluded_by(0.5, h)),
        )
        if FLOOR <= e <= 1 - FLOOR
    ]
    assert len(cands) < 24  # some shares pass 1 - FLOOR within 12 sessions
    assert pick_figures(sc, ("helpful_retained", "harmful_excluded")) == [
        cands[i * len(cands) // 5] for i in range(5)
    ]


def test_no_blocks_outside_the_exact_regime():
    sc = ConfidenceScenario(procedures=8, sessions=6, replications=50, calibration_blocks=5)
    assert not sc.exact_regime
    assert not [k for k in sc.run(1).metrics if k.startswith("cal")]


@pytest.mark.parametrize(
    ("kind", "field", "value"),
    [
        (ProcedureFateScenario, "calibration_blocks", -1),
        (ProcedureFateScenario, "calibration_replications", 0),
        (ConfidenceScenario, "calibration_blocks", 1.5),
        (ConfidenceScenario, "calibration_replications", 1),
    ],
)
def test_bad_block_settings_name_the_field(kind, field, value):
    with pytest.raises(ParameterError, match=field):
        kind(**{field: value})


def test_names_round_trip():
    fig = Figure("harmful_excluded", 37)
    assert figure_name(7, fig) == "cal07_harmful_excluded_s37"
    assert parse_name("cal07_harmful_excluded_s37") == (7, fig)
    assert parse_name("p_excluded") is None and parse_name("cal07_x_s3_exact") is None


def test_many_blocks_have_standard_normal_z_scores():
    """120 independent blocks at p = 0.7: the check of reports.calibration passes (this
    fails when the SE ignores a dependence or the exact value is off)."""
    sc = ProcedureFateScenario(
        p=0.7, sessions=20, replications=10, calibration_blocks=120,
        calibration_replications=4000,
    )  # fmt: skip
    blocks = blocks_of(sc.run(2026).metrics).values()
    z = [(g[""] - g["_exact"]) / g["_se"] for _, g in blocks]
    cal = calibration(pd.DataFrame({"z": z, "se": [g["_se"] for _, g in blocks]}))
    assert cal.pairs == 120 and cal.enough and cal.ok, cal.describe()
