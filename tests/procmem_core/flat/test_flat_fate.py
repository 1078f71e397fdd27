"""flat_fate is exact: it matches brute-force enumeration of every outcome path."""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import pytest

from procmem_core.errors import ParameterError
from procmem_core.flat import ConfidenceRule, PosteriorRule, flat_fate


def brute_force(p, n, rule, threshold):
    """Enumerate all 2^n outcome sequences; a procedure stops updating once excluded. The
    walk is the seed's clamped step (never ``rule.update``) in exact fractions for a grid
    rule, in Python floats as the seed's code for a float rule, and "shown" is ``c >=
    threshold`` in the same arithmetic."""
    num = F if rule.arithmetic == "grid" else float
    up, down, lo, hi = (
        num(str(getattr(rule, k))) for k in ("reward", "penalty", "floor", "ceiling")
    )
    bar = num(str(threshold))
    p_excl = 0.0
    applied = 0.0
    for seq in itertools.product([True, False], repeat=n):
        w = 1.0
        for o in seq:
            w *= p if o else 1 - p
        c = num(str(rule.initial))
        shown = c >= bar
        used = 0
        for o in seq:
            if not shown:
                break
            used += 1
            c = min(hi, max(lo, c + (up if o else -down)))
            shown = c >= bar
        p_excl += w * (not shown)
        applied += w * used
    return p_excl, applied


@pytest.mark.parametrize("p", [0.0, 0.3, 0.652, 0.8, 1.0])
@pytest.mark.parametrize(
    ("rule", "threshold"),
    [
        (ConfidenceRule(), 0.55),
        (ConfidenceRule(arithmetic="grid"), 0.55),
        (ConfidenceRule(initial=0.6, reward=0.05, penalty=0.05, arithmetic="grid"), 0.5),
        (ConfidenceRule(initial=0.6, reward=0.05, penalty=0.05), 0.5),
        (ConfidenceRule(initial=0.9, reward=0.1, penalty=0.2, arithmetic="grid"), 0.55),
        (ConfidenceRule(initial=0.9, reward=0.1, penalty=0.2), 0.55),
    ],
)
@pytest.mark.parametrize("n", [1, 5, 11])
def test_matches_enumeration(p, rule, threshold, n):
    fate = flat_fate(p, n, rule, threshold)
    p_excl, applied = brute_force(p, n, rule, threshold)
    assert fate.p_excluded == pytest.approx(p_excl, abs=1e-12)
    assert fate.expected_sessions_applied == pytest.approx(applied, abs=1e-12)
    assert fate.excluded_by_session[-1] == pytest.approx(fate.p_excluded)


def test_seed_defaults_known_values():
    assert flat_fate(0.0, 1).p_excluded == 1.0  # one failure: 0.60 -> 0.45
    assert flat_fate(1.0, 100).p_excluded == 0.0
    fate = flat_fate(0.9, 200)
    assert 0 < fate.p_excluded < flat_fate(0.7, 200).p_excluded < 1
    assert fate.break_even == pytest.approx(15 / 23)
    # exclusion probability only grows with the horizon
    assert all(a <= b for a, b in itertools.pairwise(fate.excluded_by_session))


def test_initial_below_threshold_is_never_shown():
    fate = flat_fate(0.9, 10, ConfidenceRule(initial=0.5), 0.55)
    assert fate.p_excluded == 1.0 and fate.expected_sessions_applied == 0.0


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"p": 1.5, "sessions": 3}, "p=1.5"),
        ({"p": 0.5, "sessions": -1}, "sessions=-1"),
        # a horizon below 1 (issue 18's bad input; reshow_fate and the scenarios refuse it)
        ({"p": 0.5, "sessions": 0}, "sessions=0"),
        ({"p": 0.5, "sessions": 3, "threshold": 2}, "threshold=2"),
    ],
)
def test_invalid(kwargs, fragment):
    with pytest.raises(ParameterError) as info:
        flat_fate(**kwargs)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("rule", "threshold"),
    [(ConfidenceRule(), 0.55), (ConfidenceRule(initial=0.5), 0.55), (PosteriorRule(), 0.55),
     (PosteriorRule(), 0.05)],
)  # fmt: skip
def test_shown_by_session_sums_to_the_sessions_applied(rule, threshold):
    """``FlatFate.shown_by_session`` (P(shown in session t + 1)) adds up to
    ``expected_sessions_applied``, and is 0 throughout when the start is below the
    threshold (the confidence scenario's exact figures read it)."""
    baseline = rule.baseline_estimate(0.0, 0.0) if rule.needs_baseline else None
    fate = flat_fate(0.7, 12, rule, threshold, baseline)
    assert fate.shown_by_session.sum() == pytest.approx(fate.expected_sessions_applied)
    assert fate.shown_by_session[0] == (1.0 if fate.expected_sessions_applied > 0 else 0.0)
