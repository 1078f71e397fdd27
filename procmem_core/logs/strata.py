"""The lift of a procedure whose logged explore rate changed: stratified by the rate.

Withholding is randomized within each rate, not across them: where the rate moved while
the success rate drifted (a rate lowered from 0.5 to 0.05 halfway as successes rose from
0.3 to 0.7), the pooled withheld arm is mostly the early sessions and shown minus
withheld read +0.229 for a procedure with no effect (its 95 % interval covered 0 in 2.7 %
of 300 logs). Within a rate stratum the two arms are comparable, so the lift is the
post-stratified difference in means over the strata where both arms were rated (a rate
of 0 withholds nothing and drops out):

- ``tau = sum_c w_c (p1_c - p0_c)``, ``w_c`` the stratum's share of those rated sessions;
- SE ``sqrt(sum_c w_c^2 (p1_c q1_c / r1_c + p0_c q0_c / r0_c))``; the interval and
  p-value Newcombe's, of each arm's weighted rate ``sum_c w_c p_a,c`` at its effective
  size ``1 / sum_c (w_c^2 / r_a,c)`` (with one stratum, exactly the unstratified one; a
  Wald interval covered 0.89 in the example above); with ``user_id``, each rated
  session's term ``+-w_c (y - p_a,c) / r_a,c`` summed by user, ``V = G/(G-1) sum_g
  D_g^2`` (Liang and Zeger 1986), the interval scaled as the pooled one is (``scaled``);
- confidence sequence: each stratum's arms' Beta-mixture sequence at level ``1 - (1 -
  level) / C`` (C strata; a union bound), weighted by ``w_c``: every stratum's lift is
  inside its sequence at once, so their weighted sum is inside the weighted sequence.

A procedure logged at one rate keeps the unstratified estimate (``lifts``): the two agree
there.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from procmem_core.ab import BetaMixtureArms, newcombe_estimate, normal_z

STRATIFIED = "dim, stratified by explore_rate"


def strata(k: np.ndarray, eps: np.ndarray, size: int) -> tuple[np.ndarray, ...]:
    """Each matched session's stratum (its key and logged rate, to 12 digits), each
    stratum's key and rate, and each key's number of strata."""
    rate = np.round(eps, 12)
    levels, rank = np.unique(rate, return_inverse=True)
    code = k.astype(np.int64) * levels.size + rank
    cells, cell = np.unique(code, return_inverse=True)
    cell_key, cell_rate = cells // levels.size, levels[cells % levels.size]
    return cell, cell_key, cell_rate, np.bincount(cell_key, minlength=size)


def scaled(tau, low, high, p, design) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An interval's half-widths scaled by ``design`` (clustering's SE ratio times
    ``t(G - 1) / z``) and the p-value of the scaled interval's normal score, ``2 Phi(-z_p /
    design)``: one rule for the pooled and the stratified difference in means."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = stats.norm.isf(p / 2) / design
    p = np.where(np.isfinite(z), 2 * stats.norm.sf(z), p)
    return tau - (tau - low) * design, tau + (high - tau) * design, p


def cluster_scaled(tau, est, se, se_c, clusters, many, level: float) -> tuple:
    """``(se, low, high, p)`` with the SE clustered by user where ``many`` (``se_c`` from
    ``clusters`` users): ``est``'s interval scaled by the design effect ``se_c / se``
    times ``t(G - 1) / z`` (``scaled``); elsewhere ``se`` and ``est`` as they are. One rule
    for the pooled and the stratified difference in means."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t_ratio = stats.t.isf((1 - level) / 2, np.maximum(clusters - 1, 1)) / normal_z(level)
        design = np.where(many, np.where(se > 0, se_c / se, 1.0) * t_ratio, 1.0)
    low, high, p = scaled(tau, est.low, est.high, est.p, design)
    return np.where(many, se_c, se), low, high, p


