"""The flat rule against references that never call it.

Every reference here is written out in the test in ``fractions.Fraction`` arithmetic
(exact): the confidence walk ``c <- min(ceiling, max(floor, c + reward))`` on a good
session and ``c - penalty`` on a bad one (notebook seed, docs/statistics.md "The flat
confidence rule"), the absorbing-threshold fate recursion over the reachable
confidences, and the prompt filter's "at or above the threshold, at most ``limit``,
highest first". The engine's ``update``, ``flat_fate``, ``passes_threshold`` and
``snap`` are only ever on the side under test, so a wrong rule cannot agree with itself.
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procmem_core.flat import (
    ConfidenceRule,
    Procedure,
    build_system_prompt,
    flat_fate,
    shown_mask,
)
from simulators.scenarios.fate import ProcedureFateScenario

SEED = {"initial": "0.6", "reward": "0.08", "penalty": "0.15", "floor": "0", "ceiling": "1"}


def rule_of(spec: dict[str, str]) -> ConfidenceRule:
    """The rule in the decimal-grid reading, the one exact fractions compute (the seed's
    float arithmetic is checked against its own code in ``test_flat_seed_code.py``)."""
    return ConfidenceRule(**{k: float(v) for k, v in spec.items()}, arithmetic="grid")


def exact_walk(spec: dict[str, str], outcomes) -> list[F]:
    """The confidence after each outcome, in exact arithmetic (the seed's clamped step)."""
    c, up, down = F(spec["initial"]), F(spec["reward"]), F(spec["penalty"])
    lo, hi = F(spec["floor"]), F(spec["ceiling"])
    path = []
    for ok in outcomes:
        c = min(hi, max(lo, c + (up if ok else -down)))
        path.append(c)
    return path


def exact_fate(spec: dict[str, str], p: F, sessions: int, threshold: F) -> tuple[F, F]:
    """``(P(excluded within sessions), E[sessions applied])`` by forward recursion over
    the exact reachable confidences: below ``threshold`` a procedure is never shown, so
    never updated again (the threshold absorbs)."""
    up, down = F(spec["reward"]), F(spec["penalty"])
    lo, hi = F(spec["floor"]), F(spec["ceiling"])
    start = F(spec["initial"])
    if start < threshold:
        return F(1), F(0)
    alive: dict[F, F] = {start: F(1)}
    gone, applied = F(0), F(0)
    for _ in range(sessions):
        applied += sum(alive.values())
        nxt: dict[F, F] = {}
        for c, mass in alive.items():
            for step, w in ((up, p), (-down, 1 - p)):
                c2 = min(hi, max(lo, c + step))
                if c2 >= threshold:
                    nxt[c2] = nxt.get(c2, F(0)) + mass * w
                else:
                    gone += mass * w
        alive = nxt
    return gone, applied


# --- the walk, scalar and array paths, with a configured floor and ceiling --------------

FLOOR_CEILING = {**SEED, "floor": "0.2", "ceiling": "0.9"}


def test_seed_walk_matches_the_exact_walk():
    """Both of the notebook's paths, to 1e-12 (any change in reward or penalty shows)."""
    rule = rule_of(SEED)
    for outcomes in ([True, True, False, True, True], [False, False]):
        c = rule.initial
        for ok, ref in zip(outcomes, exact_walk(SEED, outcomes), strict=True):
            c = rule.update(c, ok)
            assert c == pytest.approx(float(ref), abs=1e-12)


def test_a_configured_floor_and_ceiling_bind_on_the_scalar_path():
    rule = rule_of(FLOOR_CEILING)
    assert rule.update(0.85, True) == pytest.approx(0.9, abs=1e-12)  # not 0.93
    assert rule.update(0.9, True) == pytest.approx(0.9, abs=1e-12)
    assert rule.update(0.3, False) == pytest.approx(0.2, abs=1e-12)  # not 0.15
    assert rule.update(0.2, False) == pytest.approx(0.2, abs=1e-12)
    assert rule.update(0.5, True) == pytest.approx(0.58, abs=1e-12)  # inside: a plain step


def test_a_configured_floor_and_ceiling_bind_on_the_array_path():
    rule = rule_of(FLOOR_CEILING)
    conf = np.array([0.85, 0.9, 0.3, 0.2, 0.5])
    ok = np.array([True, True, False, False, True])
    np.testing.assert_allclose(rule.update(conf, ok), [0.9, 0.9, 0.2, 0.2, 0.58], atol=1e-12)


def test_a_configured_floor_and_ceiling_bind_through_record_outcome():
    rule = rule_of(FLOOR_CEILING)
    proc = Procedure("t", "when", "do", confidence=rule.initial)
    outcomes = [True] * 6 + [False] * 5
    for ok, ref in zip(outcomes, exact_walk(FLOOR_CEILING, outcomes), strict=True):
        proc.record_outcome(ok, rule)
        assert proc.confidence == pytest.approx(float(ref), abs=1e-12)
    assert proc.confidence == pytest.approx(0.2, abs=1e-12)
    assert (proc.successes, proc.failures) == (6, 5)


DECIMALS = st.sampled_from(["0", "0.02", "0.05", "0.08", "0.1", "0.15", "0.3"])
BOUNDS = st.sampled_from([("0", "1"), ("0.1", "0.9"), ("0.2", "0.7"), ("0.45", "1"), ("0", "0.8")])


@st.composite
def specs(draw) -> dict[str, str]:
    """Rules over rewards, penalties and a configured floor and ceiling (initial inside)."""
    lo, hi = draw(BOUNDS)
    inside = [x for x in ("0.2", "0.45", "0.5", "0.6", "0.7", "0.8") if F(lo) <= F(x) <= F(hi)]
    return {
        "initial": draw(st.sampled_from(inside)),
        "reward": draw(DECIMALS),
        "penalty": draw(DECIMALS),
        "floor": lo,
        "ceiling": hi,
    }


@settings(max_examples=120, deadline=None)
@given(
    spec=specs(),
    outcomes=st.lists(st.lists(st.booleans(), min_size=15, max_size=15), min_size=1, max_size=5),
)
def test_scalar_and_array_paths_follow_the_exact_walk(spec, outcomes):
    """Scalar, array and exact walks agree to a relative 1e-12 at every step, floors and
    ceilings included (no float ``==`` between the two engine paths)."""
    rule = rule_of(spec)
    matrix = np.array(outcomes)
    refs = [exact_walk(spec, row) for row in matrix.tolist()]
    conf = np.full(matrix.shape[0], rule.initial)
    scalars = [rule.initial] * matrix.shape[0]
    for t in range(matrix.shape[1]):
        conf = rule.update(conf, matrix[:, t])
        scalars = [rule.update(c, bool(o)) for c, o in zip(scalars, matrix[:, t], strict=True)]
        expected = [float(r[t]) for r in refs]
        np.testing.assert_allclose(conf, expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(scalars, expected, rtol=1e-12, atol=1e-12)


# --- the exact fate against an exact recursion of its own --------------------------------

FATE_CASES = [
    (SEED, "0.55"),
    (FLOOR_CEILING, "0.55"),  # the ceiling 0.9 shortens every climb
    ({**SEED, "initial": "0.7", "reward": "0.1", "penalty": "0.25", "floor": "0.5"}, "0.45"),
    ({**SEED, "initial": "0.9", "reward": "0.1", "penalty": "0.2", "ceiling": "0.95"}, "0.55"),
    ({**SEED, "reward": "0.05", "penalty": "0.05"}, "0.5"),
]


@pytest.mark.parametrize("p", ["0", "0.3", "0.652", "0.8", "1"])
@pytest.mark.parametrize(("spec", "threshold"), FATE_CASES)
def test_flat_fate_matches_an_exact_recursion(spec, threshold, p):
    """``flat_fate`` to 1e-12 of an exact Fraction recursion, over 25 sessions."""
    fate = flat_fate(float(p), 25, rule_of(spec), float(threshold))
    gone, applied = exact_fate(spec, F(p), 25, F(threshold))
    assert fate.p_excluded == pytest.approx(float(gone), abs=1e-12)
    assert fate.expected_sessions_applied == pytest.approx(float(applied), abs=1e-12)


def test_a_floor_above_the_threshold_never_excludes():
    spec, threshold = FATE_CASES[2]
    assert flat_fate(0.0, 30, rule_of(spec), float(threshold)).p_excluded == 0.0
    gone, applied = exact_fate(spec, F(0), 30, F(threshold))
    assert (gone, applied) == (0, 30)


def test_landing_exactly_on_the_threshold_counts_as_shown():
    """5 up and 3 down from 0.6 is exactly 0.55: the reference keeps it, so must the engine
    on the grid. With p = 1/2 over 8 sessions the exact exclusion probability is pinned
    here (the seed's floats drop it: ``test_flat_seed_code.py``)."""
    gone, _ = exact_fate(SEED, F(1, 2), 8, F("0.55"))
    assert flat_fate(0.5, 8, rule_of(SEED)).p_excluded == pytest.approx(float(gone), abs=1e-12)
    path = exact_walk(SEED, [True, False, True, False, True, False, True, True])
    assert path[-1] == F("0.55")
    proc = Procedure("on the line", "t", "d", confidence=float(path[-1]))
    assert "on the line" in build_system_prompt([proc])


@pytest.mark.parametrize("p", [0.6, 0.75])
def test_simulated_fate_matches_the_independent_recursion(p):
    """``ProcedureFateScenario`` (the engine's rule, vectorized) against the exact Fraction
    recursion, within 4 SE. With 60,000 replications the SE of an exclusion rate r is
    ``sqrt(r (1 - r) / 60000)`` (0.0020 at r = 0.5), so a 5 % relative error in the rate
    (0.025 at r = 0.5, 0.014 at r = 0.2) is 7-12 SE and fails; for E[sessions applied]
    (SE about 0.04 on a mean of 10-20) a 5 % error is over 10 SE."""
    grid = rule_of(SEED)
    m = ProcedureFateScenario(p=p, sessions=25, replications=60_000, rule=grid).run(19).metrics
    gone, applied = exact_fate(SEED, F(str(p)), 25, F("0.55"))
    assert abs(m["p_excluded"] - float(gone)) <= 4 * m["p_excluded_se"]
    assert 0.05 * float(gone) > 6 * m["p_excluded_se"]  # the claim in the docstring
    se = m["expected_sessions_applied_se"]
    assert abs(m["expected_sessions_applied"] - float(applied)) <= 4 * se
    assert 0.05 * float(applied) > 6 * se


# --- the prompt filter against a hand selection --------------------------------------------


def reference_shown(confs: list[float], threshold: str, limit: int) -> set[int]:
    """At or above the threshold (exactly, via the decimal value), the ``limit`` highest,
    ties by input order."""
    passing = [i for i, c in enumerate(confs) if F(repr(c)) >= F(threshold)]
    ranked = sorted(passing, key=lambda i: (-confs[i], i))
    return set(ranked[:limit])


@settings(max_examples=150, deadline=None)
@given(
    confs=st.lists(st.sampled_from([0.0, 0.3, 0.54, 0.55, 0.56, 0.6, 0.7, 0.9, 1.0]), max_size=10),
    threshold=st.sampled_from(["0.0", "0.55", "0.6", "1.0"]),
    limit=st.integers(1, 8),
)
def test_shown_mask_matches_a_hand_selection(confs, threshold, limit):
    mask = shown_mask(np.array(confs, dtype=float), float(threshold), limit)
    assert set(np.flatnonzero(mask).tolist()) == reference_shown(confs, threshold, limit)


def test_break_even_is_penalty_over_reward_plus_penalty():
    rule = rule_of(FLOOR_CEILING)
    assert rule.break_even == pytest.approx(15 / 23, rel=1e-12)
    assert rule.drift(0.9) == pytest.approx(0.9 * 0.08 - 0.1 * 0.15, rel=1e-12)
    assert math.isclose(rule.drift(15 / 23), 0.0, abs_tol=1e-15)
