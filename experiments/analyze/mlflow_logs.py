"""Session logs kept in MLflow: a run's log folder, or the live loop's session traces.

- ``runs:/<run id>[/<folder>]``: the run's artifact folder holding ``sessions.*`` (and
  ``runs.*``, ``revisions.*``), downloaded first. Without a folder: ``tables`` (where a
  scenario with ``export_log`` writes ``sessions.parquet``, and a live job its sessions
  and, for the graph memory, its runs and revisions), else the run's root.
- ``traces:/<run id>``: the live loop's traces of that run (``experiments.live.traces``),
  one session each: its id (``procmem.session_id``), ``time`` the session index, the
  ``prompt_build`` span's ``top_key``, ``withheld`` and ``shown_keys``, ``outcome`` the
  ``outcome`` feedback (empty when none was attached) and ``explore_rate`` the run's param
  ``live.explore_rate``; only the sessions the run logged (its ``success`` steps): a
  run stopped mid-round traced sessions its log does not keep, and a resumed run whose
  restored sessions were traced by an earlier run is refused, naming ``runs:/``.
- ``experiments:/<name>``: every session trace of the experiment's runs as one log, each
  run's the sessions it logged, as above (``time``: the trace's start in milliseconds, as
  indexes restart in each run; a session id in two runs, e.g. a run and its resume, is
  refused as a duplicate).

Traces are read through ``mlflow.search_traces`` (one Python step per trace: MLflow hands
them over as objects).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from procmem_core.logs import LogError, Table, Text

RUN_PREFIX = "runs:/"
TRACES_PREFIX = "traces:/"
EXPERIMENT_PREFIX = "experiments:/"
EXPLORE_PARAM = "live.explore_rate"
SESSION_STEP = "success"
"""The live job's step metric: one step per session its log holds (session index)."""
FOLDER = "tables"


def _client(tracking_uri: str | None) -> Any:
    """A client of the store, checked first (``stores.check_for``: a store that is not
    there, not MLflow's or does not answer is refused in seconds, nothing created)."""
    from mlflow import MlflowClient

    from experiments.stores import check_for, uri_source
    from experiments.stores import tracking_uri as resolve

    uri = resolve(tracking_uri)
    check_for(uri, uri_source(tracking_uri), "read")
    return MlflowClient(uri)


def _refused(source: str, exc: Exception, allowed: str) -> LogError:
    first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    return LogError(source, None, None, first, allowed)


def run_folder(source: str, tracking_uri: str | None, into: Path) -> Path:
    """``runs:/<run id>[/<folder>]``: the folder downloaded into ``into`` (module doc)."""
    rest = source[len(RUN_PREFIX) :].strip("/")
    run_id, _, folder = rest.partition("/")
    allowed = "an MLflow run with a log folder (runs:/<run id>[/<artifact folder>])"
    if not run_id:
        raise LogError(source, None, None, source, allowed)
    client = _client(tracking_uri)
    try:
        if not folder:
            tables = [a.path for a in client.list_artifacts(run_id, FOLDER)]
            folder = FOLDER if tables else ""
        return Path(client.download_artifacts(run_id, folder, str(into)))
    except Exception as exc:  # MLflow raises its own types for a missing run or folder
        raise _refused(source, exc, allowed) from None


def _traces(source: str, tracking_uri: str | None) -> tuple[list[Any], Any, bool]:
    """The session traces a ``traces:/`` or ``experiments:/`` source names, the client,
    and whether they come from one run."""
    import mlflow

    client = _client(tracking_uri)
    one_run = source.startswith(TRACES_PREFIX)
    name = source[len(TRACES_PREFIX if one_run else EXPERIMENT_PREFIX) :].strip("/")
    allowed = (
        "the id of an MLflow run with session traces (traces:/<run id>)"
        if one_run
        else "the name of an MLflow experiment with session traces (experiments:/<name>)"
    )
    try:
        if one_run:
            experiment, run_id = client.get_run(name).info.experiment_id, name
        else:
            found = client.get_experiment_by_name(name)
            if found is None:
                raise LogError(source, None, None, name, allowed)
            experiment, run_id = found.experiment_id, None
        mlflow.set_tracking_uri(client.tracking_uri)
        traces = mlflow.search_traces(locations=[experiment], run_id=run_id, return_type="list")
    except LogError:
        raise
    except Exception as exc:
        raise _refused(source, exc, allowed) from None
    traces = [t for t in traces if "procmem.session_id" in t.info.tags]
    if not traces:
        raise LogError(source, None, None, "no session traces", allowed)
    return traces, client, one_run


