"""A world fitted to a checked log, by empirical Bayes, each parameter with its SE, and
checked by simulating logs from it (posterior-predictive checks).

- Procedures' success rates when shown: ``s_k ~ BetaBinomial(r_k, m kappa, (1 - m)
  kappa)`` over the procedures (Skellam 1948), ``(m, kappa)`` by maximum marginal
  likelihood on ``(logit m, log kappa)``; SEs from the inverse observed information
  (central differences), carried to ``m`` and ``kappa`` by the delta method.
- Lifts: the normal-normal model ``tau_k ~ N(mu, sigma^2 + se_k^2)`` (random-effects
  meta-analysis, DerSimonian and Laird 1986, here by maximum likelihood), shrunk
  estimates ``mu + B_k (tau_k - mu)``, ``B_k = sigma^2 / (sigma^2 + se_k^2)`` (Efron and
  Morris 1975), ``se_k`` at the procedure's pooled rate (``pooled_se``: the per-arm
  Wald SE moves with the estimate and biases ``mu``). Normal because a lift is a
  difference of two rates, symmetric around its mean at the sizes logged, and each
  estimate is already normal given its SE; the conjugacy gives the shrinkage in closed
  form.
- Users (with ``user_id``): the between-user covariance of outcomes ``sigma_u^2`` by the
  moment estimator ``sum_g (R_g^2 - S_g) / sum_g n_g (n_g - 1)`` on residuals from each
  procedure-and-arm mean (``R_g``: user ``g``'s residual sum, ``S_g``: its sum of squares),
  ``user_sd = sqrt(sigma_u^2)``, ``icc = sigma_u^2 / mean(e^2)``; SEs by a bootstrap over
  users (``rng``; ``user_sd``'s null where its estimate is 0, the boundary);
  ``cluster_size``, the users' sessions per procedure and arm
  ``sum n_gc^2 / sum n_gc`` (no SE: observed, not fitted), what a design effect
  ``1 + (cluster_size - 1) icc`` needs.
- Ratings: the missing share (binomial SE) and the mean delay ``rated_at - time`` (SE
  ``sd / sqrt(n)``), in the log's time unit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

from procmem_core.logs.schema import LogError, Sessions

BOOTSTRAP = 200
LOG_KAPPA_MAX = float(np.log(1e8))


def _hessian(f, x: np.ndarray, h: float = 1e-4) -> np.ndarray:
    """Central-difference Hessian of ``f`` at ``x``."""
    n = x.size
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            e_i, e_j = np.eye(n)[i] * h, np.eye(n)[j] * h
            out[i, j] = (f(x + e_i + e_j) - f(x + e_i - e_j) - f(x - e_i + e_j)
                         + f(x - e_i - e_j)) / (4 * h * h)  # fmt: skip
    return out


def _fit(nll, x0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ML estimate and its covariance (inverse observed information; NaN where the
    information is not positive definite: the log does not pin the parameters down)."""
    res = optimize.minimize(nll, x0, method="Nelder-Mead",
                            options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 4000})  # fmt: skip
    h = _hessian(nll, res.x)
    if not np.all(np.isfinite(h)) or np.linalg.eigvalsh((h + h.T) / 2).min() <= 0:
        return res.x, np.full((x0.size, x0.size), np.nan)
    return res.x, np.linalg.inv(h)


@dataclass(frozen=True)
class Param:
    value: float
    se: float

    def as_dict(self) -> dict[str, float]:
        return {"value": float(self.value), "se": float(self.se)}


def withheld_rate(world: dict) -> Param:
    """The success rate without the procedure, the base a flat rule's lifts and the fitted
    population's ``base_rate`` are defined over (``RuleTargets``): the shown rates' mean less
    the lifts' mean, ``m - mu`` (``m`` alone without fitted lifts: no effect), clipped to
    [0.01, 0.99]. SE ``sqrt(se_m^2 + se_mu^2)``: conservative, as ``m`` and ``mu`` share the
    shown arm's noise (their covariance is positive); NaN where either SE is unknown."""
    m = world["rates"]["mean"]
    lifts = world.get("lifts")
    mu = lifts["mean"] if lifts else Param(0.0, 0.0)
    value = float(np.clip(m.value - mu.value, 0.01, 0.99))
    return Param(value, float(np.hypot(m.se, mu.se)))


