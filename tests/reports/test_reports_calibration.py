"""The calibration of a sweep's simulated-vs-exact z-scores (reports.calibration): the
variance with its chi-square interval and the tail counts against their Binomial range,
and the agreement sentence that rests on them."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from reports.calibration import MIN_PAIRS, calibration, normal_scale
from reports.summary import agreement_section, agreement_table


def pairs(z: np.ndarray, se: float = 0.01) -> pd.DataFrame:
    return pd.DataFrame({"z": z, "se": np.full(len(z), se)})


def test_the_issue_numbers_166_pairs_expect_7_6_beyond_two():
    z = np.r_[np.full(14, 2.5), np.full(152, 0.5)]
    cal = calibration(pairs(z))
    two, three = cal.tails
    assert cal.pairs == 166 and two.count == 14 and three.count == 0
    assert abs(two.expected - 166 * 2 * stats.norm.sf(2.0)) < 1e-12
    assert round(two.expected, 1) == 7.6
    assert two.low == stats.binom.ppf(0.005, 166, 2 * stats.norm.sf(2.0))
    assert two.high == stats.binom.ppf(0.995, 166, 2 * stats.norm.sf(2.0)) == 15
    assert abs(cal.variance - (14 * 6.25 + 152 * 0.25) / 166) < 1e-12
    lo = 166 * cal.variance / stats.chi2.ppf(0.995, 166)
    assert abs(cal.low - lo) < 1e-12


def test_standard_normal_z_pass_and_inflated_z_fail():
    z = np.random.default_rng(5).standard_normal(400)
    good = calibration(pairs(z))
    assert good.ok and 0.85 < good.variance < 1.15
    assert "the standard errors fit" in good.describe()
    bad = calibration(pairs(1.4 * z))  # SEs 1.4 times too small
    assert not bad.ok and bad.low > 1.0
    assert "the standard errors look too small" in bad.describe()
    wide = calibration(pairs(0.6 * z))
    assert not wide.ok and wide.high < 1.0 and "too large" in wide.describe()


def test_noiseless_matches_are_left_out_and_a_noiseless_miss_counts():
    t = pd.DataFrame({"z": [0.0, 0.0, 1.0, np.inf], "se": [0.0, 0.0, 0.1, 0.0]})
    cal = calibration(t)
    assert cal.pairs == 2 and cal.tails[0].count == 1 and cal.tails[1].count == 1
    assert calibration(pd.DataFrame({"z": [0.0], "se": [0.0]})) is None


def test_the_agreement_sentence_says_when_all_within_4_se_is_not_enough():
    """All 200 within 4 SE, but 30 beyond 2 (9.1 expected): not a plain Yes."""
    z = np.r_[np.full(30, 2.5), np.full(170, 0.3)]
    runs = pd.DataFrame(
        {"scenario": "s", "run_id": [f"r{i}" for i in range(200)], "x": 0.5 + 0.01 * z,
         "x_se": 0.01, "x_exact": 0.5}
    )  # fmt: skip
    sweep = SimpleNamespace(runs=runs, metric_names=("x", "x_se", "x_exact"))
    answer = agreement_section(sweep).said
    assert answer.startswith("Not quite: all 200 simulated figures")
    assert "30 beyond |z| > 2 (expected 9.1" in answer
    assert "the standard errors look too small" in answer


def test_too_few_pairs_do_not_say_the_standard_errors_fit():
    """16 pairs (the confidence_sweep preset's count): the interval is about 0.3 to 2.1,
    too wide to call the SEs fit; from 100 pairs a passing check says so."""
    z = np.random.default_rng(7).standard_normal(400)
    few = calibration(pairs(z[:16]))
    assert few.ok and not few.enough and few.pairs == 16
    assert "16 pairs are too few to tell whether the standard errors fit" in few.describe()
    assert "so the standard errors fit" not in few.describe()
    many = calibration(pairs(z[:MIN_PAIRS]))
    assert many.enough and many.ok and "so the standard errors fit" in many.describe()


def test_a_paired_exact_figure_uses_the_se_of_the_difference():
    """A run logging x_diff_se (its exact figure computed from the same replications, as
    the loop's lift) is judged by that SE; a run without it by x_se."""
    runs = pd.DataFrame(
        {"scenario": "s", "run_id": ["a", "b"], "x": [0.52, 0.52], "x_se": [0.02, 0.02],
         "x_exact": [0.5, 0.5], "x_diff_se": [0.005, np.nan]}
    )  # fmt: skip
    sweep = SimpleNamespace(runs=runs, metric_names=("x", "x_se", "x_exact", "x_diff_se"))
    t = agreement_table(sweep).set_index("run")
    assert t.loc["a", "se"] == 0.005 and abs(t.loc["a", "z"] - 4.0) < 1e-9
    assert t.loc["b", "se"] == 0.02 and abs(t.loc["b", "z"] - 1.0) < 1e-9


def test_a_pair_repeating_another_of_the_run_as_x_or_1_minus_x_is_counted_once():
    """A gate's missed_regression_rate is 1 - revert_rate_alt from the same replications,
    and a figure logged under two names is the same figure: the |z| is the other's, so the
    check counts each once; the same values in another run, or with another SE, are a
    pair of their own."""
    runs = pd.DataFrame(
        {"scenario": "gate", "run_id": ["a", "b"],
         "revert_rate_alt": [0.62, 0.62], "revert_rate_alt_se": [0.01, 0.01],
         "revert_rate_alt_exact": [0.6, 0.6],
         "missed_regression_rate": [0.38, 0.38], "missed_regression_rate_se": [0.01, 0.02],
         "missed_regression_rate_exact": [0.4, 0.4],
         "naive_lift": [0.62, 0.5], "naive_lift_se": [0.01, 0.01], "naive_lift_exact": 0.6}
    )  # fmt: skip
    names = tuple(c for c in runs.columns if c not in ("scenario", "run_id"))
    t = agreement_table(SimpleNamespace(runs=runs, metric_names=names))
    cal = calibration(t)
    assert len(t) == 6 and cal.pairs == 4 and cal.repeats == 2
    assert abs(cal.variance - (4 + 4 + 1 + 100) / 4) < 1e-9
    assert "Over 4 simulated-vs-exact pairs (not counting 2 that repeat another as x or 1 - x)" in (
        cal.describe()
    )
    assert calibration(t[["z", "se"]]).pairs == 6  # without run and values: no way to tell


def test_two_calibration_blocks_with_the_same_count_are_two_pairs():
    """Blocks at one horizon draw from replications of their own: an equal count is a
    coincidence, not a repeat (simulators.calibration_blocks)."""
    t = pd.DataFrame(
        {"run": "r", "metric": ["cal00_p_excluded_s5", "cal01_p_excluded_s5", "x", "y"],
         "simulated": 0.62, "se": 0.005, "exact": 0.61, "z": 2.0}
    )  # fmt: skip
    cal = calibration(t)
    assert cal.pairs == 3 and cal.repeats == 1  # y repeats x; the blocks both count


def test_a_t_score_is_read_on_the_normal_scale():
    """t(0.975, 3) = 3.182446 has the normal 0.975 point 1.959964 as its image; with no
    degrees of freedom stated the z stays as it is, and an infinite one stays infinite."""
    assert normal_scale(3.182446305284263, 3.0) == pytest.approx(1.959963984540054, rel=1e-9)
    assert normal_scale(-3.182446305284263, 3.0) == pytest.approx(-1.959963984540054, rel=1e-9)
    assert normal_scale(2.5, np.nan) == 2.5 and normal_scale(np.inf, 3.0) == np.inf


def test_z_from_an_se_over_four_replications_passes_only_on_the_normal_scale():
    """mean / SE over 4 normal replications is t with 3 df (variance infinite): 4,000 such
    z-scores fail the check as they stand and pass on the normal scale, where mean(z^2)
    is within 4 SE (sqrt(2 / 4000) = 0.022) of 1."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(4000, 4))
    z = x.mean(axis=1) / (x.std(axis=1, ddof=1) / 2.0)
    raw = pd.DataFrame({"z": z, "se": 1.0})
    assert not calibration(raw).ok
    scaled = raw.assign(**{"normal z": [normal_scale(v, 3.0) for v in z]})
    cal = calibration(scaled)
    assert cal.ok and abs(cal.variance - 1.0) < 4 * np.sqrt(2 / 4000)


def test_a_paired_figure_with_its_replications_carries_its_df():
    runs = pd.DataFrame(
        {"scenario": "loop", "run_id": ["a", "b"], "x": [0.52, 0.52], "x_se": [0.02, 0.02],
         "x_exact": [0.5, 0.5], "x_diff_se": [0.005, 0.005], "x_diff_n": [4.0, np.nan]}
    )  # fmt: skip
    names = ("x", "x_se", "x_exact", "x_diff_se", "x_diff_n")
    t = agreement_table(SimpleNamespace(runs=runs, metric_names=names)).set_index("run")
    assert t.loc["a", "df"] == 3.0
    assert t.loc["a", "normal z"] == pytest.approx(normal_scale(4.0, 3.0), rel=1e-12)
    assert 2.0 < t.loc["a", "normal z"] < 2.5  # P(t3 > 4) = 0.014
    assert np.isnan(t.loc["b", "df"]) and t.loc["b", "normal z"] == t.loc["b", "z"]


def test_pairs_without_z_and_se_are_refused_by_name():
    """Were KeyError 'se' / 'z' and, for a list, a TypeError from pandas indexing."""
    from reports.errors import ReportError

    with pytest.raises(ReportError, match=r"pairs has columns \['z'\]: expected 'z' and 'se'"):
        calibration(pd.DataFrame({"z": [1.0]}))
    with pytest.raises(ReportError, match="pairs is list: expected a DataFrame"):
        calibration([1.0, 2.0])
    assert calibration(pd.DataFrame(columns=["z", "se"])) is None  # no pairs: nothing to say


def test_a_small_positive_tail_expectation_never_reads_as_zero():
    """4 pairs: |z| > 3 is expected 4 * 0.0027 = 0.011 times; it read 'expected 0.0'."""
    from reports.calibration import tail

    said = tail(np.array([0.1, -0.5, 1.2, 2.1]), 3.0).describe()
    assert said == "0 beyond |z| > 3 (expected 0.011, 99 % range 0 to 1)"
    assert tail(np.zeros(100), 2.0).describe().startswith("0 beyond |z| > 2 (expected 4.6,")
