"""The confidence section's prescription: the exact design at the report's targets, and
whether the sweep's simulation of the designed rule confirms it.

The targets are the report's (``--target-kept``, ``--target-excluded``, the horizon
``--target-sessions`` or the sessions of the sweep's exact-regime world) and the world's
own numbers (its users' base rate and the lifts of helpful and harmful procedures). The
design is ``procmem_core.flat.design.design_rule`` for each rule family: exact, nothing
sampled, asked by the sweep when it ended (``experiments.answers.rule``) and read here
from its ``answers/rule.json`` (issue 24 item 3: reports only read). A designed rule is
*confirmed* when the sweep ran it in that world and both simulated shares are within
``AGREEMENT_Z`` standard errors of the exact values and no more than that below the
targets.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import pandas as pd

from procmem_core.flat import FLAT_RULES
from procmem_core.flat.design import FAMILIES, DesignedRule, RuleDesign, RuleTargets
from procmem_core.holds import SensitivityRow
from reports.answers import answer
from reports.claims import joint_state, state_words, target_state
from reports.evidence import fmt, fmt_exact
from reports.holds import breaks_sentence, holds_table, rows_of, short_of
from reports.options import ReportOptions
from reports.sections.confidence_runs import ConfidenceRuns, same_rule
from reports.sections.confidence_worst import share_text
from reports.source import Sweep, find_param
from reports.summary import AGREEMENT_Z


@dataclass
class Confirmation:
    """The simulated shares of a designed rule in the design's world, or why there are none."""

    row: pd.Series | None
    reason: str = ""

    def shares(self) -> tuple[str, str]:
        r = self.row
        return (
            fmt(float(r["helpful_retained"]), float(r["helpful_retained_se"])),
            fmt(float(r["harmful_excluded"]), float(r["harmful_excluded_se"])),
        )

    def _pairs(self, d: DesignedRule, targets: RuleTargets | None = None):
        for metric, exact, target in (
            ("helpful_retained", d.kept, None if targets is None else targets.keep),
            ("harmful_excluded", d.excluded, None if targets is None else targets.exclude),
        ):
            yield float(self.row[metric]), float(self.row[f"{metric}_se"]), exact, target

    def agrees(self, d: DesignedRule) -> bool:
        """Both simulated shares within ``AGREEMENT_Z`` SE of the exact ones."""
        if self.row is None:
            return False
        return all(abs(s - e) <= AGREEMENT_Z * se + 1e-12 for s, se, e, _ in self._pairs(d))

    def state(self, d: DesignedRule, targets: RuleTargets) -> str:
        """Both simulated shares against their targets: meets, within 2 SE or misses
        (``reports.claims``), as a table cell."""
        return state_words(
            joint_state([target_state(s, se, t, True) for s, se, _, t in self._pairs(d, targets)])
        )

    def confirms(self, d: DesignedRule, targets: RuleTargets) -> bool:
        """``agrees`` and neither share more than ``AGREEMENT_Z`` SE below its target."""
        if not self.agrees(d):
            return False
        return all(s >= t - AGREEMENT_Z * se - 1e-12 for s, se, _, t in self._pairs(d, targets))


@dataclass
class DesignEvidence:
    targets: RuleTargets
    world: str
    world_text: str
    designs: dict[str, RuleDesign]
    confirmations: dict[str, Confirmation] = field(default_factory=dict)
    seed: Confirmation | None = None
    holds: dict[str, tuple[SensitivityRow, ...]] = field(default_factory=dict)
    """Each family's pick with the base rate or a lift moved (``flat.sensitivity``, as the
    sweep computed it; empty for sweeps before it did)."""


def _get(sweep: Sweep, row: pd.Series, key: str, group: str) -> float | None:
    col = find_param(sweep.param_names, key, group)
    v = None if col is None else row.get(col)
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


DESIGN_READS = ("users.base_rate", "users.helpful_effect", "users.harmful_effect",
                "scenario.sessions")  # fmt: skip
"""The params ``design_evidence`` reads: the base rate, both lifts and the horizon (the
question the sweep answered: ``experiments.answers.rule.DESIGN_READS``)."""


def _designed(d: dict) -> DesignedRule:
    """A designed rule back from the sweep's JSON (``experiments.answers.rule``)."""
    rule = FLAT_RULES[d["rule"]["name"]](**d["rule"]["fields"])
    return DesignedRule(**d | {"rule": rule})


