"""Every procedure's lift from a checked log: shown minus withheld, one row per procedure
with withheld sessions, on arrays grouped by ``np.bincount`` (no loop over sessions).

Each procedure's comparison is the sessions it top-matched: shown (arm 1) or withheld by
the explore rate (arm 0). The estimators, intervals, tests and adjustments are the ones of
``procmem_core.ab`` (one rule, one place):

- fixed-n: the difference in means with Newcombe's interval (``newcombe_estimate``);
  with ``user_id`` its SE is cluster-robust by user, ``V = G/(G-1) sum_g (r1_g/n1 -
  r0_g/n0)^2`` with ``r_a_g`` the user's residuals in arm ``a`` (Liang and Zeger 1986),
  and the interval Wald on it; with ``covariate``, AIPW (``AugmentedIPW``), its SE
  clustered by user the same way when ``user_id`` is there (``_clustered_aipw``);
- a procedure logged at more than one explore rate: the same, stratified by the rate
  (``strata.stratified_lifts``: withholding is random within a rate, not across rates);
- always valid: the arms' Beta-mixture confidence sequence (``BetaMixtureArms``);
- sample-ratio mismatch: the exact binomial test of the withheld count against the logged
  rate (``srm_p_value``), the exact Poisson-binomial one when the rate changed during the
  log (``srm_p_value_rates``), flagged at
  ``SRM_ALPHA``; a flagged procedure leaves the adjusted family and is never an effect;
- Holm and Benjamini-Hochberg across the procedures (``holm``, ``benjamini_hochberg``).

Sessions without a rating are left out and counted (missing completely at random).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from procmem_core.ab import (
    SRM_ALPHA,
    AugmentedIPW,
    BetaMixtureArms,
    Design,
    benjamini_hochberg,
    holm,
    newcombe_estimate,
    plan_rate,
    srm_flagged,
    srm_p_value,
    srm_p_value_rates,
    wald_p,
)
from procmem_core.errors import check_probability
from procmem_core.logs.schema import Sessions
from procmem_core.logs.strata import cluster_scaled, stratified_lifts

COLUMNS = (
    "key", "n_shown", "n_withheld", "successes_shown", "successes_withheld",
    "rated_shown", "rated_withheld", "missing", "explore_rate",
    "lift", "se", "ci_low", "ci_high", "cs_low", "cs_high",
    "p_value", "p_holm", "p_bh", "srm_p", "srm_flag", "effect", "estimator",
)  # fmt: skip


@dataclass(frozen=True)
class Lifts:
    """``columns``: ``COLUMNS`` -> one array per procedure with withheld sessions;
    ``notes``: how it was estimated (one sentence each); ``plan``: when no procedure has a
    withheld session, the planner's answer for how many it would take."""

    columns: dict[str, np.ndarray]
    notes: list[str]
    plan: dict[str, float] | None = None
    summary: dict[str, float] = field(default_factory=dict)


def _count(k: np.ndarray, size: int, weights: np.ndarray | None = None) -> np.ndarray:
    return np.bincount(k, weights=weights, minlength=size).astype(float)


def srm_by_key(k, withheld, eps, size: int) -> np.ndarray:
    """Each key's mismatch p-value: the exact binomial test where its logged rate was
    constant, else the exact test of the Poisson-binomial count (``srm_p_value_rates``);
    0 where a session logged at rate 0 was withheld (impossible under the logged rates,
    whatever the count), NaN where every session was logged at rate 0 and none withheld."""
    n = _count(k, size)
    w = _count(k, size, withheld.astype(float))
    e1, e2 = _count(k, size, eps), _count(k, size, eps**2)
    mean = np.divide(e1, n, out=np.zeros(size), where=n > 0)
    constant = np.abs(e2 / np.maximum(n, 1) - mean**2) < 1e-12
    mean = np.round(mean, 12)
    p = np.full(size, np.nan)
    for rate in np.unique(mean[constant & (n > 0) & (mean > 0)]):
        sel = constant & (n > 0) & (mean == rate)
        p[sel] = srm_p_value(w[sel], n[sel], float(rate))
    changed = np.flatnonzero((n > 0) & ~constant)
    if changed.size:
        order = np.argsort(k, kind="stable")
        bounds = np.searchsorted(k[order], np.arange(size + 1))
        for key in changed:
            p[key] = srm_p_value_rates(w[key], eps[order[bounds[key] : bounds[key + 1]]])
    impossible = _count(k, size, (withheld & (eps == 0)).astype(float)) > 0
    return np.where(impossible, 0.0, np.where((n > 0) & (e1 == 0), np.nan, p))


