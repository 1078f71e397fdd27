"""The sweep's design answers, read back (issue 24 item 3: reports only read).

The design questions a section answers (the gate prescription, the flat rule's exact
design, the explore planner, the exact fates the report draws) are asked by the sweep
when it ends (``experiments.answers``) and logged on its
parent run as ``answers/<name>.json``; ``load_sweep`` reads them into ``Sweep.answers``.
A file holds one answer or several (``entries``), each with the ``targets`` it answers.
A section finds its answer by section and targets (``answer``); a sweep without it (a
store written before sweeps computed them, or answers at other targets) is one clear
line naming the run and what to do.
"""

from __future__ import annotations

import json
from typing import Any

from procmem_core.logged import rule_key
from reports.errors import ReportError


def _entries(sweep: Any, section: str) -> list[dict]:
    out = []
    for name, data in sweep.answers.items():
        if name.split("_")[0] == section:
            out += data.get("entries", [data])
    return out


def answer(sweep: Any, section: str, targets: dict[str, Any], flags: str = "") -> dict:
    """The ``section`` answer whose targets hold ``targets`` (module docstring); ``flags``:
    the report options that asked for them, for the command that computes them."""
    found = _entries(sweep, section)
    for a in found:
        if all(a.get("targets", {}).get(k) == v for k, v in targets.items()):
            return a
    run = f"run {sweep.parent_id} ({sweep.parent_name}) of experiment '{sweep.experiment}'"
    asked = ", ".join(f"{k} {v:g}" if isinstance(v, int | float) else f"{k} {v}"
                      for k, v in targets.items())  # fmt: skip
    if sweep.parent_id == "memory":
        how = ("pass Sweep.from_results(..., answers=experiments.answers.sweep_answers(runs, "
               "...)) at these targets")  # fmt: skip
    elif found:
        command = f"python -m experiments.answers {sweep.experiment} --run {sweep.parent_id}"
        how = f"the sweep answered it at other targets; compute these with: {command} {flags}"
    else:
        how = (f"it was swept before sweeps computed their design answers (or is a single "
               f"run); re-run the sweep (python -m experiments.run -m "
               f"experiment={sweep.experiment}) or compute them: python -m experiments.answers "
               f"{sweep.experiment} --run {sweep.parent_id} {flags}")  # fmt: skip
    raise ReportError(f"{run} has no {section} design answer at {asked} "
                      f"(answers/{section}*.json): {how.strip()}")  # fmt: skip


def exact_fates(sweep: Any, rule: Any, threshold: float, sessions: int, ps: list[float]) -> list:
    """``flat_fate(p, sessions, rule, threshold).p_excluded`` for each ``p``, as the sweep
    computed them (``answers/fate.json``); a missing one is ``answer``'s one line."""
    index = {
        json.dumps(e["targets"], sort_keys=True): e["p_excluded"] for e in _entries(sweep, "fate")
    }
    out = []
    for p in ps:
        targets = {"rule": rule_key(rule), "threshold": float(threshold),
                   "sessions": int(sessions), "p": float(p)}  # fmt: skip
        key = json.dumps(targets, sort_keys=True)
        if key not in index:
            answer(sweep, "fate", {"rule": rule.describe(), "threshold": float(threshold),
                                   "sessions": int(sessions), "p": float(p)})  # fmt: skip
        out.append(index[key])
    return out
