"""The gate section's prescription: a gate that meets the targets at the worst case, or what
it would take (``procmem_core.gates.design``), verified by simulation.

The question is read off the sweep: the report's targets (false revert, missed
regression), the drop the swept gates are designed to catch, the shortest ledger the sweep
tried (the hardest condition; 20 runs, procmem's default ledger, when every run knew p0),
the largest concurrent share it ran, and the prior's rates it ran (widened to at least [0.3, 0.95]).
The answer's gate is then simulated (``GateScenario``) at the p0 where its false-revert
rate is largest and where its power is least, and the simulated rates are compared with
the exact ones (z-scores). The question asks for the design objective ``null_runs`` (the
fewest expected runs when nothing changed), and the sentence gives the sessions a revision
takes when nothing changed and at the drop, both arms counted at the concurrent share.
A two-sample gate recalibrates its levels for the ledger it sees, so its guarantee holds
at any ledger size; the section shows its exact worst cases against the ledger size
(``ledger_profile``: the sizes in ``LEDGER_SIZES`` and those swept) and the sessions it
takes against the concurrent share (its error rates, read in pairs, do not depend on it).
``recommendations.json`` holds the gate's ``make_gate`` parameters, the question, the
objective, the sessions, the exact worst cases (also per ledger size) and the simulation
check.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from procmem_core.gates import (
    LEDGER_SIZES,
    DesignQuestion,
    FamilyAnswer,
    GateDesign,
    LedgerRow,
    design_gate,
    make_gate,
    worst_case,
)
from reports.claims import calendar
from reports.document import Table
from reports.evidence import fmt
from reports.options import SESSIONS_PER_DAY
from reports.recommend import GateTargets
from reports.sections import gate_ledger
from reports.sections.gate_tables import GateRuns
from reports.source import Sweep, find_param
from simulators.scenarios.gate import GateScenario

DEFAULT_LEDGER = 20
DESIGN_MAX_RUNS = 200
CHECK_REPLICATIONS = 20_000
CHECK_SEED = 13
P0_RANGE = (0.3, 0.95)
DESIGN_READS = ("scenario.p_prior", "scenario.ledger_size", "scenario.concurrent_share",
                "gate.min_drop")  # fmt: skip
"""The params ``question_of`` reads: the p0 range, the ledger, the concurrent share and
the gates' design drop (``Gate.design_drop``, their ``min_drop``)."""


def _values(sweep: Sweep, gates: GateRuns, key: str) -> list:
    col = find_param(sweep.param_names, key, "scenario")
    return [] if col is None else list(gates.rows[col])


def question_of(sweep: Sweep, gates: GateRuns, targets: GateTargets) -> DesignQuestion:
    """The design question the sweep poses (module docstring)."""
    drops = [g.design_drop for g in gates.gates.values() if g.design_drop is not None]
    drop = float(np.median(drops)) if drops else 0.15
    ledgers = [int(v) for v in _values(sweep, gates, "ledger_size") if v is not None and v == v]
    shares = [float(v) for v in _values(sweep, gates, "concurrent_share") if v == v and v]
    priors = [float(v) for v in _values(sweep, gates, "p_prior") if v == v and v is not None]
    low = min([P0_RANGE[0], *priors])
    ledger = min(ledgers) if ledgers else DEFAULT_LEDGER
    return DesignQuestion(
        ledger_sizes=tuple(sorted({*LEDGER_SIZES, ledger, *ledgers})),
        alpha=targets.false_revert,
        beta=targets.missed_regression,
        min_drop=drop,
        ledger=ledger,
        concurrent=max(shares) if shares else 0.0,
        p0_low=max(low, drop + 0.05),
        p0_high=max([P0_RANGE[1], *priors]),
        max_runs=DESIGN_MAX_RUNS,
    )


def command_of(q: DesignQuestion) -> str:
    """The design tool's command line for the question."""
    return (
        f"python -m experiments.design gate --alpha {q.alpha:g} --beta {q.beta:g} "
        f"--min-drop {q.min_drop:g} --ledger {q.ledger} --concurrent {q.concurrent:g} "
        f"--p0-range {q.p0_low:g} {q.p0_high:g} --max-runs {q.max_runs} "
        f"--objective {q.goal.label()}"
    )


