"""The sweep's design answers, computed once when the sweep ends (issue 24 item 3).

A report only reads: the design questions a report section answers (the gate
prescription: ``design_gate`` and a simulation check of its answer; the flat rule's
exact design: ``design_rule`` per family; the explore planner: ``plan`` and
``fixed_power``; the exact fates the report draws: ``flat_fate``; each prescription's
exact "holds if / breaks when" rows, the review policies' included) are asked here, by
the sweep's finalize step (``experiments.callbacks.SweepTracking`` at multirun end),
from the runs the sweep logged, and their answers are logged on the sweep's parent run
as ``answers/<name>.json`` (plain JSON, with the targets they answer) and as metrics
``answers.<name>.<figure>``. ``python -m reports`` reads them back
(``reports.answers``); a notebook passes ``sweep_answers(sweep.runs)`` to
``Sweep.from_results(..., answers=...)``.

``runs_frame`` lays the logged runs out as the report reads them (``reports.source``):
one row per run with ``run_id``, ``status``, ``scenario`` and the params under
``params.<group>.<key>``, each read back by ``procmem_core.logged.parse_param``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from procmem_core.ab.planner import Design
from procmem_core.errors import ProcmemError
from procmem_core.flat.targets import RuleTargets
from procmem_core.gates.defaults import ALPHA, BETA
from procmem_core.logged import parse_param

KEEP, EXCLUDE = RuleTargets.keep, RuleTargets.exclude
TARGET_POWER = Design.power
DEFAULTS = {"false_revert": ALPHA, "missed_regression": BETA, "target_kept": KEEP,
            "target_excluded": EXCLUDE, "target_power": TARGET_POWER}  # fmt: skip
"""The targets the sweep answers at when it ends (the report's defaults)."""
ASKING = ("gate", "confidence", "explore", "fate", "learnings")
"""The scenarios whose runs pose a design question (``sweep_answers``)."""
ANSWERS_FOLDER = "answers"
"""Where the answers go among the parent run's artifacts."""


def runs_frame(runs: Iterable[Any]) -> pd.DataFrame:
    """MLflow runs as the report lays them out (module docstring)."""
    rows = []
    for run in runs:
        row = {
            "run_id": run.info.run_id,
            "status": run.info.status,
            "scenario": run.data.tags.get("procmem.scenario", "unknown"),
            "start_time": run.info.start_time,
        }
        row |= {f"params.{k}": parse_param(v) for k, v in run.data.params.items()}
        row |= dict(run.data.metrics)
        rows.append(row)
    if not rows:
        return pd.DataFrame(columns=["run_id", "status", "scenario", "start_time"])
    return pd.DataFrame(rows).sort_values("start_time", kind="mergesort").reset_index(drop=True)


def answer_name(section: str, asked: dict[str, float | None]) -> str:
    """``gate`` at the default targets; ``gate_false_revert0.1_missed_regression0.3``
    at others (a sweep may hold answers for several)."""
    given = {k: v for k, v in asked.items() if v is not None and v != DEFAULTS.get(k)}
    return "_".join([section, *(f"{k}{v:g}" for k, v in given.items())])


def sweep_answers(
    runs: pd.DataFrame,
    false_revert: float = ALPHA,
    missed_regression: float = BETA,
    target_kept: float = KEEP,
    target_excluded: float = EXCLUDE,
    target_sessions: int | None = None,
    target_power: float = TARGET_POWER,
) -> dict[str, dict]:
    """Every design answer the sweep's runs pose, by name (``answer_name``): the gate
    prescription at ``false_revert`` (alpha) and ``missed_regression`` (beta); the flat
    rule's design at ``target_kept``, ``target_excluded`` within ``target_sessions`` (None:
    each world's sessions); the explore planner at ``target_power``. The arguments are
    the report's targets (``python -m reports --max-false-revert ...``), their defaults
    the report's."""
    from experiments.answers.explore import explore_answer
    from experiments.answers.fate import fate_answer
    from experiments.answers.gate import gate_answer
    from experiments.answers.learnings import learnings_answer
    from experiments.answers.rule import rule_answer

    out = {}
    gate = gate_answer(runs, false_revert, missed_regression)
    if gate is not None:
        out[answer_name("gate", gate["targets"])] = gate
    rule = rule_answer(runs, target_kept, target_excluded, target_sessions)
    if rule is not None:
        asked = {"target_kept": target_kept, "target_excluded": target_excluded,
                 "target_sessions": target_sessions}  # fmt: skip
        out[answer_name("rule", asked)] = rule
    explore = explore_answer(runs, target_power)
    if explore is not None:
        out[answer_name("explore", {"target_power": target_power})] = explore
    fate = fate_answer(runs)
    if fate is not None:
        out["fate"] = fate
    learnings = learnings_answer(runs)
    if learnings is not None:
        out["learnings"] = learnings
    return out


def answer_metrics(answers: dict[str, dict]) -> dict[str, float]:
    """The answers' headline numbers as parent-run metrics."""
    from experiments.answers.gate import gate_metrics

    return gate_metrics(answers["gate"]) if "gate" in answers else {}


def _plain(value: object) -> object:
    """JSON for numpy scalars and tuples' items (everything else is plain already)."""
    return value.item() if isinstance(value, np.generic) else str(value)


def write_answers(answers: dict[str, dict], folder: Path) -> list[Path]:
    """``<folder>/answers/<name>.json`` for each answer; the files written."""
    (folder / ANSWERS_FOLDER).mkdir(parents=True, exist_ok=True)
    paths = []
    for name, answer in answers.items():
        path = folder / ANSWERS_FOLDER / f"{name}.json"
        path.write_text(json.dumps(answer, indent=1, default=_plain), encoding="utf-8")
        paths.append(path)
    return paths


def finalize_answers(runs: pd.DataFrame, folder: Path) -> dict[str, float]:
    """The finalize step: compute the answers at the default targets and write them under
    ``folder`` (the parent's artifacts, uploaded with them); their metrics. A question the
    engine refuses is said on stderr and left out (the report then names what is missing)."""
    asks = "scenario" in runs and runs["scenario"].isin(ASKING).any()
    if asks:
        print("sweep: computing the design answers the report reads ...", file=sys.stderr)
    start = time.perf_counter()
    try:
        answers = sweep_answers(runs)
    except ProcmemError as exc:
        print(f"the sweep's design answers could not be computed: {exc}", file=sys.stderr)
        return {}
    write_answers(answers, folder)
    if answers:
        names = ", ".join(f"answers/{n}.json" for n in answers)
        print(f"sweep: {names} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return answer_metrics(answers)
