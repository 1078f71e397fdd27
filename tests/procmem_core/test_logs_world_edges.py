"""The fitted world's lifts where the log says little about their spread: every
procedure with the same lift (the spread's estimate at 0, the boundary) and lifts with no
variance to weigh them by. Checked against the normal-normal likelihood's own answer at
the boundary, computed here."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_core.logs import Table, Text, check_log, estimate_lifts
from procmem_core.logs.world import fit_world, normal_lifts


def _sessions(n: int, rng: np.random.Generator, outcome, **more: np.ndarray):
    """A checked sessions table of ``n`` sessions over 3 procedures, 30 % withheld (drawn
    first from ``rng``), explore rate 0.3; ``outcome``: the column, or a function drawing
    it after the withheld draws."""
    withheld = rng.random(n) < 0.3
    cols = {
        "session_id": Text.encode(np.array([f"s{i}" for i in range(n)], dtype=object)),
        "time": np.arange(n, dtype=float),
        "top_key": Text.encode(np.array([f"k{i % 3}" for i in range(n)], dtype=object)),
        "withheld": withheld,
        "explore_rate": np.full(n, 0.3),
        "outcome": outcome() if callable(outcome) else outcome,
        **more,
    }
    return check_log(Table("sessions", "sessions.csv", n, cols)).sessions


def test_equal_lifts_keep_the_means_standard_error():
    """Equal lifts put the spread's ML estimate at 0, where the Hessian in log sigma is
    singular: the whole covariance was NaN, so world.json gave the lifts' mean with SE
    null (in 179 of 300 logs of 20 procedures with one true lift) and the bootstrap held
    it fixed. At sigma = 0 the mean is the inverse-variance mean and its information
    ``sum 1 / se_k^2`` (the cross term vanishes there): SE ``1 / sqrt(sum 1 / se_k^2)``."""
    se = np.linspace(0.04, 0.11, 12)
    tau = np.full(12, 0.03)
    fit, shrunk = normal_lifts(tau, se)
    assert fit["sd"].value < 1e-4
    assert fit["mean"].value == pytest.approx(0.03, abs=1e-9)
    assert fit["mean"].se == pytest.approx(1 / np.sqrt(np.sum(1 / se**2)), rel=1e-6)
    assert np.isnan(fit["sd"].se)
    assert shrunk == pytest.approx(np.full(12, 0.03), abs=1e-9)


def test_lifts_with_no_variance_fit_no_lifts_model():
    """Every rated session a success: each lift 0 with a pooled SE of 0, so no lift can be
    weighed; the model was fitted to nothing and world.json read mean 0 and sd 0.05 (the
    optimizer's starting values) with SE null. Fewer than three lifts with a positive SE
    fit no lifts model, as fewer than three lifts do."""
    n = 90
    s = _sessions(n, np.random.default_rng(1), np.ones(n))
    c = estimate_lifts(s).columns
    assert np.isfinite(c["lift"]).sum() == 3
    counts = tuple(c[k] for k in ("successes_shown", "rated_shown", "successes_withheld",
                                  "rated_withheld"))  # fmt: skip
    world = fit_world(s, c["lift"], c["se"], np.random.default_rng(0), counts=counts)
    assert "lifts" not in world and "shrunk_lifts" not in world


def test_one_user_fits_no_user_dispersion():
    """Every session from one user: a between-user sd cannot be estimated from one user,
    yet world.json gave user_sd 0.0 +- 0.0 and icc -0.003 +- 4e-19 (a bootstrap over one
    user draws the same user every time), so the prescriptions' bootstrap held them as
    known. The lifts keep the per-session SE there ('dim, one user'); the world now fits
    no users part, as without user_id."""
    n = 120
    rng = np.random.default_rng(2)
    user = Text.encode(np.array(["u1"] * n, dtype=object))
    s = _sessions(n, rng, lambda: (rng.random(n) < 0.5).astype(float), user_id=user)
    c = estimate_lifts(s).columns
    world = fit_world(s, c["lift"], c["se"], np.random.default_rng(0))
    assert "users" not in world
    assert set(c["estimator"]) == {"dim, one user"}


def test_a_user_spread_estimated_at_zero_has_no_standard_error():
    """No user effect, 200 users of 10 sessions: the moment estimate of the users'
    covariance is negative, so user_sd is 0 (its boundary). Its bootstrap SE was the
    spread of draws mostly at 0 too, e.g. 0.0041 where a log with a true sd of 0.05 read
    0 +- 0.0041 (12 SE off); 3 of 40 such logs were more than 4 SE from the truth. At the
    boundary the SE is null (as the lifts' spread at 0), the icc keeps its own."""
    from procmem_core.logs.world import user_dispersion

    rng = np.random.default_rng(3)
    users = rng.integers(0, 200, 2000)
    s = _sessions(2000, rng, lambda: (rng.random(2000) < 0.5).astype(float),
                  user_id=Text(users, np.arange(200).astype(str).astype(object)))  # fmt: skip
    u = user_dispersion(s, np.random.default_rng(0))
    e = s.outcome - np.array([s.outcome[(s.top == k) & (s.withheld == w)].mean()
                              for k, w in zip(s.top, s.withheld, strict=True)])  # fmt: skip
    r = np.bincount(users, e)
    sq, n = np.bincount(users, e * e), np.bincount(users).astype(float)
    cov = (r**2 - sq).sum() / (n * (n - 1)).sum()
    assert cov < 0 and u["user_sd"].value == 0.0
    assert np.isnan(u["user_sd"].se)
    assert u["icc"].value == pytest.approx(cov / np.mean(e * e)) and u["icc"].se > 0
