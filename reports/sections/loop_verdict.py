"""The loop's prescriptive answer (issue 29, item 3): the setting under which the regret
falls, with its 95 % interval, or that none does and why, from the quarantine chain.

``loop_verdict.json`` (beside the report): ``learns`` (the interval lies below 0),
``regret_change``, ``ci_low``, ``ci_high`` (Student-t over replications, simultaneous
over the swept settings by Bonferroni, ``loop_evidence.Verdict``; ``ci_level`` says so),
``replications`` and ``setting``: the swept config overrides of that row (``key=value``,
a group's choice as ``group=name``, e.g. ``gate=prescribed``, without the params the choice
implies: ``swept_overrides``). With no learning row the file names the row whose
interval reaches lowest, with ``learns`` false; a bound without a standard error (one
replication) is null.
"""

from __future__ import annotations

import json
import math

import pandas as pd

from procmem_core.gates import GATES
from procmem_core.gates.prescribed import PRESCRIBED
from procmem_core.quarantine import (
    QuarantinePolicy,
    SeedPolicy,
    make_quarantine_policy,
    quarantine_fate,
)
from reports.configs import label, phrase, show
from reports.sections.loop_evidence import verdict_of

SEED_STRIKE_LIMIT = 3
CHAIN_P = 0.7
"""The success rate the chain's numbers are quoted at (the statistics doc's example)."""


def swept_overrides(row: pd.Series, rows: pd.DataFrame) -> list[str]:
    """The params that vary across ``rows``, at ``row``'s values, as config overrides. A
    group's choice (``gate=prescribed``) carries its parameters, so a parameter of a group
    whose choice varies is listed only when it varies among the rows of ``row``'s choice
    (``gate.max_runs`` differs between ``sprt`` and ``prescribed`` only because they are
    different choices)."""
    out = []
    for col in sorted(c for c in rows.columns if c.startswith("params.")):
        values = _peers(row, rows, col)[col].astype(str).unique()  # unset (NaN) differs
        if len(values) < 2 or pd.isna(row.get(col)):
            continue
        key = col.removeprefix("params.")
        value = row[col]
        if key.endswith(".name") and key.count(".") == 1:
            out.append(f"{key.split('.')[0]}={value}")
        else:
            out.append(f"{key}={_plain(value)}")
    return out


def _peers(row: pd.Series, rows: pd.DataFrame, col: str) -> pd.DataFrame:
    """The rows ``col`` is compared across: all of them, or for a parameter of a group
    whose choice (``params.<group>.name``) varies, those with ``row``'s choice."""
    parts = col.split(".")
    name = f"params.{parts[1]}.name"
    if len(parts) != 3 or col == name or name not in rows or rows[name].nunique() < 2:
        return rows
    return rows[rows[name] == row.get(name)]


def _plain(value: object) -> object:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def best_row(rows: pd.DataFrame) -> pd.Series:
    """The row whose (simultaneous) interval of the regret change reaches lowest."""
    m = len(rows)
    upper = pd.Series([verdict_of(r, m).interval[1] for _, r in rows.iterrows()], index=rows.index)
    return rows.loc[upper.fillna(math.inf).idxmin()]


def verdict_json(row: pd.Series, rows: pd.DataFrame) -> str:
    """``loop_verdict.json`` for ``row`` (see the module doc)."""
    v = verdict_of(row, len(rows))
    lo, hi = v.interval
    data = {
        "learns": bool(hi < 0),
        "regret_change": _finite(v.change),
        "ci_low": _finite(lo),
        "ci_high": _finite(hi),
        "ci_level": v.level_words(),
        "replications": int(v.replications),
        "setting": swept_overrides(row, rows),
        "configuration": str(row.get("config", "")),
    }
    return json.dumps(data, indent=2, allow_nan=False) + "\n"


def _finite(x: float) -> float | None:
    """``x``, or None (JSON null) when it is not finite: with one replication there is no
    interval, and NaN is not JSON (strict parsers refuse the file)."""
    return float(x) if math.isfinite(x) else None


