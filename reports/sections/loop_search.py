"""The loop's search (issue 29, item 4): the trials of the ``loop_search`` preset (Hydra's
Optuna sweeper; ``experiments.search``), ranked by their objective, the regret change.

A trial is called better than another only when it beats it by more than ``NOISE_Z`` = 2
standard errors of the difference, ``sqrt(se_a^2 + se_b^2)`` (independent runs,
``reports.claims.beyond_noise``); the trials within that of the lowest are said to be
tied with it; a trial without a standard error (one replication, or none logged) is
compared with none (the reports' ``beyond_noise`` reads a missing SE as 0, an exact
value). The lowest of many trials is picked for being low, so its own value is
biased down (the winner's curse): the section says so, and the loop section's verdict
on it uses an interval simultaneous over the trials (``loop_evidence``). A search reads no
main effects (``loop_section``): its trials are the sampler's picks, not a grid, so a
value (one trial's explore rate) is not a mean over the other settings.
"""

from __future__ import annotations

import math

import pandas as pd

from procmem_core.metric import fmt
from reports.claims import Option, beyond_noise
from reports.document import Table
from reports.evidence import NOISE_Z
from reports.sections.loop_verdict import swept_overrides

SWEEPER_TAG = "procmem.sweeper"
"""The parent run's tag naming the sweeper's class (``experiments.callbacks``)."""
MAX_NAMED = 2


def is_search(parent_tags: dict[str, str]) -> bool:
    """Whether the sweep was a search (the Optuna sweeper), from its parent's tags."""
    return "optuna" in parent_tags.get(SWEEPER_TAG, "").lower()


def trial_name(row: pd.Series, rows: pd.DataFrame) -> str:
    """A trial by its searched values (the params that vary over the trials, as config
    overrides, numbers to 3 significant digits); its configuration label without any."""
    parts = []
    for item in swept_overrides(row, rows):
        key, _, value = item.partition("=")
        try:
            number = float(value)
        except ValueError:
            parts.append(item)
            continue
        parts.append(f"{key}={number:.3g}")
    return ", ".join(parts) or str(row.get("config", ""))


def named_trials(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with each trial's ``config`` its searched values (``trial_name``). A grid's
    labels keep only the params that tell its rows apart; in a search one continuous value
    does that alone, so a trial at strike limit 0 and explore rate 0.021 was "concurrent
    share 0.42" in every sentence, table and ``loop_verdict.json``'s configuration."""
    return rows.assign(config=[trial_name(r, rows) for _, r in rows.iterrows()])


def trial_options(rows: pd.DataFrame, objective: str = "regret_change") -> list[Option]:
    """Each trial as an ``Option`` (its searched values, objective and SE), lowest first."""
    options = [
        Option(trial_name(r, rows), float(r[objective]),
               float(r.get(f"{objective}_se", math.nan)))
        for _, r in rows.iterrows()
        if pd.notna(r.get(objective))
    ]  # fmt: skip
    return sorted(options, key=lambda o: o.value)


def _known(o: Option) -> bool:
    """Whether ``o`` has a standard error (NaN: one replication, or none logged)."""
    return math.isfinite(o.se)


def compare(a: Option, b: Option) -> str:
    """``beyond`` (more than ``NOISE_Z`` SE of the difference apart), ``tied``, or
    ``unknown`` when either SE is missing: no SE is no evidence, not an exact value."""
    if not (_known(a) and _known(b)):
        return "unknown"
    return "beyond" if beyond_noise(a, b) else "tied"


def search_sentence(rows: pd.DataFrame) -> str:
    """The lowest trial, and which of the others it beats beyond the noise."""
    options = trial_options(rows)
    if not options:
        return "The search has no finished trial with a regret change."
    best, others = options[0], options[1:]
    beaten = [o for o in others if compare(best, o) == "beyond"]
    tied = [o for o in others if compare(best, o) == "tied"]
    unknown = [o for o in others if compare(best, o) == "unknown"]
    n = rows.iloc[0].get("params.scenario.replications")
    each = f" of {int(float(n))} replication{'s' * (float(n) != 1)} each" if pd.notna(n) else ""
    text = (
        f"The search ran {len(options)} trial{'s' if len(options) > 1 else ''}{each}; the "
        f"lowest regret change is {fmt(best.value, best.se)} with {best.name}. "
    )
    if not others:
        return text + "There is no other trial to compare it with."
    text += (
        f"It beats {len(beaten)} of the other {len(others)} trials by more than {NOISE_Z:g} "
        f"SE of the difference"
    )
    if tied:
        names = "; ".join(o.name for o in tied[:MAX_NAMED])
        more = f" and {len(tied) - MAX_NAMED} more" if len(tied) > MAX_NAMED else ""
        one = len(tied) == 1
        text += (
            f"; {len(tied)} {'is' if one else 'are'} within {NOISE_Z:g} SE of it, so the "
            f"search cannot call it better than {'that one' if one else 'them'} ({names}{more})"
        )
    if unknown:
        who = "that trial has" if len(unknown) == 1 else "those trials have"
        who = who if _known(best) else "the lowest has"
        text += (
            f"; {len(unknown)} cannot be compared with it: {who} no standard error (one "
            "replication, or none logged)"
        )
    return text + (
        ". The lowest of the trials is picked for being low, so its value is biased down "
        "(the winner's curse): confirm it with fresh seeds."
    )


VERDICT_WORDS = {"beyond": "yes", "tied": "no: tied", "unknown": "unknown: no SE"}


def search_table(rows: pd.DataFrame) -> Table | None:
    """Every trial, lowest regret change first, against the lowest (None: no trial
    finished with a regret change)."""
    options = trial_options(rows)
    if not options:
        return None
    best = options[0]
    records = []
    for o in options:
        d, se = o.value - best.value, math.hypot(o.se, best.se)  # NaN when either is unknown
        records.append(
            {
                "trial": o.name,
                "regret change": fmt(o.value, o.se),
                "minus the lowest": "" if o is best else fmt(d, se),
                f"worse by > {NOISE_Z:g} SE?": "" if o is best else
                VERDICT_WORDS[compare(o, best)],
            }
        )  # fmt: skip
    return Table(
        f"The search's trials, lowest regret change first (± SE over replications), each "
        f"against the lowest: the difference with its SE, and whether it is worse by more "
        f"than {NOISE_Z:g} SE of the difference",
        pd.DataFrame(records),
    )
