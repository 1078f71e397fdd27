"""Prescriptions for one deployment: the explore rate, the flat rule and the revision gate
for the world fitted to its log, with the fit's uncertainty carried by a parametric
bootstrap over the fitted parameters (docs/statistics.md, "Reading a deployment's logs").

Draws (``parameter_draws``), every fitted parameter with an SE from its fitted sampling
distribution, independently (world.json keeps no covariances), in this order from one
generator: ``m ~ N(m_hat, se)`` (clipped to [0.02, 0.98]), ``log kappa ~ N(log kappa_hat,
se / kappa_hat)`` (both fitted on those scales; log kappa clipped to the fit's range,
+-LOG_KAPPA_MAX), the lifts' mean ``mu ~ N(mu_hat, se)``
and spread ``log sigma ~ N(log sigma_hat, se / sigma_hat)``, the users' ``user_sd`` and
``icc`` (normal at their bootstrap SE, clipped to [0, 1)), the missing-rating rate
(normal, clipped to [0, 0.99]) and the mean delay (normal, at least 0); ``a`` and ``b``
follow from each draw's ``m`` and ``kappa``. A parameter without an SE stays at its
estimate. Each prescription must meet its targets at the worst draw, or say it cannot:

- explore rate: the planner's rated sessions to detect ``target_lift`` at each rate and
  each draw's base rate (the withheld rate's draws, ``base_draws``: the planner's base is
  the withheld arm's success rate, as the flat rule's below), times the draw's inflation
  ``(1 + (c - 1) icc) / (1 - missing)`` (``inflation``: the design effect of users seen
  ``c`` times per procedure and arm, this log's, and the sessions whose rating never
  arrives); the worst draw is the one needing the most, over every draw; the pick is
  the smallest rate whose worst sessions fit ``horizon`` (least successes forgone), else
  the rate and the horizon it would take;
- flat rule: ``design_rule`` at the estimated base, the withheld success rate
  (``world.withheld_rate``: ``m - mu``, the rate the rule's lifts are defined over, the
  base rate of ``users=fitted`` too), then ``evaluate``d at the lowest and the highest
  base among the draws (``base_draws``: ``m`` drawn as above less ``mu ~ N(mu_hat,
  se)``; kept rises and excluded falls with the success rate, so these are the worst
  draws for each target); if its pick falls short there, the
  frontier rule (at the estimate) meeting both targets at both draws with the fewest
  sessions a harmful one is shown;
- gate: ``design_gate`` over the p0 range that holds the 5-95 % quantiles of every
  draw's Beta of success rates (a guarantee over a range holds for every p0 in it),
  starting above ``min_drop`` (a lower p0 cannot drop by it).

The lifts' spread and the delay enter none of the three (the targets are at fixed lifts:
the explore rate's ``target_lift``, the flat rule's helpful and harmful lifts, the gate's
``min_drop``; the prescriptions count sessions, not time): they are drawn, and their
extreme draws reported, so the answer says what it did not need.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from procmem_core.ab import Design, plan_rate
from procmem_core.ab.planner import DEFAULT_RATES, exact_power, sized_exactly
from procmem_core.flat.design import RuleTargets, design_rule
from procmem_core.flat.design_table import still_shown
from procmem_core.flat.fate import flat_fate
from procmem_core.gates import DesignQuestion, FamilyAnswer, design_gate
from procmem_core.logs.lifts import sized_lift
from procmem_core.logs.world import LOG_KAPPA_MAX, Param, withheld_rate

DRAWS = 200


@dataclass(frozen=True)
class Prescription:
    """One prescription: what to use, whether it meets its targets at the worst draw,
    and a sentence saying so (or what it would take)."""

    name: str
    setting: str
    meets: bool
    sentence: str
    details: dict


def draws(rates: dict, rng: np.random.Generator, n: int = DRAWS) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap draws of the rates' mean and concentration (module docstring)."""
    m, k = rates["mean"], rates["concentration"]
    m_se = m.se if np.isfinite(m.se) else 0.0
    k_se = k.se / k.value if np.isfinite(k.se) else 0.0
    ms = np.clip(rng.normal(m.value, m_se, n), 0.02, 0.98)
    # within the fit's own range of kappa, e^-LOG_KAPPA_MAX to e^LOG_KAPPA_MAX (a kappa fitted
    # at a boundary, every shown session failed, has an SE thousands of times its value:
    # unclipped, its log-normal draws overflowed to inf and the gate's beta quantiles failed)
    log_ks = np.clip(rng.normal(np.log(k.value), k_se, n), -LOG_KAPPA_MAX, LOG_KAPPA_MAX)
    return ms, np.exp(log_ks)


