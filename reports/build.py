"""From a logged sweep to the written report: every registered section (``reports.sections``)
that has something to say about the sweep, then the agreement and the sweep itself."""

from __future__ import annotations

from pathlib import Path

from reports.document import Report, write_report
from reports.options import ReportOptions
from reports.sections import sections
from reports.source import Sweep, load_sweep, log_report
from reports.summary import agreement_section, summary_table, sweep_section

OUT_ROOT = Path(__file__).resolve().parent / "out"


def build_report(sweep: Sweep, options: ReportOptions | None = None) -> Report:
    """Every section the sweep has data for, recommendations first."""
    options = options or ReportOptions()
    candidates = [s.build(sweep, options) for s in sections()]
    found = [s for s in candidates if s is not None]
    agreement = agreement_section(sweep)
    found += [agreement] if agreement is not None else []
    found.append(sweep_section(sweep))
    heading = f"procmem report: {sweep.experiment} ({sweep.parent_name}, run {sweep.parent_id[:8]})"
    return Report(sweep.experiment, sweep.parent_id, heading, found, summary_table(sweep))


def make_report(
    experiment: str,
    run_id: str | None = None,
    out: Path | None = None,
    options: ReportOptions | None = None,
    uri: str | None = None,
    log: bool = True,
) -> tuple[Report, dict[str, Path]]:
    """Read the sweep, write the report to ``out`` and log it to the parent run."""
    sweep = load_sweep(experiment, run_id, uri)
    report = build_report(sweep, options)
    folder = out or OUT_ROOT / experiment
    written = write_report(report, folder)
    if log:
        log_report(sweep.parent_id, folder, uri)
    return report, written
