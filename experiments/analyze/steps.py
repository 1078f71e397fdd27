"""The analysis's parts after the lifts: the gate replay, the rule replay and (in
``world``) the fitted world, each writing its file and returning its report section."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from experiments.analyze.world_file import WORLD_VERSION
from procmem_core.flat import DEFAULT_RULE, DEFAULT_THRESHOLD
from procmem_core.flat.design import RuleTargets, design_rule
from procmem_core.gates import Gate, MarginGate, SPRTGate, TwoSampleGate
from procmem_core.logs import Log
from procmem_core.logs.replay import agreement, gate_replay, rule_replay

Section = tuple[str, str, Any]


def default_gates() -> dict[str, Gate]:
    """The seed's SPRT (its cap rule), the seed server's margin gate and the exact
    two-sample test (concurrent design, grid-calibrated: docs/gates.md)."""
    return {"sprt": SPRTGate(), "margin": MarginGate(), "two_sample": TwoSampleGate()}


def gate_section(log: Log, out: Path, metrics: dict) -> Section:
    title = "Gate replay"
    if log.runs is None and log.revisions is None:
        return title, "The log has no runs and revisions files: no gate to replay.", None
    if log.revisions is None:
        text = "The log has runs but no revisions file: no revision to replay the gates on."
        return title, text, None
    if log.runs is None:
        return (
            title,
            "The log has revisions but no runs file: no ledger to replay the gates on.",
            None,
        )
    gates = default_gates()
    replay = gate_replay(log, gates)
    frame = pd.DataFrame(replay)
    frame.to_csv(out / "gate_replay.csv", index=False)
    counts = agreement(replay, gates)
    metrics |= {f"gate_{k}": float(v) for k, v in counts.items()}
    labels = "; ".join(f"{name}: {g.describe()}" for name, g in gates.items())
    text = (
        f"{counts.get('revisions', 0)} revisions with a prior replayed on the logged ledger as "
        "ProcedureStore.evolve judges them (each gate with the cost gate's veto; the prior "
        f"served after the proposal counts as concurrent). Gates: {labels}. "
    )
    if counts.get("with_logged_verdict"):
        agree = ", ".join(f"{g} {counts[f'{g}_agree']}" for g in gates)
        text += f"Agreement with the {counts['with_logged_verdict']} logged verdicts: {agree}."
    return title, text, frame


def rule_base(log: Log) -> float:
    """The base rate a flat rule is designed for: the withheld arm's success rate, else
    (no withheld session rated) all rated sessions', rounded to 0.05 in [0.15, 0.85]."""
    s = log.sessions
    rated = ~np.isnan(s.outcome)
    pick = rated & s.withheld if (rated & s.withheld).any() else rated
    return float(np.clip(np.round(np.mean(s.outcome[pick]) / 0.05) * 0.05, 0.15, 0.85))


def designed_rule(log: Log) -> tuple[Any, float, str]:
    """The flat rule ``design_rule`` picks for this log's ``rule_base``, the seed's other
    targets."""
    design = design_rule(RuleTargets(base=rule_base(log)))
    note = "meets" if design.feasible else "cannot meet (closest shown)"
    return design.pick.rule, design.pick.threshold, f"{design.targets.describe()}: {note}"


def rule_section(log: Log, out: Path, design: bool) -> Section:
    rules = {"seed": (DEFAULT_RULE, DEFAULT_THRESHOLD)}
    text = f"Seed rule: {DEFAULT_RULE.describe()}, threshold {DEFAULT_THRESHOLD:g}. "
    if design:
        rule, threshold, note = designed_rule(log)
        rules["designed"] = (rule, threshold)
        text += f"Designed rule: {rule.describe()}, threshold {threshold:g} ({note}). "
    frame = pd.DataFrame(rule_replay(log.sessions, rules))
    frame.to_csv(out / "rule_replay.csv", index=False)
    for name in rules:
        mine = frame[frame["rule"] == name]
        text += (
            f"{name}: drops {int(mine['dropped_at'].notna().sum())} of {len(mine)} procedures "
            "on their logged shown outcomes. "
        )
    text += (
        "Each confidence walks over the sessions where its procedure was the top match, "
        "shown and rated."
    )
    below = shown_below_top(log)
    if below:
        names = ", ".join(below[:5]) + (f" and {len(below) - 5} more" if len(below) > 5 else "")
        text += (
            f" The log's shown_keys also name {len(below)} procedure"
            f"{'s' if len(below) > 1 else ''} shown only below the top match ({names}), "
            "with no row here: the replay reads each session's top match only, and no walk "
            "counts a session where its procedure was shown below the top match."
        )
    return "Rule replay", text, frame