def _normal(p: Param, rng: np.random.Generator, n: int, low: float = -np.inf,
            high: float = np.inf) -> np.ndarray:  # fmt: skip
    """``N(value, se)`` draws clipped to [low, high] (the value itself without an SE)."""
    se = p.se if np.isfinite(p.se) else 0.0
    return np.clip(rng.normal(p.value, se, n), low, high)


def _lognormal(p: Param, rng: np.random.Generator, n: int) -> np.ndarray:
    """``log x ~ N(log value, se / value)``: a parameter fitted on the log scale."""
    se = p.se / p.value if np.isfinite(p.se) and p.value > 0 else 0.0
    return np.exp(rng.normal(np.log(max(p.value, 1e-12)), se, n))


def parameter_draws(world: dict, rng: np.random.Generator, n: int = DRAWS) -> dict[str, np.ndarray]:
    """``n`` draws of every fitted parameter of ``world`` that has an SE, as
    ``"part.name"`` arrays (module docstring), and ``"base"``, the withheld success rate
    at each draw (``base_draws``). The rates and the lifts' mean are drawn first, as
    ``draws`` and ``base_draws`` draw them, so their draws are the same ones."""
    ms, ks = draws(world["rates"], rng, n)
    out = {"rates.mean": ms, "rates.concentration": ks}
    lifts = world.get("lifts")
    if lifts:
        out["lifts.mean"] = _normal(lifts["mean"], rng, n)
        out["base"] = np.clip(ms - out["lifts.mean"], 0.01, 0.99)
        out["lifts.sd"] = _lognormal(lifts["sd"], rng, n)
    else:
        out["base"] = np.clip(ms, 0.01, 0.99)
    users = world.get("users") or {}
    if "user_sd" in users:
        out["users.user_sd"] = _normal(users["user_sd"], rng, n, 0.0)
    if "icc" in users:
        out["users.icc"] = _normal(users["icc"], rng, n, 0.0, 0.99)
    ratings = world.get("ratings") or {}
    if "missing_rate" in ratings:
        out["ratings.missing_rate"] = _normal(ratings["missing_rate"], rng, n, 0.0, 0.99)
    if "delay_mean" in ratings:
        out["ratings.delay_mean"] = _normal(ratings["delay_mean"], rng, n, 0.0)
    return out


def inflation(world: dict, drawn: dict[str, np.ndarray]) -> np.ndarray:
    """Logged sessions per rated session the planner asks for, at each draw: ``(1 + (c -
    1) icc) / (1 - missing)``, ``c`` the log's users' sessions per procedure and arm
    (``users.cluster_size``, ``Sigma n_g^2 / Sigma n_g``; 1 without users): the design
    effect of a cluster-robust comparison (Kish 1965) over the ratings that arrive."""
    n = drawn["base"].size
    size = (world.get("users") or {}).get("cluster_size")
    c = float(size.value) if size is not None else 1.0
    icc = drawn.get("users.icc", np.zeros(n))
    missing = drawn.get("ratings.missing_rate", np.zeros(n))
    return (1.0 + (c - 1.0) * icc) / (1.0 - missing)


