"""Standard figures of a job, drawn from its result tables (matplotlib, Agg backend).

Each figure is keyed by the table it needs and the columns it reads; a job gets every
figure whose table and columns it has, so a scenario's figures follow from its tables:

- ``fates`` with ``excluded_rate``: exclusion by session, simulated (+-1.96 SE) and exact;
- ``fates`` with ``retained_rate``: share of procedures still shown, by kind (+-1.96 SE);
- ``trajectory`` with ``success_rate``: session success rate over sessions (+-1.96 SE);
- ``trajectory`` with ``*_active_share``: share of each kind of procedure still active
  (+-1.96 SE bands);
- ``operating_points``: the gate's revert rate against the true drop (OC curve), exact
  values overlaid when present;
- ``gate_decisions``: distribution of runs used, by verdict;
- ``ab_arms`` with ``arm`` and ``rate``: success rate of each arm, SE and true rate.

Figures are written as ``<folder>/<name>.png`` and logged as ``figures/*.png``: by a job
with ``tracking.figures=true``, or afterwards, for every finished run of a sweep, by
``python -m experiments.figures <experiment> [--run <id>]`` from the logged tables (the
same figures, drawn where they are looked at, not in every job).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from procmem_core.errors import ProcmemError
from simulators.result import ScenarioResult

Z95 = 1.96


def _err(table: pd.DataFrame, column: str) -> np.ndarray | None:
    se = f"{column}_se"
    return Z95 * table[se].to_numpy(dtype=float) if se in table else None


def _simulated_and_exact(
    ax: plt.Axes, t: pd.DataFrame, x: str, y: str, exact: str | None, exact_label: str, ms: float
) -> None:
    """``y`` against ``x`` as points with ±1.96 SE bars, the ``exact`` column (if any) as a line."""
    ax.errorbar(t[x], t[y], yerr=_err(t, y), fmt="o", ms=ms, label="simulated (±1.96 SE)")
    if exact is not None:
        ax.plot(t[x], t[exact], "-", label=exact_label)


def fate_exclusion(t: pd.DataFrame, ax: plt.Axes) -> None:
    exact = "excluded_exact" if "excluded_exact" in t else None
    _simulated_and_exact(ax, t, "session", "excluded_rate", exact, "exact (flat_fate)", ms=3)
    ax.set(
        xlabel="session",
        ylabel="P(excluded by session)",
        ylim=(0, 1),
        title="Procedure fate under the flat rule",
    )
    ax.legend()


def fate_by_kind(t: pd.DataFrame, ax: plt.Axes) -> None:
    ax.bar(
        t["kind"].astype(str),
        t["retained_rate"],
        yerr=_err(t, "retained_rate"),
        capsize=4,
        color=["tab:green", "tab:gray", "tab:red"],
    )
    ax.set(
        xlabel="kind of procedure",
        ylabel="share still shown after the last session",
        ylim=(0, 1),
        title="Which procedures survive",
    )


def _line_with_band(ax: plt.Axes, t: pd.DataFrame, y: str, label: str) -> None:
    """``y`` against ``session`` as a line with its ±1.96 SE band (when ``y_se`` exists)."""
    x, v = t["session"].to_numpy(), t[y].to_numpy(dtype=float)
    (line,) = ax.plot(x, v, label=label)
    err = _err(t, y)
    if err is not None:
        ax.fill_between(x, v - err, v + err, alpha=0.25, color=line.get_color())


def trajectory_success(t: pd.DataFrame, ax: plt.Axes) -> None:
    _line_with_band(ax, t, "success_rate", "session success rate (±1.96 SE band)")
    ax.set(xlabel="session", ylabel="success rate", title="Session success over time")
    ax.legend()


def trajectory_kinds(t: pd.DataFrame, ax: plt.Axes) -> None:
    for column in [c for c in t.columns if c.endswith("_active_share")]:
        _line_with_band(ax, t, column, column.removesuffix("_active_share"))
    ax.set(
        xlabel="session",
        ylabel="share of procedures at or above the threshold",
        ylim=(0, 1),
        title="Procedures still active, by kind (bands: ±1.96 SE)",
    )
    ax.legend()


def operating_characteristic(t: pd.DataFrame, ax: plt.Axes) -> None:
    t = t.sort_values("true_drop")
    exact = next((c for c in ("revert_rate_exact", "p_revert_exact") if c in t), None)
    _simulated_and_exact(ax, t, "true_drop", "revert_rate", exact, "exact", ms=4)
    ax.set(
        xlabel="true drop in success rate",
        ylabel="P(revert)",
        ylim=(0, 1),
        title="Gate operating characteristic",
    )
    ax.legend()


def runs_by_verdict(t: pd.DataFrame, ax: plt.Axes) -> None:
    top = int(t["runs_used"].max()) if len(t) else 1
    bins = np.arange(0.5, top + 1.5)
    for verdict, group in t.groupby("verdict"):
        ax.hist(group["runs_used"], bins=bins, alpha=0.6, label=str(verdict))
    ax.set(
        xlabel="runs used before the decision",
        ylabel="replications",
        title="Cost of the gate in runs",
    )
    ax.legend()


def ab_arms(t: pd.DataFrame, ax: plt.Axes) -> None:
    x = np.arange(len(t))
    ax.bar(x, t["rate"], yerr=_err(t, "rate"), capsize=4, label="observed (±1.96 SE)")
    if "true_rate" in t:
        ax.scatter(x, t["true_rate"], color="black", marker="_", s=400, zorder=3, label="true")
    ax.set_xticks(x, t["arm"].astype(str))
    ax.set(xlabel="arm", ylabel="success rate", title="Withheld vs shown")
    ax.legend()


FIGURES: tuple[tuple[str, str, tuple[str, ...], Callable[[pd.DataFrame, plt.Axes], None]], ...] = (
    ("fate_exclusion", "fates", ("session", "excluded_rate"), fate_exclusion),
    ("fate_by_kind", "fates", ("kind", "retained_rate"), fate_by_kind),
    ("success_over_sessions", "trajectory", ("session", "success_rate"), trajectory_success),
    ("active_by_kind", "trajectory", ("session", "helpful_active_share"), trajectory_kinds),
    (
        "operating_characteristic",
        "operating_points",
        ("true_drop", "revert_rate"),
        operating_characteristic,
    ),
    ("runs_by_verdict", "gate_decisions", ("runs_used", "verdict"), runs_by_verdict),
    ("ab_arms", "ab_arms", ("arm", "rate"), ab_arms),
)
"""``(figure name, table, required columns, draw)``."""


def scenario_figures(result: ScenarioResult, folder: Path) -> list[Path]:
    """Draw every figure the result's tables support into ``folder``; return the files."""
    written = []
    for name, table, columns, draw in FIGURES:
        t = result.tables.get(table)
        if t is None or t.empty or not set(columns) <= set(t.columns):
            continue
        folder.mkdir(parents=True, exist_ok=True)
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        try:
            draw(t, ax)
            fig.tight_layout()
            fig.savefig(folder / f"{name}.png", dpi=100)
        finally:
            plt.close(fig)
        written.append(folder / f"{name}.png")
    return written


