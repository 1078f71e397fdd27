"""The gate section's prescription: a gate that meets the targets at the worst case, or what
it would take, read from the sweep's answer (issue 24 item 3: reports only read).

The sweep asks the design question when it ends (``experiments.answers.gate``): the
report's targets (false revert, missed regression), the drop the swept gates are
designed to catch, the shortest ledger the sweep tried (the hardest condition; 20 runs,
procmem's default ledger, when every run knew p0), the largest concurrent share it ran,
and the prior's rates it ran (widened to at least [0.3, 0.95]); ``design_gate`` answers
it exactly, the answer's gate is simulated (``GateScenario``) at the p0 where its
false-revert rate is largest and where its power is least (z-scores against the exact
rates), and a two-sample gate's exact worst cases per ledger size (``ledger_profile``)
are added. All of it is logged as the parent run's ``answers/gate.json``; ``prescribe``
reads it back (``reports.answers.answer``) and this module renders it. The question asks
for the design objective ``null_runs`` (the fewest expected runs when nothing changed),
and the sentence gives the sessions a revision takes when nothing changed and at the
drop, both arms counted at the concurrent share. A two-sample gate recalibrates its
levels for the ledger it sees, so its guarantee holds at any ledger size; the section
shows its exact worst cases against the ledger size and the sessions it takes against
the concurrent share (its error rates, read in pairs, do not depend on it).
``recommendations.json`` holds the gate's ``make_gate`` parameters, the question, the
objective, the sessions, the exact worst cases (also per ledger size) and the simulation
check.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from procmem_core.gates import DesignQuestion, FamilyAnswer, GateDesign, LedgerRow, make_gate
from procmem_core.gates.early_stop import FrontierPoint, NullRunsBound
from procmem_core.gates.sensitivity import SensitivityRow
from reports.answers import answer
from reports.claims import calendar
from reports.document import Table
from reports.options import SESSIONS_PER_DAY
from reports.recommend import GateTargets
from reports.sections import gate_ledger
from reports.source import Sweep


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
    reads: tuple[str, ...] = ()
    """The params the question reads (``experiments.answers.gate.DESIGN_READS``)."""
    check_seed: int | None = None
    """The seed of the simulation check."""
    holds: tuple[SensitivityRow, ...] = ()
    """The chosen gate's exact worst cases at other drops and p0 ranges (``sensitivity``)."""

    @property
    def command(self) -> str:
        return command_of(self.question)

    def sentence(self) -> str:
        """The section's answer: what to use, then its guarantee and what a decision costs
        (the opening, two sentences of at most about 50 words each); then the exact worst
        cases at the question's ledger and share, the simulation check, the sessions per
        arm with their calendar time, the guarantee across ledger sizes and where it
        breaks (the paragraph after the opening, ``reports.document.Section``)."""
        q = self.question
        goal = (
            f"false revert <= {q.alpha:g} and missed regression <= {q.beta:g} against a drop "
            f"of {q.min_drop:g}"
        )
        at = f"with a {q.ledger}-run ledger" + (
            f" and concurrent share {q.concurrent:g}" if q.concurrent else ""
        )
        if self.chosen is None:
            return self.infeasible_sentence(goal, at)
        a, gate = self.chosen, make_gate(**self.chosen.config)
        sim = "simulation agrees" if self.agrees else "simulation disagrees (see table)"
        return (
            f"Use the {gate.describe()} with max_runs {a.max_runs}{self.accepts(a)}. "
            f"At every prior rate p0 in [{q.p0_low:g}, {q.p0_high:g}] it keeps {goal} (exact), "
            f"and a decision costs {sum(a.runs_null):.1f} sessions when nothing changed and "
            f"{sum(a.runs_alt):.1f} at that drop (both arms, expected, worst p0). "
            f"Exact worst cases {at}: false revert <= {a.false_revert:.4f}, power >= "
            f"{a.power:.3f}; {sim}. {sessions_phrase(a, q, self.sessions_per_day)}; "
            f"{self.runs_basis(a)}.{self.ledger_phrase()}{self.holds_sentence()}"
        )

    def reads_how(self) -> dict[str, str]:
        """How the design question reads each swept world parameter
        (``experiments.answers.gate.question_of``): the p0 range covers every prior rate,
        the design is made at the smallest ledger and the largest concurrent share."""
        q = self.question
        return {
            "scenario.p_prior": f"the p0 range [{q.p0_low:g}, {q.p0_high:g}] covers it; ",
            "scenario.ledger_size": f"designed at the smallest, {q.ledger}; ",
            "scenario.concurrent_share": f"designed at the largest, {q.concurrent:g}; ",
        }

    def infeasible_sentence(self, goal: str, at: str) -> str:
        """No family meets the targets: that, the closest gate, and what it would take."""
        q = self.question
        best = max(self.design.answers, key=lambda x: (x.false_revert <= q.alpha, x.power))
        needs = (
            " (it needs concurrent control, which this question's runs did not have)"
            if best.design == "concurrent" and q.concurrent == 0
            else ""
        )
        return (
            f"No gate meets {goal} at every prior rate p0 in [{q.p0_low:g}, {q.p0_high:g}] "
            f"{at} within {q.max_runs} runs. The closest is the {designed_label(best)}"
            f"{needs}: exact worst-case power {best.power:.3f}. To meet them: "
            f"{self.what_it_takes()}."
        )

    def ledger_phrase(self) -> str:
        """How the guarantee holds when the prior's ledger is not the question's."""
        return gate_ledger.ledger_phrase(self.question, self.profile)

    def ledger_table(self) -> Table | None:
        """The chosen gate's exact worst cases against the ledger size."""
        return gate_ledger.ledger_table(self.question, self.profile)

    def holds_sentence(self) -> str:
        """Where the guarantee holds and breaks (``gate_ledger.holds_sentence``), led by a
        space to follow the sentence before it; empty without rows."""
        said = gate_ledger.holds_sentence(self.question, self.holds)
        return f" {said}" if said else ""

    def holds_table(self) -> Table | None:
        """Holds if / breaks when (``gate_ledger.holds_table``)."""
        return gate_ledger.holds_table(self.question, self.holds)

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
                "max_runs caps the runs per arm the gate reads; one arm may run ahead while "
                "the other fills"
            )
        return "max_runs caps the revision runs the gate reads"

    def what_it_takes(self) -> str:
        q = self.question
        where = f"exact, worst over p0 in [{q.p0_low:g}, {q.p0_high:g}]"
        # remedies, not reasons: a family that misses alpha is told "use a calibrated one"
        notes = [f"{make_gate(**a.config).describe()} ({where}): {a.note}"
                 for a in self.design.answers if a.note and a.false_revert <= q.alpha]  # fmt: skip
        concurrent = self.design.with_concurrent_control  # by the objective, as its pick
        if self.question.concurrent == 0 and concurrent:
            a = concurrent[0]
            null = a.runs_null
            return (
                f"with concurrent control the {make_gate(**a.config).describe()} meets both "
                f"at {a.max_runs} "
                f"pairs (a decision costs {sum(null):.1f} sessions when nothing changed: "
                f"{null[0]:.1f} on the revision + {null[1]:.1f} on the prior at share 0.5; "
                f"{calendar(sum(null), self.sessions_per_day)})"
            )
        once: list[str] = []  # a remedy two families share is said once, by the first
        for n in notes:
            if not any(n.rsplit("; ", 1)[-1] == o.rsplit("; ", 1)[-1] for o in once):
                once.append(n)
        return "; ".join(once[:2]) if once else "a longer ledger or more runs"

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
            "holds_if": [r.to_json() for r in self.holds],
        }
        return json.dumps(out, indent=1, default=_plain)