def chain_reason(
    sessions: float, strike_limit: int = 3, evolve_every: int = 1, explore_rate: float = 0.0
) -> str:
    """Why no setting learns, in the quarantine chain's numbers (``quarantine_fate``) at
    the loop's cadence: evolve after every ``evolve_every`` runs (``scenario.evolve_every``;
    at 10 a 70 % procedure is quarantined within 250 runs with probability 0.496, not the
    every-run chain's 0.994), and the exits at the loop's ``explore_rate``, which withholds
    a floor-served or probed procedure too (probation f 0.05 at 0.1: back after 31.7
    sessions, not 28.6)."""
    runs = max(1, int(sessions) // 4)
    e = max(1, int(evolve_every))
    fate = quarantine_fate(CHAIN_P, runs, strike_limit, evolve_every=e, explore_rate=explore_rate)
    cadence = f", evolved every {e} runs as the loop does" if e > 1 else ""
    head = (
        f"The quarantine chain says why quarantine alone cannot make it learn. At strike "
        f"limit {strike_limit} a procedure succeeding {CHAIN_P:.0%} of the time is "
        f"quarantined within {runs} runs with probability {fate.p_quarantined:.3f} (after "
        f"{fate.expected_runs_to_quarantine:.0f} runs on average{cadence}). "
    )
    parts = []
    for x in fate.exits:
        if math.isinf(x.expected_release):
            parts.append(f"under {x.policy} it never returns (share of time quarantined 1)")
        else:
            parts.append(
                f"under {x.policy} it returns after {x.expected_release:.0f} sessions and "
                f"spends {x.share_quarantined:.0%} of its sessions quarantined"
            )
    said = "; ".join(parts)
    if explore_rate:
        said = f"at explore rate {explore_rate:g}, {said}"
    return (
        head
        + said[:1].upper()
        + said[1:]
        + (
            ". An exit gives a quarantined procedure its traffic back, which removes the rise "
            "that absorbing quarantine causes, but it cannot make the regret fall by itself: what "
            "else moves it is in the regret-by-source table below."
        )
    )


def policy_of(row: pd.Series) -> QuarantinePolicy:
    """The quarantine policy a row ran with (``params.quarantine.*``; the seed's if unset)."""
    prefix = "params.quarantine."
    params = {
        c.removeprefix(prefix): _plain(row[c])
        for c in row.index
        if c.startswith(prefix) and pd.notna(row[c])
    }
    return make_quarantine_policy(**params) if params.get("name") else SeedPolicy()


EXPLORE_RATE = "params.explore.explore_rate"
EVOLVE_EVERY = "params.scenario.evolve_every"


def exposure_cost(row: pd.Series) -> str:
    """What a row's quarantine setting costs in harmful exposures against the seed's, from
    the chain (a procedure succeeding ``DEFAULT_P_HARMFUL``, its first 1,000 sessions),
    both at the row's explore rate and evolve cadence when they are logged (the explore
    rate withholds the procedure in and out of quarantine, and evolve quarantines only
    every e runs: ``quarantine_fate(explore_rate=, evolve_every=)``)."""
    limit = row.get("params.scenario.strike_limit")
    limit = SEED_STRIKE_LIMIT if pd.isna(limit) else int(float(limit))
    eps = row.get(EXPLORE_RATE)
    eps = 0.0 if eps is None or pd.isna(eps) else float(eps)
    every = row.get(EVOLVE_EVERY)
    e = 1 if every is None or pd.isna(every) else int(float(every))
    policy = policy_of(row)
    fate = quarantine_fate(CHAIN_P, 1, limit, policy, explore_rate=eps, evolve_every=e)
    seed = quarantine_fate(
        CHAIN_P, 1, SEED_STRIKE_LIMIT, SeedPolicy(), explore_rate=eps, evolve_every=e
    )
    ours, theirs = fate.exits[0], seed.exits[0]
    at = (f", explore rate {eps:g}" if eps else "") + (f", evolved every {e} runs" if e > 1 else "")
    return (
        f"Its cost in harmful exposures (a procedure succeeding {fate.p_harmful:.0%} of the "
        f"time, its first 1,000 sessions, the quarantine chain{at}): "
        f"{ours.harmful_exposures_first_1000:.1f} under {policy.describe()} at strike limit "
        f"{limit} against {theirs.harmful_exposures_first_1000:.1f} under the seed's "
        f"(absorbing quarantine at strike limit {SEED_STRIKE_LIMIT})."
    )


NAMED_GROUPS = {"quarantine": "seed", "gate": "sprt"}
"""Groups whose rows are labelled by their choice, with the seeds' choice of each."""


def _choice_words(group: str, row: pd.Series) -> str:
    if group == "quarantine":
        return f"quarantine {policy_of(row).describe()}"
    return phrase(f"params.{group}.name", row[f"params.{group}.name"])


def named_conditions(
    rows: pd.DataFrame, condition_cols: list[str], reference: pd.Series
) -> tuple[pd.DataFrame, pd.Series]:
    """Conditions labelled with the quarantine policy (``policy.describe()``) and the gate
    (``SPRT``, ``prescribed gate``) by their choice, not by the parameters that imply it
    (the prescribed gate's ``max_runs`` is its question's cap, not the gate's); the
    reference moved to the seeds' choices (absorbing quarantine, the SPRT)."""
    names = {g: f"params.{g}.name" for g in NAMED_GROUPS}
    varying = [g for g, c in names.items() if c in rows and rows[c].astype(str).nunique() > 1]
    if not varying:
        return rows, reference
    others = [c for c in condition_cols if c.split(".")[1] not in varying]
    rest = [label(r, others, "") for _, r in rows.iterrows()]
    first = rows.index[reference][0] if reference.any() else rows.index[0]
    words = [
        "; ".join(x for x in (*(_choice_words(g, r) for g in varying), o) if x)
        for (_, r), o in zip(rows.iterrows(), rest, strict=True)
    ]
    at_seed = pd.Series(
        [all(r[f"params.{g}.name"] == NAMED_GROUPS[g] for g in varying)
         and o == rest[rows.index.get_loc(first)]
         for (_, r), o in zip(rows.iterrows(), rest, strict=True)],
        index=rows.index,
    )  # fmt: skip
    return rows.assign(condition=words), at_seed if at_seed.any() else reference


def selection_note(row: pd.Series, n: int) -> str:
    """A learning row picked as the lowest of ``n`` intervals: what chance gives, and
    that the exit policy plays no part at strike limit 0."""
    notes = []
    if n > 1:
        notes.append(
            f"the lowest of {n} intervals, each widened so that all {n} hold together "
            "(Bonferroni); confirm it with fresh seeds before relying on it"
        )
    limit = row.get("params.scenario.strike_limit")
    if pd.notna(limit) and float(limit) == 0:
        notes.append("strike limit 0 turns quarantine off, so the exit policy plays no part")
    return f" ({'; '.join(notes)})" if notes else ""


def prescribed_note(rows: pd.DataFrame, decisions: pd.DataFrame) -> str:
    """Which gate the prescribed rows ran: the gates their logged decisions name (the
    ``gate_decisions`` table's ``gate``, the design tool's pick made at job start) and
    the question the pick answers (their ``gate.*`` params). Empty without such rows."""
    name = "params.gate.name"
    if name not in rows:
        return ""
    chosen = rows[rows[name] == PRESCRIBED]
    if chosen.empty:
        return ""
    ran = decisions[decisions["run_id"].isin(chosen["run_id"])] if "gate" in decisions else None
    gates = [] if ran is None else sorted(set(ran["gate"]) - {"cost"})
    said = ", ".join(GATES[g].label if g in GATES else g for g in gates) or "no decision logged"
    r = chosen.iloc[0]

    def param(key: str) -> str:
        return show(_plain(r.get(f"params.gate.{key}")))

    return (
        f"The prescribed gate is the design tool's pick at job start (python -m "
        f"experiments.design gate; gate=prescribed) for false revert <= {param('alpha')} "
        f"and power >= {1 - float(r['params.gate.beta']):g} against a drop of "
        f"{param('min_drop')} over p0 in [{param('p0_low')}, {param('p0_high')}], a "
        f"{param('ledger')}-run ledger and "
        f"concurrent share {param('concurrent')}; its runs' decisions were made by: {said}."
    )
