"""Every round of ``calibrate`` changes the gate (issue 28: the fixed-ledger two-sample test
at ledger 175 failed with "could not calibrate ... in 10 rounds").

The cause: when the exact values meet alpha but the bound between grid points exceeds it
by a little, the target was lowered by that excess (2e-5 a round at ledger 175), while the
cap's boundary is a lattice and moves only when the target falls below the level's worst
on the grid (2e-4 lower there): the same gate was certified again and again. Now a round
that would rebuild the last failed gate moves the boundary one lattice step instead.
"""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.gates import TwoSampleGate, twolattice
from procmem_core.gates.base import GateError, field_values
from procmem_core.gates.calibrate import CERTIFY_POINTS, NullPass, calibrate
from procmem_core.gates.calibrated_sprt import CalibratedSPRTGate
from procmem_core.gates.tolerance import at_most
from procmem_core.gates.twostats import drop_statistics
from procmem_core.gates.worst import P0Range, WorstCase, worst_case

ALPHA = 0.05
STATS = np.arange(10.0, 0.0, -1.0)
"""Ten cap cells of a toy gate, each holding 0.01 of the mass under the null."""


def toy(slack: float):
    """A toy gate at one p0 (1/2, where each cell's mass is its weight): reverting the top
    k cells at the cap costs 0.01 k exactly; the certification's bound adds ``slack``."""
    calls: list[float] = []

    def null_pass(revert_level: float, grid: np.ndarray, limit: float | None = None) -> NullPass:
        zeros = np.zeros(STATS.size, dtype=np.int64)
        return NullPass(grid, np.zeros(grid.size), STATS, np.full(STATS.size, 0.01), zeros, 1)

    def certify(revert_level: float, final: float, max_points: int) -> WorstCase:
        calls.append(final)
        worst = 0.01 * float(np.sum(final <= STATS))
        p0 = np.array([0.5])
        return WorstCase("false_revert", p0, np.array([worst]), worst, 0.5, worst + slack, None)

    return null_pass, certify, calls


def test_a_failed_gate_is_not_built_again_the_level_moves_one_lattice_step():
    # four cells (0.04) meet alpha on the grid, but the bound 0.04 + slack exceeds it by
    # 2e-8: lowering the target by that excess would take about 2,000 rounds to move
    null_pass, certify, calls = toy(slack=0.01 + 2e-8)
    cal = calibrate(null_pass, certify, ALPHA, np.array([0.5]), 2.0)
    assert calls == [6.5, 7.5]  # four cells (not certified), then three: one step up
    assert cal.final_level == 7.5 and cal.worst.bound == pytest.approx(0.03 + 0.01 + 2e-8)


def test_a_bound_over_alpha_by_more_than_a_step_still_moves_by_the_excess():
    # four cells: the bound 0.075 exceeds alpha by 0.025, so the target falls to 0.025 and
    # two cells (0.02) are left at once; their bound 0.055 is over by 0.005: one cell
    null_pass, certify, calls = toy(slack=0.035)
    cal = calibrate(null_pass, certify, ALPHA, np.array([0.5]), 2.0)
    assert calls == [6.5, 8.5, 9.5]
    assert cal.final_level == 9.5 and cal.worst.bound == pytest.approx(0.045)


def reachable_cap_statistics(gate: TwoSampleGate) -> np.ndarray:
    """The distinct statistics of the cap cells a revision can reach undecided."""
    lat = gate.lattice
    probe = TwoSampleGate(**{**field_values(gate), "final_level": 0.0})
    masses = twolattice.half_masses(lat, probe.tables(lat, at_cap=False))
    a, b, n = lat.cells(lat.max_runs)
    stat = drop_statistics(lat.max_runs, a, b, n, gate.min_drop)[0].ravel()
    return np.unique(stat[(masses.residual.ravel() > 0) & np.isfinite(stat)])