@dataclass
class Prescription:
    """The design question, every family's answer, the chosen one and its check."""

    question: DesignQuestion
    design: GateDesign
    chosen: FamilyAnswer | None
    check: pd.DataFrame
    profile: tuple[LedgerRow, ...] = ()
    """The chosen gate's exact worst cases per ledger size (two-sample gates)."""
    sessions_per_day: float = SESSIONS_PER_DAY
    """The session rate calendar time is given at (``--sessions-per-day``)."""

    @property
    def command(self) -> str:
        return command_of(self.question)

    def sentence(self) -> str:
        q = self.question
        where = (
            f"at every prior rate p0 in [{q.p0_low:g}, {q.p0_high:g}], with a {q.ledger}-run "
            f"ledger" + (f" and concurrent share {q.concurrent:g}" if q.concurrent else "")
        )
        goal = (
            f"false revert <= {q.alpha:g} and missed regression <= {q.beta:g} against a drop "
            f"of {q.min_drop:g}"
        )
        if self.chosen is not None:
            a, gate = self.chosen, make_gate(**self.chosen.config)
            sim = "; simulation agrees" if self.agrees else "; simulation disagrees (see table)"
            return (
                f"Use the {gate.describe()} with max_runs {a.max_runs}{self.accepts(a)}: it "
                f"meets {goal} {where} (exact worst cases: false revert <= "
                f"{a.false_revert:.4f}, power >= {a.power:.3f}); "
                f"{sessions_phrase(a, q, self.sessions_per_day)} "
                f"(expected, worst p0; {self.runs_basis(a)}){sim}.{self.ledger_phrase()}"
            )
        best = max(self.design.answers, key=lambda x: (x.false_revert <= q.alpha, x.power))
        return (
            f"No gate meets {goal} {where} within {q.max_runs} runs: the closest is the "
            f"{best.family} gate ({best.design} design), power {best.power:.3f} at "
            f"{best.max_runs} runs; {self.what_it_takes()}."
        )

    def ledger_phrase(self) -> str:
        """How the guarantee holds when the prior's ledger is not the question's."""
        return gate_ledger.ledger_phrase(self.question, self.profile)

    def ledger_table(self) -> Table | None:
        """The chosen gate's exact worst cases against the ledger size."""
        return gate_ledger.ledger_table(self.question, self.profile)

    def share_table(self) -> Table | None:
        """Sessions of the prescribed concurrent gate against the concurrent share."""
        return gate_ledger.share_table(self.question, self.chosen)

    def accepts(self, a: FamilyAnswer) -> str:
        """How the gate stops when nothing changed (its accept boundary), if it has one."""
        level = a.config.get("accept_level")
        if level is None or level <= -10:
            return ""
        return f" and accept level {level:.3f} (it stops early when nothing changed)"

    def runs_basis(self, a: FamilyAnswer) -> str:
        """What the sessions count: with concurrent control the arms fill at random, so
        the revision holds more sessions than the pairs the gate reads (max_runs caps those)."""
        if a.design == "concurrent" and self.question.concurrent:
            return (
                f"max_runs caps the runs per arm the gate reads; with share "
                f"{self.question.concurrent:g} served to the prior the revision accrues more "
                f"while the prior's arm fills"
            )
        return "max_runs caps the revision runs the gate reads"

    def what_it_takes(self) -> str:
        notes = [f"{a.family} ({a.design}): {a.note}" for a in self.design.answers if a.note]
        concurrent = [a for a in self.design.answers if a.design == "concurrent" and a.feasible]
        if self.question.concurrent == 0 and concurrent:
            a = min(concurrent, key=lambda x: x.max_runs)
            null = a.runs_null
            return (
                f"with concurrent control the {a.family} gate meets both at {a.max_runs} "
                f"pairs (a decision costs {sum(null):.1f} sessions when nothing changed: "
                f"{null[0]:.1f} on the revision + {null[1]:.1f} on the prior at share 0.5; "
                f"{calendar(sum(null), self.sessions_per_day)})"
            )
        return "; ".join(notes[:2]) if notes else "a longer ledger or more runs"

    @property
    def agrees(self) -> bool:
        return bool(self.check.empty or (self.check["|z|"] <= 4).all())

    def table(self) -> Table:
        rows = []
        q = self.question
        at = f"worst over p0 in [{q.p0_low:g}, {q.p0_high:g}], ledger {q.ledger}, bound"
        for a in self.design.answers:
            rows.append(
                {
                    "gate family": a.family,
                    "design": a.design,
                    "configuration": designed_label(a),
                    "answer": f"max_runs {a.max_runs}" if a.feasible else "infeasible",
                    f"false revert ({at})": round(a.false_revert, 4),
                    f"power ({at})": round(a.power, 3),
                    "revision sessions null / at drop (expected, worst p0)": (
                        f"{a.runs_null[0]:.1f} / {a.runs_alt[0]:.1f}"
                    ),
                    "prior sessions null / at drop (expected, worst p0)": (
                        f"{a.runs_null[1]:.1f} / {a.runs_alt[1]:.1f}"
                    ),
                    "what it would take": a.note,
                }
            )
        return Table(
            f"The design question, exactly (`{self.command}`): per gate family the design "
            f"meeting both targets at every p0 in the range that the objective "
            f"({self.question.goal.label()}) prefers (false revert: a bound "
            "over the range; power: a bound below it), or the best it can do; computed, not "
            "simulated: the runs in brackets only set the question (their hardest condition)",
            pd.DataFrame(rows),
        )

    def pick(self) -> dict[str, object]:
        """The prescribed gate as named values; when no family meets the targets, the
        closest one (most powerful among those that hold alpha), marked not feasible."""
        q = self.question
        a = self.chosen or max(
            self.design.answers, key=lambda x: (x.false_revert <= q.alpha, x.power)
        )
        return {
            "gate": make_gate(**a.config).describe(),
            "meets_targets": self.chosen is not None,
            "max_runs": a.max_runs,
            "false_revert_rate_worst": a.false_revert,
            "power_worst": a.power,
            "revision_runs_null": a.runs_null[0],
            "revision_runs_at_drop": a.runs_alt[0],
            "prior_runs_null": a.runs_null[1],
            "prior_runs_at_drop": a.runs_alt[1],
            "sessions_null": sum(a.runs_null),
            "sessions_at_drop": sum(a.runs_alt),
            "sessions_per_day": self.sessions_per_day,
            "days_null": sum(a.runs_null) / self.sessions_per_day,
            "days_at_drop": sum(a.runs_alt) / self.sessions_per_day,
        }

    def recommendations(self) -> str:
        """``recommendations.json``: ``make_gate(**gate)`` rebuilds the recommended gate.
        When no gate meets the targets there is no ``gate``: ``instead`` says what to do
        (what each family would need), and ``closest_gate`` is the best it can do, which
        ``make_gate(**closest_gate)`` builds knowing it misses the targets."""
        out: dict[str, object] = {
            "question": self.question.__dict__,
            "command": self.command,
            "feasible": self.chosen is not None,
        }
        if self.chosen is not None:
            out["gate"] = self.chosen.config
        else:
            q = self.question
            best = max(self.design.answers, key=lambda x: (x.false_revert <= q.alpha, x.power))
            out["instead"] = (
                f"no gate meets the targets within {q.max_runs} runs; to get one: "
                f"{self.what_it_takes()}, or relax the targets (a larger drop, alpha or beta)"
            )
            out["closest_gate"] = best.config
        out |= {
            "sentence": self.sentence(),
            "objective": self.question.goal.label(),
            "sessions_null": None if self.chosen is None else sum(self.chosen.runs_null),
            "sessions_at_drop": None if self.chosen is None else sum(self.chosen.runs_alt),
            "answers": [dataclasses.asdict(a) for a in self.design.answers],
            "simulation_check": self.check.to_dict(orient="records"),
            "ledger_profile": [dataclasses.asdict(r) for r in self.profile],
        }
        return json.dumps(out, indent=1, default=_plain)


