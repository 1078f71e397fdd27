"""A paired gate decides nothing before pair ``min_runs``, its ``max_discordant`` cap
included. With ``max_discordant`` below ``min_runs`` the cap used to force a verdict before
``min_runs``: ``DiscordantSPRTGate(max_discordant=2, min_runs=5, at_cap='llr')`` reverted
after 2 worse pairs, its reason saying "fewer than min_runs=5 pairs", and the exact curves
counted those early verdicts (P(revert) 0.2500 and E[pairs] 6.25 at p0 = p = 0.8, design
p0 0.8, max_runs 30, where the rule, reading the cap from pair min_runs on, gives 0.2910
and 6.98)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from procmem_core.gates import RevisionStats, make_gate


def direct(kw: dict, p0: float, p: float) -> tuple[float, float, float]:
    """``(P(revert), P(accept), E[pairs])`` by a forward recursion over (worse, better) at
    the pair law, the discordant SPRT's rule written out here: from pair ``min_runs`` on,
    revert at ``LLR >= ln A``, accept at ``LLR <= ln B``; at ``max_runs`` pairs or
    ``max_discordant`` discordant ones the cap rule (revert when LLR > 0 for "llr")."""
    alpha, beta, d, design = kw["alpha"], kw["beta"], kw["min_drop"], kw["design_p0"]
    p1 = design - d
    theta = design * (1 - p1) / (design * (1 - p1) + (1 - design) * p1)
    ln_a, ln_b = math.log((1 - beta) / alpha), math.log(beta / (1 - alpha))
    pw, pb = p0 * (1 - p), (1 - p0) * p
    mass = {(0, 0): 1.0}
    out = [0.0, 0.0, 0.0]
    for k in range(1, kw["max_runs"] + 1):
        new: dict = {}
        for (w, b), m in mass.items():
            for dw, db, pr in ((0, 0, 1 - pw - pb), (1, 0, pw), (0, 1, pb)):
                new[w + dw, b + db] = new.get((w + dw, b + db), 0.0) + m * pr
        mass = {}
        for (w, b), m in new.items():
            llr = w * math.log(2 * theta) + b * math.log(2 * (1 - theta))
            verdict = None
            if k >= kw["min_runs"]:
                if llr >= ln_a - 1e-9:
                    verdict = 0
                elif llr <= ln_b + 1e-9:
                    verdict = 1
                elif k >= kw["max_runs"] or w + b >= kw["max_discordant"]:
                    verdict = 0 if (kw["at_cap"] == "llr" and llr > 1e-9) else 1
            if verdict is None:
                mass[w, b] = m
            else:
                out[verdict] += m
                out[2] += k * m
    return out[0], out[1], out[2]


KW = {"alpha": 0.05, "beta": 0.2, "min_drop": 0.15, "design_p0": 0.8, "max_runs": 30}


@pytest.mark.parametrize(
    "extra",
    [
        {"max_discordant": 2, "min_runs": 5, "at_cap": "llr"},
        {"max_discordant": 3, "min_runs": 8, "at_cap": "accept"},
        {"max_discordant": 6, "min_runs": 4, "at_cap": "llr"},
    ],
)
@pytest.mark.parametrize(("p0", "p"), [(0.8, 0.8), (0.8, 0.65), (0.5, 0.5), (0.3, 0.15)])
def test_exact_curve_decides_from_min_runs(extra, p0, p):
    kw = {**KW, **extra}
    gate = make_gate(name="discordant_sprt", **kw)
    point = gate.operating_point(p, p0, prior_runs=0)
    got = (float(point.p_revert), float(point.p_accept), float(point.expected_runs))
    assert np.allclose(got, direct(kw, p0, p), rtol=0, atol=1e-12), got


@pytest.mark.parametrize("name", ["discordant_sprt", "eprocess"])
def test_no_verdict_before_min_runs(name):
    gate = make_gate(name=name, max_discordant=2, min_runs=5)
    prior = RevisionStats(runs=22, successes=20, concurrent=(True,) * 4)
    for k in range(1, 5):
        revision = RevisionStats(runs=k, successes=0, outcomes=(False,) * k)
        d = gate.decide(prior, revision)
        assert (d.verdict, d.reason_code) == ("continue", "too_few_runs"), (k, d.reason)
    revision = RevisionStats(runs=5, successes=0, outcomes=(False,) * 5)
    prior = RevisionStats(runs=23, successes=21, concurrent=(True,) * 5)
    assert gate.decide(prior, revision).verdict != "continue"
    rows = np.zeros((1, 6), bool)
    codes = gate.run_codes(rows, concurrent=~rows)
    assert codes[0, :4].tolist() == [0, 0, 0, 0] and codes[0, 4] != 0