def beta_binomial(successes: np.ndarray, trials: np.ndarray) -> dict[str, Param]:
    """``m``, ``kappa``, ``a = m kappa``, ``b = (1 - m) kappa`` of the procedures' rates."""
    s, n = np.asarray(successes, float), np.asarray(trials, float)
    keep = n > 0
    s, n = s[keep], n[keep]
    const = special.gammaln(n + 1) - special.gammaln(s + 1) - special.gammaln(n - s + 1)

    def nll(x: np.ndarray) -> float:
        # kappa capped at 1e8 (LOG_KAPPA_MAX): beyond it betaln's difference is rounding noise (at
        # kappa = e^38 a log-likelihood of +1032, a probability above 1, which the
        # optimizer then ran to); at the cap the model is a binomial for any trials < 1e6
        m, k = special.expit(x[0]), np.exp(min(x[1], LOG_KAPPA_MAX))
        a, b = m * k, (1 - m) * k
        ll = const + special.betaln(s + a, n - s + b) - special.betaln(a, b)
        return -float(ll.sum())

    p = s.sum() / n.sum()
    x, cov = _fit(nll, np.array([special.logit(np.clip(p, 0.01, 0.99)), np.log(20.0)]))
    extra = {}
    x = x.copy()
    x[1] = min(x[1], LOG_KAPPA_MAX)
    if np.exp(x[1]) > 100 * n.max(initial=0):
        # no over-dispersion: the variance factor 1 + (r - 1) / (kappa + 1) is within 1 %
        # of the binomial's at every procedure's trials, so the likelihood is flat (and
        # numerically noisy) in kappa, its ML value arbitrary, its Hessian SE meaningless;
        # the one-sided 95 % profile lower bound is what the log does say; the mean's SE
        # is the binomial limit sqrt(m (1 - m) / sum r) (here on logit m)
        m0 = special.expit(x[0])
        cov = np.full((2, 2), np.nan)
        cov[0, 0] = 1.0 / (m0 * (1 - m0) * n.sum())
        extra["concentration_low"] = Param(_profile_low(nll, x), float("nan"))
    m, k = special.expit(x[0]), np.exp(x[1])
    se_m, se_k = m * (1 - m) * np.sqrt(cov[0, 0]), k * np.sqrt(cov[1, 1])
    # a = m k, b = (1 - m) k: gradients in (logit m, log k)
    ga = np.array([m * (1 - m) * k, m * k])
    gb = np.array([-m * (1 - m) * k, (1 - m) * k])
    return {
        "mean": Param(m, se_m), "concentration": Param(k, se_k),
        "a": Param(m * k, float(np.sqrt(ga @ cov @ ga))),
        "b": Param((1 - m) * k, float(np.sqrt(gb @ cov @ gb))), **extra,
    }  # fmt: skip


PROFILE_DROP = 0.5 * 2.705543  # chi2_1 at 0.90 / 2: a one-sided 95 % profile bound


def _profile_low(nll, x: np.ndarray) -> float:
    """The smallest kappa whose profile likelihood (the mean re-fitted) is within
    ``PROFILE_DROP`` of the maximum: a one-sided 95 % lower bound (NaN below 0.01)."""
    best = nll(x)

    def drop(log_k: float) -> float:
        fit = optimize.minimize_scalar(lambda a: nll(np.array([a, log_k])),
                                       bounds=(x[0] - 8, x[0] + 8), method="bounded")  # fmt: skip
        return fit.fun - best - PROFILE_DROP

    lo, hi = np.log(0.01), float(x[1])
    if drop(lo) < 0 or drop(hi) >= 0:  # below 0.01, or no maximum at hi to drop from
        return float("nan")
    return float(np.exp(optimize.brentq(drop, lo, hi, xtol=1e-6)))


