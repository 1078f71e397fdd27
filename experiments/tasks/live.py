"""The live loop as an experiment task (``task: live``, preset ``experiment=live``).

Reads the ``live`` group (tasks, sessions, memory, explore_rate, extract_every,
concurrency, seed, budget, cache, judge, extractor, journal, agent, namespace,
revise_every, revision_step), the
``llm`` group (the agent's endpoint) and the ``rule`` group (the flat rule and prompt
filter). Every value is checked, and the task file read, before any run exists
(``validate_config``); the token estimate must fit ``live.budget.tokens``. At the start
the endpoint is asked for ``GET /v1/models`` (``preflight``), so an unreachable endpoint
or a refused key fails in seconds, naming the URL or the key's variable.

The job's MLflow run (passed by ``experiments.job``) gets one trace per session
(``experiments.live.traces``), the stepped metrics ``success``, ``procedures_shown`` and
``tokens`` (step = session index) after each round, and the artifacts ``sessions.csv``
(the session log schema), ``procedures.json``, ``confidence.csv``, ``journal.jsonl`` and,
for the graph memory, ``runs.csv`` (the store's runs in the log's runs schema) and
``revisions.csv`` (its revisions and the gate's verdicts, the log's revisions schema)
and ``pack_log.csv`` (the store's pack log, ``ProcedureStore.pack_log``). A run that
finishes also gets ``lifts.csv`` (and the table ``lifts``): ``experiments.analyze``'s
lifts of its ``sessions.csv`` (``log_lifts``), which the report's live section reads.
A budget spent or a call failing for good writes all of them for the sessions done, then
raises, so the run is FAILED with the reason and keeps every session. docs/live.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import DictConfig

from experiments.analyze import log_lifts
from experiments.build import build_group, node_of, within
from experiments.live.graph_memory import GraphMemory
from experiments.live.journal import Journal, journal_path, resume_identity, sessions_frame
from experiments.live.loop import LiveLoop, LoopSettings, estimate_tokens
from experiments.live.memory import FlatMemory
from experiments.live.reflect import REVISION_STEPS, ReflectionStep
from experiments.live.revisions import REVISE_EVERY, REVISION_COLUMNS
from experiments.live.session import Endpoint, TokenBudget, preflight
from experiments.live.tasks import Task, load_tasks
from experiments.live.traces import NullTracer, SessionTracer
from experiments.tasks.llm_replay import _llm_settings
from procmem_core.errors import ParameterError, check_choice, check_int, check_probability
from procmem_core.flat import BASE_PROMPT, DEFAULT_LIMIT, DEFAULT_RULE, DEFAULT_THRESHOLD
from procmem_core.graph.keys import check_namespace
from procmem_core.graph.packlog import COLUMNS as PACK_LOG_COLUMNS
from procmem_core.learn import LLMConfig
from procmem_core.learn.reply_cache import ReplyCache
from procmem_core.limits import MAX_IDENTIFIER, check_identifier
from simulators.llm_server import OfflineServer
from simulators.result import ScenarioResult

GROUPS = ("live", "llm", "rule")
MEMORIES = ("flat", "graph")
RUN_COLUMNS = ("key", "revision", "ok", "time", "path", "session_id", "agent")
"""``runs.csv`` (graph memory): the session log's runs table (docs/logs.md)."""
WANTS_RUN = True
"""``experiments.job`` passes this task its tracker and run id (for traces and steps)."""
LIVE_KEYS = (
    "tasks", "sessions", "memory", "explore_rate", "extract_every", "concurrency", "seed",
    "budget", "cache", "judge", "extractor", "journal", "agent", "namespace",
    "revise_every", "revision_step",
)  # fmt: skip
BUDGET_KEYS = ("tokens", "reply_tokens")
"""The keys of the ``live`` group and its ``budget`` (conf/live/default.yaml); the group
has no structured schema, so a misspelt key is refused here rather than ignored."""


@dataclass(frozen=True)
class LiveSettings:
    """Everything a live run needs, checked before any call."""

    loop: LoopSettings
    tasks: tuple[Task, ...]
    memory: str
    endpoint: str
    llm: dict[str, Any]
    extractor: dict[str, Any]
    judge: dict[str, Any]
    offline_extraction: str
    cache: str | None
    journal: str | None
    namespace: str
    threshold: float
    limit: int
    reply_tokens: int
    estimate: int
    revise_every: int = REVISE_EVERY
    revision_step: str = "reflection"
    cache_key: str = "live.cache"  # the key that set ``cache`` (live.cache, else llm.cache)