def designed_label(a: FamilyAnswer) -> str:
    """A design answer's gate with the settings its numbers hold at (issue 30 item 10):
    ``"SPRT, accept at the cap, alpha 0.05, beta 0.2, min runs 3, max_runs 200"``."""
    c = a.config
    parts = [make_gate(**c).describe()]
    parts += [f"{k} {c[k]:g}" for k in ("alpha", "beta") if isinstance(c.get(k), int | float)]
    parts += [f"min runs {c['min_runs']}"] if "min_runs" in c else []
    return ", ".join([*parts, f"max_runs {a.max_runs}"])


def sessions_phrase(a: FamilyAnswer, q: DesignQuestion, per_day: float | None = None) -> str:
    """What a decision costs when nothing changed and when the revision drops by min_drop:
    the sessions in total and per arm, ``(revision, prior)`` as the design computes them
    (the prior's sessions at the concurrent share, which a one-sample gate lets elapse
    too; none at share 0), and with ``per_day`` the calendar time
    (``reports.claims.calendar``)."""

    def cost(r) -> str:
        days = f"; {calendar(sum(r), per_day)}" if per_day else ""
        where = f"at share {q.concurrent:g}" if r[1] > 0 else "none at share 0"
        return (
            f"{sum(r):.1f} sessions ({r[0]:.1f} on the revision + {r[1]:.1f} on the prior, "
            f"{where}{days})"
        )

    return (
        f"a decision costs {cost(a.runs_null)} when nothing changed and {cost(a.runs_alt)} "
        f"when the revision drops by {q.min_drop:g}"
    )