def pooled_se(se: np.ndarray, counts: tuple[np.ndarray, ...]) -> np.ndarray:
    """Each lift's SE with its binomial part at the procedure's pooled rate
    ``p = (s1 + s0) / (r1 + r0)``: ``sqrt(p (1 - p) (1/r1 + 1/r0))``, times the design
    effect the given SE carries over the per-arm Wald SE (clustering by user).

    The per-arm Wald SE ``sqrt(p1 q1 / r1 + p0 q0 / r0)`` moves with the estimate (a
    withheld arm with 0 of 13 has no variance, so its large ``p1 - 0`` gets a small SE
    and a large weight): the random-effects mean is then biased wherever rates are near
    0 or 1 and arms small (+0.027 at a true 0, base rates Beta(1.5, 3.5), 13 withheld per
    procedure). The pooled rate does not depend on the difference's sign."""
    s1, r1, s0, r0 = (np.asarray(c, dtype=float) for c in counts)
    with np.errstate(divide="ignore", invalid="ignore"):
        p1, p0, pool = s1 / r1, s0 / r0, (s1 + s0) / (r1 + r0)
        wald = np.sqrt(p1 * (1 - p1) / r1 + p0 * (1 - p0) / r0)
        design = np.where(wald > 0, np.asarray(se, dtype=float) / wald, 1.0)
        return np.sqrt(pool * (1 - pool) * (1 / r1 + 1 / r0)) * design


def normal_lifts(tau: np.ndarray, se: np.ndarray) -> tuple[dict[str, Param], np.ndarray]:
    """``mu``, ``sigma`` of the lifts and each procedure's shrunk lift."""
    ok = weighable(tau, se)
    t, v = tau[ok], se[ok] ** 2

    def nll(x: np.ndarray) -> float:
        total = np.exp(2 * x[1]) + v
        return float(0.5 * np.sum(np.log(total) + (t - x[0]) ** 2 / total))

    sd0 = np.sqrt(max(np.var(t) - np.mean(v), 1e-4)) if t.size > 1 else 0.05
    x, cov = _fit(nll, np.array([float(np.mean(t)) if t.size else 0.0, np.log(sd0)]))
    mu, sigma = x[0], np.exp(x[1])
    se_mu = np.sqrt(cov[0, 0])
    if not np.isfinite(se_mu):
        # sigma at its boundary (equal lifts): the Hessian in log sigma is singular, but
        # the cross term (t - mu) sigma^2 / total^2 vanishes there and the mean's
        # information is its own, sum 1 / (sigma^2 + se_k^2)
        se_mu = 1.0 / np.sqrt(np.sum(1.0 / (sigma**2 + v)))
    shrink = np.full(tau.shape, np.nan)
    b = sigma**2 / (sigma**2 + se[ok] ** 2)
    shrink[ok] = mu + b * (t - mu)
    return {"mean": Param(mu, se_mu),
            "sd": Param(sigma, sigma * np.sqrt(cov[1, 1]))}, shrink  # fmt: skip


def weighable(lift: np.ndarray, se: np.ndarray) -> np.ndarray:
    """The lifts the normal-normal model can weigh: finite, with a positive SE."""
    return np.isfinite(lift) & np.isfinite(se) & (se > 0)