def _design(d: dict) -> RuleDesign:
    """A family's design back from the sweep's JSON."""
    shortest = d["shortest"]
    return RuleDesign(
        family=d["family"],
        targets=RuleTargets(**d["targets"]),
        feasible=d["feasible"],
        pick=_designed(d["pick"]),
        frontier=tuple(_designed(x) for x in d["frontier"]),
        candidates=d["candidates"],
        skipped=d["skipped"],
        reference=_designed(d["reference"]),
        shortest=None if shortest is None else (shortest[0], _designed(shortest[1])),
    )


def designs_of(sweep: Sweep, targets: RuleTargets, options: ReportOptions) -> tuple[dict, dict]:
    """Each family's design at ``targets`` and its pick's holds-if rows, as the sweep
    answered them."""
    flags = [f"--target-kept {options.target_kept:g}",
             f"--target-excluded {options.target_excluded:g}"]  # fmt: skip
    if options.target_sessions:
        flags.append(f"--target-sessions {options.target_sessions}")
    found = answer(sweep, "rule", dataclasses.asdict(targets), " ".join(flags))
    designs = {f: _design(found["designs"][f]) for f in FAMILIES}
    return designs, {f: rows_of(found["designs"][f].get("holds_if", ())) for f in FAMILIES}


def exact_world(runs: ConfidenceRuns) -> pd.DataFrame:
    """Runs of the first world in the exact regime (one procedure, no noise, nothing
    withheld) with identical users: the world the design describes."""
    rows = runs.rows
    if "helpful_retained_exact" not in rows:
        return rows.iloc[0:0]
    exact = rows[rows["helpful_retained_exact"].notna() & rows["harmful_excluded_exact"].notna()]
    if exact.empty:
        return exact
    return exact[exact["world"] == exact["world"].iloc[0]]


def design_evidence(
    sweep: Sweep, runs: ConfidenceRuns, options: ReportOptions
) -> DesignEvidence | None:
    """The design at the report's targets in the sweep's exact world (None without one)."""
    world = exact_world(runs)
    if world.empty:
        return None
    r0 = world.iloc[0]
    rates = r0.get(find_param(sweep.param_names, "base_rates", "users") or "", None)
    if isinstance(rates, str) and rates.strip("[] "):
        return None  # several base rates: the design assumes one
    sessions = options.target_sessions or int(_get(sweep, r0, "sessions", "scenario") or 0)
    targets = RuleTargets(
        helpful_lift=_get(sweep, r0, "helpful_effect", "users"),
        harmful_lift=-_get(sweep, r0, "harmful_effect", "users"),
        base=_get(sweep, r0, "base_rate", "users"),
        keep=options.target_kept,
        exclude=options.target_excluded,
        within=sessions,
    )
    simulated_at = int(_get(sweep, r0, "sessions", "scenario") or 0)
    designs, holds = designs_of(sweep, targets, options)
    name = str(r0["world"])
    ev = DesignEvidence(targets, name, runs.worlds.get(name, ""), designs, holds=holds)
    for family, design in ev.designs.items():
        ev.confirmations[family] = _confirm(world, design.pick, simulated_at, targets)
    seed = world[world["seed_rule"]]
    ev.seed = Confirmation(seed.iloc[0] if len(seed) and simulated_at == sessions else None)
    return ev


def _confirm(world: pd.DataFrame, d: DesignedRule, at: int, targets: RuleTargets):
    if at != targets.within:
        return Confirmation(None, f"the sweep simulated {at} sessions, not {targets.within}")
    for _, r in world.iterrows():
        if same_rule(r["rule"], d.rule) and math.isclose(r["threshold"], d.threshold):
            return Confirmation(r)
    return Confirmation(None, "not simulated in this sweep")


def rerun_overrides(d: DesignedRule) -> str:
    """The config overrides that simulate a designed rule (its family's option, then its
    fields and threshold; a text field such as ``arithmetic`` as it is)."""
    option = "seed" if d.rule.name == "confidence" else d.rule.name
    parts = [f"rule={option}"]
    for f in dataclasses.fields(d.rule):
        if f.init and f.name not in ("floor", "ceiling", "baseline_weight"):
            v = getattr(d.rule, f.name)
            parts.append(
                f"rule.{f.name}={v:g}" if isinstance(v, int | float) else f"rule.{f.name}={v}"
            )
    return " ".join([*parts, f"rule.threshold={d.threshold:g}"])


