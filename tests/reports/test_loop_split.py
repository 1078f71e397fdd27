"""The learning part's direction is called with the section's own t interval."""

from __future__ import annotations

from scipy import stats

from reports.sections.loop_split import _direction


def test_direction_uses_a_t_interval_over_the_replications() -> None:
    half = stats.t.ppf(0.975, 3) * 0.04  # 0.127 with 4 replications (normal: 0.078)
    assert _direction(-0.1, 0.04, 4) == "no detectable change"  # inside t, outside normal
    assert _direction(-(half + 1e-9), 0.04, 4) == "a detectable fall"
    assert _direction(half + 1e-9, 0.04, 4) == "a detectable rise"
    assert _direction(-0.1, 0.04, 400) == "a detectable fall"
    assert _direction(-0.1, float("nan"), 4) == "no detectable change"
    assert _direction(-0.1, 0.0, 1) == "no detectable change"  # one replication: no interval


def test_the_fixed_oracle_sentence_reads_the_runs_change_or_says_it_is_not_logged() -> None:
    import pandas as pd

    from reports.sections.loop_split import fixed_sentence

    said = fixed_sentence(
        pd.Series({"regret_fixed_change": -0.2, "regret_fixed_change_se": 0.04}), 16
    )
    assert "-0.2 ± 0.04: a detectable fall (95 % t interval over 16 replications)" in said
    flat = fixed_sentence(
        pd.Series({"regret_fixed_change": 0.01, "regret_fixed_change_se": 0.04}), 16
    )
    assert "no detectable change" in flat
    assert "no fixed-oracle regret is logged" in fixed_sentence(
        pd.Series({"regret_change": 0.1}), 16
    )