def user_dispersion(s: Sessions, rng: np.random.Generator) -> dict[str, Param] | None:
    """``user_sd`` and ``icc`` of the outcomes across users (module docstring); None
    without ``user_id`` or with fewer than two users rated."""
    if s.user is None:
        return None
    use = (s.top >= 0) & ~np.isnan(s.outcome) & (s.user.codes >= 0)
    cell = s.top[use] * 2 + s.withheld[use]
    y = s.outcome[use]
    means = np.bincount(cell, y) / np.maximum(np.bincount(cell), 1)
    e = y - means[cell]
    _, g = np.unique(s.user.codes[use], return_inverse=True)
    if g.max(initial=-1) < 1:  # one user (or none rated): no spread across users to fit
        return None
    r, sq, n = np.bincount(g, e), np.bincount(g, e * e), np.bincount(g).astype(float)
    a, b = r**2 - sq, n * (n - 1)

    def stats(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cov = (w @ a) / (w @ b)
        return np.sqrt(np.maximum(cov, 0.0)), cov / ((w @ sq) / (w @ n))

    sd, icc = stats(np.ones((1, g.max(initial=-1) + 1)))
    boot = rng.multinomial(n.size, np.full(n.size, 1.0 / n.size), size=BOOTSTRAP).astype(float)
    bsd, bicc = stats(boot)
    _, per_cell = np.unique(cell.astype(np.int64) * n.size + g, return_counts=True)
    size = float((per_cell.astype(float) ** 2).sum() / max(per_cell.sum(), 1))
    # a covariance estimated at or below 0 puts user_sd at its boundary, where the
    # bootstrap's draws pile up at 0 too: their spread is no SE (as the lifts' sd at 0)
    sd_se = np.std(bsd, ddof=1) if sd[0] > 0 else float("nan")
    return {"user_sd": Param(sd[0], sd_se),
            "icc": Param(icc[0], np.std(bicc, ddof=1)),
            "cluster_size": Param(size, float("nan"))}  # fmt: skip


def ratings(s: Sessions) -> dict[str, Param]:
    """The missing-rating share and the mean delay (with ``rated_at``)."""
    sel = s.top >= 0
    miss = np.isnan(s.outcome[sel])
    r = float(miss.mean()) if miss.size else float("nan")
    out = {"missing_rate": Param(r, np.sqrt(r * (1 - r) / max(miss.size, 1)))}
    rated_at = s.optional.get("rated_at")
    if rated_at is not None:
        d = (rated_at - s.time)[sel & ~np.isnan(s.outcome) & np.isfinite(rated_at)]
        if d.size > 1:
            out["delay_mean"] = Param(float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size)))
    return out


