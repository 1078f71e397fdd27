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


@pytest.mark.parametrize(
    "params",
    [
        {"explore_rate": 0.3, "strike_limit": 1, "base_rate": 0.6},
        {"concurrent_share": 0.5, "revise_every": 10, "tasks": 4, "procedures_per_task": 1},
        {"explore_rate": 0.0, "p_low": 0.05, "p_high": 0.2, "strike_limit": 2},
    ],
)
def test_the_session_columns_are_the_records_column_by_column(params):
    """``LoopWorld.columns`` (the tables' and metrics' arrays, built from the session
    tuples) equals what each ``SessionLog`` record says, the regret source included."""
    from simulators.scenarios.loop import LoopScenario
    from simulators.scenarios.loop_records import REGRET_SOURCES

    for w in LoopScenario(sessions=160, replications=2, **params).simulate(3):
        c, logs = w.columns(), w.sessions
        code = {None: -1} | {k: i for i, k in enumerate(w.task_of)}
        assert len(logs) == len(w.rows) == len(c.ok) == 160
        for name in ("ok", "followed", "prior_served", "on_trial", "rated", "rating",
                     "task", "available", "p_true", "p_oracle"):  # fmt: skip
            assert getattr(c, name).tolist() == [getattr(x, name) for x in logs], name
        assert c.withheld.tolist() == [x.withheld is not None for x in logs]
        assert c.off.tolist() == [not x.followed and x.withheld is None for x in logs]
        assert c.key_code.tolist() == [code[x.key] for x in logs]
        assert c.withheld_code.tolist() == [code[x.withheld] for x in logs]
        assert c.shown_code.tolist() == [code[x.shown] for x in logs]
        got = [REGRET_SOURCES[i] for i in c.sources()]
        assert got == [x.source for x in logs]
        assert len(set(got)) >= 3  # the worlds reach several sources
