"""The two demo tasks' sections: the notebook seed's confidence demo and the LLM replay.

Both read what the runs logged: metrics from the sweep's runs table, files through
``Sweep.artifact`` and tables through ``Sweep.table`` (reports/source.py), so the report
needs only the MLflow store, never the experiments code.

- ``seed_demo`` (experiments/tasks/seed_demo.py): metrics ``final_confidence.<title>`` and
  ``threshold``; artifacts ``figures/confidence_paths.png``, ``seed_demo.txt`` (what it
  prints) and table ``confidence_paths``.
- ``llm_replay`` (experiments/tasks/llm_replay.py, docs/llm.md): procedure counts, tokens,
  latency, ``failed`` and ``failed_stage``; artifacts ``procedures.json``,
  ``system_prompt_1.txt``, ``system_prompt_2.txt``, ``error.json`` and table ``calls``.
  A job that raised is FAILED with ``traceback.txt`` and no metrics.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from reports.configs import label
from reports.document import Figure, Preformatted, Section, Table
from reports.source import Sweep, find_param

SEED_TASK = "seed_demo"
REPLAY_TASK = "llm_replay"
FINAL_PREFIX = "final_confidence."
REPLAY_STAGES = {1: "session 1", 2: "learn", 3: "session 2"}
"""``failed_stage`` codes, as ``experiments.tasks.llm_replay.STAGES`` writes them."""
MAX_DETAILED = 6
"""Replays shown in full (procedures, prompts, calls); the cost table lists them all."""
TRACEBACK_LINES = 15
COST_COLUMNS = {
    "n_procedures": "procedures",
    "n_dropped": "dropped",
    "n_shown_session_2": "shown in session 2",
    "n_calls": "calls",
    "n_cached_calls": "cached calls",
    "n_truncated_replies": "truncated replies",
    "tokens_total": "tokens",
    "tokens_learn": "tokens (learn)",
    "tokens_reasoning": "tokens (reasoning)",
    "latency_s_total": "latency (s)",
    "latency_s_learn": "latency learn (s)",
}


def _number(row: pd.Series, name: str) -> float | None:
    value = row.get(name)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(value)


def _text(sweep: Sweep, run_id: str, path: str) -> str | None:
    local = sweep.artifact(run_id, path)
    return None if local is None else local.read_text(encoding="utf-8")


def _json(sweep: Sweep, run_id: str, path: str) -> Any:
    text = _text(sweep, run_id, path)
    return None if text is None else json.loads(text)


def _traceback_tail(sweep: Sweep, run_id: str) -> str | None:
    text = _text(sweep, run_id, "traceback.txt")
    if text is None:
        return None
    return "\n".join(text.rstrip().splitlines()[-TRACEBACK_LINES:])


# ---------------------------------------------------------------- the seed's demo


def _side(confidence: float, threshold: float) -> str:
    if confidence > threshold:
        return "above"
    return "at" if confidence == threshold else "below"


def _seed_sentence(finals: dict[str, float], threshold: float, shown: list[str]) -> str:
    """One sentence: each procedure's final confidence against the threshold, highest
    first, and which of them the printed system prompt carries."""
    order = sorted(finals, key=lambda t: -finals[t])
    sides = [
        f"'{t}' ends at {finals[t]:.2f}, {_side(finals[t], threshold)} "
        + (f"the prompt threshold {threshold:.2f}" if i == 0 else "it")
        for i, t in enumerate(order)
    ]
    if not shown:
        carried = "no learned procedure is"
    elif len(shown) == len(order):
        carried = "every procedure is"
    else:
        carried = (
            f"only {' and '.join(repr(t) for t in shown)} {'is' if len(shown) == 1 else 'are'}"
        )
    return (
        f"The seed's demo shows confidence following outcomes: {', and '.join(sides)}, "
        f"so {carried} in the system prompt."
    )


def seed_demo_section(sweep: Sweep) -> Section | None:
    """What the seed's confidence demo shows: final confidences against the threshold, the
    procedure that makes the prompt, the confidence-path figure and the printed text."""
    runs = sweep.scenario_runs(SEED_TASK)
    if runs.empty:
        return None
    title = "The seed's confidence demo"
    done = runs[runs["status"] == "FINISHED"]
    if done.empty:
        run_id = runs["run_id"].iloc[-1]
        blocks: list = []
        tail = _traceback_tail(sweep, run_id)
        if tail:
            blocks.append(Preformatted(f"Traceback of run {run_id[:8]} (last lines)", tail))
        answer = f"The seed's confidence demo did not finish: {len(runs)} run(s), none FINISHED."
        return Section("seed_demo", title, answer, blocks)
    run = done.iloc[-1]
    run_id = run["run_id"]
    finals = {
        m.removeprefix(FINAL_PREFIX): float(run[m])
        for m in sweep.metric_names
        if m.startswith(FINAL_PREFIX) and _number(run, m) is not None
    }
    threshold = _number(run, "threshold")
    if threshold is None:  # logged before the task recorded its threshold: the rule's
        param = find_param(sweep.param_names, "threshold", "rule")
        threshold = _number(run, param) if param else None
    text = _text(sweep, run_id, "seed_demo.txt")
    if text is not None:
        prompt = text.split("\n\n", 1)[-1]
        shown = [t for t in finals if t in prompt]
    else:
        shown = [t for t, c in finals.items() if threshold is not None and c >= threshold]
    if threshold is None or not finals:
        answer = (
            "The seed's confidence demo ran, but its final confidences or threshold were "
            "not logged."
        )
    else:
        answer = _seed_sentence(finals, threshold, shown)
    blocks = []
    if len(runs) > 1:
        blocks.append(
            f"{len(runs)} seed_demo runs; shown: the latest finished one, {run_id} "
            "(the demo is deterministic)."
        )
    png = sweep.artifact(run_id, "figures/confidence_paths.png")
    if png is not None:
        caption = "Each procedure's confidence after every session it was applied in"
        if threshold is not None:
            caption += f"; dashed: the prompt threshold {threshold:.2f}"
        blocks.append(Figure("seed_demo_confidence_paths", png.read_bytes(), caption + "."))
    paths = sweep.table("confidence_paths", [run_id])
    if not paths.empty:
        wide = paths.pivot(index="procedure", columns="session", values="confidence")
        wide = wide.reindex([t for t in finals if t in wide.index] or list(wide.index))
        wide.columns = [f"after {s}" for s in wide.columns]
        blocks.append(
            Table("Confidence after each applied session (0: initial)", wide.reset_index())
        )
    if text is not None:
        blocks.append(
            Preformatted(
                "What the demo printed: the confidence paths, then the system prompt", text
            )
        )
    else:
        blocks.append("The run did not log the printed text (seed_demo.txt).")
    return Section("seed_demo", title, answer, blocks)


# ---------------------------------------------------------------- the LLM replay


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
            blocks.append(Table(f"{prefix}Procedures extracted (procedures.json)", procs))
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
                )
            )
    for i, text in ((1, _text(sweep, run_id, "system_prompt_1.txt")), (2, prompt_2)):
        if text is not None:
            blocks.append(Preformatted(f"{prefix}System prompt of session {i}", text))
    calls = sweep.table("calls", [run_id])
    if not calls.empty:
        blocks.append(
            Table(f"{prefix}Model calls (tables/calls.parquet)", calls.drop(columns="run_id"))
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
    blocks: list = [Table("Outcome and cost per replay run", _cost_table(outcomes))]
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
