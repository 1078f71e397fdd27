"""From a logged sweep to the written report: every registered section (``reports.sections``)
that has something to say about the sweep, then the agreement and the sweep itself, all
in one frame (``reports.provenance``: where the numbers come from, the runs behind each
caption, the terms defined where first used).

A report is written to ``reports/out/<experiment>/<parent run id>/`` (one folder per
sweep, never overwritten by another sweep's report) with ``reports/out/<experiment>/latest``
pointing at the newest, or to ``--out``. It is logged back to the parent run: the files
under ``report/``, each section's answer and recommended configuration as tags
(``procmem.report.<section>``, ``procmem.recommended.<section>``), the recommended row's
numbers as metrics (``recommended.<section>.<column>``), and the key tables as MLflow
tables, so two sweeps compare in the MLflow UI without opening the HTML.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd

from reports.document import Report, Section, Table
from reports.errors import ReportError
from reports.options import ReportOptions
from reports.pages import write_report
from reports.provenance import caption_runs, define_terms, provenance_section
from reports.sections import sections
from reports.source import Sweep, _client, load_sweep, log_report
from reports.summary import agreement_section, summary_table, sweep_section

OUT_ROOT = Path(__file__).resolve().parent / "out"
LATEST = "latest"
RECOMMENDED = "Recommended"
"""A section's table whose caption starts so holds its pick in the first row."""


def build_report(
    sweep: Sweep, options: ReportOptions | None = None, command: str = "python -m reports"
) -> Report:
    """Every section the sweep has data for, recommendations first, in the frame."""
    if not isinstance(sweep, Sweep):
        raise ReportError(f"sweep is {type(sweep).__name__}: expected a reports.source.Sweep "
                          "(load_sweep or Sweep.from_results)")  # fmt: skip
    if options is not None and not isinstance(options, ReportOptions):
        raise ReportError(f"options={options!r:.60}: expected a reports.options.ReportOptions "
                          "or None")  # fmt: skip
    options = options or ReportOptions()
    candidates = [s.build(sweep, options) for s in sections()]
    found = [s for s in candidates if s is not None]
    agreement = agreement_section(sweep)
    found += [agreement] if agreement is not None else []
    found.append(sweep_section(sweep))
    found = define_terms(caption_runs(sweep, found))
    heading = f"procmem report: {sweep.experiment} ({sweep.parent_name}, run {sweep.parent_id[:8]})"
    origin = provenance_section(sweep, command)
    return Report(
        sweep.experiment,
        sweep.parent_id,
        heading,
        found,
        summary_table(sweep),
        origin.blocks,
        sweep.chosen,
    )


def out_folder(experiment: str, parent_id: str, out: Path | None) -> Path:
    """``out``, else ``reports/out/<experiment>/<parent id>``, which must stay inside
    ``reports/out`` (an MLflow experiment made outside procmem may be named ``../x``);
    checked writable first."""
    folder = out or OUT_ROOT / experiment / parent_id
    one_folder = all(
        n not in ("", ".", "..") and Path(n).name == n for n in (experiment, parent_id)
    )
    if out is None and not one_folder:
        raise ReportError(
            f"experiment={experiment!r} names a folder outside {OUT_ROOT} (the report folder "
            "is reports/out/<experiment>/<run id>); give --out <folder>"
        )
    probe = folder / f".write-check-{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        option = "--out" if out is not None else "the report folder"
        raise ReportError(f"{option} {folder}: cannot write there ({exc.strerror})") from None
    return folder


def point_latest(folder: Path) -> None:
    """``<experiment>/latest`` -> this sweep's folder (a relative symlink)."""
    link = folder.parent / LATEST
    tmp = folder.parent / f".{LATEST}-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(folder.name)
    os.replace(tmp, link)


def _number(cell: object) -> tuple[float, float | None] | None:
    """``0.09 ± 0.01`` -> (0.09, 0.01); a plain number -> (x, None); else None."""
    if isinstance(cell, int | float) and not isinstance(cell, bool):
        return (float(cell), None) if cell == cell else None
    found = re.fullmatch(r"\s*(-?[\d.,]+(?:e-?\d+)?)\s*(?:±\s*([\d.,]+(?:e-?\d+)?))?\s*", str(cell))
    if not found:
        return None
    value = float(found.group(1).replace(",", ""))
    se = found.group(2)
    return value, (float(se.replace(",", "")) if se else None)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:60]


def recommendation(section: Section) -> tuple[Table | None, dict[str, str], dict[str, float]]:
    """The section's recommended table, its pick as tags and its numbers as metrics."""
    table = next(
        (b for b in section.blocks if isinstance(b, Table) and b.caption.startswith(RECOMMENDED)),
        None,
    )
    tags = {f"procmem.report.{section.key}": section.answer[:5000]}
    metrics: dict[str, float] = {}
    if section.pick:
        table = Table(f"{RECOMMENDED} ({section.title})", pd.DataFrame([section.pick]))
        row = table.frame.iloc[0]
    elif table is None or table.frame.empty:
        return table, tags, metrics
    else:
        row = table.frame.iloc[0]
    tags[f"procmem.recommended.{section.key}"] = str(row.iloc[0])[:5000]
    for column, cell in row.items():
        parsed = _number(cell)
        if parsed is not None:
            name = f"recommended.{section.key}.{_slug(str(column))}"
            metrics[name] = parsed[0]
            if parsed[1] is not None:
                metrics[f"{name}_se"] = parsed[1]
    return table, tags, metrics


def log_to_parent(report: Report, folder: Path, uri: str | None = None) -> None:
    """The files, the answers and picks (tags), their numbers (metrics), key tables."""
    from mlflow.entities import Metric, RunTag

    log_report(report.parent_id, folder, uri)
    client = _client(uri)
    tags: dict[str, str] = {}
    metrics: dict[str, float] = {}
    for section in report.sections:
        table, t, m = recommendation(section)
        tags.update(t)
        metrics.update(m)
        if table is not None:
            client.log_table(report.parent_id, _plain(table.frame), f"report/{section.key}.json")
    client.log_table(report.parent_id, _plain(report.summary), "report/summary.json")
    client.log_batch(
        report.parent_id,
        metrics=[Metric(k, v, 0, 0) for k, v in metrics.items()],
        tags=[RunTag(k, v) for k, v in tags.items()],
    )


def _plain(frame: pd.DataFrame) -> pd.DataFrame:
    """A table MLflow can store: object columns as text."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object:
            out[column] = out[column].map(lambda v: "" if v is None else str(v))
    return out


def make_report(
    experiment: str,
    run_id: str | None = None,
    out: Path | None = None,
    options: ReportOptions | None = None,
    uri: str | None = None,
    log: bool = True,
    command: str = "python -m reports",
) -> tuple[Report, dict[str, Path]]:
    """Read the sweep, write the report and log it to the parent run."""
    sweep = load_sweep(experiment, run_id, uri)
    folder = out_folder(experiment, sweep.parent_id, out)
    report = build_report(sweep, options, command)
    written = write_report(report, folder)
    if out is None:
        point_latest(folder)
    if log:
        log_to_parent(report, folder, uri)
    return report, written
