"""The flat engine: the seed's paths, exact threshold handling, one rule at two speeds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procmem_core.errors import ParameterError
from procmem_core.flat import (
    BASE_PROMPT,
    PROCEDURES_HEADING,
    ConfidenceRule,
    Procedure,
    build_system_prompt,
    prompt_order,
    shown_mask,
)


def _run(outcomes, rule=ConfidenceRule()):
    proc = Procedure("t", "when", "do", confidence=rule.initial)
    path = [proc.confidence]
    for o in outcomes:
        proc.record_outcome(o, rule)
        path.append(proc.confidence)
    return proc, path


def test_seed_paths_and_counts():
    proc, path = _run([True, True, False, True, True])
    assert [f"{c:.2f}" for c in path] == ["0.60", "0.68", "0.76", "0.61", "0.69", "0.77"]
    assert (proc.successes, proc.failures) == (4, 1)
    proc, path = _run([False, False])
    assert [f"{c:.2f}" for c in path] == ["0.60", "0.45", "0.30"]
    assert (proc.successes, proc.failures) == (0, 2)


def test_landing_on_threshold_in_decimals_is_shown_on_the_grid_and_not_in_floats():
    outcomes = [True, False, True, False, True, False, True, True]  # 5 up, 3 down
    raw = 0.6
    for o in outcomes:
        raw = min(1.0, raw + 0.08) if o else max(0.0, raw - 0.15)
    assert raw < 0.55  # the seed's code: below the threshold in plain floats
    proc, _ = _run(outcomes, ConfidenceRule(arithmetic="grid"))
    assert proc.confidence == 0.55
    assert proc.title in build_system_prompt([proc])
    assert shown_mask(np.array([proc.confidence]))[0]
    seed, _ = _run(outcomes)  # the default: the seed's float arithmetic
    assert seed.confidence == raw
    assert build_system_prompt([seed]) == build_system_prompt([])
    assert not shown_mask(np.array([seed.confidence]))[0]


def test_clamps_at_floor_and_ceiling():
    rule = ConfidenceRule()
    assert rule.update(0.97, True) == 1.0
    assert rule.update(0.1, False) == 0.0
    arr = rule.update(np.array([0.97, 0.1]), np.array([True, False]))
    assert arr.tolist() == [1.0, 0.0]


def test_break_even_and_drift():
    rule = ConfidenceRule()
    assert rule.break_even == pytest.approx(15 / 23)
    assert rule.drift(rule.break_even) == pytest.approx(0.0, abs=1e-15)
    assert rule.drift(0.9) > 0 > rule.drift(0.6)


rules = st.builds(
    ConfidenceRule,
    initial=st.sampled_from([0.3, 0.5, 0.6, 0.9]),
    reward=st.sampled_from([0.0, 0.02, 0.08, 0.1]),
    penalty=st.sampled_from([0.0, 0.05, 0.15, 0.3]),
    floor=st.sampled_from([0.0, 0.1, 0.2]),  # a configured floor and ceiling bind too
    ceiling=st.sampled_from([0.9, 0.95, 1.0]),
)


@settings(max_examples=60, deadline=None)
@given(
    rule=rules,
    outcomes=st.lists(st.lists(st.booleans(), min_size=12, max_size=12), min_size=1, max_size=6),
)
def test_scalar_and_array_updates_agree(rule, outcomes):
    matrix = np.array(outcomes)  # (procedures, sessions)
    conf = np.full(matrix.shape[0], rule.initial)
    scalars = [rule.initial] * matrix.shape[0]
    for t in range(matrix.shape[1]):
        conf = rule.update(conf, matrix[:, t])
        scalars = [rule.update(c, bool(o)) for c, o in zip(scalars, matrix[:, t], strict=True)]
        assert isinstance(scalars[0], float)
        np.testing.assert_allclose(conf, scalars, rtol=1e-12, atol=1e-15)


grid = st.sampled_from([0.0, 0.3, 0.45, 0.55, 0.6, 0.61, 0.68, 0.7, 0.77, 1.0])


@settings(max_examples=150, deadline=None)
@given(
    confs=st.lists(grid, min_size=0, max_size=12),
    threshold=st.sampled_from([0.0, 0.5, 0.55, 0.7, 1.0]),
    limit=st.integers(0, 8),
)
def test_shown_mask_agrees_with_prompt_builder(confs, threshold, limit):
    procs = [Procedure(f"p{i}", f"t{i}", f"d{i}", confidence=c) for i, c in enumerate(confs)]
    chosen = prompt_order(procs, threshold, limit)
    mask = shown_mask(np.array(confs, dtype=float).reshape(len(confs)), threshold, limit)
    assert {p.title for p in chosen} == {procs[i].title for i in np.flatnonzero(mask)}
    # order: confidence descending, ties in input order
    keys = [(-p.confidence, int(p.title[1:])) for p in chosen]
    assert keys == sorted(keys)
    text = build_system_prompt(procs, threshold, limit)
    if not chosen:
        assert text == BASE_PROMPT
    else:
        assert text.startswith(BASE_PROMPT + "\n\n" + PROCEDURES_HEADING + "\n1. ")
        assert text.count("   Trigger: ") == len(chosen)


def test_shown_mask_batches_over_leading_axes():
    conf = np.array([[0.9, 0.6, 0.7, 0.5], [0.56, 0.56, 0.56, 0.56]])
    mask = shown_mask(conf, 0.55, 2)
    assert mask.tolist() == [[True, False, True, False], [True, True, False, False]]


@pytest.mark.parametrize(
    ("call", "error", "fragment"),
    [
        (lambda: ConfidenceRule(initial=1.2), ParameterError, "initial=1.2"),
        (lambda: ConfidenceRule(reward=-0.1), ParameterError, "reward=-0.1"),
        (lambda: ConfidenceRule(penalty=-1), ParameterError, "penalty=-1"),
        (lambda: ConfidenceRule(reward=1.5), ParameterError, "reward=1.5"),
        (lambda: ConfidenceRule(penalty=1.01), ParameterError, "penalty=1.01"),
        (lambda: ConfidenceRule(floor=0.5, ceiling=0.4, initial=0.45), ParameterError, "floor"),
        (lambda: ConfidenceRule(ceiling=1.5), ParameterError, "ceiling"),
        (lambda: ConfidenceRule(reward="big"), ParameterError, "reward='big'"),
        (lambda: ConfidenceRule(initial=float("nan")), ParameterError, "NaN"),
        (lambda: Procedure("", "t", "d"), ParameterError, "title"),
        (lambda: Procedure("  ", "t", "d"), ParameterError, "title"),
        (lambda: Procedure("a", "t", "d", confidence=1.5), ParameterError, "confidence=1.5"),
        (lambda: Procedure("a", "t", "d", confidence=-0.1), ParameterError, "[0, 1]"),
        (lambda: build_system_prompt([], threshold=1.5), ParameterError, "threshold=1.5"),
        (lambda: build_system_prompt([], limit=-1), ParameterError, "limit=-1"),
        (lambda: build_system_prompt([], limit=2.5), ParameterError, "limit=2.5"),
        (lambda: shown_mask(np.array([0.6]), threshold=-0.1), ParameterError, "threshold"),
        (lambda: shown_mask(np.array([0.6]), limit=True), ParameterError, "limit=True"),
    ],
)
def test_invalid_inputs(call, error, fragment):
    with pytest.raises(error, match=None) as info:
        call()
    assert fragment in str(info.value)


def test_out_of_range_confidence_set_after_construction_is_rejected():
    proc = Procedure("a", "t", "d")
    proc.confidence = 1.7
    with pytest.raises(ParameterError, match=r"procedures\[0\]\.confidence=1\.7"):
        build_system_prompt([proc])