def _role(agent: dict[str, Any], node: Any, key: str) -> dict[str, Any]:
    """The extractor's or judge's ``LLMConfig`` fields: the agent's with ``node``'s overrides."""
    if node is None:
        return dict(agent)
    if not isinstance(node, dict):
        raise ParameterError(key, node, "null (the agent's llm) or a mapping of llm keys")
    merged = {**agent, **node}
    probe = {**merged, "base_url": merged.get("base_url") or "http://127.0.0.1:1/v1"}
    try:
        LLMConfig.from_mapping(probe)
    except ParameterError as exc:
        raise ParameterError(f"{key}.{exc.field}", exc.value, exc.allowed) from None
    return merged


def settings_from_config(cfg: DictConfig) -> LiveSettings:
    """Check ``cfg.live``, ``cfg.llm`` and ``cfg.rule``; ``ParameterError`` names the key."""
    endpoint, llm, cache, extraction = _llm_settings(cfg)
    live = node_of(cfg, "live")
    if live is None:
        raise ParameterError("live", None, "a live config group (experiment=live sets it)")
    _known_keys("live", live, LIVE_KEYS)
    check_choice("live.memory", live.get("memory"), MEMORIES)
    sessions = check_int("live.sessions", live.get("sessions"), minimum=1)
    budget = live.get("budget")
    if budget is None:
        budget = {}
    if not isinstance(budget, dict):
        raise ParameterError(
            "live.budget", budget, "a mapping with tokens and reply_tokens, or null (no limit)"
        )
    _known_keys("live.budget", budget, BUDGET_KEYS)
    tokens = budget.get("tokens")
    if tokens is not None:
        tokens = check_int("live.budget.tokens", tokens, minimum=1)
    rule = node_of(cfg, "rule") or {}
    loop = LoopSettings(
        sessions=sessions,
        explore_rate=check_probability("live.explore_rate", live.get("explore_rate")),
        extract_every=check_int("live.extract_every", live.get("extract_every"), minimum=1),
        concurrency=check_int("live.concurrency", live.get("concurrency"), minimum=1),
        seed=check_int("live.seed", live.get("seed"), minimum=0),
        agent=_text("live.agent", live.get("agent", "fincoach")),
        budget_tokens=tokens,
    )
    if loop.explore_rate >= 1:
        raise ParameterError("live.explore_rate", loop.explore_rate, "a probability in [0, 1)")
    tasks = load_tasks(_text("live.tasks", live.get("tasks")))
    threshold = check_probability("rule.threshold", rule.get("threshold", DEFAULT_THRESHOLD))
    limit = check_int("rule.limit", rule.get("limit", DEFAULT_LIMIT), minimum=1)
    reply = check_int("live.budget.reply_tokens", budget.get("reply_tokens", 150), minimum=1)
    estimate = estimate_tokens(loop, tasks, BASE_PROMPT, limit, reply)
    if tokens is not None and estimate > tokens:
        raise ParameterError(
            "live.budget.tokens", tokens,
            f"at least the {estimate} tokens estimated for {sessions} sessions "
            f"({reply} per reply, live.budget.reply_tokens); raise it or run fewer sessions",
        )  # fmt: skip
    live_cache = live.get("cache")
    if live_cache is not None and (not isinstance(live_cache, str) or not live_cache.strip()):
        raise ParameterError("live.cache", live_cache, "a SQLite file path or null")
    journal = live.get("journal")
    if journal is not None:
        journal = _text("live.journal", journal)
    namespace = _text("live.namespace", live.get("namespace", "default"))
    if live["memory"] == "graph":  # the store's own rules, checked before any call
        within("live", lambda: check_namespace(namespace))
        within("live", lambda: check_identifier("agent", loop.agent))
        longest = loop.session_id(sessions - 1)  # the store takes ids of MAX_IDENTIFIER
        if len(longest) > MAX_IDENTIFIER:
            raise ParameterError("live.agent", loop.agent, f"a name that keeps the session "
                                 f"ids within {MAX_IDENTIFIER} characters ({longest[-30:]!r}: "
                                 f"{len(longest)})")  # fmt: skip
    return LiveSettings(
        loop=loop, tasks=tasks, memory=live["memory"], endpoint=endpoint, llm=llm,
        extractor=_role(llm, live.get("extractor"), "live.extractor"),
        judge=_role(llm, live.get("judge"), "live.judge"),
        offline_extraction=extraction, cache=live_cache or cache, journal=journal,
        cache_key="live.cache" if live_cache else "llm.cache",
        namespace=namespace,
        threshold=threshold, limit=limit, reply_tokens=reply, estimate=estimate,
        revise_every=check_int(
            "live.revise_every", live.get("revise_every", REVISE_EVERY), minimum=1
        ),
        revision_step=check_choice(
            "live.revision_step", live.get("revision_step", "reflection"), REVISION_STEPS
        ),
    )  # fmt: skip


