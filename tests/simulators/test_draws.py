"""``simulators.draws``: ``bernoulli_rows`` is ``rng.random((n, t)) < rate`` draw for
draw, and ``scratch`` hands a thread the same array for the same shape and dtype."""

from __future__ import annotations

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
