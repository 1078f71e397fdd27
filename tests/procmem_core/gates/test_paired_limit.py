"""The paired gates' exact analysis holds up to ``PAIRED_MAX_RUNS`` pairs, and a longer
cap is refused: past it the recursion at 1/3 lost mass or overflowed (max_runs 900: power
0.524 where the direct recursion below gives 0.652; max_runs 700-1000: P(revert) inf or
NaN when nothing changed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.gates import DiscordantSPRTGate, MixtureEGate, make_gate

PAIRED_MAX_RUNS = 644  # 3^-644 is a normal double, 3^-645 is not (paired.PAIRED_MAX_RUNS)


def direct_revert(gate: DiscordantSPRTGate, p0: float, p: float) -> tuple[float, float]:
    """``(P(revert), P(accept))`` by the forward recursion over (worse, better) pairs at the
    pair law itself (no reweighting), the discordant SPRT's boundaries written out here."""
    p1 = gate.design_p0 - gate.min_drop
    theta = gate.design_p0 * (1 - p1) / (gate.design_p0 * (1 - p1) + (1 - gate.design_p0) * p1)
    cells = np.arange(gate.max_runs + 1, dtype=float)
    llr = cells[:, None] * math.log(2 * theta) + cells[None, :] * math.log(2 * (1 - theta))
    revert = llr >= math.log((1 - gate.beta) / gate.alpha) - 1e-9
    accept = ~revert & (llr <= math.log(gate.beta / (1 - gate.alpha)) + 1e-9)
    pw, pb = p0 * (1 - p), (1 - p0) * p
    mass = np.zeros_like(llr)
    mass[0, 0] = 1.0
    out = [0.0, 0.0]
    for k in range(1, gate.max_runs + 1):
        e = k + 1
        new = np.zeros_like(mass)
        new[:e, :e] = mass[:e, :e] * (1 - pw - pb)
        new[1:e, :e] += mass[: e - 1, :e] * pw
        new[:e, 1:e] += mass[:e, : e - 1] * pb
        mass = new
        if k < gate.min_runs:
            continue
        acc = accept if k < gate.max_runs else ~revert
        out[0] += mass[revert].sum()
        out[1] += mass[acc].sum()
        mass[revert | acc] = 0.0
    return out[0], out[1]


@pytest.mark.parametrize("name", ["discordant_sprt", "eprocess"])
def test_a_cap_past_the_limit_is_refused(name):
    with pytest.raises(ParameterError, match="max_runs") as err:
        make_gate(name=name, max_runs=PAIRED_MAX_RUNS + 1)
    assert f"<= {PAIRED_MAX_RUNS}" in err.value.allowed


def test_exact_at_the_limit():
    """At 644 pairs both gates' curves are whole and finite where ``(3 pc)^k`` is largest
    (p0 near 1), and the discordant SPRT's equals the direct recursion."""
    for gate in (DiscordantSPRTGate(max_runs=PAIRED_MAX_RUNS, design_p0=0.6),
                 MixtureEGate(max_runs=PAIRED_MAX_RUNS)):  # fmt: skip
        for drop in (0.0, 0.05):
            curve = gate.operating_curve([0.5, 0.9, 0.999], drop, 0)
            total = curve.p_revert + curve.p_accept
            assert np.all(np.isfinite(curve.expected_runs))
            np.testing.assert_allclose(total, 1.0, rtol=0, atol=1e-12)
    gate = DiscordantSPRTGate(max_runs=PAIRED_MAX_RUNS, design_p0=0.6)
    revert, accept = direct_revert(gate, 0.99, 0.94)
    curve = gate.operating_curve([0.99], 0.05, 0)
    assert curve.p_revert[0] == pytest.approx(revert, rel=1e-9)
    assert curve.p_accept[0] == pytest.approx(accept, rel=1e-9)