def stratified_lifts(k, shown, y, rated, eps, user, size: int, level: float) -> dict:
    """Per key logged at more than one rate (``multi``): ``tau``, ``se``, ``low``,
    ``high``, ``p``, ``cs_low``, ``cs_high`` and ``name`` (module docstring; only
    ``multi`` when every key was logged at one rate); NaN for the
    other keys and for a key with no stratum where both arms were rated (comparing arms
    across strata is what the strata are there to avoid)."""
    cell, cell_key, cell_rate, count = strata(k, eps, size)
    multi = count > 1
    if not multi.any():  # every key at one rate: the unstratified estimate is the one
        return {"multi": multi}
    cells = cell_key.size

    def per_cell(mask: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        return np.bincount(cell[mask], None if weights is None else weights[mask], cells)

    def per_key(weights: np.ndarray) -> np.ndarray:
        return np.bincount(cell_key, weights, size)

    yz = np.nan_to_num(y)
    r1, r0 = per_cell(shown & rated), per_cell(~shown & rated)
    s1, s0 = per_cell(shown & rated, yz), per_cell(~shown & rated, yz)
    both = (r1 > 0) & (r0 > 0)
    one1, one0 = np.where(both, r1, 1.0), np.where(both, r0, 1.0)
    p1, p0 = np.where(both, s1 / one1, 0.0), np.where(both, s0 / one0, 0.0)
    total = per_key(np.where(both, r1 + r0, 0.0))
    w = np.where(both, (r1 + r0) / np.where(total > 0, total, 1.0)[cell_key], 0.0)
    ok = multi & (per_key(both.astype(float)) > 0)
    # each arm's weighted rate and its effective size 1 / sum w^2 / r (r itself for one
    # stratum), so Newcombe's interval of the pooled counts is the one-stratum case
    rate1, rate0 = per_key(w * p1), per_key(w * p0)
    with np.errstate(divide="ignore", invalid="ignore"):
        e1, e0 = 1.0 / per_key(w * w / one1), 1.0 / per_key(w * w / one0)
    e1, e0 = np.where(ok, e1, 0.0), np.where(ok, e0, 0.0)
    est = newcombe_estimate(rate1 * e1, e1, rate0 * e0, e0, level)
    var = per_key(w * w * (p1 * (1 - p1) / one1 + p0 * (1 - p0) / one0))
    tau, se = np.where(ok, est.tau, np.nan), np.where(ok, np.sqrt(var), np.nan)
    low, high, p = est.low, est.high, est.p
    name = np.full(size, STRATIFIED, dtype=object)
    if user is not None:
        m = rated & both[cell]
        c = cell[m]
        d = np.where(shown[m], (y[m] - p1[c]) / one1[c], -(y[m] - p0[c]) / one0[c]) * w[c]
        u = user[m]
        u = np.where(u >= 0, u, u.max(initial=0) + 1 + np.arange(u.size))
        groups, g = np.unique(k[m].astype(np.int64) * (u.max(initial=0) + 1) + u,
                              return_inverse=True)  # fmt: skip
        gkey = groups // (u.max(initial=0) + 1)
        clusters = np.bincount(gkey, minlength=size).astype(float)
        v = np.bincount(gkey, np.bincount(g, d, groups.size) ** 2, size)
        many = ok & (clusters >= 2)
        with np.errstate(divide="ignore", invalid="ignore"):
            se_c = np.sqrt(v * clusters / (clusters - 1))
        se, low, high, p = cluster_scaled(tau, est, se, se_c, clusters, many, level)
        name = np.where(many, f"{STRATIFIED}, cluster-robust by user_id",
                        f"{STRATIFIED}, one user").astype(object)  # fmt: skip
    cs_low, cs_high = _weighted_sequences(s1, r1, s0, r0, cell_key, cell_rate, w, both,
                                          per_key(both.astype(float)), size, level)  # fmt: skip
    return {"tau": tau, "se": se, "low": np.where(ok, low, np.nan),
            "high": np.where(ok, high, np.nan), "p": np.where(ok, p, np.nan),
            "cs_low": np.where(ok, cs_low, np.nan), "cs_high": np.where(ok, cs_high, np.nan),
            "name": name, "multi": multi}  # fmt: skip


def _weighted_sequences(s1, r1, s0, r0, cell_key, cell_rate, w, both, used, size: int,
                        level: float) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """``sum_c w_c [L_c, U_c]`` with each stratum's arms' sequence at level ``1 - (1 -
    level) / C`` (C: the key's strata with both arms rated), tuned at the stratum's
    propensity of being shown, ``1 - rate`` (the tuning moves where a sequence is
    narrowest, never its validity)."""
    lo, hi = np.zeros(cell_key.size), np.zeros(cell_key.size)
    if both.any():
        tuning = max(1, round(float(np.mean(r1[both] + r0[both]))))
        arms = BetaMixtureArms(tuning_sessions=tuning)
        c_of = used[cell_key]
        pairs = zip(c_of[both], cell_rate[both], strict=True)
        for c, rate in {(int(a), float(b)) for a, b in pairs}:
            sel = both & (c_of == c) & (cell_rate == rate)
            share = float(np.clip(1.0 - rate, 0.01, 0.99))  # tunes the prior only
            path = arms.bounds(s1[sel], r1[sel], s0[sel], r0[sel], share, tuning,
                               1.0 - (1.0 - level) / c)  # fmt: skip
            lo[sel], hi[sel] = path.low, path.high
    return np.bincount(cell_key, w * lo, size), np.bincount(cell_key, w * hi, size)