def draw_logged(experiment: str, run_id: str | None = None, uri: str | None = None) -> dict:
    """Draw the standard figures of finished runs from their logged tables and log them to
    each run as ``figures/*.png`` (for the MLflow UI; jobs skip drawing by default, since
    the figures took about a third of a small job's time and the report draws its own).

    ``run_id``: a sweep's parent (its finished children) or one run; default the latest
    sweep of ``experiment``. Returns ``{run id: [figure names]}``.
    """
    import tempfile

    from experiments.stores import check_for, uri_source
    from experiments.tracking import TAG_PARENT, TAG_ROLE, TAG_SCENARIO, Tracker

    tracker = Tracker(experiment, uri)
    check_for(tracker.uri, uri_source(uri), "draw")  # a reading command creates no store
    if run_id is None:
        parents = tracker.search(
            f"tags.`{TAG_ROLE}` = 'parent'", order_by=["attributes.start_time DESC"]
        )
        if not parents:
            raise SystemExit(f"experiment {experiment!r} has no sweep; give --run")
        run_id = parents[0].info.run_id
    runs = tracker.search(f"tags.`{TAG_PARENT}` = '{run_id}'") or [tracker.client.get_run(run_id)]
    drawn: dict[str, list[str]] = {}
    for run in (r for r in runs if r.info.status == "FINISHED"):
        with tempfile.TemporaryDirectory(prefix="procmem-figures-") as tmp:
            result = ScenarioResult(run.data.tags.get(TAG_SCENARIO, "run"))
            for item in tracker.client.list_artifacts(run.info.run_id, "tables"):
                if item.path.endswith(".parquet"):
                    path = tracker.client.download_artifacts(run.info.run_id, item.path, tmp)
                    result.tables[Path(item.path).stem] = pd.read_parquet(path)
            written = scenario_figures(result, Path(tmp) / "figures")
            if written:
                tracker.client.log_artifacts(run.info.run_id, str(Path(tmp) / "figures"), "figures")
            drawn[run.info.run_id] = [p.stem for p in written]
    return drawn


def main(argv: list[str] | None = None) -> int:
    """``python -m experiments.figures <experiment> [--run <id>]``."""
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m experiments.figures",
        description="Draw each run's standard figures from its logged tables, into MLflow.",
    )
    p.add_argument("experiment")
    p.add_argument("--run", default=None, help="a sweep's parent run or one run")
    args = p.parse_args(argv)
    try:
        drawn = draw_logged(args.experiment, args.run)
    except ProcmemError as exc:  # a refused name or store: one line
        print(f"python -m experiments.figures: {exc}", file=sys.stderr)
        return 2
    for run_id, names in drawn.items():
        print(f"{run_id}: {', '.join(names) or 'no figure for its tables'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