def opening(ev: DesignEvidence) -> str:
    """The sentence the confidence section opens with: the rule to use (or the closest
    and by how much it misses); the seed's rule beside it is ``seed_sentence``, the first
    paragraph under the answer (an opening is at most two sentences, issue 30)."""
    t = ev.targets
    where = f"within {t.within} sessions at base {t.base:g}"
    if any(d.feasible for d in ev.designs.values()):
        return _use_sentence(ev, prescribed(ev), where)
    return _infeasible_sentence(ev, where)


def prescribed(ev: DesignEvidence) -> str:
    """The family whose pick the opening prescribes: the first feasible one the sweep
    simulated, else the first feasible one, else the seed's family (the closest rule)."""
    feasible = [f for f in FAMILIES if ev.designs[f].feasible]
    if not feasible:
        return FAMILIES[0]
    return next((f for f in feasible if ev.confirmations[f].row is not None), feasible[0])


def holds_blocks(ev: DesignEvidence) -> list:
    """Holds if / breaks when: the prescribed rule, unchanged, at other base rates and
    lifts (exact, computed by the sweep); the sentence naming what breaks it first, then
    the table (to the appendix). When no family meets the targets nothing is prescribed
    (the opening says so), and the rows are the closest rule's: "the closest rule"."""
    family = prescribed(ev)
    rows = ev.holds.get(family, ())
    if not rows:
        return []
    t = ev.targets
    subject = "the prescribed rule" if ev.designs[family].feasible else "the closest rule"

    def figures(r: SensitivityRow) -> str:
        kept, gone = r.figure("kept"), r.figure("excluded")
        return (
            f"{short_of(f'kept {kept:.3f}', kept >= t.keep - 1e-12, f'{t.keep:g}')}, "
            f"{short_of(f'excluded {gone:.3f}', gone >= t.exclude - 1e-12, f'{t.exclude:g}')}"
        )

    table = holds_table(
        f"{subject} ({ev.designs[family].pick.describe()}), unchanged, exactly, "
        f"within {t.within} sessions with the base rate or one lift moved",
        rows,
        {
            "kept": ("helpful kept", "{:.3f}".format),
            "excluded": ("harmful excluded", "{:.3f}".format),
        },
        f"kept >= {t.keep:g}, excluded >= {t.exclude:g}",
    )
    return [breaks_sentence(subject, rows, figures), table]


def seed_sentence(ev: DesignEvidence) -> str:
    """The seed's rule at the same targets, exactly."""
    seed = ev.designs[FAMILIES[0]].reference
    t = ev.targets
    return (
        f"At the same targets the seed's rule keeps {fmt_exact(seed.kept)} and excludes "
        f"{fmt_exact(seed.excluded)} (exact, within {t.within} sessions at base {t.base:g})."
    )


def _use_sentence(ev: DesignEvidence, family: str, where: str) -> str:
    """The designed rule of ``family`` to use, its exact shares, and whether the sweep's
    simulation confirms them (or how to simulate it)."""
    t = ev.targets
    d, c = ev.designs[family].pick, ev.confirmations[family]
    head = (
        f"Use {d.describe()}: exactly, it keeps {fmt_exact(d.kept)} of helpful "
        f"({t.helpful_lift:+g}) procedures and excludes {fmt_exact(d.excluded)} of harmful "
        f"({t.harmful_lift:+g}) ones {where} (targets {t.keep:g} and {t.exclude:g})"
    )
    if c.row is None:
        return (
            head + f"; {c.reason} (to simulate it in world {ev.world}, run that world's case "
            f"with {rerun_overrides(d)})."
        )
    kept, excl = c.shares()
    if c.confirms(d, t):
        verdict = "confirmed: both within 4 SE of the exact values and of the targets"
    elif c.agrees(d):
        verdict = "NOT confirmed: a simulated share is more than 4 SE below its target"
    else:
        verdict = "NOT confirmed: simulation and exact values differ by more than 4 SE"
    reps = c.row.get("replications", "")
    users = f" over {int(reps):,} users" if isinstance(reps, int | float) and reps else ""
    return (
        head + f"; simulated{users} in world {ev.world} ({ev.world_text}): {kept} and "
        f"{excl}, {verdict}."
    )


