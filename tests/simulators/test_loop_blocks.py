"""The loop's calibration blocks (``LoopScenario.calibration_blocks``): each a lift from
replications of its own with its paired exact value, so a search of few trials still gives
the calibration check its pairs (issue 30: ``loop_search`` had 40)."""

from __future__ import annotations

import numpy as np

from reports.calibration import normal_scale
from simulators.calibration_blocks import block_seed
from simulators.scenarios.loop import LoopScenario


def test_blocks_add_paired_lifts_and_change_none_of_the_jobs_numbers():
    plain = LoopScenario(sessions=120, replications=3).run(5).metrics
    with_blocks = LoopScenario(sessions=120, replications=3, calibration_blocks=2).run(5).metrics
    assert {k: v for k, v in with_blocks.items() if not k.startswith("cal")}.keys() == plain.keys()
    for k, v in plain.items():
        assert with_blocks[k] == v or (np.isnan(v) and np.isnan(with_blocks[k])), k
    # block i is the lift of 4 fresh replications over a quarter of the horizon
    block = LoopScenario(sessions=30, replications=4)
    for i in range(2):
        own = block.calibration_run(block_seed(5, i)).metrics
        name = f"cal{i:02d}_lift_s30"
        for suffix in ("", "_se", "_exact", "_diff_se", "_diff_n"):
            assert with_blocks[name + suffix] == own["lift" + suffix], name + suffix
        assert 2 <= with_blocks[name + "_diff_n"] <= 4  # replications with both arms rated


def test_block_z_scores_read_as_t3_are_standard_normal():
    """mean / SE over 4 replications is t with 3 df: on the normal scale the blocks'
    z-scores have mean(z^2) within 4 SE (sqrt(2 / n)) of 1; read raw they need not."""
    block = LoopScenario(sessions=100, replications=4, explore_rate=0.2)
    z = []
    for seed in range(120):
        m = block.calibration_run(seed).metrics
        if m["lift_diff_se"] > 0:
            t = (m["lift"] - m["lift_exact"]) / m["lift_diff_se"]
            z.append(normal_scale(t, m["lift_diff_n"] - 1))
    z = np.array(z)
    assert len(z) >= 110
    assert abs(np.mean(z**2) - 1.0) < 4 * np.sqrt(2 / len(z))
    assert abs(np.mean(z)) < 4 / np.sqrt(len(z))