def _known_keys(prefix: str, node: dict[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(node) - set(allowed))
    if unknown:
        raise ParameterError(
            f"{prefix}.{unknown[0]}", node[unknown[0]], f"unknown key; allowed: {list(allowed)}"
        )


def _text(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ParameterError(key, value, "a non-empty string")
    return value


validate_config = settings_from_config
"""Called by ``experiments.build.validate`` before any MLflow run is created."""


@contextlib.contextmanager
def _endpoints(settings: LiveSettings) -> Iterator[tuple[Endpoint, Endpoint, Endpoint]]:
    """The agent's, the extractor's and the judge's endpoints (one offline server for all
    three when the endpoint is offline), sharing the reply cache."""
    try:
        cache = ReplyCache(settings.cache) if settings.cache else None
    except ParameterError as exc:  # named by the key that set it
        raise ParameterError(settings.cache_key, exc.value, exc.allowed) from None
    server = (
        OfflineServer(extraction=settings.offline_extraction)
        if settings.endpoint == "offline"
        else None
    )
    try:
        url = server.start().base_url if server is not None else None
        made = []
        roles = {"llm": settings.llm, "live.extractor": settings.extractor,
                 "live.judge": settings.judge}  # fmt: skip
        for role, fields in roles.items():
            # a role's own base_url (live.judge.base_url) wins over the offline server's
            config = LLMConfig.from_mapping({**fields, "base_url": fields["base_url"] or url})
            try:
                made.append(Endpoint(preflight(config), config, cache))
            except ParameterError as exc:
                raise _named(exc, role, fields, settings.llm) from None
        yield made[0], made[1], made[2]
    finally:
        if server is not None:
            server.stop()
        if cache is not None:
            cache.close()


def _named(
    exc: ParameterError, role: str, fields: dict[str, Any], agent: dict[str, Any]
) -> ParameterError:
    """``exc`` (``api_key_env`` or ``llm.base_url`` refused at the start) named by the key
    that set the value: the role's own (``live.judge.base_url``) when it overrides the
    agent's, else the agent's (``llm.*``)."""
    name = exc.field.rsplit(".", 1)[-1]
    if name not in fields:
        return exc
    group = role if fields.get(name) != agent.get(name) else "llm"
    return ParameterError(f"{group}.{name}", exc.value, exc.allowed)


def run_task(
    cfg: DictConfig, out_dir: Path, tracker: Any = None, run_id: str | None = None
) -> ScenarioResult:
    """Run the live loop (module doc); ``tracker``/``run_id``: the job's MLflow run."""
    settings = settings_from_config(cfg)
    for name in ("httpx", "httpx2"):  # not one line per request
        logging.getLogger(name).setLevel(logging.WARNING)
    art = Path(out_dir) / "artifacts"
    art.mkdir(parents=True, exist_ok=True)
    memory = make_memory(cfg, settings)
    tracer = NullTracer()
    if tracker is not None and run_id is not None:
        tracer = SessionTracer(tracker.uri, tracker.experiment_id, run_id)
    journal = Journal(journal_path(cfg, settings))
    budget = TokenBudget(settings.loop.budget_tokens)

    def on_round(records: list[dict]) -> None:
        if tracker is not None and run_id is not None:
            tracker.log(run_id, steps=_steps(records))

    with _endpoints(settings) as (agent, extractor, judge):
        if isinstance(memory, GraphMemory) and settings.revision_step == "reflection":
            memory.steps = ReflectionStep(extractor, tracer, budget)
        loop = LiveLoop(
            settings.loop, settings.tasks, memory, agent, extractor, judge, journal, tracer,
            on_round, identity=resume_identity(cfg),
        )  # fmt: skip
        try:
            loop.run(budget, resume=bool(cfg.get("resume", False)))
        finally:
            _write_artifacts(art, loop, settings, journal)
            memory.close()
    result = _result(loop, settings, budget)
    lifts = log_lifts(art)  # the analysis's own lifts.csv of this run's sessions.csv
    lifts.to_csv(art / "lifts.csv", index=False)
    result.tables["lifts"] = lifts
    return result


def make_memory(cfg: DictConfig, settings: LiveSettings) -> Any:
    """``FlatMemory`` with the rule group's rule and filter, or ``GraphMemory`` (its pack
    shows at most 3 matches, the packer's default, with the loop's explore rate)."""
    if settings.memory == "graph":
        return GraphMemory(
            settings.loop.explore_rate, settings.loop.seed, namespace=settings.namespace,
            agent=settings.loop.agent, revise_every=settings.revise_every,
        )  # fmt: skip
    rule = build_group(cfg, "rule") or DEFAULT_RULE  # the seed's rule when unset
    return FlatMemory(rule, settings.threshold, settings.limit)


def _steps(records: list[dict]) -> list[tuple[str, float, int]]:
    out = []
    for r in records:
        out.append(("success", float(r["outcome"]), int(r["index"])))
        out.append(("procedures_shown", float(len(r["shown_keys"])), int(r["index"])))
        out.append(("tokens", float(r["tokens"]), int(r["index"])))
    return out


def _write_artifacts(art: Path, loop: LiveLoop, settings: LiveSettings, journal: Journal) -> None:
    """``sessions.csv``, ``procedures.json``, ``confidence.csv``, ``journal.jsonl``."""
    frame = sessions_frame(
        loop.records, settings.loop.explore_rate, settings.loop.agent, settings.namespace
    )
    frame.to_csv(art / "sessions.csv", index=False)
    (art / "procedures.json").write_text(
        json.dumps(loop.memory.snapshot(), indent=2, ensure_ascii=False), encoding="utf-8"
    )
    pd.DataFrame(loop.confidence_path, columns=["time", "key", "confidence"]).to_csv(
        art / "confidence.csv", index=False
    )
    if isinstance(loop.memory, GraphMemory):
        for name, table in graph_tables(loop.memory).items():
            table.to_csv(art / f"{name}.csv", index=False)
    if journal.path.is_file():
        (art / "journal.jsonl").write_bytes(journal.path.read_bytes())


def graph_tables(memory: GraphMemory) -> dict[str, pd.DataFrame]:
    """The graph memory's ``runs``, ``revisions`` (the session log's tables) and
    ``pack_log`` (the store's pack log, keys as refs, shown keys a JSON list)."""
    packs = pd.DataFrame(
        [dataclasses.asdict(r) for r in memory.bot.store.pack_log()],
        columns=list(PACK_LOG_COLUMNS),
    )
    packs["shown_keys"] = [json.dumps(list(k)) for k in packs["shown_keys"]]
    revisions = pd.DataFrame(memory.revisions.log, columns=list(REVISION_COLUMNS))
    return {
        "runs": pd.DataFrame(memory.runs, columns=list(RUN_COLUMNS)),
        "revisions": revisions.astype({"prior_revision": "Int64", "decided_at": "Int64"}),
        "pack_log": packs,
    }


def _result(loop: LiveLoop, settings: LiveSettings, budget: TokenBudget) -> ScenarioResult:
    """Counts and rates of the run; every rate with its binomial SE. The two arms are the
    sessions with a top procedure, shown or withheld (a session with none is in neither)."""
    result = ScenarioResult("live")
    records = loop.records
    outcome = np.array([r["outcome"] for r in records], dtype=float)
    withheld = np.array([r["withheld"] for r in records], dtype=bool)
    shown = np.array([bool(r["top_key"]) for r in records], dtype=bool) & ~withheld
    result.add_rate("success_rate", outcome.sum(), len(outcome))
    result.add_rate("success_rate_withheld", outcome[withheld].sum(), withheld.sum())
    result.add_rate("success_rate_shown", outcome[shown].sum(), shown.sum())
    calls = [c for r in records for c in r["calls"]]
    result.metrics.update(
        n_sessions=float(len(records)),
        n_resumed=float(loop.resumed),
        n_withheld=float(withheld.sum()),
        n_procedures=float(len(loop.memory.snapshot())),
        n_calls=float(len(calls)),
        n_cached_calls=float(sum(c["cached"] for c in calls)),
        n_learn_errors=float(sum(r.get("learn_error") is not None for r in records)),
        n_learned_refused=float(len(getattr(loop.memory, "refused", ()))),
        n_runs_unrecorded=float(len(getattr(loop.memory, "unrecorded", ()))),
        tokens_total=float(sum(r["tokens"] for r in records)),
        tokens_estimate=float(settings.estimate),
        budget_spent=float(budget.spent),
    )
    result.tables["sessions"] = sessions_frame(
        records, settings.loop.explore_rate, settings.loop.agent, settings.namespace
    )
    result.tables["confidence"] = pd.DataFrame(loop.confidence_path)
    if isinstance(loop.memory, GraphMemory):
        _revision_metrics(result, loop.memory.revisions.log)
        tables = graph_tables(loop.memory)
        result.tables["runs"] = tables["runs"]
        result.tables["revisions"] = tables["revisions"]
    return result


def _revision_metrics(result: ScenarioResult, log: list[dict]) -> None:
    """The gate's decisions on the live revisions (the loop scenario's names): proposed
    (revisions with a prior), decided, accepted, reverted."""
    proposed = [r for r in log if r["prior_revision"] is not None]
    verdicts = [r["verdict"] for r in proposed]
    result.metrics.update(
        revisions_proposed=float(len(proposed)),
        revisions_decided=float(sum(v != "pending" for v in verdicts)),
        revisions_accepted=float(verdicts.count("accepted")),
        revisions_reverted=float(verdicts.count("reverted")),
    )
