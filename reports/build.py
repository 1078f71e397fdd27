"""From a logged sweep to the written report: sections chosen by what the sweep contains."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from procmem_core.errors import check_int, check_probability
from reports.confidence_section import confidence_section, fate_section
from reports.demo_sections import replay_section, seed_demo_section
from reports.document import Report, Section, write_report
from reports.explore_section import ab_section, explore_section
from reports.gate_section import gate_section
from reports.loop_section import loop_section
from reports.recommend import GateTargets
from reports.source import Sweep, load_sweep, log_report
from reports.summary import agreement_section, summary_table, sweep_section

OUT_ROOT = Path(__file__).resolve().parent / "out"


@dataclass(frozen=True)
class ReportOptions:
    """Targets the recommendations aim at (all settable on the command line)."""

    gate: GateTargets = field(default_factory=GateTargets)
    target_power: float = 0.8
    target_excluded: float = 0.9
    target_sessions: int | None = None

    def __post_init__(self) -> None:
        check_probability("target_power", self.target_power, open_low=True)
        check_probability("target_excluded", self.target_excluded, open_low=True)
        if self.target_sessions is not None:
            check_int("target_sessions", self.target_sessions, minimum=1)


def build_report(sweep: Sweep, options: ReportOptions | None = None) -> Report:
    """Every section the sweep has data for, recommendations first."""
    options = options or ReportOptions()
    candidates: list[Section | None] = [
        gate_section(sweep, options.gate),
        confidence_section(sweep, options.target_excluded, options.target_sessions),
        fate_section(sweep),
        explore_section(sweep, options.target_power),
        loop_section(sweep),
        ab_section(sweep),
        seed_demo_section(sweep),
        replay_section(sweep),
        agreement_section(sweep),
    ]
    sections = [s for s in candidates if s is not None]
    sections.append(sweep_section(sweep))
    heading = f"procmem report: {sweep.experiment} ({sweep.parent_name}, run {sweep.parent_id[:8]})"
    return Report(sweep.experiment, sweep.parent_id, heading, sections, summary_table(sweep))


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