def designed_label(a: FamilyAnswer, cap: bool = True) -> str:
    """A design answer's gate with the settings its numbers hold at (issue 30 item 10):
    ``"SPRT, accept at the cap, alpha 0.05, beta 0.2, min runs 3, max_runs 200"``
    (without ``cap``: the family's settings, its cap left out)."""
    c = a.config
    parts = [make_gate(**c).describe()]
    parts += [f"{k} {c[k]:g}" for k in ("alpha", "beta") if isinstance(c.get(k), int | float)]
    parts += [f"min runs {c['min_runs']}"] if "min_runs" in c else []
    return ", ".join([*parts, f"max_runs {a.max_runs}"] if cap else parts)


def sessions_phrase(a: FamilyAnswer, q: DesignQuestion, per_day: float | None = None) -> str:
    """A decision's sessions per arm when nothing changed and when the revision drops by
    min_drop, ``(revision, prior)`` as the design computes them (the prior's sessions at
    the concurrent share, which a one-sample gate lets elapse too; none at share 0), and
    with ``per_day`` the calendar time of both arms together (``reports.claims.calendar``);
    the totals open the section."""
    null, alt = a.runs_null, a.runs_alt
    days = f" (together {calendar((sum(null), sum(alt)), per_day)})" if per_day else ""
    where = f"at share {q.concurrent:g}" if null[1] > 0 else "none on the prior at share 0"
    return (
        f"Per arm ({where}), a decision takes {null[0]:.1f} sessions on the revision + "
        f"{null[1]:.1f} on the prior when nothing changed and {alt[0]:.1f} + {alt[1]:.1f} "
        f"at the drop{days}"
    )


def _plain(value: object) -> object:
    """JSON for numpy scalars (everything else a report writes is plain already)."""
    return value.item() if isinstance(value, np.generic) else str(value)


def _family_answer(d: dict) -> FamilyAnswer:
    """A ``FamilyAnswer`` back from its JSON (tuples and nested records restored)."""
    bound = d.get("bound")
    return FamilyAnswer(
        **d
        | {
            "runs_null": tuple(d["runs_null"]),
            "runs_alt": tuple(d["runs_alt"]),
            "frontier": tuple(FrontierPoint(**p) for p in d.get("frontier", ())),
            "bound": None if bound is None else NullRunsBound(**bound),
        }
    )


def prescription_of(data: dict) -> Prescription:
    """A ``Prescription`` from the sweep's ``answers/gate.json`` (``experiments.answers``)."""
    q = data["question"]
    q = DesignQuestion(**q | {"ledger_sizes": tuple(q["ledger_sizes"])})
    design = GateDesign(q, tuple(_family_answer(a) for a in data["answers"]))
    chosen = None if data["chosen"] is None else design.answers[data["chosen"]]
    profile = tuple(LedgerRow(**r) for r in data["profile"])
    check = pd.DataFrame(data["check"])
    # older sweeps: none
    holds = tuple(SensitivityRow.from_json(r) for r in data.get("sensitivity", ()))
    return Prescription(q, design, chosen, check, profile, reads=tuple(data["reads"]),
                        check_seed=data["check_seed"], holds=holds)  # fmt: skip


def prescribe(sweep: Sweep, targets: GateTargets) -> Prescription:
    """The sweep's answer to the design question at ``targets``, read (module docstring)."""
    wanted = {"false_revert": targets.false_revert, "missed_regression": targets.missed_regression}
    flags = (f"--max-false-revert {targets.false_revert:g} "
             f"--max-missed-regression {targets.missed_regression:g}")  # fmt: skip
    return prescription_of(answer(sweep, "gate", wanted, flags))