def _rate(client: Any, run_id: str | None, cache: dict, source: str) -> float:
    if run_id not in cache:
        params = client.get_run(run_id).data.params if run_id else {}
        if EXPLORE_PARAM not in params:
            raise LogError(source, None, EXPLORE_PARAM, "missing",
                           f"the traces' run {run_id!r} with param {EXPLORE_PARAM}")  # fmt: skip
        cache[run_id] = float(params[EXPLORE_PARAM])
    return cache[run_id]


def _row(trace: Any, one_run: bool, rate: float, source: str) -> tuple[dict[str, Any], int]:
    """The trace's sessions row and its session index."""
    spans = {s.name: s for s in trace.data.spans}
    if "prompt_build" not in spans or "session" not in spans:
        raise LogError(source, None, "prompt_build", trace.info.trace_id,
                       "a session trace with its session and prompt_build spans")  # fmt: skip
    build = spans["prompt_build"].attributes
    rated = [a.value for a in trace.info.assessments if a.name == "outcome"]
    index = int(spans["session"].attributes.get("index"))
    row = {
        "session_id": trace.info.tags["procmem.session_id"],
        "time": index if one_run else int(trace.info.request_time),
        "top_key": build.get("top_key") or "",
        "withheld": bool(build.get("withheld")),
        "explore_rate": rate,
        "outcome": float(rated[-1]) if rated else np.nan,
        "shown_keys": json.dumps(list(build.get("shown_keys") or [])),
    }
    return row, index


def _logged(
    rows: list[tuple[dict[str, Any], str | None, int]], client: Any, source: str, one_run: bool
) -> list[dict[str, Any]]:
    """The rows (each with its run and session index) of the sessions each run logged:
    the steps of its ``success`` metric (one per session its ``sessions.csv`` holds). A
    run stopped while a round ran traced sessions after the one that stopped it (the one
    cut, without an outcome, among them), which its log does not keep: left out, for
    ``traces:/`` and ``experiments:/`` alike. A resumed run logged the sessions it
    restored, whose traces the run it resumed holds: ``traces:/`` refuses it, naming the
    run's own log. A run with no such steps is read as traced."""
    by_run: dict[str | None, set[int]] = {}
    for run_id in dict.fromkeys(run_id for _, run_id, _ in rows):
        history = client.get_metric_history(run_id, SESSION_STEP) if run_id else []
        by_run[run_id] = {m.step for m in history}
    if one_run:
        run_id = source[len(TRACES_PREFIX) :].strip("/")
        steps = by_run.get(run_id, set())
        missing = sorted(steps - {index for _, _, index in rows})
        if missing:
            raise LogError(
                source, None, None, f"{len(missing)} of its {len(steps)} sessions untraced",
                f"a run that traced every session it logged (a resumed run's restored "
                f"sessions were traced by the run it resumed): read runs:/{run_id}",
            )  # fmt: skip
    return [row for row, run_id, index in rows if not by_run[run_id] or index in by_run[run_id]]


def trace_sessions(source: str, tracking_uri: str | None) -> Table:
    """The sessions table rebuilt from session traces (module doc), in time order."""
    traces, client, one_run = _traces(source, tracking_uri)
    rates: dict[str | None, float] = {}
    found = []
    for t in traces:
        run_id = t.info.trace_metadata.get("mlflow.sourceRun")
        row, index = _row(t, one_run, _rate(client, run_id, rates, source), source)
        found.append((row, run_id, index))
    rows = _logged(found, client, source, one_run)
    rows.sort(key=lambda r: (r["time"], r["session_id"]))
    cols: dict[str, Any] = {}
    for name in rows[0]:
        values = np.array([r[name] for r in rows], dtype=object)
        text = name in ("session_id", "top_key", "shown_keys")
        cols[name] = Text.encode(values) if text else values.astype(float)
    return Table("sessions", f"{source} (traces)", len(rows), cols)
