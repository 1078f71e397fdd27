"""The lifts with a ``covariate`` on logs the schema allows and the other tests do not
write: a covariate left empty on some sessions (or all), and sessions logged at explore
rate 0 (the rate switched on during the log). Each is checked against AIPW computed here
from its formula (``AugmentedIPW``'s docstring), not through ``estimate_lifts``."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.logs import Table, Text, check_log, estimate_lifts


def _log(top, withheld, outcome, covariate, explore_rate) -> Table:
    n = len(top)
    cols = {
        "session_id": Text.encode(np.array([f"s{i}" for i in range(n)], dtype=object)),
        "time": np.arange(n, dtype=float),
        "top_key": Text.encode(np.array(top, dtype=object)),
        "withheld": np.asarray(withheld, dtype=bool),
        "explore_rate": np.broadcast_to(np.asarray(explore_rate, dtype=float), (n,)).copy(),
        "outcome": np.asarray(outcome, dtype=float),
        "covariate": np.asarray(covariate, dtype=float),
    }
    return Table("sessions", "sessions.csv", n, cols)


def _aipw(y, shown, x, e) -> tuple[float, float]:
    """AIPW with a least-squares line per arm and HC1 residuals (``n_a / (n_a - 2)``):
    ``psi = m1 - m0 + k1 A (y - m1) / e - k0 (1 - A) (y - m0) / (1 - e)``."""
    m = {}
    for arm in (True, False):
        slope, intercept = np.polyfit(x[shown == arm], y[shown == arm], 1)
        m[arm] = intercept + slope * x
    k1 = np.sqrt(shown.sum() / (shown.sum() - 2))
    k0 = np.sqrt((~shown).sum() / ((~shown).sum() - 2))
    psi = m[True] - m[False] + k1 * shown * (y - m[True]) / e
    psi -= k0 * ~shown * (y - m[False]) / (1 - e)
    return float(psi.mean()), float(psi.std(ddof=1) / np.sqrt(psi.size))


def _world(rng: np.random.Generator, n: int = 600):
    x = rng.normal(size=n)
    w = rng.random(n) < 0.25
    y = (rng.random(n) < np.clip(0.5 + 0.15 * x + 0.1 * ~w, 0, 1)).astype(float)
    return x, w, y


def test_a_covariate_left_empty_on_some_sessions_is_imputed_by_the_procedures_mean():
    """The schema allows an empty covariate; the lifts stopped with "x='non-finite
    values' is not allowed" (a field the log does not have) after --out was made. A
    session without one now takes the mean covariate of its procedure's compared
    sessions (pre-session, both arms alike, so AIPW stays unbiased)."""
    x, w, y = _world(np.random.default_rng(4))
    x_logged = x.copy()
    x_logged[::7] = np.nan
    lifts = estimate_lifts(check_log(_log(["p"] * x.size, w, y, x_logged, 0.25)).sessions)
    imputed = np.where(np.isnan(x_logged), np.nanmean(x_logged), x_logged)
    tau, se = _aipw(y, ~w, imputed, 0.75)
    assert lifts.columns["estimator"][0] == "aipw"
    assert lifts.columns["lift"][0] == pytest.approx(tau, rel=1e-12)
    assert lifts.columns["se"][0] == pytest.approx(se, rel=1e-12)


def test_an_all_empty_covariate_column_is_no_covariate():
    """A covariate column with no value (a CSV's empty column) gave the same crash; with
    nothing to adjust for, the lifts are the difference in means with Newcombe's interval,
    exactly as without the column."""
    x, w, y = _world(np.random.default_rng(5))
    empty = estimate_lifts(check_log(_log(["p"] * x.size, w, y, np.full(x.size, np.nan),
                                          0.25)).sessions).columns  # fmt: skip
    t = _log(["p"] * x.size, w, y, x, 0.25)
    del t.columns["covariate"]
    plain = estimate_lifts(check_log(t).sessions).columns
    assert empty["estimator"][0] == "dim"
    for c in ("lift", "se", "ci_low", "ci_high", "p_value"):
        assert empty[c][0] == plain[c][0]


def test_sessions_at_explore_rate_zero_are_left_out_of_aipw():
    """The rate switched from 0 to 0.25 after 100 sessions: the lifts stopped with
    "propensity=1.0 is not allowed" (AIPW needs both arms possible in every session). A
    session at rate 0 could not be withheld, so AIPW compares the sessions after the
    switch; the counts still count every session."""
    x, w, y = _world(np.random.default_rng(6))
    eps = np.where(np.arange(x.size) < 100, 0.0, 0.25)
    w = w & (eps > 0)
    lifts = estimate_lifts(check_log(_log(["p"] * x.size, w, y, x, eps)).sessions).columns
    on = eps > 0
    tau, se = _aipw(y[on], ~w[on], x[on], 0.75)
    assert lifts["lift"][0] == pytest.approx(tau, rel=1e-12)
    assert lifts["se"][0] == pytest.approx(se, rel=1e-12)
    assert lifts["n_shown"][0] + lifts["n_withheld"][0] == x.size


def test_a_procedure_too_small_for_aipw_keeps_the_difference_in_means():
    """AIPW fits a line per arm and needs three rated sessions in each; a procedure with
    two rated withheld sessions got lift NaN with estimator 'aipw' (left out of Holm and
    of the world's lifts) where the log has the same estimate it has without a covariate.
    It now keeps the difference in means with Newcombe's interval, and says so."""
    from procmem_core.ab import newcombe_estimate

    x, w, y = _world(np.random.default_rng(7))
    top = np.array(["big"] * x.size, dtype=object)
    top[:40] = "small"
    w[:40] = False
    w[[3, 11]] = True  # two withheld sessions of "small"
    lifts = estimate_lifts(check_log(_log(top, w, y, x, 0.25)).sessions).columns
    small = list(lifts["key"]).index("small")
    s = top == "small"
    ref = newcombe_estimate(
        np.array([y[s & ~w].sum()]), np.array([(s & ~w).sum()]),
        np.array([y[s & w].sum()]), np.array([(s & w).sum()]), 0.95,
    )  # fmt: skip
    assert lifts["estimator"][small] == "dim"
    for c, v in (("lift", ref.tau), ("se", ref.se), ("ci_low", ref.low), ("ci_high", ref.high)):
        assert lifts[c][small] == pytest.approx(v[0], rel=1e-12)
    assert lifts["estimator"][1 - small] == "aipw"


def test_aipw_with_one_user_says_it_is_not_clustered():
    """A covariate and every session from one user: the lift is AIPW with the
    per-session SE (nothing to cluster over), and was labelled 'aipw, cluster-robust by
    user_id'; as for the difference in means, the label now says 'one user'."""
    x, w, y = _world(np.random.default_rng(8))
    t = _log(["p"] * x.size, w, y, x, 0.25)
    t.columns["user_id"] = Text.encode(np.array(["u"] * x.size, dtype=object))
    lifts = estimate_lifts(check_log(t).sessions).columns
    tau, se = _aipw(y, ~w, x, 0.75)
    assert lifts["estimator"][0] == "aipw, one user"
    assert lifts["lift"][0] == pytest.approx(tau, rel=1e-12)
    assert lifts["se"][0] == pytest.approx(se, rel=1e-12)