def _infeasible_sentence(ev: DesignEvidence, where: str) -> str:
    """No family meets both targets: the closest rule, by how much it misses each, and the
    horizon from which some rule meets both."""
    t = ev.targets
    d = ev.designs[FAMILIES[0]]
    keep_short, excl_short = d.pick.shortfall(t)
    misses = [
        f"keeping at least {t.keep:g} (the closest keeps {d.pick.kept:.3f}, {keep_short:.3f} short)"
        if keep_short
        else "",
        f"excluding at least {t.exclude:g} ({d.pick.excluded:.3f}, {excl_short:.3f} short)"
        if excl_short
        else "",
    ]
    text = (
        f"No rule of any family meets both targets for helpful ({t.helpful_lift:+g}) and "
        f"harmful ({t.harmful_lift:+g}) procedures {where}: the closest, "
        f"{d.pick.describe()}, misses " + " and ".join(m for m in misses if m)
    )
    longer = [(ev.designs[f].shortest, f) for f in FAMILIES if ev.designs[f].shortest]
    if longer:
        (n, best), _ = min(longer, key=lambda x: x[0][0])
        text += f"; both are met from {n} sessions, by {best.describe()}"
    return text + "."


def beyond_design(ev: DesignEvidence, runs: ConfidenceRuns) -> str:
    """How the opening's rule fares in the sweep's other worlds (the design assumes one
    procedure on the design world's tasks): its worst shares there, naming the worlds."""
    feasible = [f for f in FAMILIES if ev.designs[f].feasible]
    if not feasible:
        return ""
    family = next((f for f in feasible if ev.confirmations[f].row is not None), feasible[0])
    d = ev.designs[family].pick
    rows = runs.rows
    same = [
        same_rule(r, d.rule) and math.isclose(t, d.threshold)
        for r, t in zip(rows["rule"], rows["threshold"], strict=True)
    ]
    mine = rows[pd.Series(same, index=rows.index) & (rows["world"] != ev.world)]
    if mine.empty:
        return ""
    low_k = mine.loc[mine["helpful_retained"].idxmin()]
    low_x = mine.loc[mine["harmful_excluded"].idxmin()]
    kept = share_text(low_k, "helpful_retained", "replications")
    excl = share_text(low_x, "harmful_excluded", "replications")
    return (
        f" The design holds for one procedure on world {ev.world}'s tasks; in the sweep's "
        f"other worlds this rule keeps as few as {kept} of helpful procedures (world "
        f"{low_k['world']}, top {int(low_k['limit'])}) and excludes as few as {excl} of "
        f"harmful ones (world {low_x['world']}, top {int(low_x['limit'])})."
    )


def design_table(ev: DesignEvidence) -> pd.DataFrame:
    """Each family's designed rule and the seed's, exact, with the simulation beside it."""
    t = ev.targets
    rows = []
    entries = [(f, ev.designs[f].pick, ev.confirmations[f]) for f in FAMILIES]
    entries.append(("seed", ev.designs[FAMILIES[0]].reference, ev.seed or Confirmation(None)))
    for family, d, c in entries:
        base = t.base if d.rule.needs_baseline else None
        row = {
            "family": family,
            "rule": d.describe(),
            "meets targets (exact)": "yes" if d.meets(t) else "no",
            "helpful kept (exact)": round(d.kept, 4),
            "harmful excluded (exact)": round(d.excluded, 4),
            "sessions a harmful one is shown": round(d.harmful_sessions, 2),
            "break-even success rate": round(d.rule.break_even_rate(base), 4),
            "helpful lost after (sessions, no horizon)": (
                "n/a (state: counts)" if math.isnan(d.helpful_run_length)
                else round(d.helpful_run_length, 1)
            ),
        }  # fmt: skip
        if c.row is not None:
            row["simulated kept"], row["simulated excluded"] = c.shares()
            row["simulated = exact (4 SE)"] = "yes" if c.agrees(d) else "no"
            row["meets targets in simulation"] = c.state(d, t)
        else:
            row["simulated kept"] = row["simulated excluded"] = c.reason or "not simulated"
        rows.append(row)
    return pd.DataFrame(rows)


def frontier_table(ev: DesignEvidence) -> pd.DataFrame:
    """Every family's frontier points: ``family, kept, excluded, sessions`` (for the figure)."""
    rows = []
    for family, design in ev.designs.items():
        for d in design.frontier:
            rows.append(
                {
                    "family": family,
                    "kept": d.kept,
                    "excluded": d.excluded,
                    "harmful_sessions": d.harmful_sessions,
                }
            )
    return pd.DataFrame(rows)
