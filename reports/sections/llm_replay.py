"""The LLM replay section: what the model learnt, both prompts, calls, cost, failures."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pandas as pd

from reports.configs import label
from reports.document import Preformatted, Section, Table
from reports.options import ReportOptions
from reports.sections import report_section
from reports.sections.seed_demo import (
    COST_COLUMNS,
    MAX_DETAILED,
    REPLAY_STAGES,
    REPLAY_TASK,
    _json,
    _number,
    _text,
    _traceback_tail,
)
from reports.source import Sweep


@dataclass(frozen=True)
class ReplayOutcome:
    """One replay run: ``state`` is completed, failed (the task recorded an error and went
    on) or FAILED (the job raised); ``stage`` and ``error`` say where and what."""

    run: pd.Series
    name: str
    state: str
    stage: str | None
    error: dict | None
    traceback: str | None

    @property
    def error_type(self) -> str:
        """The exception's class name (``ExtractionError``)."""
        return self.error_line.split(":")[0].split(".")[-1]

    @property
    def error_line(self) -> str:
        if self.error:
            return f"{self.error.get('type', 'error')}: {self.error.get('message', '')}"
        if self.traceback:
            return self.traceback.splitlines()[-1]
        return "no error recorded"


def _outcome(sweep: Sweep, run: pd.Series, swept: list[str]) -> ReplayOutcome:
    run_id = run["run_id"]
    name = str(run.get("run_name") or run_id[:8])
    if swept:
        name += f" ({label(run, swept, '')})"
    if run["status"] != "FINISHED":
        error = _json(sweep, run_id, "error.json")
        stage = error.get("stage") if error else None
        return ReplayOutcome(run, name, run["status"], stage, error, _traceback_tail(sweep, run_id))
    if _number(run, "failed"):
        code = _number(run, "failed_stage")
        stage = REPLAY_STAGES.get(int(code), "unknown") if code is not None else "unknown"
        return ReplayOutcome(run, name, "failed", stage, _json(sweep, run_id, "error.json"), None)
    return ReplayOutcome(run, name, "completed", None, None, None)


def _cost(run: pd.Series) -> str:
    tokens, learn = _number(run, "tokens_total"), _number(run, "tokens_learn")
    latency, calls = _number(run, "latency_s_total"), _number(run, "n_calls")
    cached = _number(run, "n_cached_calls") or 0
    out = f"{tokens or 0:,.0f} tokens"
    if learn is not None:
        out += f" ({learn:,.0f} for the extraction)"
    out += f" and {latency or 0:.3g} s of model latency over {calls or 0:.0f} calls"
    return out + (f" ({cached:.0f} from the cache)" if cached else "")


def _clause(o: ReplayOutcome) -> str:
    run = o.run
    if o.state == "completed":
        n = _number(run, "n_procedures") or 0
        return (
            f"learned {n:.0f} procedure(s) ({_number(run, 'n_dropped') or 0:.0f} dropped, "
            f"{_number(run, 'n_shown_session_2') or 0:.0f} shown in session 2's prompt) "
            f"for {_cost(run)}"
        )
    if o.state == "failed":
        return (
            f"failed at the {o.stage} stage ({o.error_type}) after learning "
            f"{_number(run, 'n_procedures') or 0:.0f} procedure(s), spending {_cost(run)}"
        )
    if o.traceback is None:
        return f"ended {o.state} with no metrics and no traceback logged"
    return f"{o.state} ({o.error_type}; traceback below) with no metrics logged"


def _replay_answer(outcomes: list[ReplayOutcome]) -> str:
    if len(outcomes) == 1:
        o = outcomes[0]
        model = o.run.get("params.llm.model")
        who = f"The model {model}" if isinstance(model, str) else "The model"
        return f"{who} {_clause(o)}."
    done = sum(o.state == "completed" for o in outcomes)
    parts = "; ".join(f"{o.name} {_clause(o)}" for o in outcomes)
    return f"{done} of {len(outcomes)} replays completed: {parts}."


