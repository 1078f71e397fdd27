"""The sweep's design answers, read back (issue 24 item 3: reports only read).

The design questions a section answers (the gate prescription) are asked by the sweep
when it ends (``experiments.answers``) and logged on its parent run as
``answers/<name>.json``; ``load_sweep`` reads them into ``Sweep.answers``. A section
finds its answer by name and targets (``answer``); a sweep without it (a store written
before the sweep computed them, or answers at other targets) is one clear line naming
the run and what to do.
"""

from __future__ import annotations

from typing import Any

from reports.errors import ReportError


def answer(sweep: Any, section: str, targets: dict[str, float]) -> dict:
    """The answer for ``section`` at ``targets`` among ``sweep.answers`` (module docstring)."""
    found = [a for n, a in sweep.answers.items() if n.split("_")[0] == section]
    for a in found:
        if all(a.get("targets", {}).get(k) == v for k, v in targets.items()):
            return a
    run = f"run {sweep.parent_id} ({sweep.parent_name}) of experiment '{sweep.experiment}'"
    asked = ", ".join(f"{k} {v:g}" for k, v in targets.items())
    if sweep.parent_id == "memory":
        how = ("pass Sweep.from_results(..., answers=experiments.answers.sweep_answers(runs, "
               "...)) at these targets")  # fmt: skip
    elif found:
        flags = " ".join(f"--max-{k.replace('_', '-')} {v:g}" for k, v in targets.items())
        how = (f"the sweep answered it at other targets; compute these with: python -m "
               f"experiments.answers --run {sweep.parent_id} {flags}")  # fmt: skip
    else:
        how = (f"it was swept before sweeps computed their design answers; re-run the sweep "
               f"(python -m experiments.run -m experiment={sweep.experiment})")  # fmt: skip
    raise ReportError(f"{run} has no {section} design answer at {asked} "
                      f"(answers/{section}*.json): {how}")  # fmt: skip