@pytest.mark.slow
@pytest.mark.parametrize("ledger", [150, 175, 200, 250])
def test_the_fixed_ledger_test_calibrates_at_every_ledger(ledger):
    """The call that failed at 175 (``design_gate``'s fixed two-sample family at its cap,
    max_runs 200, no accept boundary): certified at alpha, and not needlessly
    conservative: the next lattice level down (reverting the cap cells just below the
    calibrated level too) breaks alpha on the grid or cannot be certified, or gains less
    than 1e-4 alpha of false revert (150 and 250: the excess rule's overshoot)."""
    rng = P0Range(0.3, 0.95)
    params = dict(design="fixed", ledger=ledger, max_runs=200, accept_level=-60.0,
                  p0_low=rng.low, p0_high=rng.high)  # fmt: skip
    gate = TwoSampleGate(**params)
    cert = gate.certificate()
    assert at_most(cert.bound, ALPHA)
    fresh = worst_case(gate, 0.0, ledger, rng, points=101, target=ALPHA)
    assert at_most(fresh.bound, ALPHA) and fresh.worst >= 0.99 * ALPHA
    below = reachable_cap_statistics(gate)
    below = below[below < gate.final_level]
    lower = float(below[-1] + below[-2]) / 2.0
    looser = TwoSampleGate(**{**params, "revert_level": gate.revert_level, "final_level": lower})
    w = worst_case(looser, 0.0, ledger, rng, target=ALPHA, max_points=CERTIFY_POINTS)
    assert w.worst >= cert.worst
    breaks = not at_most(w.worst, ALPHA) or not at_most(w.bound, ALPHA)
    assert breaks or w.worst - cert.worst < 1e-4 * ALPHA


def test_a_bound_slack_larger_than_alpha_keeps_the_target_positive():
    """A certification whose slack between grid points exceeds alpha itself (what a tiny
    alpha meets: the calibrated SPRT at alpha 1e-8, max_runs 20 certified a grid worst of
    7.9e-9 with a bound of 2.6e-8) lowered the target below 0, and the bisection then
    failed with "no early revert boundary keeps early reverts within -6.5e-09". Now the
    target is scaled by alpha / bound (0.05 -> 0.025: two cells), and the next round's
    tighter certification passes."""
    null_pass, _, _ = toy(slack=0.0)
    slacks, calls = [0.06, 0.01], []

    def certify(revert_level: float, final: float, max_points: int) -> WorstCase:
        calls.append(final)
        worst = 0.01 * float(np.sum(final <= STATS))
        bound = worst + slacks[len(calls) - 1]
        return WorstCase(
            "false_revert", np.array([0.5]), np.array([worst]), worst, 0.5, bound, None
        )

    cal = calibrate(null_pass, certify, ALPHA, np.array([0.5]), 2.0)
    assert calls == [6.5, 8.5]  # four cells (bound 0.10), then two (target 0.025)
    assert cal.final_level == 8.5 and cal.worst.bound == pytest.approx(0.03)
    from procmem_core.gates.calibrate import lowered

    assert lowered(0.05, 0.10, 0.05) == pytest.approx(0.025)
    assert lowered(0.05, 0.0508, 0.05) == pytest.approx(0.05 - 0.0008 - 5e-6)  # as before


def test_an_alpha_below_what_the_bound_can_certify_is_a_clear_error():
    """The calibrated SPRT at alpha 1e-8 (20-run ledger, max_runs 20): the bound between
    grid points stays near 1.8e-8 even where the grid's worst is 1e-10, so no gate can be
    certified; the error says so (it named a negative target before)."""
    with pytest.raises(GateError) as err:
        CalibratedSPRTGate(alpha=1e-8, max_runs=20)
    text = str(err.value)
    assert text.startswith("could not calibrate the boundaries to alpha=1e-08 in 10 rounds")
    assert "bound between grid points 1.78e-08" in text and "within -" not in text
    gate = CalibratedSPRTGate(alpha=1.8e-8, max_runs=20)  # just above it: certified
    assert gate.certificate().bound <= 1.8e-8
