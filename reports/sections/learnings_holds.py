"""The learnings section's "holds if / breaks when" table (issue 30), read from the sweep's
``answers/learnings.json`` (``experiments.answers.learnings``; reports only read)."""

from __future__ import annotations

import math

from reports.holds import breaks_sentence, holds_table, rows_of, short_of
from reports.source import Sweep


def holds_blocks(sweep: Sweep, policy: str, target: float, only: bool = False) -> list:
    """Holds if / breaks when: the prescribed policy's exact figures with the user count,
    an endorsement rate or the reviewer's accuracy moved, in the world without erasures or
    a multi-user writer (``procmem_core.learnings.sensitivity``, computed by the sweep:
    ``answers/learnings.json``; none for sweeps before it did). ``only``: the sweep ran
    one policy, so nothing was prescribed: "the policy run"."""
    found = [
        e
        for name, data in sweep.answers.items()
        if name.split("_")[0] == "learnings"
        for e in data.get("entries", ())
        if e["targets"] == {"policy": policy, "target_precision": target}
    ]
    if not found:
        return []
    rows = rows_of(found[0]["sensitivity"])
    subject = "the policy run" if only else "the prescribed policy"

    def figures(r) -> str:
        if math.isnan(r.figure("precision")):  # nothing promoted: no precision to fall short
            return "it promotes no rule, so its precision is undefined"
        return short_of(f"precision {r.figure('precision'):.3f}", bool(r.holds), f"{target:g}")

    table = holds_table(
        f"{subject} ({policy}), unchanged, in its worst swept world without "
        "erasures or a multi-user writer, with one assumption moved: exact precision and "
        "recall (a reach recursion over distinct supporters, procmem_core.learnings.exact) "
        "and the median wait of a helpful rule (horizon + 1: not within it)",
        rows,
        {
            "precision": ("precision", "{:.3f}".format),
            "recall": ("recall", "{:.3f}".format),
            "median_wait": ("median wait", "{:.0f}".format),
        },
        f"precision >= {target:g}",
    )
    world = "in the assumed world without erasures or a multi-user writer"
    return [breaks_sentence(subject, rows, figures, world), table]
