"""The learning part's direction is called with the section's own t interval."""

from __future__ import annotations

from scipy import stats

from reports.sections.loop_split import _direction


def test_direction_uses_a_t_interval_over_the_replications() -> None:
    half = stats.t.ppf(0.975, 3) * 0.04  # 0.127 with 4 replications (normal: 0.078)
    assert _direction(-0.1, 0.04, 4) == "no detectable change"  # inside t, outside normal
    assert _direction(-(half + 1e-9), 0.04, 4) == "falls"
    assert _direction(half + 1e-9, 0.04, 4) == "rises"
    assert _direction(-0.1, 0.04, 400) == "falls"
    assert _direction(-0.1, float("nan"), 4) == "no detectable change"
    assert _direction(-0.1, 0.0, 1) == "no detectable change"  # one replication: no interval
