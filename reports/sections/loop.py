"""The closed loop: does the whole engine learn, and why does it end where it ends?

The section answers yes or no with the evidence and its uncertainty (``loop_evidence``):
the regret per session in the first and last quarter of sessions at the seeds' settings,
the change with its 95 % interval over replications, and the swept setting under which
the loop learns, if one does. It explains the trend from its own tables: where the
regret comes from early and late (off-task sessions once every procedure of a task is
quarantined, withheld sessions, revisions on trial, worse procedures followed),
quarantines, stranded revisions, wrong reverts and missed harmful revisions. When the
sweep also ran the loop under informative missingness (``feedback=failures_rated``), the
verdict comes from the default channel's rows and the informative channel's is stated
next to it (``loop_missing``).
"""

from __future__ import annotations

import math

import pandas as pd
import yaml

from reports.claims import NOISE_Z, Option, ranks
from reports.configs import label_runs
from reports.document import Detail, Section, Table
from reports.evidence import fmt_metric
from reports.options import ReportOptions
from reports.sections import report_section
from reports.sections.loop_evidence import (
    EFFECTS_OVER,
    Verdict,
    biggest_changes,
    chance_note,
    decisive_setting,
    learning_row,
    main_effects,
    regret_sources,
    seed_row,
    sources_table,
    verdict_of,
)
from reports.sections.loop_figures import section_figures
from reports.sections.loop_missing import missing_sentence, missing_table, twins, verdict_rows
from reports.sections.loop_search import (
    is_search,
    named_trials,
    search_sentence,
    search_table,
)
from reports.sections.loop_split import regret_split, split_sentence, split_table
from reports.sections.loop_verdict import (
    EVOLVE_EVERY,
    EXPLORE_RATE,
    best_row,
    chain_reason,
    exposure_cost,
    named_conditions,
    prescribed_note,
    selection_note,
    verdict_json,
)
from reports.source import PROJECT_ROOT, Sweep
from reports.world import world_blocks

LOOP_PRESET = PROJECT_ROOT / "conf" / "experiment" / "loop.yaml"

LEARNING_METRICS = (
    "regret_early", "regret_late", "regret_change", "success_rate_early", "success_rate_late",
    "success_change", "oracle_success_rate",
)  # fmt: skip
MECHANISM_METRICS = (
    "quarantines", "off_task_rate", "stranded_revision_rate", "wrong_revert_rate",
    "missed_harmful_rate", "correct_verdict_rate", "withheld_rate", "prior_served_rate",
    "templates_promoted",
)  # fmt: skip
REGRET = (
    "Regret: the expected successes lost per session against an oracle that always follows "
    "the best graph the task's procedures hold at that moment (the current one or the prior "
    "of a pending revision; none, when none beats the base rate); the loop learns when its "
    "regret is lower in the last quarter of sessions than in the first."
)


def _rows(sweep: Sweep) -> pd.DataFrame | None:
    lab = label_runs(sweep, ("loop",), "scenario", ("success_rate", "regret_change"), "loop")
    if lab is None:
        return None
    rows = lab.rows
    reference = lab.rows["condition"] == lab.reference_condition
    if lab.condition_cols:
        rows, reference = named_conditions(rows, lab.condition_cols, reference)
        rows = rows.assign(
            config=[
                f"{a}; {b}" if lab.config_cols else b
                for a, b in zip(rows["config"], rows["condition"], strict=True)
            ]
        )
    rows = rows.assign(at_reference=reference)
    seed = seed_row(rows.assign(at_reference=False))  # the seeds' row in any condition
    if seed is not None and "condition" in rows and not reference.loc[seed.name]:
        # the reference is the seeds' condition (explore rate 0.1), not the swept values'
        # smallest (0.02): the figures are drawn where the seeds' verdict is read
        rows = rows.assign(at_reference=rows["condition"] == seed["condition"])
    return rows.sort_values("config").reset_index(drop=True)


