"""``python -m experiments.analyze LOGS --out DIR``: a deployment's evidence read from its
session log (docs/logs.md): a log directory, a ``ProcedureStore`` (an SQLite file or a
PostgreSQL URI), or MLflow (a run's
log folder, the live loop's traces); ``read.source_kind`` tells them apart.

The log is read and checked in full first (``read``; a bad value exits non-zero naming
file, row, column, value and what is allowed, before anything is logged); then the
analyses of ``procmem_core.logs`` run on its arrays and their files are written to DIR
(``lifts.csv``, ``report.md``, ``index.html``) and logged as one MLflow run in experiment
``analyze`` (the tracking store of ``experiments.stores``: ``--tracking-uri``, else
``$MLFLOW_TRACKING_URI``, else the SQLite store at the repo root).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from experiments.analyze.read import read_log
from experiments.analyze.report import lift_section, lifts_frame, write_report
from experiments.analyze.steps import (
    gate_section,
    prescription_section,
    rule_section,
    world_section,
)
from procmem_core.errors import ParameterError, check_probability
from procmem_core.graph.postgres import is_uri, shown_uri
from procmem_core.logs import SCHEMA_VERSION, Log, estimate_lifts
from procmem_core.logs.world import check_fittable

EXPERIMENT = "analyze"
FILES = ("lifts.csv", "gate_replay.csv", "rule_replay.csv", "world.json", "prescriptions.csv",
         "report.md", "index.html")  # fmt: skip
"""Every file an analysis may write to DIR. A previous analysis's are removed first, so DIR
(and the MLflow run that logs it) holds this log's files only: a log without runs leaves
no gate replay of another log behind."""


@dataclass
class Analysis:
    """What an analysis wrote: its files, summary metrics and MLflow run id."""

    out: Path
    files: list[str]
    metrics: dict[str, float] = field(default_factory=dict)
    run_id: str | None = None


def check_options(level: float, target_lift: float) -> None:
    """The command's numbers, refused (``ParameterError`` naming the flag) before the log
    is read or anything written: ``--level`` in (0, 1), ``--target-lift`` a non-zero lift
    of at most 0.5 in size (the planner sizes it in the direction the success rate allows,
    ``sized_lift``; past 0.5, rates near 0.5, which the bootstrap may draw, allow
    neither)."""
    check_probability("--level", level, open_low=True, open_high=True)
    if not (isinstance(target_lift, int | float) and -1 < target_lift < 1 and target_lift):
        raise ParameterError("--target-lift", target_lift, "a non-zero number in (-1, 1)")
    if abs(target_lift) > 0.5:
        raise ParameterError(
            "--target-lift", target_lift,
            "at most 0.5 in size: the planner sizes it up or down from the success rate, "
            f"and a rate between {1 - abs(target_lift):g} and {abs(target_lift):g} allows "
            "neither",
        )  # fmt: skip


def log_lifts(source: str | Path, level: float = 0.95) -> pd.DataFrame:
    """``lifts.csv`` of a log ``source`` (any ``read_log`` takes), as ``analyze_log``
    writes it: ``estimate_lifts`` on the checked sessions, one row per procedure with
    withheld sessions. The live job keeps it with its run (docs/live.md)."""
    return lifts_frame(estimate_lifts(read_log(source).sessions, level=level))


def analyze_log(
    log: Log,
    out: Path,
    source: str,
    level: float = 0.95,
    target_lift: float = 0.1,
    design: bool = True,
    seed: int = 0,
    prescribe: bool = True,
) -> Analysis:
    """Every analysis of a checked log, its files written to ``out`` (``design``: also
    replay the flat rule designed for this log's base rate, ~20 s). A log no world can
    be fitted to is refused before anything is written (``check_fittable``)."""
    check_options(level, target_lift)
    check_fittable(log.sessions)
    out.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        (out / name).unlink(missing_ok=True)
    lifts = estimate_lifts(log.sessions, level=level, target_lift=target_lift)
    lifts_frame(lifts).to_csv(out / "lifts.csv", index=False)
    text, table = lift_section(lifts, level)
    sections: list[tuple[str, str, Any]] = [("Lifts", text, table)]
    metrics = {f"lifts_{k}": v for k, v in lifts.summary.items()}
    if lifts.plan is not None:
        metrics |= {f"plan_{k}": v for k, v in lifts.plan.items()}
    sections.append(gate_section(log, out, metrics))
    sections.append(rule_section(log, out, design))
    section, fit = world_section(log, lifts, out, seed, metrics)
    sections.append(section)
    if prescribe:
        sections.append(prescription_section(log, fit, out, seed, target_lift, metrics))
    write_report(out, source, sections)
    return Analysis(out, sorted(n for n in FILES if (out / n).exists()), metrics)


def track(
    analysis: Analysis, source: str, params: dict[str, Any], uri: str | None, new: bool = False
) -> str:
    """One MLflow run (experiment ``analyze``): params, metrics and DIR's files (``new``:
    the checked store does not exist yet, so say where it is created)."""
    from experiments.stores import announce_new
    from experiments.tracking import Tracker

    tracker = Tracker(EXPERIMENT, uri)
    if new:
        announce_new(tracker.uri)
    run_id = tracker.start_run(f"analyze {Path(source).name}", {"procmem.log": source})
    tracker.log(run_id, params={**params, "schema_version": SCHEMA_VERSION},
                metrics=analysis.metrics)  # fmt: skip
    tracker.log_artifacts(run_id, analysis.out)
    tracker.finish(run_id)
    return run_id


def analyze(
    source: str,
    out: str | Path,
    level: float = 0.95,
    target_lift: float = 0.1,
    tracking_uri: str | None = None,
    track_run: bool = True,
    design: bool = True,
    seed: int = 0,
    prescribe: bool = True,
) -> Analysis:
    """Read and check ``source`` (every check before any output), analyze, track. A
    PostgreSQL URI's password is shown as ``***`` in the report and the run."""
    check_options(level, target_lift)
    log = read_log(source, tracking_uri)
    if track_run:  # the store it will log to, checked before the analysis or any output
        from experiments.stores import check_for, uri_source
        from experiments.stores import tracking_uri as resolve

        new_store = check_for(resolve(tracking_uri), uri_source(tracking_uri))
    source = shown_uri(str(source)) if is_uri(str(source)) else source
    analysis = analyze_log(log, Path(out), source, level, target_lift, design, seed, prescribe)
    if track_run:
        params = {"log": source, "confidence_level": level, "target_lift": target_lift,
                  "rule_design": design, "seed": seed, "prescribe": prescribe}  # fmt: skip
        analysis.run_id = track(analysis, source, params, tracking_uri, new_store)
    return analysis