def arm_counts(s: Sessions) -> dict[str, np.ndarray]:
    """Per procedure: sessions, withheld, mean logged rate, rated and successes by arm."""
    sel = s.top >= 0
    k, w, y = s.top[sel], s.withheld[sel], s.outcome[sel]
    rated, size = ~np.isnan(y), s.keys.size

    def count(mask: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        return np.bincount(k[mask], None if weights is None else weights[mask], size)

    n = count(np.ones(k.size, bool)).astype(float)
    return {
        "n": n, "withheld": count(w).astype(float),
        "eps": np.divide(count(np.ones(k.size, bool), s.explore_rate[sel]), n,
                         out=np.zeros(size), where=n > 0),
        "r1": count(~w & rated).astype(float), "s1": count(~w & rated, np.nan_to_num(y)),
        "r0": count(w & rated).astype(float), "s0": count(w & rated, np.nan_to_num(y)),
    }  # fmt: skip


def check_statistics(c: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The checked statistics of arm counts (arrays: one per simulated log): withheld
    share, success by arm, and the variance of the shown success rate across procedures."""
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(c["r1"] > 0, c["s1"] / c["r1"], np.nan)
        return {
            "withheld_share": c["withheld"].sum(-1) / c["n"].sum(-1),
            "success_shown": c["s1"].sum(-1) / c["r1"].sum(-1),
            "success_withheld": c["s0"].sum(-1) / c["r0"].sum(-1),
            "dispersion_shown": np.nanvar(rate, axis=-1),
        }


def simulate_counts(world: dict, c: dict[str, np.ndarray], rng: np.random.Generator,
                    replications: int) -> dict[str, np.ndarray]:  # fmt: skip
    """Arm counts of ``replications`` logs drawn from a fitted world with the observed
    sessions and logged rates per procedure (new procedures' rates and lifts each time)."""
    shape = (replications, c["n"].size)
    p1 = rng.beta(world["rates"]["a"].value, world["rates"]["b"].value, size=shape)
    lift = world.get("lifts")
    d = rng.normal(lift["mean"].value, lift["sd"].value, shape) if lift else np.zeros(shape)
    p0 = np.clip(p1 - d, 0.0, 1.0)
    keep = 1.0 - world["ratings"]["missing_rate"].value
    w = rng.binomial(c["n"].astype(np.int64), c["eps"], size=shape)
    r1 = rng.binomial(c["n"].astype(np.int64) - w, keep)
    r0 = rng.binomial(w, keep)
    out = {"n": np.broadcast_to(c["n"], shape), "withheld": w, "r1": r1, "r0": r0}
    return out | {"s1": rng.binomial(r1, p1), "s0": rng.binomial(r0, p0)}


def predictive_checks(world: dict, s: Sessions, rng: np.random.Generator,
                      replications: int = 200, alpha: float = 0.05) -> dict:  # fmt: skip
    """Each statistic's observed value, its predictive mean and 95 % band, and the
    two-sided predictive p-value ``2 min(P(sim >= obs), P(sim <= obs))``; a sentence on
    where the fit is poor (p < ``alpha``)."""
    c = arm_counts(s)
    observed = check_statistics(c)
    sims = check_statistics(simulate_counts(world, c, rng, replications))
    rows, poor = {}, []
    for name, obs in observed.items():
        x = sims[name][np.isfinite(sims[name])]
        if not np.isfinite(obs) or x.size == 0:
            continue
        p = min(1.0, 2 * min(np.mean(x >= obs), np.mean(x <= obs)))
        rows[name] = {"observed": float(obs), "predicted": float(x.mean()),
                      "band": [float(np.quantile(x, 0.025)), float(np.quantile(x, 0.975))],
                      "p_value": float(p)}  # fmt: skip
        if p < alpha:
            poor.append(name)
    sentence = (
        f"The fit is poor on {', '.join(poor)} (predictive p < {alpha:g}): the world "
        "simulated from the fit does not reproduce the log there."
        if poor else
        f"No check is outside the fitted world's predictions (every predictive p >= {alpha:g})."
    )  # fmt: skip
    return {"replications": replications, "checks": rows, "poor_fit": poor, "summary": sentence}


def check_fittable(s: Sessions) -> None:
    """Refuse (``LogError`` naming the file) a log no world can be fitted to: the success
    rates are fitted to sessions whose top-matched procedure was shown and rated, so at
    least one is needed."""
    if s.n == 0:
        raise LogError(s.file, None, None, "no session rows", "at least one session")
    if not ((s.top >= 0) & ~s.withheld & ~np.isnan(s.outcome)).any():
        matched = int((s.top >= 0).sum())
        raise LogError(
            s.file, None, "outcome",
            f"no rated session with its top-matched procedure shown ({s.n} sessions, "
            f"{matched} matched, {int(np.isfinite(s.outcome).sum())} rated)",
            "at least one, to fit the procedures' success rates to",
        )  # fmt: skip


def fit_world(s: Sessions, lift: np.ndarray, lift_se: np.ndarray, rng: np.random.Generator,
              replications: int = 200, counts: tuple | None = None) -> dict:  # fmt: skip
    """The fitted world (module docstring) with its predictive checks; ``lift``,
    ``lift_se``: the procedures' lift estimates (empty when none was withheld);
    ``counts``: their ``(s1, r1, s0, r0)``, so the lifts' model weighs each by its
    ``pooled_se`` (without them, by ``lift_se`` as given)."""
    check_fittable(s)
    c = arm_counts(s)
    world: dict = {"rates": beta_binomial(c["s1"], c["r1"])}
    se = np.asarray(lift_se) if counts is None else pooled_se(lift_se, counts)
    if weighable(np.asarray(lift), se).sum() >= 3:  # fewer: nothing to fit a spread to
        world["lifts"], shrunk = normal_lifts(np.asarray(lift), se)
        world["shrunk_lifts"] = shrunk
    world["ratings"] = ratings(s)
    users = user_dispersion(s, rng)
    if users is not None:
        world["users"] = users
    world["checks"] = predictive_checks(world, s, rng, replications)
    return world