def _opening(rows: pd.DataFrame, best: pd.Series | None) -> str:
    """The section's first sentence: the setting under which the regret falls, with its
    interval, or that none of the swept ones does and why (the quarantine chain)."""
    if best is not None:
        v = verdict_of(best, len(rows))
        return (
            f"The loop learns with {best['config']}{selection_note(best, len(rows))}: regret "
            f"{fmt_metric(best, 'regret_early')} "
            f"-> {fmt_metric(best, 'regret_late')}, {v.describe()}; success rate "
            f"{fmt_metric(best, 'success_rate_early')} -> {fmt_metric(best, 'success_rate_late')}. "
            + exposure_cost(best)
        )
    ref = seed_row(rows)  # the loop's cadence and explore rate: the seeds' row's, if run
    ref = rows.iloc[0] if ref is None else ref
    n, every, eps = (ref.get(k) for k in ("params.scenario.sessions", EVOLVE_EVERY, EXPLORE_RATE))
    why = chain_reason(
        float(n) if pd.notna(n) else 1000.0, 3, int(float(every)) if pd.notna(every) else 1,
        float(eps) if pd.notna(eps) else 0.0,
    )  # fmt: skip
    no_se = sum(not verdict_of(r).readable for _, r in rows.iterrows())
    if no_se == len(rows):  # one replication each: no interval to read, none reaches 0
        return (
            f"None of the {len(rows)} swept settings can be shown to learn: the regret change "
            f"has no standard error in any (one replication each), so there is no interval "
            f"to read; run at least 2 replications. " + why
        )
    settings = f"{len(rows)} swept settings" if len(rows) > 1 else "1 setting run"
    return (
        f"None of the {settings} makes the loop learn detectably: in every one "
        + (f"with a standard error ({len(rows) - no_se} of {len(rows)}) "
           if no_se else "")
        + "the 95 % interval of the regret change"
        + (" (simultaneous over the settings, Bonferroni)" if len(rows) > 1 else "")
        + " reaches 0 or above. "
        + why
    )  # fmt: skip


def _answer(rows: pd.DataFrame, seed: pd.Series | None, best: pd.Series | None) -> str:
    sessions = seed if seed is not None else rows.iloc[0]
    n = sessions.get("params.scenario.sessions")
    each = f" of {int(n)} sessions" if isinstance(n, int | float) and n == n else ""
    # one row not at the seeds' settings: its verdict is the opening (loop_verdict.json's)
    parts = [] if len(rows) == 1 and seed is not None else [_opening(rows, best)]
    if seed is not None:
        v = verdict_of(seed)
        which = "" if len(rows) == 1 else f" ({seed['config']})"
        parts.append(
            f"At the seeds' settings{which} the loop's answer is {v.answer}: "
            f"regret per session {fmt_metric(seed, 'regret_early')} in the first quarter and "
            f"{fmt_metric(seed, 'regret_late')} in the last, {v.describe()}{each}; success "
            f"rate {fmt_metric(seed, 'success_rate_early')} -> "
            f"{fmt_metric(seed, 'success_rate_late')}."
        )
    if len(rows) == 1:
        parts.append(
            "The loop preset sweeps the settings that decide it (quarantine exit policy, "
            "strike limit, explore rate, the seed's SPRT against the gate the design tool "
            "prescribes, concurrent control): python -m experiments.run -m experiment=loop"
            f"{preset_power(verdict_of(seed) if seed is not None else None)}."
        )
        return " ".join(parts)
    ses = rows["success_change_se"] if "success_change_se" in rows else pd.Series(math.nan)
    if ses.isna().any():  # one replication: no noise to order the settings against
        change = rows["success_change"].astype(float)
        parts.append(
            f"From the first quarter to the last, success changes by {change.min():.3g} to "
            f"{change.max():.3g} over the settings, with no standard error to order them."
        )
        return " ".join(parts)
    parts.append(
        f"From the first quarter to the last, {success_verb(rows)} {rises_most(rows)} (success "
        "can rise while regret stays flat when accepted revisions make the procedures "
        "themselves better: the oracle rises with them)."
    )
    return " ".join(parts)


def picked_note(n: int) -> str:
    """For the setting picked as the lowest of ``n`` intervals after the fact."""
    return (
        f" (the setting loop_verdict.json names: the lowest of {n} intervals, picked after "
        "the fact, so the t intervals here are not adjusted for that choice)"
    )


MAX_TIED = 3
"""At most this many tied settings are named; more are counted (the loop preset's 32
settings had 21 ties, a paragraph of setting names)."""


def success_verb(rows: pd.DataFrame) -> str:
    """How ``rises_most``'s pick is introduced: its success may have fallen (every
    setting's did), and then it does not rise most but falls least."""
    best = float(rows["success_change"].astype(float).max())
    if best > 0:
        return "success rises most with"
    return "success falls least with" if best < 0 else "the change in success is highest with"