def shown_below_top(log: Log) -> list[str]:
    """The keys the ``shown_keys`` column names that were never a session's top match
    (sorted); each distinct JSON list is read once, one that is not a list of keys skipped."""
    column = log.sessions.optional.get("shown_keys")
    if column is None:
        return []
    named: set[str] = set()
    for value in column.values:
        try:
            keys = json.loads(value)
        except (TypeError, ValueError):
            continue
        if isinstance(keys, list):
            named.update(k for k in keys if isinstance(k, str) and k)
    return sorted(named - set(log.sessions.keys))


RATES_FAMILY = (
    "beta-binomial over the procedures' shown success rates, by maximum marginal "
    "likelihood (empirical Bayes)"
)
LIFTS_FAMILY = (
    "normal (normal-normal random effects, maximum likelihood): a lift is a difference of "
    "two rates, near-symmetric around its mean at logged sizes, each estimate is normal "
    "given its SE, and conjugacy gives the shrinkage B = sigma^2 / (sigma^2 + se^2) in "
    "closed form"
)


def _plain(value: Any) -> Any:
    """Params as ``{"value", "se"}``, numpy numbers as floats, recursively."""
    if hasattr(value, "as_dict"):
        return _plain(value.as_dict())
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None  # JSON has no NaN: an SE that could not be estimated is null
    return value


def _pm(p: Any, spec: str, se_spec: str = ".3f") -> str:
    """``value +- se``; where the log does not pin the parameter down (its SE null in
    world.json, e.g. a spread estimated at 0) it says so instead of printing ``+- nan``."""
    if np.isfinite(p.se):
        return f"{p.value:{spec}} +- {p.se:{se_spec}}"
    return f"{p.value:{spec}} (no SE: the log does not pin it down)"


def world_section(
    log: Log, lifts: Any, out: Path, seed: int, metrics: dict
) -> tuple[Section, dict]:
    """``world.json``: the fitted world (``procmem_core.logs.world``) and its checks; the
    section and the fit."""
    import json

    from procmem_core.logs.world import fit_world

    rng = np.random.default_rng(np.random.SeedSequence(seed))
    cols = lifts.columns
    counts = tuple(cols[c] for c in ("successes_shown", "rated_shown",
                                     "successes_withheld", "rated_withheld"))  # fmt: skip
    fit = fit_world(log.sessions, cols["lift"], cols["se"], rng, counts=counts)
    shrunk = fit.pop("shrunk_lifts", None)
    world = {
        "schema_version": WORLD_VERSION,
        "seed": seed,
        "rates": {"family": RATES_FAMILY, **_plain(fit["rates"])},
        "ratings": {**_plain(fit["ratings"]), "time_unit": log.sessions.time_unit},
        "checks": _plain(fit["checks"]),
    }
    if "lifts" in fit:
        world["lifts"] = {"family": LIFTS_FAMILY, **_plain(fit["lifts"])}
        world["lifts"]["shrunk"] = dict(zip(map(str, cols["key"]), map(float, shrunk),
                                            strict=True))  # fmt: skip
    if "users" in fit:
        world["users"] = _plain(fit["users"])
    (out / "world.json").write_text(json.dumps(world, indent=1) + "\n", "utf-8")
    for part in ("rates", "lifts", "users", "ratings"):
        for name, p in fit.get(part, {}).items():
            metrics[f"world_{part}_{name}"] = float(p.value)
    rates = fit["rates"]
    spread = (
        f"concentration {_pm(rates['concentration'], '.1f', '.1f')}"
        if "concentration_low" not in rates else
        "no over-dispersion across procedures (the concentration's likelihood is flat, its "
        f"estimate at the upper limit; at least {rates['concentration_low'].value:.3g} at 95 %)"
    )  # fmt: skip
    text = f"Success rates: {RATES_FAMILY}; mean {_pm(rates['mean'], '.3f')}, {spread}. "
    if "lifts" in fit:
        lf = fit["lifts"]
        text += (
            f"Lifts: {LIFTS_FAMILY}; mean {_pm(lf['mean'], '+.3f')}, sd {_pm(lf['sd'], '.3f')}. "
        )
    if "users" in fit:
        u = fit["users"]
        text += (
            f"Users: between-user sd of the success probability {_pm(u['user_sd'], '.3f')} "
            f"(icc {u['icc'].value:.3f}). "
        )
    text += fit["checks"]["summary"]
    checks = pd.DataFrame(
        [{"statistic": k, **{c: v for c, v in row.items() if c != "band"},
          "band_low": row["band"][0], "band_high": row["band"][1]}
         for k, row in fit["checks"]["checks"].items()]
    )  # fmt: skip
    return ("Fitted world", text, checks), fit


