"""``simulators.draws``: ``bernoulli_rows`` is ``rng.random((n, t)) < rate`` draw for
draw, and ``scratch`` hands a thread the same array for the same shape and dtype."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from simulators import draws


@pytest.mark.parametrize("shape", [(1, 1), (5, 50), (8192, 50), (3000, 7), (2, 0), (0, 4)])
@pytest.mark.parametrize("block", [draws.BERNOULLI_BLOCK, 64])
def test_bernoulli_rows_draws_what_one_call_draws(shape, block, monkeypatch):
    monkeypatch.setattr(draws, "BERNOULLI_BLOCK", block)
    want_rng, got_rng = np.random.default_rng(9), np.random.default_rng(9)
    want = want_rng.random(shape) < 0.7
    out = np.ones(shape, dtype=bool)
    got = draws.bernoulli_rows(got_rng, 0.7, *shape, out=out)
    assert got is out
    np.testing.assert_array_equal(got, want)
    assert want_rng.random() == got_rng.random()  # the stream goes on in step


def test_scratch_is_kept_per_shape_and_dtype():
    a = draws.scratch((3, 4), bool)
    assert draws.scratch((3, 4), bool) is a
    assert draws.scratch((3, 4), float) is not a and draws.scratch((3, 4), float).dtype == float
    for k in range(draws.SCRATCH_KEPT + 1):  # the oldest goes first
        draws.scratch((k + 10,), bool)
    assert draws.scratch((3, 4), bool) is not a


def test_integers_draw_is_numpys_integers_from_the_same_stream():
    for seed in range(60):
        ours, numpys = np.random.default_rng(seed), np.random.default_rng(seed)
        draw = draws.IntegersDraw(ours)
        for i in range(120):
            n = (1, 2, 3, 5, 6, 7, 40, 3**19, 2**31, 2**31 + 1)[(i * 7 + seed) % 10]
            assert draw(n) == int(numpys.integers(n)), (seed, i, n)
            if i % 3 == 0:  # numpy's own draws in between: the streams stay in step
                assert ours.random() == numpys.random()
                assert int(ours.integers(9)) == int(numpys.integers(9))
    copy = pickle.loads(pickle.dumps((ours, draw)))
    assert copy[1](7) == int(numpys.integers(7)) and copy[0].random() == numpys.random()
