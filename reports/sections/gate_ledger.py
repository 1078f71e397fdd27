"""The gate section's prescribed gate against the prior's ledger size and the concurrent
share: it recalibrates its levels per ledger size (``TwoSampleGate.levels``), so the
section states its exact worst cases per size (``ledger_profile``, computed by the sweep:
``experiments.answers.gate.profile``) beside those with its levels kept, and its sessions
per share (its error rates, read in pairs, do not move)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from procmem_core.gates import DesignQuestion, FamilyAnswer, LedgerRow, make_gate
from procmem_core.gates.arms import arm_runs
from procmem_core.gates.sensitivity import SensitivityRow
from procmem_core.gates.tolerance import at_least, at_most
from reports import holds
from reports.document import Table

SHARES = (0.25, 0.5, 0.75)
"""Concurrent shares at which the section gives the prescribed gate's sessions."""


def ledger_phrase(q: DesignQuestion, rows: tuple[LedgerRow, ...]) -> str:
    """How the guarantee holds when the prior's ledger is not the question's."""
    if not rows:
        return ""
    worst = max(rows, key=lambda r: r.false_revert)
    kept = max(rows, key=lambda r: r.false_revert_kept)
    powers = [r for r in rows if r.power == r.power]
    weakest = min(powers, key=lambda r: r.power) if powers else None
    power = (
        f"; power, not recalibrated, is least at ledger {weakest.ledger} ({weakest.power:.3f})"
        if weakest is not None
        else ""
    )
    return (
        f" It recalibrates its revert and final levels for the ledger a revision has "
        f"(certified per size), so false revert stays <= {q.alpha:g} "
        f"there: exact worst case <= {worst.false_revert:.4f} at ledgers "
        f"{', '.join(str(r.ledger) for r in rows)}, where its {q.ledger}-run levels "
        f"kept would reach {kept.false_revert_kept:.4f} (at {kept.ledger}){power}."
    )


def ledger_table(q: DesignQuestion, profile: tuple[LedgerRow, ...]) -> Table | None:
    """The chosen gate's exact worst cases against the ledger size."""
    if not profile:
        return None
    rows = [
        {
            "ledger (runs)": r.ledger,
            "false revert, recalibrated (worst, bound)": round(r.false_revert, 4),
            f"false revert, {q.ledger}-run levels kept (worst, bound)": round(
                r.false_revert_kept, 4
            ),
            "power (least, bound)": round(r.power, 3),
            "expected pairs when nothing changed (worst p0)": round(r.runs_null, 1),
            "revert / final level": f"{r.revert_level:.3f} / {r.final_level:.3f}",
        }
        for r in profile
    ]
    return Table(
        f"The prescribed gate against the prior's ledger size, exact over p0 in "
        f"[{q.p0_low:g}, {q.p0_high:g}] (false revert: a bound above over the range; "
        f"power: a bound below, at a drop of {q.min_drop:g}): designed for a "
        f"{q.ledger}-run ledger, it recalibrates its revert and final levels for the "
        "ledger it sees (its accept level is kept, so power and pairs move); the "
        "'levels kept' column is the same gate without recalibration",
        pd.DataFrame(rows),
    )


def share_table(q: DesignQuestion, a: FamilyAnswer | None) -> Table | None:
    """Sessions of the prescribed concurrent gate against the concurrent share."""
    if a is None or a.design != "concurrent" or not q.concurrent:
        return None
    gate = make_gate(**a.config)
    grid = q.p0_range.grid(27)
    shares = sorted({*SHARES, q.concurrent})
    rows = []
    for share in shares:
        row = {
            "concurrent share": share,
            "false revert (worst, bound)": round(a.false_revert, 4),
        }
        for what, drop in (("when nothing changed", 0.0), ("at the drop", q.min_drop)):
            rev, prior = arm_runs(gate, gate.operating_curve(grid, drop, q.ledger), share)
            row[f"sessions {what} (worst p0)"] = round(float(np.max(rev + prior)), 1)
        rows.append(row)
    return Table(
        "The prescribed gate against the concurrent share: it reads pairs (the "
        "revision's i-th run with the prior's i-th concurrent run), so its exact error "
        "rates are the same at every share in (0, 1); the share sets only the sessions "
        f"(both arms, expected, worst p0 of 27; ledger {q.ledger})",
        pd.DataFrame(rows),
    )


def holds_table(q: DesignQuestion, rows: tuple[SensitivityRow, ...]) -> Table | None:
    """Holds if / breaks when: the prescribed gate's exact worst cases with one
    assumption moved (``procmem_core.gates.sensitivity``, computed by the sweep), as every
    section's table is drawn (``reports.holds.holds_table``)."""
    undefined = "undefined (p0 - drop <= 0 in the range)"
    rows = tuple(r if r.note else replace(r, note=undefined) for r in rows)
    return holds.holds_table(
        "the prescribed gate, unchanged, evaluated exactly at other true drops and "
        "prior-rate ranges than it was designed for (the ledger's row set is the table "
        "above, and the concurrent share moves sessions, not these rates); each figure is "
        "a certified bound over the range (exact on a grid of p0, bounded between its "
        "points: false revert from above, power from below), refined only until it "
        "settles the target, so a power well above it may be higher still",
        rows,
        {
            "false_revert": ("worst false revert (upper bound)", "{:.4f}".format),
            "power": ("worst power (lower bound)", "{:.3f}".format),
        },
        f"<= {q.alpha:g}, >= {1 - q.beta:g}",
    )


def holds_sentence(q: DesignQuestion, rows: tuple[SensitivityRow, ...]) -> str:
    """Where the prescribed gate's guarantee holds and where it breaks, told as every
    section tells it (``reports.holds.breaks_sentence``): the figures that miss, each
    against its target (the design's own test, ``at_most`` / ``at_least``)."""

    def figures(r: SensitivityRow) -> str:
        fr, pw = r.figure("false_revert"), r.figure("power")
        said = []
        if not at_most(fr, q.alpha):
            said.append(holds.short_of(f"worst false revert {fr:.4f}", False, f"{q.alpha:g}",
                                       below=False))  # fmt: skip
        if not math.isnan(pw) and not at_least(pw, 1 - q.beta):
            said.append(holds.short_of(f"power {pw:.3f}", False, f"{1 - q.beta:g}"))
        return ", and ".join(said) or f"worst false revert {fr:.4f}, power {pw:.3f}"

    return holds.breaks_sentence("the prescribed gate", rows, figures)