def _plain(value: object) -> object:
    """JSON for numpy scalars (everything else a report writes is plain already)."""
    return value.item() if isinstance(value, np.generic) else str(value)


def simulation_check(a: FamilyAnswer, q: DesignQuestion) -> pd.DataFrame:
    """The chosen gate simulated at its worst p0 for false revert and for power."""
    gate = make_gate(**a.config)
    ledger = q.ledger if q.ledger > 0 else None
    fr = worst_case(gate, 0.0, ledger or 0, q.p0_range)
    pw = worst_case(gate, q.min_drop, ledger or 0, q.p0_range)
    concurrent = a.design == "concurrent"
    rows = []
    for what, p0, metric in (("false revert", fr.at, "false_revert_rate"),
                             ("power", pw.at, "revert_rate_alt")):  # fmt: skip
        scenario = GateScenario(
            gate=gate, p_prior=p0, drops=(0.0, q.min_drop), ledger_size=ledger,
            design=a.design, concurrent_share=q.concurrent if concurrent else 0.0,
            min_drop=q.min_drop, replications=CHECK_REPLICATIONS, table_rows=0,
        )  # fmt: skip
        m = scenario.run(CHECK_SEED).metrics
        z = (m[metric] - m[f"{metric}_exact"]) / m[f"{metric}_se"] if m[f"{metric}_se"] else 0.0
        rows.append(
            {
                "quantity": what,
                "p0 (worst)": round(p0, 4),
                "exact": round(m[f"{metric}_exact"], 4),
                "simulated ± SE": fmt(m[metric], m[f"{metric}_se"]),
                "|z|": round(abs(z), 2),
                "replications": CHECK_REPLICATIONS,
            }
        )
    return pd.DataFrame(rows)


@lru_cache(maxsize=16)
def _design(q: DesignQuestion) -> GateDesign:
    """``design_gate`` once per question in a process (reports are built more than once)."""
    return design_gate(q)


def prescribe(sweep: Sweep, gates: GateRuns, targets: GateTargets) -> Prescription:
    """Ask the design question of the sweep and check the answer by simulation."""
    q = question_of(sweep, gates, targets)
    design = _design(q)
    usable = design.feasible
    chosen = usable[0] if usable else None
    check = simulation_check(chosen, q) if chosen is not None else pd.DataFrame()
    return Prescription(q, design, chosen, check, gate_ledger.profile(chosen, q))