def rises_most(rows: pd.DataFrame) -> str:
    """The settings whose success rises most, as one rank (``reports.claims.ranks``): the
    highest, and every setting the noise cannot tell from it."""
    options = [
        Option(str(r["config"]), float(r["success_change"]),
               float(r.get("success_change_se", float("nan"))))
        for _, r in rows.iterrows()
    ]  # fmt: skip
    top = ranks(options)[0]
    head = rows.loc[rows["config"] == top[0].name].iloc[0]
    text = f"{head['config']}: {fmt_metric(head, 'success_change')}"
    if len(top) == len(rows) > 2:
        return text + (
            f", but within {NOISE_Z:g} SE of the difference of every other setting (the "
            "noise cannot order any of them)"
        )
    if len(top) > MAX_TIED + 1:
        return text + (
            f", tied within {NOISE_Z:g} SE of the difference with {len(top) - 1} of the "
            f"other {len(rows) - 1} settings (the noise cannot order them)"
        )
    if len(top) > 1:
        text += f", tied within {NOISE_Z:g} SE of the difference with " + ", ".join(
            o.name for o in top[1:]
        )
    return text


def preset_power(v: Verdict | None) -> str:
    """After a "no detectable change" from few replications: what the loop preset's own
    replications (``conf/experiment/loop.yaml``) would detect at this read's spread per
    replication (``SE * sqrt(n / n_preset)``), and that its report answers the question."""
    n = loop_preset_replications()
    if v is None or n is None or not v.answer.startswith("no detectable change"):
        return ""
    if n <= v.replications:
        return ". Its report (python -m reports loop) answers whether the regret falls"
    wider = Verdict(v.change, v.se * math.sqrt(v.replications / n), n)
    return (
        f". Its {n} replications per setting would detect a change of about "
        f"{wider.detectable:.3f} per session at this spread (this read: "
        f"{v.detectable:.3f}); its report (python -m reports loop) answers whether the "
        "regret falls"
    )


def loop_preset_replications() -> int | None:
    """``scenario.replications`` of the loop preset, read from its config file (None when
    it cannot be read)."""
    try:
        conf = yaml.safe_load(LOOP_PRESET.read_text())
        return int(conf["scenario"]["replications"])
    except (OSError, KeyError, TypeError, ValueError, yaml.YAMLError):
        return None


def _why(row: pd.Series, sources: pd.DataFrame) -> str:
    """Why the loop ends where it ends, in one configuration, from its own tables."""
    who = "the loop" if row["config"] == "loop" else f"the loop with {row['config']}"
    text = [f"Why {who} ends where it ends:"]
    for source, early, late, s_early, s_late in biggest_changes(sources):
        text.append(
            f"the regret from '{source}' moves from {early:.3f} to {late:.3f} per session "
            f"({s_early:.0%} -> {s_late:.0%} of sessions);"
        )
    policy = row.get("params.quarantine.name")
    why_quarantine = (
        " (a quarantined procedure is never matched again, so no success can lift it: once "
        "all of a task's procedures are quarantined its sessions go off task)"
        if row["quarantines"] > 0 and (pd.isna(policy) or policy == "seed")
        else f" (exit policy {policy})"
        if row["quarantines"] > 0
        else ""
    )
    text.append(f"{fmt_metric(row, 'quarantines')} quarantines per replication{why_quarantine};")
    text.append(
        f"{_rate(row, 'stranded_revision_rate')} of proposed revisions stranded "
        "(pending on a quarantined procedure: never shown, never decided);"
    )
    text.append(
        f"harmless revisions reverted {_rate(row, 'wrong_revert_rate')}, harmful ones "
        f"accepted {_rate(row, 'missed_harmful_rate')};"
    )
    text.append(f"sessions withheld by the explore rate {_rate(row, 'withheld_rate')}.")
    return Detail(" ".join(text))


def _rate(row: pd.Series, metric: str) -> str:
    """A figure of the engine's table as every figure is told (``fmt_metric``): a rate
    every replication agreed on (SE 0, e.g. no wrong revert in any of 4) reads as its
    exact bound on the share of replications that would differ, not as ``0 ± 0``."""
    return fmt_metric(row, metric)