def base_draws(world: dict, ms: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The withheld success rate at each draw of the rates' mean ``ms``: ``ms - mu``,
    ``mu ~ N(mu_hat, se)`` (drawn after the rates; no lifts: ``ms`` itself), clipped as
    ``withheld_rate``, so the draws' variance is its ``se_m^2 + se_mu^2``."""
    lifts = world.get("lifts")
    if not lifts:
        return np.clip(ms, 0.01, 0.99)
    mu = lifts["mean"]
    mus = rng.normal(mu.value, mu.se if np.isfinite(mu.se) else 0.0, ms.size)
    return np.clip(ms - mus, 0.01, 0.99)


def explore_rate(ms: np.ndarray, target_lift: float, horizon: int, power: float = 0.8,
                 alpha: float = 0.05,
                 inflate: np.ndarray | None = None) -> Prescription:  # fmt: skip
    """The smallest explore rate whose worst-draw sessions fit ``horizon``; ``ms``: the
    base draws, ``inflate``: each draw's logged sessions per rated one (``inflation``;
    1 when None). A draw's sessions are ``ceil(planned f)``; the worst draw is the one
    needing the most, over every draw: by the planner's normal approximation, and where
    that is within twice the horizon by its default (exact where the smaller arm is
    small, which orders the draws differently: picking the worst by the normal variance
    and sizing it exactly read 833 sessions where another draw needed 1381), so rates far
    out of reach cost no exact search. ``details["worst_sessions"]``: each rate tried,
    from the smallest up to the pick (every rate when none fits)."""
    f = np.ones(ms.size) if inflate is None else np.asarray(inflate, float)
    worst = {}
    pairs = np.unique(np.column_stack([ms, f]), axis=0)  # the distinct draws
    designs = [(Design(sized_lift(float(b), target_lift), float(b), power, alpha), float(g))
               for b, g in pairs]  # fmt: skip
    for eps in DEFAULT_RATES:  # from the smallest rate up to the first that fits
        worst[eps] = _worst(designs, eps, horizon)
        if worst[eps] <= horizon:
            break
    fits = [e for e in worst if worst[e] <= horizon]
    details = {"worst_sessions": worst, "horizon": horizon, "target_lift": target_lift,
               "inflation": (float(f.min()), float(f.max()))}  # fmt: skip
    if fits:
        eps = min(fits)
        return Prescription("explore rate", f"{eps:g}", True,
                            f"Explore rate {eps:g}: detects a lift of {target_lift:g} with power "
                            f"{power:g} within {worst[eps]} sessions of a procedure at the "
                            f"worst of {ms.size} draws, inside the horizon of {horizon}.",
                            details)  # fmt: skip
    eps = max(DEFAULT_RATES)
    return Prescription("explore rate", f"{eps:g}", False,
                        f"No explore rate up to {eps:g} detects a lift of {target_lift:g} with "
                        f"power {power:g} within {horizon} sessions at the worst draw: at "
                        f"{eps:g} it would take {worst[eps]} sessions of a procedure.",
                        details)  # fmt: skip


def _worst(designs: list, eps: float, horizon: int) -> int:
    """The most logged sessions over ``(design, inflation)`` draws at rate ``eps``: by the
    normal approximation where that exceeds twice the horizon (out of reach), else by the
    planner's default. The draws it sizes exactly are taken from the most sessions by the
    normal approximation down, and a draw whose exact power at the current worst's rated
    sessions already reaches the target needs no search of its own."""
    normal = [int(np.ceil(plan_rate(d, eps, method="normal").sessions * g - 1e-9))
              for d, g in designs]  # fmt: skip
    if max(normal) > 2 * horizon:
        return max(normal)
    exact = [sized_exactly(int(np.ceil(n / g - 1e-9)), eps) for n, (_, g) in
             zip(normal, designs, strict=True)]  # fmt: skip
    worst = max((n for n, e in zip(normal, exact, strict=True) if not e), default=0)
    for i in sorted(np.flatnonzero(exact), key=lambda i: -normal[i]):
        d, g = designs[i]
        rated = int(worst / g + 1e-9)
        if rated >= 1 and exact_power(d, rated, eps) >= d.power:
            continue
        worst = max(worst, _need([designs[i]], eps))
    return worst


def _need(designs: list, eps: float, method: str | None = None) -> int:
    """The most logged sessions among ``(design, inflation)`` pairs at rate ``eps``."""
    kw = {} if method is None else {"method": method}
    return max(int(np.ceil(plan_rate(d, eps, **kw).sessions * g - 1e-9)) for d, g in designs)


def flat_rule(base: float, bases: np.ndarray, targets: RuleTargets, family: str = "confidence",
              separating: bool = False, objective: str = "exposure") -> Prescription:  # fmt: skip
    """The designed rule of ``family`` at the estimated base (the withheld success rate,
    ``withheld_rate``), checked exactly at the extreme draws (``base_draws``); when the
    design's pick falls short there, the frontier rule at the estimate that meets both
    targets at the extreme draws with the fewest sessions a harmful one is shown, if any
    (``details["design"]``: the ``RuleDesign`` at the estimate; ``details["robust"]``:
    whether the pick is such a frontier rule; ``details["base"]``: the base designed at)."""
    lo, hi = float(bases.min()), float(bases.max())
    design = design_rule(targets_at(targets, base), family, separating, objective)
    at_lo, at_hi = targets_at(targets, lo), targets_at(targets, hi)

    def worst(d) -> tuple[float, float]:  # evaluate's kept and excluded, without run lengths
        b_lo, b_hi = (t.base if d.rule.needs_baseline else None for t in (at_lo, at_hi))
        lost = flat_fate(at_lo.p_helpful, targets.within, d.rule, d.threshold, b_lo)
        excl = flat_fate(at_hi.p_harmful, targets.within, d.rule, d.threshold, b_hi)
        return 1.0 - float(lost.p_excluded), float(excl.p_excluded)

    def ok(kept, excluded):  # floats or arrays
        return (kept >= targets.keep - 1e-12) & (excluded >= targets.exclude - 1e-12)

    pick, (kept, excluded), robust = design.pick, worst(design.pick), False
    if not ok(kept, excluded):
        good = _meeting(design.frontier, at_lo, at_hi, targets, worst, ok)
        if good:
            pick = min(good, key=lambda d: d.harmful_sessions)
            (kept, excluded), robust = worst(pick), True
    meets = bool(ok(kept, excluded))
    setting = f"{pick.rule.describe()}, threshold {pick.threshold:g}"
    sentence = (f"Flat rule {setting}: at the worst draws (base {lo:.3f} for keeping, {hi:.3f} "
                f"for excluding) it keeps {kept:.3f} of helpful and excludes {excluded:.3f} of "
                f"harmful procedures within {targets.within} sessions")  # fmt: skip
    if meets:
        sentence += f", meeting {targets.keep:g} and {targets.exclude:g}" + (
            " (the design's pick at the estimate would not: this is the frontier rule that "
            "does at both draws)." if robust else ".")  # fmt: skip
    else:
        more = (f"some rule meets them within {design.shortest[0]} sessions at the estimate"
                if design.shortest else "no rule of the frontier at the estimate meets them "
                "at both draws")  # fmt: skip
        sentence += (f": it cannot meet {targets.keep:g} and {targets.exclude:g}; {more}. It "
                     "would take a longer horizon, or a log that pins the success rate down "
                     "more tightly (narrower draws).")  # fmt: skip
    details = {"kept_worst": kept, "excluded_worst": excluded, "base_draws": [lo, hi],
               "base": design.targets.base,
               "rule": pick.rule, "threshold": pick.threshold, "design": design,
               "robust": robust}  # fmt: skip
    return Prescription("flat rule", setting, meets, sentence, details)


SCREEN_TOLERANCE = 1e-9
"""How close to a target a frontier rule's batched figure must be to be recomputed by
``flat_fate`` (the two recursions agree to 1e-12)."""


def _meeting(frontier, at_lo: RuleTargets, at_hi: RuleTargets, targets: RuleTargets, worst,
             ok) -> list:  # fmt: skip
    """The frontier rules meeting both targets at the extreme draws, in frontier order:
    the same set as ``ok(*worst(d))`` for each. Step rules are screened by one batched
    walk per draw (``design_table.still_shown``); a rule whose figures lie within
    ``SCREEN_TOLERANCE`` of a target, or that the walk could not place, is decided by
    ``worst`` (``flat_fate``), so the set does not depend on the order of summation."""
    if not frontier or frontier[0].rule.needs_counts:
        return [d for d in frontier if ok(*worst(d))]
    pairs = [(d.rule, d.threshold) for d in frontier]
    kept = still_shown(pairs, at_lo.p_helpful, targets.within, at_lo.base)
    excluded = 1.0 - still_shown(pairs, at_hi.p_harmful, targets.within, at_hi.base)
    tol = SCREEN_TOLERANCE
    sure = ok(kept - tol, excluded - tol)
    near = (~sure & ok(kept + tol, excluded + tol)) | np.isnan(kept) | np.isnan(excluded)
    return [d for d, s, n in zip(frontier, sure, near, strict=True) if s or (n and ok(*worst(d)))]


def targets_at(t: RuleTargets, base: float) -> RuleTargets:
    """``t`` at another base rate, clipped so both lifts stay in [0, 1]."""
    base = float(np.clip(base, -t.harmful_lift, 1 - t.helpful_lift))
    return RuleTargets(t.helpful_lift, t.harmful_lift, base, t.keep, t.exclude, t.within)


def gate(ms: np.ndarray, ks: np.ndarray, question: DesignQuestion) -> Prescription:
    """``design_gate`` over the p0 range holding the draws (module docstring), the question's
    other fields kept (``details["design"]``: the ``GateDesign``)."""
    a, b = ms * ks, (1 - ms) * ks
    lows, highs = stats.beta.ppf(0.05, a, b), stats.beta.ppf(0.95, a, b)
    # a p0 at or below the drop cannot fall by it: the range starts just above
    low = float(np.clip(lows.min(), question.min_drop + 0.01, 0.9))
    high = float(np.clip(highs.max(), low + 0.05, 0.95))
    p0_low = float(np.floor(low * 100) / 100)
    if p0_low <= question.min_drop:  # 0.06 + 0.01 is 0.0699999... in floats: floored to 0.06
        p0_low = round(p0_low + 0.01, 2)
    q = replace(question, p0_low=p0_low, p0_high=float(np.ceil(high * 100) / 100))
    design = design_gate(q)
    best = design.chosen
    details = {"p0_low": q.p0_low, "p0_high": q.p0_high, "design": design}
    if best is not None:
        return Prescription("gate", f"{best.family} ({best.design}), max_runs {best.max_runs}",
                            True,
                            f"Gate {best.family} ({best.design} design), max_runs "
                            f"{best.max_runs}: false revert <= {q.alpha:g} and power >= "
                            f"{1 - q.beta:g} at a drop of {q.min_drop:g} for every p0 in "
                            f"[{q.p0_low:g}, {q.p0_high:g}], {coverage(lows, highs, q)}; "
                            f"{gate_sessions(best, q.concurrent)}.",
                            details | {"config": best.config})  # fmt: skip
    usable = design.with_concurrent_control
    instead = ""
    remedies = (" or a longer ledger" if q.concurrent > 0 else  # it has concurrent control
                ", a longer ledger or concurrent control (the prior served in a share of "
                "sessions while a revision is pending)")  # fmt: skip
    if q.concurrent == 0 and usable:  # what concurrent control would cost, by the objective
        a = usable[0]
        instead = (f"; with concurrent control {a.family} ({a.design}) meets both at max_runs "
                   f"{a.max_runs}: {gate_sessions(a, 0.5)}")  # fmt: skip
    return Prescription("gate", "none feasible", False,
                        f"No gate family meets false revert <= {q.alpha:g} and power >= "
                        f"{1 - q.beta:g} within {q.max_runs} runs over p0 in "
                        f"[{q.p0_low:g}, {q.p0_high:g}]; it would take a larger max_runs"
                        f"{remedies}{instead}.", details)  # fmt: skip


def coverage(lows: np.ndarray, highs: np.ndarray, q: DesignQuestion) -> str:
    """How the range ``[q.p0_low, q.p0_high]`` covers the draws' 5-95 % quantiles of the
    success rate: all of them, or which side it leaves out (it starts above the drop and
    stops at 0.95)."""
    out = []
    if lows.min() < q.p0_low:
        out.append(f"from {lows.min():.3f} (a p0 at or below the drop cannot fall by it)")
    if highs.max() > q.p0_high:
        out.append(f"up to {highs.max():.3f} (the range stops at 0.95)")
    if not out:
        return "which holds the 5-95 % quantiles of every draw's success rate"
    return ("the draws' 5-95 % quantiles of the success rate reach outside it, "
            f"{' and '.join(out)}: there the targets are not checked")  # fmt: skip


def gate_sessions(a: FamilyAnswer, share: float) -> str:
    """The sessions a decision of answer ``a`` takes when nothing changed and at the drop,
    both arms counted at the concurrent ``share`` (expected, worst p0)."""
    return (f"a decision takes {sum(a.runs_null):.1f} sessions when nothing changed and "
            f"{sum(a.runs_alt):.1f} at the drop ({a.runs_null[0]:.1f} + {a.runs_null[1]:.1f} "
            f"and {a.runs_alt[0]:.1f} + {a.runs_alt[1]:.1f} on the revision + the prior at "
            f"share {share:g}; expected, worst p0)")  # fmt: skip


def prescribe(world: dict, rng: np.random.Generator, target_lift: float, horizon: int,
              targets: RuleTargets | None = None,
              question: DesignQuestion | None = None) -> list[Prescription]:  # fmt: skip
    """The three prescriptions for a fitted world (``fit_world``'s dict) at the worst of
    ``parameter_draws``; each one's ``details["draws"]``: every drawn parameter's lowest
    and highest draw."""
    drawn = parameter_draws(world, rng)
    bases, spans = drawn["base"], draw_spans(drawn)
    found = [
        explore_rate(bases, target_lift, horizon, inflate=inflation(world, drawn)),
        flat_rule(withheld_rate(world).value, bases, targets or RuleTargets()),
        gate(drawn["rates.mean"], drawn["rates.concentration"], question or DesignQuestion()),
    ]
    return [replace(p, details=p.details | {"draws": spans}) for p in found]


def draw_spans(drawn: dict[str, np.ndarray]) -> dict[str, tuple[float, float]]:
    """Each drawn parameter's lowest and highest draw."""
    return {k: (float(v.min()), float(v.max())) for k, v in drawn.items()}