def cluster_se(k, shown, y, user, p1, p0, n1, n0, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Cluster-robust SE of ``p1 - p0`` per key, clusters = users (module docstring), and
    each key's number of clusters; a session without ``user_id`` is its own cluster."""
    u = np.where(user >= 0, user, user.max(initial=0) + 1 + np.arange(user.size))
    codes, kg = np.unique(k.astype(np.int64) * (u.max() + 1) + u, return_inverse=True)
    key_of_group = codes // (u.max() + 1)
    r1 = np.where(shown, y - p1[k], 0.0)
    r0 = np.where(~shown, y - p0[k], 0.0)
    g = codes.size
    d = np.bincount(kg, r1, g) / n1[key_of_group] - np.bincount(kg, r0, g) / n0[key_of_group]
    clusters = _count(key_of_group, size)
    v = _count(key_of_group, size, d**2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt(v * clusters / (clusters - 1)), clusters


def _sequences(s1, r1, s0, r0, share: float, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The arms' Beta-mixture sequence at every procedure's last session, all tuned at
    one size (the mean rated sessions of a compared procedure) and share: the tuning only
    moves where the sequence is narrowest, never its validity."""
    both = (r1 > 0) & (r0 > 0)
    low, high = np.full(s1.size, -1.0), np.full(s1.size, 1.0)
    if both.any():
        tuning = max(1, round(float(np.mean(r1[both] + r0[both]))))
        path = BetaMixtureArms(tuning_sessions=tuning).bounds(
            s1[both], r1[both], s0[both], r0[both], share, tuning, level
        )
        low[both], high[both] = path.low, path.high
    return low, high


def _clustered_aipw(psi: np.ndarray, user: np.ndarray, level: float) -> tuple[float, ...]:
    """AIPW's ``tau = mean(psi)`` with the cluster-robust SE ``sqrt(G/(G-1) sum_g
    (sum_(i in g) (psi_i - tau))^2) / n`` (Liang and Zeger 1986) and a t(G - 1) interval
    and p-value; the session-level SE where fewer than two users rated."""
    tau, n = float(psi.mean()), psi.size
    _, g = np.unique(user, return_inverse=True)
    groups = int(g.max(initial=-1)) + 1
    if groups < 2:
        return (np.nan,) * 5
    sums = np.bincount(g, psi - tau, groups)
    se = float(np.sqrt(groups / (groups - 1) * (sums**2).sum()) / n)
    q = stats.t.isf((1 - level) / 2, groups - 1)
    p = 2 * stats.t.sf(abs(tau) / se, groups - 1) if se > 0 else np.nan
    return tau, se, tau - q * se, tau + q * se, p


def _aipw(s: Sessions, k, shown, y, rated, x, keys_idx, level, user=None) -> tuple:
    """Per key: AIPW's lift, SE, interval and p-value (Wald; NaN with fewer than 3 rated
    sessions in an arm), clustered by ``user`` (codes of the matched sessions) where
    given and at least two users rated, and whether it was clustered.

    AIPW weighs by the propensity, so it compares the sessions where both arms were
    possible (a logged explore rate above 0). A session without a covariate (the schema
    allows it empty) takes the mean covariate of its procedure's compared sessions: a
    pre-session number imputed alike in both arms, so the estimate stays unbiased."""
    est = AugmentedIPW()
    out = np.full((5, keys_idx.size), np.nan)
    clustered = np.zeros(keys_idx.size, dtype=bool)
    order = np.argsort(k, kind="stable")
    bounds = np.searchsorted(k[order], np.arange(keys_idx.max(initial=-1) + 2))
    eps = s.explore_rate[s.top >= 0]
    for j, key in enumerate(keys_idx):
        rows = order[bounds[key] : bounds[key + 1]]
        rows = rows[eps[rows] > 0]
        sh, m = shown[rows], rated[rows]
        if (sh & m).sum() < 3 or (~sh & m).sum() < 3:
            continue
        e = 1.0 - eps[rows]
        xr = x[rows]
        if np.isnan(xr).any():
            xr = np.where(np.isnan(xr), np.nanmean(xr) if np.isfinite(xr).any() else 0.0, xr)
        r = est.estimate(np.nan_to_num(y[rows]), sh, xr, m, e, level)
        out[:, j] = r.tau[0], r.se[0], r.low[0], r.high[0], wald_p(r.tau, r.se)[0]
        if user is not None:
            psi = est.influence(np.nan_to_num(y[rows]), sh, xr, m, e)[0][m]
            by_user = _clustered_aipw(psi, user[rows][m], level)
            if np.isfinite(by_user[1]):
                out[:, j], clustered[j] = by_user, True
    return (*out, clustered)


def estimate_lifts(
    s: Sessions, level: float = 0.95, srm_alpha: float = SRM_ALPHA, target_lift: float = 0.1
) -> Lifts:
    """The lifts table of a log (module docstring)."""
    check_probability("confidence_level", level, open_low=True, open_high=True)
    sel = s.top >= 0
    k, w, y = s.top[sel], s.withheld[sel], s.outcome[sel]
    eps, size = s.explore_rate[sel], s.keys.size
    rated = ~np.isnan(y)
    shown = ~w
    n1, n0 = _count(k[shown], size), _count(k[w], size)
    r1, r0 = _count(k[shown & rated], size), _count(k[w & rated], size)
    yz = np.nan_to_num(y)
    s1 = _count(k[shown & rated], size, yz[shown & rated])
    s0 = _count(k[w & rated], size, yz[w & rated])
    srm = srm_by_key(k, w, eps, size)
    est = newcombe_estimate(s1, r1, s0, r0, level)
    tau, se, low, high, p = est.tau, est.se, est.low, est.high, est.p
    notes = [
        "Missing outcomes (no rating) are taken as missing completely at random: "
        f"{int((~rated).sum())} of {int(sel.sum())} matched sessions, left out and counted."
    ]
    name = np.full(size, "dim", dtype=object)
    user = s.user
    if user is not None:
        se, low, high, p, name = _clustered_dim(k, shown, y, rated, user.codes[sel], est,
                                                (s1, r1, s0, r0), level)  # fmt: skip
        notes.append(
            "user_id present: standard errors clustered by user; Newcombe's interval "
            "scaled by the ratio of the clustered to the per-session SE and by "
            "t(G - 1) / z for G users (a procedure rated by one user only keeps the "
            "per-session SE: estimator 'dim, one user')."
        )
    else:
        notes.append("Difference in means with Newcombe's hybrid score interval.")
    strat = stratified_lifts(k, shown, y, rated, eps, None if user is None else user.codes[sel],
                             size, level)  # fmt: skip
    multi = strat["multi"]
    if multi.any():  # withheld at random within each logged rate, not across rates
        tau, se, low, high, p = (np.where(multi, strat[a], b) for a, b in
                                 zip(("tau", "se", "low", "high", "p"), (tau, se, low, high, p),
                                     strict=True))  # fmt: skip
        name = np.where(multi, strat["name"], name)
        notes.append(
            f"{int(multi[n0 > 0].sum())} procedures were logged at more than one explore "
            "rate: their lift is stratified by the rate (withholding is random within a "
            "rate, not across rates), over the rates where both arms were rated "
            "('dim, stratified by explore_rate')."
        )
    if s.covariate is not None and np.isfinite(s.covariate[sel]).any():  # empty: none
        users = None if user is None else user.codes[sel]
        *fit, clustered = _aipw(s, k, shown, y, rated, s.covariate[sel], np.arange(size),
                                level, users)  # fmt: skip
        done = np.isfinite(fit[0])
        tau, se, low, high, p = (np.where(done, a, b) for a, b in
                                 zip(fit, (tau, se, low, high, p), strict=True))  # fmt: skip
        label = np.where(clustered, "aipw, cluster-robust by user_id", "aipw, one user")
        name = np.where(done, label if users is not None else "aipw", name)
        notes.append(
            "Covariate present: AIPW with a per-arm line in the covariate (Wald)"
            + ("" if users is None else "; its SE clustered by user_id, t(G - 1) interval")
            + "; a procedure with fewer than 3 rated sessions in an arm keeps the "
            "difference in means."
        )
    # a lift is a difference of two rates: an interval scaled for clustering (t(G - 1) / z
    # at few users) or a Wald one can overshoot [-1, 1], which holds every lift
    low, high = np.maximum(low, -1.0), np.minimum(high, 1.0)
    share = 1.0 - float(np.clip(np.mean(eps[w | shown]) if eps.size else 0.5, 0.01, 0.99))
    cs_low, cs_high = _sequences(s1, r1, s0, r0, share, level)
    if multi.any():
        cs_low = np.where(multi, strat["cs_low"], cs_low)
        cs_high = np.where(multi, strat["cs_high"], cs_high)
    rate = np.divide(_count(k, size, eps), n1 + n0, out=np.zeros(size), where=n1 + n0 > 0)
    rate = np.round(rate, 12)
    flag = srm_flagged(srm, srm_alpha)
    family = np.where(flag | ~np.isfinite(p), np.nan, p)
    p_holm, p_bh = holm(family), benjamini_hochberg(family)
    effect = np.where(np.isnan(p_holm), False, p_holm < 1 - level) & ~flag
    cols = dict(
        key=s.keys, n_shown=n1, n_withheld=n0, successes_shown=s1, successes_withheld=s0,
        rated_shown=r1, rated_withheld=r0, missing=(n1 + n0) - (r1 + r0),
        explore_rate=rate, lift=tau, se=se, ci_low=low, ci_high=high,
        cs_low=cs_low, cs_high=cs_high, p_value=p, p_holm=p_holm, p_bh=p_bh,
        srm_p=srm, srm_flag=flag, effect=effect,
        estimator=np.asarray(name, dtype=object),
    )  # fmt: skip
    keep = np.flatnonzero(n0 > 0)
    keep = keep[np.argsort(s.keys[keep].astype(str), kind="stable")]  # rows by key
    cols = {c: np.asarray(cols[c])[keep] for c in COLUMNS}
    summary = {
        "sessions": float(s.n), "matched": float(sel.sum()), "procedures": float(size),
        "procedures_with_withheld": float(keep.size), "missing_outcomes": float((~rated).sum()),
        "srm_flagged": float(cols["srm_flag"].sum()), "effects": float(cols["effect"].sum()),
    }  # fmt: skip
    plan = None if keep.size else withheld_needed(s, target_lift, level)
    return Lifts(cols, notes, plan, summary)


def _clustered_dim(k, shown, y, rated, user, est, counts, level: float) -> tuple:
    """The difference in means with its SE clustered by ``user`` (``cluster_se``), Newcombe's
    interval scaled by the design effect and ``t(G - 1) / z``, its p-value, and each key's
    estimator; a key rated by one user keeps the per-session SE ('dim, one user')."""
    s1, r1, s0, r0 = counts
    tau, se, m, size = est.tau, est.se, rated, s1.size
    with np.errstate(divide="ignore", invalid="ignore"):
        p1, p0 = s1 / r1, s0 / r0
        se_c, g = cluster_se(k[m], shown[m], y[m], user[m], p1, p0, r1, r0, size)
    # one user: nothing to cluster over
    se, low, high, p = cluster_scaled(tau, est, se, se_c, g, g >= 2, level)
    name = np.where(g >= 2, "dim, cluster-robust by user_id", "dim, one user").astype(object)
    return se, low, high, p, name


def withheld_needed(s: Sessions, target_lift: float, level: float, power: float = 0.8) -> dict:
    """The planner's sessions (and withheld among them) to detect ``target_lift`` on a
    procedure at the log's success rate and explore rate (0.1 when the log's is 0), as
    logged sessions: the planner's rated sessions over the share of sessions rated.

    The success rate and the rated share are those of the sessions that matched a
    procedure (all sessions when none did): the unmatched ones never enter a lift."""
    matched = s.top >= 0
    pool = matched if matched.any() else np.ones(s.n, dtype=bool)
    rated = pool & ~np.isnan(s.outcome)
    y = s.outcome[rated]
    share = float(rated.sum() / pool.sum()) if pool.any() and rated.any() else 1.0
    base = float(np.clip(y.mean() if y.size else 0.5, 0.05, 0.95))
    lift = sized_lift(base, target_lift)
    eps = float(np.mean(s.explore_rate)) if s.n else 0.0
    eps = eps if 0 < eps < 1 else 0.1
    design = Design(lift=lift, base=base, power=power, alpha=1 - level)
    r = plan_rate(design, round(eps, 6))
    return {
        "target_lift": lift, "base": base, "explore_rate": r.explore_rate, "power": power,
        "rated_share": share, "sessions": float(np.ceil(r.sessions / share)),
        "withheld": float(r.withheld / share),
    }  # fmt: skip


def sized_lift(base: float, target_lift: float) -> float:
    """The lift the planner sizes for at success rate ``base``: ``target_lift`` where
    ``base + target_lift`` is a rate, else its opposite (a lift of that size in the
    direction the rate allows; one of the two is a rate whenever ``|target_lift| <=
    0.5``, which ``experiments.analyze`` requires)."""
    return target_lift if 0 <= base + target_lift <= 1 else -target_lift
