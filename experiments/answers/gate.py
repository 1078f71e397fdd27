"""The gate section's prescription, computed once by the sweep (issue 24 item 3).

The question is read off the sweep's finished gate runs: the targets (false revert,
missed regression; ``procmem_core.gates`` defaults unless asked otherwise), the drop the
swept gates are designed to catch (the median ``Gate.design_drop``; 0.15 when none has
one), the shortest ledger the sweep tried (the hardest condition; 20 runs, procmem's
default ledger, when every run knew p0), the largest concurrent share it ran, and the
prior's rates it ran (widened to at least [0.3, 0.95]). ``design_gate`` answers it
exactly; the first feasible answer is then simulated (``GateScenario``,
``CHECK_REPLICATIONS`` replications, seed ``CHECK_SEED``) at the p0 where its false-revert
rate is largest and where its power is least, and the simulated rates are compared with
the exact ones (z-scores); a two-sample gate's exact worst cases per ledger size
(``ledger_profile``) complete the answer. ``gate_answer`` returns it as plain JSON,
which ``reports.sections.gate_design`` reads back and renders.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from procmem_core.gates import (
    LEDGER_SIZES,
    DesignQuestion,
    FamilyAnswer,
    Gate,
    TwoSampleGate,
    design_gate,
    ledger_profile,
    make_gate,
    worst_case,
)
from procmem_core.gates.sensitivity import sensitivity
from procmem_core.logged import gate_from_params, parse_param, row_value
from procmem_core.metric import fmt
from simulators.scenarios.gate import GateScenario

GATE_SCENARIO = "gate"
DEFAULT_LEDGER = 20
DEFAULT_DROP = 0.15
DESIGN_MAX_RUNS = 200
CHECK_REPLICATIONS = 20_000
CHECK_SEED = 13
P0_RANGE = (0.3, 0.95)
DESIGN_READS = ("scenario.p_prior", "scenario.ledger_size", "scenario.concurrent_share",
                "gate.min_drop")  # fmt: skip
"""The params ``question_of`` reads: the p0 range, the ledger, the concurrent share and
the gates' design drop (``Gate.design_drop``, their ``min_drop``)."""


def gate_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The finished runs of the gate scenario (the rows the report's gate section reads)."""
    if "scenario" not in runs or "status" not in runs:
        return runs.iloc[0:0]
    keep = (runs["scenario"] == GATE_SCENARIO) & (runs["status"] == "FINISHED")
    return runs[keep].reset_index(drop=True)


def logged_gate(row: pd.Series) -> Gate | None:
    """The gate a run used, rebuilt from its logged ``gate.*`` params (None if it cannot be)."""
    return gate_from_params(lambda k: parse_param(row_value(row, f"params.gate.{k}")))


def _values(rows: pd.DataFrame, key: str) -> list:
    col = f"params.scenario.{key}"
    return [] if col not in rows else list(rows[col])


def question_of(runs: pd.DataFrame, alpha: float, beta: float) -> DesignQuestion | None:
    """The design question the sweep's gate runs pose (module docstring); None without
    gate runs."""
    rows = gate_runs(runs)
    if rows.empty:
        return None
    gates = [logged_gate(row) for _, row in rows.iterrows()]
    drops = [g.design_drop for g in gates if g is not None and g.design_drop is not None]
    drop = float(np.median(drops)) if drops else DEFAULT_DROP
    ledgers = [int(v) for v in _values(rows, "ledger_size") if v is not None and v == v]
    shares = [float(v) for v in _values(rows, "concurrent_share") if v == v and v]
    priors = [float(v) for v in _values(rows, "p_prior") if v == v and v is not None]
    low = min([P0_RANGE[0], *priors])
    ledger = min(ledgers) if ledgers else DEFAULT_LEDGER
    return DesignQuestion(
        ledger_sizes=tuple(sorted({*LEDGER_SIZES, ledger, *ledgers})),
        alpha=alpha,
        beta=beta,
        min_drop=drop,
        ledger=ledger,
        concurrent=max(shares) if shares else 0.0,
        p0_low=max(low, drop + 0.05),
        p0_high=max([P0_RANGE[1], *priors]),
        max_runs=DESIGN_MAX_RUNS,
    )


def simulation_check(a: FamilyAnswer, q: DesignQuestion) -> list[dict]:
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
    return rows


def profile(chosen: FamilyAnswer | None, q: DesignQuestion) -> list[dict]:
    """``ledger_profile`` of the chosen gate at the question's sizes (two-sample gates)."""
    if chosen is None:
        return []
    gate = make_gate(**chosen.config)
    if not isinstance(gate, TwoSampleGate):
        return []
    low = 1 if gate.design == "fixed" else 0
    rows = ledger_profile(gate, [m for m in q.ledger_sizes if m >= low])
    return [dataclasses.asdict(r) for r in rows]


def holds_if(chosen: FamilyAnswer | None, q: DesignQuestion) -> list[dict]:
    """``sensitivity`` of the chosen gate: its exact worst cases at other true drops and
    p0 ranges than the question's (issue 30, "holds if / breaks when")."""
    if chosen is None:
        return []
    gate = make_gate(**chosen.config)
    rows = sensitivity(gate, q, q.ledger)  # as design_gate asks: a 0-run ledger is 0, not None
    return [r.to_json() for r in rows]


def gate_answer(runs: pd.DataFrame, alpha: float, beta: float) -> dict | None:
    """The prescription as JSON-ready data: the targets, the question, every family's
    answer, the index of the chosen one (None: no family meets the targets), the
    simulation check, the ledger profile and the params the question reads; None when
    the sweep has no finished gate run."""
    q = question_of(runs, alpha, beta)
    if q is None:
        return None
    design = design_gate(q)
    chosen = design.chosen
    return {
        "targets": {"false_revert": alpha, "missed_regression": beta},
        "question": dataclasses.asdict(q),
        "answers": [dataclasses.asdict(a) for a in design.answers],
        "chosen": None if chosen is None else design.answers.index(chosen),
        "check": [] if chosen is None else simulation_check(chosen, q),
        "check_seed": CHECK_SEED,
        "profile": profile(chosen, q),
        "sensitivity": holds_if(chosen, q),
        "reads": list(DESIGN_READS),
    }


def gate_metrics(answer: dict) -> dict[str, float]:
    """The chosen gate's headline numbers, as metrics of the sweep's parent run."""
    i = answer["chosen"]
    out = {"answers.gate.feasible": float(i is not None)}
    if i is None:
        return out
    a = answer["answers"][i]
    out |= {
        "answers.gate.max_runs": float(a["max_runs"]),
        "answers.gate.false_revert_worst": float(a["false_revert"]),
        "answers.gate.power_worst": float(a["power"]),
        "answers.gate.sessions_null": float(sum(a["runs_null"])),
        "answers.gate.sessions_at_drop": float(sum(a["runs_alt"])),
    }
    return {k: v for k, v in out.items() if math.isfinite(v)}
