"""Calibration trials decided by monotony (issue 28, item 4, fourth pass).

``calibrate._raise_revert`` bisects the early revert level; a trial above a level whose
recursion is finished, and whose early reverts already keep the target, passes without its
own recursion (``calibrate.passes_by_monotony``). That must take the same bisection steps,
so the calibration is the same to the last bit, with fewer recursions; and the monotony it
rests on (early reverts fall as the level rises, at every p0) must hold on the real gate.
"""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.gates import calibrate, calibrated_sprt, calibration_store, mixture
from procmem_core.gates.base import field_values
from procmem_core.gates.calibrated_sprt import CalibratedSPRTGate
from procmem_core.gates.two_sample import TwoSampleGate
from procmem_core.gates.worst import P0Range

PARAMS = dict(ledger=100, max_runs=200, accept_level=-60.0, p0_low=0.3, p0_high=0.95)
"""A fixed-ledger question whose calibration raises the early revert level in both rounds
(ledger 60 at 100 runs did until the second-order bound between grid points, branch
speed28e, certified its first round)."""


def calibrated_afresh(monkeypatch, infer: bool) -> tuple[CalibratedSPRTGate, int]:
    """The calibrated SPRT from empty caches, with or without the inference, and the
    number of recursions (``mixture.ledger_masses``) it ran."""
    calls = []
    recursion = mixture.ledger_masses

    def counted(*args, **kwargs):
        calls.append(1)
        return recursion(*args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(mixture, "ledger_masses", counted)
        if not infer:
            m.setattr(calibrate, "passes_by_monotony", lambda *args: False)
        calibration_store.install(calibration_store.MemoryStore())
        calibrated_sprt._calibrated.cache_clear()
        calibrate.TRIALS.clear()
        try:
            gate = CalibratedSPRTGate(**PARAMS)
        finally:
            calibration_store.install(None)
            calibrated_sprt._calibrated.cache_clear()
            calibrate.TRIALS.clear()
    return gate, len(calls)


def test_the_inference_gives_the_same_calibration_with_fewer_recursions(monkeypatch):
    fast, fast_calls = calibrated_afresh(monkeypatch, infer=True)
    slow, slow_calls = calibrated_afresh(monkeypatch, infer=False)
    assert (fast.revert_level, fast.final_level) == (slow.revert_level, slow.final_level)
    a, b = fast.certificate(), slow.certificate()
    assert a.bound == b.bound and np.array_equal(a.p0, b.p0)
    assert np.array_equal(a.value, b.value)
    assert fast.revert_level > CalibratedSPRTGate(**PARAMS, final_level=0.0).revert_level
    assert fast_calls <= slow_calls - 5  # 16 against 24 here


@pytest.mark.parametrize(
    "gate",
    [
        CalibratedSPRTGate(**PARAMS, final_level=np.inf, revert_level=4.0),
        TwoSampleGate(
            design="fixed",
            ledger=30,
            max_runs=60,
            accept_level=-2.0,
            final_level=np.inf,
            revert_level=2.0,
        ),
        TwoSampleGate(
            ledger=10, max_runs=40, accept_level=0.5, final_level=np.inf, revert_level=0.8
        ),
    ],
)
def test_early_reverts_fall_as_the_revert_level_rises_at_every_p0(gate):
    # the last case has accept_level > 0: the accept region then excludes the revert
    # region, and grows as the level rises (passes_by_monotony's proof covers both)
    grid = P0Range(0.3, 0.95).grid(41)
    curves = []
    for step in np.linspace(0.0, 2.0, 9):
        moved = type(gate)(**{**field_values(gate), "revert_level": gate.revert_level + step})
        curves.append(moved.operating_curve(grid, 0.0, gate.ledger).p_revert)
    curves = np.array(curves)
    assert curves[0].max() > 1e-3  # the early boundary spends something to begin with
    assert np.all(np.diff(curves, axis=0) <= 1e-15 * curves[:-1])
    assert np.any(np.diff(curves, axis=0) < -1e-6)