def _metric_table(rows: pd.DataFrame, metrics: tuple[str, ...]) -> pd.DataFrame:
    table = pd.DataFrame({"configuration": rows["config"]})
    for m in metrics:
        if m in rows:
            table[m.replace("_", " ")] = [_rate(r, m) for _, r in rows.iterrows()]
    return table


def loop_section(sweep: Sweep) -> Section | None:
    """The verdict, the metrics, where the regret comes from, and the figures."""
    rows = _rows(sweep)
    if rows is None:
        return None
    rows, missing, alone = verdict_rows(rows)  # the default channel's, else the informative
    search = is_search(sweep.parent_tags)
    rows = named_trials(rows) if search else rows
    seed, best = seed_row(rows), learning_row(rows)
    pairs = twins(rows, missing)
    learning = _metric_table(rows, LEARNING_METRICS)
    learning.insert(1, "learns?", [verdict_of(r).answer for _, r in rows.iterrows()])
    # a search's trials are the sampler's picks, not a grid: no value is averaged over the
    # other settings, so it has no main effects (its ranking compares the trials)
    effects = pd.DataFrame() if search else main_effects(rows, ("regret_change", "regret"))
    over = EFFECTS_OVER + (" of the default channel's runs" if not missing.empty else "")
    blocks: list = world_blocks(rows, None, "The verdict")
    blocks += [missing_table(pairs, len(rows))] if pairs else []
    trials = search_table(rows) if search else None
    blocks += [trials] if trials is not None else []
    note = prescribed_note(rows, sweep.table("gate_decisions", list(rows["run_id"])))
    blocks += [Detail(note)] if note else []
    blocks += [
        REGRET + chance_note(rows),
        *(
            [Table("Regret change and regret by setting: the mean over every configuration "
                   "with that value (± SE), each setting's other values and the conditions "
                   "averaged" + (" (the default channel's runs)" if not missing.empty else ""),
                   effects[[c for c in effects.columns
                                        if not c.endswith(("_mean", "_se"))]])]
            if not effects.empty else []
        ),
        Table("Does it learn: regret and success, first and last quarter of sessions "
              "(value ± SE over replications)", learning),
        Table("What the engine did: quarantines, sessions off task, revisions and their "
              "verdicts, withheld and prior-served sessions (value ± SE over replications)",
              _metric_table(rows, MECHANISM_METRICS)),
    ]  # fmt: skip
    per_run, raw = {}, {}
    for run_id in rows["run_id"]:
        t = sweep.table("regret_sources", [run_id])
        if not t.empty:
            per_run[run_id], raw[run_id] = regret_sources(t), t
    top = best if best is not None else best_row(rows)  # what loop_verdict.json names
    explained = [r for r in (seed, top) if r is not None]  # the default's and the pick's
    if len(explained) == 2 and explained[0]["run_id"] == explained[1]["run_id"]:
        explained = explained[:1]
    for row in explained:
        if row["run_id"] in per_run:
            sources = per_run[row["run_id"]]
            at = "" if row["config"] == "loop" else f", {row['config']}"
            caption = f"Where the regret comes from{at} (mean ± SE over replications)"
            blocks.append(Table(caption, sources_table(sources)))
            blocks.append(_why(row, sources))
            split = regret_split(raw[row["run_id"]])
            picked = row is top and best is None and len(rows) > 1
            said = split_sentence(split, at + (picked_note(len(rows)) if picked else ""), row)
            blocks.append(said)
            blocks.append(
                Table(
                    f"The regret change split{at}: structural cost and "
                    "learning (mean ± SE over replications)",
                    split_table(split),
                )
            )
    blocks += section_figures(sweep, rows, per_run)
    verdict = verdict_json(top, rows)
    said = " ".join(x for x in (search_sentence(rows) if search else "",
                                _answer(rows, seed, best), alone,
                                missing_sentence(pairs, seed, 1),
                                missing_sentence(pairs, best, len(rows)) if best is not None
                                and (seed is None or best["run_id"] != seed["run_id"]) else "",
                                decisive_setting(effects, "regret_change", over)) if x)  # fmt: skip
    return Section(  # the answer in two sentences, the rest after it (Section)
        "loop",
        "Closed loop: does the engine learn the right procedures",
        said,
        blocks,
        files={"loop_verdict.json": verdict},
    )


@report_section("loop", order=50)
def _loop_report(sweep: Sweep, options: ReportOptions) -> Section | None:
    return loop_section(sweep)
