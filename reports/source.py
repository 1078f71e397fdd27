"""Reading a logged sweep back from MLflow (the contract in docs/architecture.md).

A sweep is one parent run whose child runs carry the ``mlflow.parentRunId`` tag; each
child has params (the flattened resolved config, stored by MLflow as strings), tags
``procmem.scenario``, ``procmem.config_hash``, ``procmem.seed``, metrics, and artifacts
``config.yaml``, ``tables/<name>.parquet`` and ``figures/*.png``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from procmem_core.logged import CHECK_FIELDS, parse_param
from reports.errors import NoSweepError, ReportError
from reports.store_check import HTTP_BOUNDS, PROBE_SECONDS, check_store  # noqa: F401 (re-exported)

PROJECT_ROOT = Path(__file__).resolve().parents[1]
# artifact downloads print a tqdm bar per call; a report reads dozens of runs
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
SCENARIO_TAG = "procmem.scenario"
PARENT_TAG = "mlflow.parentRunId"
ROLE_TAG = "procmem.role"

CHECKS = CHECK_FIELDS
"""Last key parts of params that say how a run checks its standard errors
(``simulators.calibration_blocks``), not what world it simulates or what it sweeps."""


def tracking_uri() -> str:
    """``$MLFLOW_TRACKING_URI``, else ``sqlite:///<absolute project root>/mlflow.db``."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{PROJECT_ROOT / 'mlflow.db'}"


@dataclass
class Sweep:
    """A parent run and its children as tables.

    ``runs``: one row per child with ``run_id``, ``scenario``, ``status``, the parsed
    params under their dotted names and the metrics under their own names.
    ``tables[run_id][name]``: the child's ``tables/<name>.parquet``.
    """

    experiment: str
    parent_id: str
    parent_name: str
    runs: pd.DataFrame
    param_names: tuple[str, ...]
    metric_names: tuple[str, ...]
    tables: dict[str, Mapping[str, pd.DataFrame]] = field(default_factory=dict)
    chosen: str = ""  # which run was reported and why (the latest sweep, or --run)
    parent_tags: dict[str, str] = field(default_factory=dict)
    parent_start: int | None = None  # ms since the epoch
    earlier: int = 0  # jobs finished by an earlier sweep this one resumed
    answers: dict[str, dict] = field(default_factory=dict)
    """The sweep's design answers by name (its parent's ``answers/<name>.json``, which
    the sweep computed: ``experiments.answers``; read by ``reports.answers.answer``)."""

    def scenario_runs(self, *scenarios: str) -> pd.DataFrame:
        """Children whose ``procmem.scenario`` tag is one of ``scenarios``."""
        return self.runs[self.runs["scenario"].isin(scenarios)].reset_index(drop=True)

    def table(self, name: str, run_ids: list[str] | None = None) -> pd.DataFrame:
        """``tables/<name>`` of the given children stacked, with a ``run_id`` column."""
        frames = []
        for run_id in run_ids if run_ids is not None else list(self.runs["run_id"]):
            t = self.tables.get(run_id, {}).get(name)
            if t is not None and not t.empty:
                frames.append(t.assign(run_id=run_id))
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def artifact(self, run_id: str, path: str) -> Path | None:
        """The child's artifact ``path`` as a local file (see ``RunTables.file``); None
        when it has no such artifact or the sweep was not read from MLflow."""
        files = self.tables.get(run_id)
        return files.file(path) if isinstance(files, RunTables) else None

    @property
    def swept_params(self) -> tuple[str, ...]:
        """Params that take more than one value among the children of one scenario.

        Bookkeeping params (``*.name``, ``*.replications``, ``seed``, the calibration
        blocks' sizes) are left out.
        """
        out = []
        for name in self.param_names:
            if name.split(".")[-1] in ("name", "replications", "seed", *CHECKS):
                continue
            for _, group in self.runs.groupby("scenario"):
                if group[name].map(repr).nunique(dropna=False) > 1:
                    out.append(name)
                    break
        return tuple(out)

    @classmethod
    def from_results(
        cls,
        results: Sequence[Any],
        experiment: str = "notebook",
        answers: Mapping[str, dict] | None = None,
    ) -> Sweep:
        """A sweep of in-memory results, laid out as ``load_sweep`` lays out a logged one,
        with no MLflow: each entry a ``ScenarioResult`` or ``(params, ScenarioResult)``,
        ``params`` a mapping by dotted key (``{"gate.alpha": 0.05}``) or nested by group,
        laid over the params the result carries (``ScenarioResult.params``: the world it
        was simulated in, as a job logs it);
        run ids ``run000``, ``run001``, ... in order. ``answers``: the design answers the
        sweep's finalize step would log (``experiments.answers.sweep_answers(runs)``, or
        set ``sweep.answers`` afterwards); the report never computes them."""
        if isinstance(results, str | bytes | Mapping) or not isinstance(
            results, Sequence | Iterator
        ):
            raise ReportError(f"results={results!r:.60}: expected a list of ScenarioResults or "
                              "(params, ScenarioResult) pairs")  # fmt: skip
        results = list(results)
        if not results:  # a report of no runs fails later, far from here
            raise ReportError("results=[]: expected at least one ScenarioResult")
        if not isinstance(experiment, str) or not experiment:
            raise ReportError(f"experiment={experiment!r}: expected a non-empty string")
        rows, tables, params, metrics = [], {}, set(), set()
        for i, entry in enumerate(results):
            given, result = _entry(i, entry)
            if not all(hasattr(result, a) for a in ("scenario", "metrics", "tables")):
                raise ReportError(f"results[{i}] is {type(result).__name__}: expected a "
                                  "ScenarioResult or a (params, ScenarioResult) pair")  # fmt: skip
            own = dict(getattr(result, "params", None) or {})  # the scenario's own params
            flat = {f"params.{k}": v for k, v in (own | _dotted(given)).items()}
            run_id = f"run{i:03d}"
            rows.append({"run_id": run_id, "run_name": f"{result.scenario}-{i}",
                         "status": "FINISHED", "scenario": result.scenario, "start_time": i}
                        | flat | dict(result.metrics))  # fmt: skip
            params |= set(flat)
            metrics |= set(result.metrics)
            tables[run_id] = dict(result.tables)
        sweep = cls(experiment, "memory", "in-memory", pd.DataFrame(rows),
                     tuple(sorted(params)), tuple(sorted(metrics)), tables,
                     chosen="results built in memory")  # fmt: skip
        sweep.answers = dict(answers or {})
        return sweep