def _cost_table(outcomes: list[ReplayOutcome]) -> pd.DataFrame:
    rows = []
    for o in outcomes:
        row: dict[str, Any] = {"run": o.name, "model": o.run.get("params.llm.model")}
        row["outcome"] = o.state if o.stage is None else f"{o.state} at {o.stage}"
        for metric, heading in COST_COLUMNS.items():
            row[heading] = _number(o.run, metric)
        rows.append(row)
    return pd.DataFrame(rows)


def _error_text(o: ReplayOutcome) -> str:
    lines = [o.error_line] if o.error else []
    for key in ("reason", "kind", "status", "code"):
        if o.error and o.error.get(key) is not None:
            lines.append(f"{key}: {o.error[key]}")
    if o.traceback:
        lines += ["", o.traceback] if lines else [o.traceback]
    return "\n".join(lines)


def _replay_blocks(sweep: Sweep, o: ReplayOutcome, prefix: str) -> list:
    run_id = o.run["run_id"]
    blocks: list = []
    if o.state != "completed":
        where = f" at the {o.stage} stage" if o.stage else ""
        source = "error.json" if o.error else "traceback.txt"
        blocks.append(
            Preformatted(f"{prefix}{o.state.capitalize()}{where} ({source})", _error_text(o))
        )
    prompt_2 = _text(sweep, run_id, "system_prompt_2.txt")
    learned = _json(sweep, run_id, "procedures.json")
    if learned is not None:
        procs = pd.DataFrame(
            learned.get("procedures", []),
            columns=["title", "trigger", "description", "confidence"],
        )
        if prompt_2 is not None:
            procs["in prompt 2"] = ["yes" if t in prompt_2 else "no" for t in procs["title"]]
        if procs.empty:
            blocks.append(f"{prefix}The model extracted no procedure.")
        else:
            blocks.append(
                Table(f"{prefix}Procedures extracted (procedures.json)", procs, detail=False)
            )
        dropped = learned.get("dropped", [])
        if dropped:
            blocks.append(
                Table(
                    f"{prefix}Entries the policy dropped",
                    pd.DataFrame(
                        {
                            "index": [d.get("index") for d in dropped],
                            "reason": [d.get("reason") for d in dropped],
                            "entry": [
                                json.dumps(d.get("entry"), ensure_ascii=False) for d in dropped
                            ],
                        }
                    ),
                    detail=False,
                )
            )
    for i, text in ((1, _text(sweep, run_id, "system_prompt_1.txt")), (2, prompt_2)):
        if text is not None:
            blocks.append(Preformatted(f"{prefix}System prompt of session {i}", text))
    calls = sweep.table("calls", [run_id])
    if not calls.empty:
        blocks.append(
            Table(
                f"{prefix}Model calls (tables/calls.parquet)",
                calls.drop(columns="run_id"),
                detail=False,
            )
        )
    return blocks


def replay_section(sweep: Sweep) -> Section | None:
    """What the model learned from session 1 and what it cost, per replay run: the
    procedures, both system prompts, the calls, and the error of a failed replay."""
    runs = sweep.scenario_runs(REPLAY_TASK)
    if runs.empty:
        return None
    swept = [p for p in sweep.swept_params if p in runs.columns]
    outcomes = [_outcome(sweep, row, swept) for _, row in runs.iterrows()]
    blocks: list = [Table("Outcome and cost per replay run", _cost_table(outcomes), detail=False)]
    for o in outcomes[:MAX_DETAILED]:
        blocks.extend(_replay_blocks(sweep, o, f"{o.name}: " if len(outcomes) > 1 else ""))
    if len(outcomes) > MAX_DETAILED:
        blocks.append(
            f"Procedures, prompts and calls are shown for the first {MAX_DETAILED} of "
            f"{len(outcomes)} runs; the others are in each run's MLflow artifacts."
        )
    return Section(
        "llm_replay",
        "LLM replay: what the model learned and what it cost",
        _replay_answer(outcomes),
        blocks,
    )


@report_section("llm_replay", order=80)
def _llm_replay_report(sweep: Sweep, options: ReportOptions) -> Section | None:
    return replay_section(sweep)