PRESCRIBED_FROM = (("rates", "mean"), ("rates", "concentration"), ("lifts", "mean"),
                   ("users", "icc"), ("ratings", "missing_rate"))  # fmt: skip
"""The fitted parameters the prescriptions read (the lifts' spread and the delay enter none)."""


def prescription_section(log: Log, fit: dict, out: Path, seed: int, target_lift: float,
                         metrics: dict) -> Section:  # fmt: skip
    """The explore rate, flat rule and gate for the fitted world, each at the worst of
    the bootstrap draws (``procmem_core.logs.prescribe``)."""
    from procmem_core.logs.prescribe import DRAWS, prescribe

    rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    s = log.sessions
    matched = s.top[s.top >= 0]
    horizon = int(np.bincount(matched).mean()) if matched.size else 0
    found = prescribe(fit, rng, target_lift, max(horizon, 2))
    frame = pd.DataFrame([{"prescription": p.name, "setting": p.setting, "meets": p.meets,
                           "sentence": p.sentence} for p in found])  # fmt: skip
    frame.to_csv(out / "prescriptions.csv", index=False)
    for p in found:
        metrics[f"prescribe_{p.name.replace(' ', '_')}_meets"] = float(p.meets)
    spans = found[0].details["draws"]
    drawn = ", ".join(f"{k} {lo:.3g}-{hi:.3g}" for k, (lo, hi) in spans.items() if k != "base")
    low, high = found[0].details["inflation"]
    held = [f"{part}.{name}" for part, name in PRESCRIBED_FROM
            if name in fit.get(part, {}) and not np.isfinite(fit[part][name].se)]  # fmt: skip
    text = (
        f"For the world fitted to this log, its uncertainty carried by a parametric bootstrap "
        f"({DRAWS} draws of every fitted parameter with an SE, from its sampling distribution; "
        f"ranges drawn: {drawn}); each prescription must meet its targets at the worst draw, "
        f"or says it cannot. "
        + (
            f"Held at their estimates, with no SE to draw from (the log does not pin them "
            f"down), so no prescription covers their uncertainty: {', '.join(held)}. "
            if held
            else ""
        )
        + f"The explore rate's sessions include, at each draw, the design "
        f"effect of users seen repeatedly and the ratings that never arrive (x{low:.3g} to "
        f"x{high:.3g}); the lifts' spread and the delay enter none of the three (their "
        f"targets are at fixed lifts and count sessions). Horizon for the explore rate: "
        f"{horizon} sessions per procedure (this log's mean).\n\n"
        + "\n\n".join(p.sentence for p in found)
    )
    return "Prescriptions for this deployment", text, frame
