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
from typing import Any

import pandas as pd

from reports.document import Figure, Preformatted, Section, Table
from reports.options import ReportOptions
from reports.sections import report_section
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
        return _unfinished(sweep, runs, title)
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
    blocks = _demo_blocks(sweep, runs, run_id, finals, threshold, text)
    return Section("seed_demo", title, answer, blocks)


def _unfinished(sweep: Sweep, runs: pd.DataFrame, title: str) -> Section:
    """The section when no demo run finished: the last run's traceback tail, if logged."""
    run_id = runs["run_id"].iloc[-1]
    blocks: list = []
    tail = _traceback_tail(sweep, run_id)
    if tail:
        blocks.append(Preformatted(f"Traceback of run {run_id[:8]} (last lines)", tail))
    answer = f"The seed's confidence demo did not finish: {len(runs)} run(s), none FINISHED."
    return Section("seed_demo", title, answer, blocks)


def _demo_blocks(
    sweep: Sweep,
    runs: pd.DataFrame,
    run_id: str,
    finals: dict[str, float],
    threshold: float | None,
    text: str | None,
) -> list:
    """The demo run's figure (confidence paths), its table (confidence after each applied
    session) and the text it printed, with a note when the sweep holds several runs."""
    blocks: list = []
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
            Table(
                "Confidence after each applied session (0: initial)",
                wide.reset_index(),
                detail=False,
            )
        )
    if text is not None:
        blocks.append(
            Preformatted(
                "What the demo printed: the confidence paths, then the system prompt", text
            )
        )
    else:
        blocks.append("The run did not log the printed text (seed_demo.txt).")
    return blocks


# ---------------------------------------------------------------- the LLM replay


@report_section("seed_demo", order=70)
def _seed_demo_report(sweep: Sweep, options: ReportOptions) -> Section | None:
    return seed_demo_section(sweep)