def _entry(i: int, entry: Any) -> tuple[Mapping[str, Any], Any]:
    """``(params, result)`` of ``results[i]``: a bare result has no params of its own."""
    if not isinstance(entry, tuple):
        return {}, entry
    if len(entry) != 2 or not isinstance(entry[0], Mapping):
        shape = (
            f"a tuple of {len(entry)}" if len(entry) != 2 else f"({type(entry[0]).__name__}, ...)"
        )
        raise ReportError(f"results[{i}] is {shape}: expected a (params mapping, "
                          "ScenarioResult) pair")  # fmt: skip
    return entry


def _dotted(params: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested mapping flattened to dotted keys (``{"gate": {"alpha": 1}}`` -> ``gate.alpha``)."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        if isinstance(value, Mapping):
            out |= _dotted(value, f"{prefix}{key}.")
        else:
            out[f"{prefix}{key}"] = value
    return out


def _client(uri: str | None):
    from mlflow.tracking import MlflowClient

    uri = uri or tracking_uri()
    check_store(uri)
    return MlflowClient(tracking_uri=uri)


def _children_frame(runs: list) -> tuple[pd.DataFrame, tuple[str, ...], tuple[str, ...]]:
    rows, params, metrics = [], set(), set()
    for run in runs:
        row = {
            "run_id": run.info.run_id,
            "run_name": run.info.run_name,
            "status": run.info.status,
            "scenario": run.data.tags.get(SCENARIO_TAG, "unknown"),
            "config_hash": run.data.tags.get("procmem.config_hash"),
            "seed": parse_param(run.data.tags.get("procmem.seed")),
            "start_time": run.info.start_time,
        }
        for k, v in run.data.params.items():
            row[f"params.{k}"] = parse_param(v)
            params.add(f"params.{k}")
        row.update(run.data.metrics)
        metrics.update(run.data.metrics)
        rows.append(row)
    frame = pd.DataFrame(rows).sort_values("start_time", kind="mergesort").reset_index(drop=True)
    return frame, tuple(sorted(params)), tuple(sorted(metrics))


def _search_all(client, experiment_id: str, filter_string: str, order_by=None) -> list:
    out, token = [], None
    while True:
        page = client.search_runs(
            [experiment_id], filter_string, max_results=1000, order_by=order_by, page_token=token
        )
        out.extend(page)
        token = page.token
        if not token:
            return out


def find_parent(experiment: str, run_id: str | None = None, uri: str | None = None):
    """``(client, experiment, run, why)``: the run to report on and why it was chosen.

    ``run_id`` if given; else the latest sweep (a parent run, ``procmem.role=parent``): a
    single run never stands in for a sweep while the experiment has one; without any
    sweep, the latest single run, said so. Raises ``NoSweepError`` for an unknown
    experiment, an experiment with no runs, or a run id not in that experiment.
    """
    from mlflow.exceptions import MlflowException

    client = _client(uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        names = sorted(e.name for e in client.search_experiments())
        raise NoSweepError(
            f"experiment={experiment!r} does not exist at {uri or tracking_uri()}; "
            f"experiments there: {names}"
        )
    if run_id is not None:
        try:
            run = client.get_run(run_id)
        except MlflowException:
            raise NoSweepError(
                f"run={run_id!r} does not exist at {uri or tracking_uri()}"
            ) from None
        if run.info.experiment_id != exp.experiment_id:
            raise NoSweepError(
                f"run={run_id!r} belongs to another experiment, not to {experiment!r}"
            )
        return client, exp, run, f"run {run_id} (--run)"
    tops = [
        r
        for r in _search_all(client, exp.experiment_id, "", ["attributes.start_time DESC"])
        if PARENT_TAG not in r.data.tags
    ]
    if not tops:
        raise NoSweepError(
            f"experiment={experiment!r} has no runs; run a sweep first, e.g. "
            f"`python -m experiments.run -m experiment={experiment}`"
        )
    sweeps = [r for r in tops if r.data.tags.get(ROLE_TAG) == "parent"]
    if sweeps:
        why = f"the latest of {len(sweeps)} sweep(s) of {experiment!r}"
        if len(sweeps) > 1:
            why += f" (others: --run {sweeps[1].info.run_id}, ...)"
        return client, exp, sweeps[0], why
    why = f"the latest single run of {experiment!r} ({experiment!r} has no sweep)"
    return client, exp, tops[0], why


class RunTables(Mapping[str, pd.DataFrame]):
    """One run's ``tables/<name>.parquet``, each downloaded on first access and kept;
    ``file(path)`` fetches any other artifact of the run the same way.

    A sweep of hundreds of gate jobs carries large per-replication tables the report
    may never read; listing is cheap, downloading is not.
    """

    def __init__(self, client, run_id: str, names: tuple[str, ...], root: Path) -> None:
        self._client, self._run_id, self._names, self._root = client, run_id, names, root
        self._cache: dict[str, pd.DataFrame] = {}

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name not in self._names:
            raise KeyError(name)
        if name not in self._cache:
            self._cache[name] = pd.read_parquet(self._download(f"tables/{name}.parquet"))
        return self._cache[name]

    def _download(self, path: str) -> Path:
        dst = self._root / self._run_id
        dst.mkdir(parents=True, exist_ok=True)
        return Path(self._client.download_artifacts(self._run_id, path, str(dst)))

    def file(self, path: str) -> Path | None:
        """Any artifact of the run (``path`` relative to its artifact root, e.g.
        ``procedures.json``) downloaded to the same temporary folder; None when the run
        has no such file."""
        folder = str(Path(path).parent) if "/" in path else None
        if not any(a.path == path for a in self._client.list_artifacts(self._run_id, folder)):
            return None
        return self._download(path)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def load_sweep(experiment: str, run_id: str | None = None, uri: str | None = None) -> Sweep:
    """Read a sweep: the parent run, its children's params and metrics, and their tables
    (listed now, downloaded to a temporary folder when first used).

    A plain run (no children) is read as a sweep of one, itself. A sweep that resumed
    another (``resume=true``) includes the jobs an earlier sweep finished: the parent's
    ``tables/jobs.parquet`` names the run of every job, however many sweeps ran them.
    Raises ``NoSweepError`` when no job of the sweep finished.
    """
    client, exp, parent, why = find_parent(experiment, run_id, uri)
    pid = parent.info.run_id
    children = _search_all(client, exp.experiment_id, f"tags.`{PARENT_TAG}` = '{pid}'")
    earlier = _earlier_runs(client, pid, {c.info.run_id for c in children})
    children += earlier
    if not children:
        children = [parent]
    if not any(c.info.status == "FINISHED" for c in children):
        counts = pd.Series([c.info.status for c in children]).value_counts().to_dict()
        shown = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
        raise NoSweepError(
            f"{why}, run {pid} ({parent.info.run_name}), has no finished job ({shown}): "
            "nothing to report; pick another with --run"
        )
    runs, params, metrics = _children_frame(children)
    sweep = Sweep(
        experiment, pid, parent.info.run_name or pid, runs, params, metrics,
        chosen=why, parent_tags=dict(parent.data.tags), parent_start=parent.info.start_time,
        earlier=len(earlier), answers=_answers(client, pid),
    )  # fmt: skip
    root = Path(tempfile.mkdtemp(prefix="procmem-report-"))
    weakref.finalize(sweep, shutil.rmtree, root, True)
    for child in runs["run_id"]:
        names = tuple(
            Path(a.path).stem
            for a in client.list_artifacts(child, "tables")
            if a.path.endswith(".parquet")
        )
        sweep.tables[child] = RunTables(client, child, names, root)
    return sweep


def _answers(client, parent_id: str) -> dict[str, dict]:
    """The parent's ``answers/<name>.json`` by name (``experiments.answers``)."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="procmem-answers-") as tmp:
        for a in client.list_artifacts(parent_id, "answers"):
            if a.path.endswith(".json"):
                path = client.download_artifacts(parent_id, a.path, tmp)
                out[Path(a.path).stem] = json.loads(Path(path).read_text(encoding="utf-8"))
    return out


def _earlier_runs(client, parent_id: str, have: set[str]) -> list:
    """Runs the parent's ``tables/jobs.parquet`` names that are not its children: the
    finished runs of earlier sweeps that this one skipped (``resume=true``)."""
    names = {a.path for a in client.list_artifacts(parent_id, "tables")}
    if "tables/jobs.parquet" not in names:
        return []
    with tempfile.TemporaryDirectory(prefix="procmem-jobs-") as tmp:
        path = client.download_artifacts(parent_id, "tables/jobs.parquet", tmp)
        jobs = pd.read_parquet(path)
    wanted = [r for r in jobs.get("run_id", pd.Series(dtype=object)).dropna() if r not in have]
    return [client.get_run(r) for r in dict.fromkeys(wanted)]


def log_report(parent_id: str, folder: Path, uri: str | None = None) -> None:
    """Log every file of the written report as artifacts of the parent run, under report/."""
    _client(uri).log_artifacts(parent_id, str(folder), artifact_path="report")


def find_param(names: tuple[str, ...], key: str, group: str) -> str | None:
    """The param column ``params.<group>.<key>`` if the sweep logged it (one name per
    parameter: the config key, never a guess by suffix)."""
    column = f"params.{group}.{key}"
    return column if column in names else None
