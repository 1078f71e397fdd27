"""The loop world's own draws: the same numbers, from the same stream, as numpy's calls."""

from __future__ import annotations

import bisect

import numpy as np
import pytest

from simulators.scenarios.loop_world import _choice_cdf, chain_success


@pytest.mark.parametrize(
    "shares",
    [(0.4, 0.3, 0.3), (0.6, 0.2, 0.2), (0.1, 0.0, 0.9), (1 / 3, 1 / 3, 1 / 3), (0.0, 1.0, 0.0)],
)
def test_the_revision_kind_is_numpys_choice(shares):
    cdf = _choice_cdf(shares)
    for seed in range(40):
        ours, numpys = np.random.default_rng(seed), np.random.default_rng(seed)
        got = [bisect.bisect_right(cdf, ours.random()) for _ in range(50)]
        want = [int(numpys.choice(3, p=shares)) for _ in range(50)]
        assert got == want
        assert ours.random() == numpys.random()  # the streams stay in step


def test_a_chains_success_is_numpys_product_bit_for_bit():
    rng = np.random.default_rng(4)
    for steps in range(1, 65):
        for _ in range(200):
            q = rng.uniform(0.2, 1.0, steps).tolist()
            assert chain_success(q) == float(np.prod(q)), (steps, q)
    assert chain_success([]) == float(np.prod([])) == 1.0
    assert chain_success([0.9, 0.0, 0.5]) == 0.0
