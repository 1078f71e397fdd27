"""The paired gates' exact curves where every pair is discordant (``pc = 0``: p0 = 1 and a
revision that always fails, or p0 = 0 and one that always succeeds). The recursion at 1/3
reweighs a cell by ``(pw / pc)^W (pb / pc)^B (3 pc)^k``, which is 0 * inf there: the
operating point was NaN (P(revert), P(accept) and E[pairs]) for both gates, although the
answer is plain (the discordant SPRT at its defaults reverts after 5 straight worse pairs)."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.gates import make_gate

GATES = [
    {"name": "discordant_sprt"},
    {"name": "discordant_sprt", "at_cap": "llr", "max_runs": 12, "min_runs": 1},
    {"name": "eprocess", "max_runs": 30},
    {"name": "eprocess", "max_runs": 20, "accept_below": 0.3, "max_discordant": 9},
]


def direct(gate, p0: float, p: float) -> tuple[float, float, float]:
    """``(P(revert), P(accept), E[pairs])`` by the forward recursion over (worse, better)
    at the pair law itself (no reweighting); the verdict of each cell is the gate's rule."""
    pw, pb = p0 * (1 - p), (1 - p0) * p
    pc = 1 - pw - pb
    mass = {(0, 0): 1.0}
    out = [0.0, 0.0, 0.0]
    for k in range(1, gate.max_runs + 1):
        new: dict = {}
        for (w, b), m in mass.items():
            for dw, db, pr in ((0, 0, pc), (1, 0, pw), (0, 1, pb)):
                if pr > 0:
                    new[w + dw, b + db] = new.get((w + dw, b + db), 0.0) + m * pr
        mass = {}
        for (w, b), m in new.items():
            code = int(gate.rule(k, w, b, p0))
            if code == 0:
                mass[w, b] = m
                continue
            out[0 if code == 2 else 1] += m
            out[2] += k * m
    return out[0], out[1], out[2]


@pytest.mark.parametrize("kwargs", GATES)
@pytest.mark.parametrize(("p0", "p"), [(1.0, 0.0), (0.0, 1.0)])
def test_every_pair_discordant(kwargs, p0, p):
    gate = make_gate(**kwargs)
    point = gate.operating_point(p, p0)
    got = (float(point.p_revert), float(point.p_accept), float(point.expected_runs))
    assert np.allclose(got, direct(gate, p0, p), rtol=0, atol=1e-12), got


def test_curve_mixing_a_corner_with_other_rows():
    """A curve with a corner row keeps its other rows as they were, and the corner's value."""
    gate = make_gate(name="discordant_sprt")
    curve = gate.operating_curve(np.array([0.5, 1.0]), drop=1.0)
    assert np.isclose(curve.p_revert[0], direct(gate, 0.5, 0.0)[0], rtol=0, atol=1e-12)
    assert curve.p_revert[1] == pytest.approx(1.0, abs=1e-12)
    assert curve.expected_runs[1] == pytest.approx(5.0, abs=1e-12)
