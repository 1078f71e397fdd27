"""The notebook seed's two-session replay as an experiment task (``task: llm_replay``).

Session 1 runs on the base prompt (two user turns), ``learn`` extracts procedures from
its transcript, and session 2's first reply runs on the new prompt. Against the offline
server (``llm.endpoint: offline``, started on a free loopback port for the run) or any
OpenAI-compatible endpoint (``llm.endpoint: remote`` with ``llm.base_url``).

Artifacts (``out_dir/artifacts``, written as soon as each exists so a failure loses
nothing): ``system_prompt_1.txt``, ``session_1.json``/``.txt``, ``procedures.json``
(kept, dropped and the raw reply), ``candidates.json`` (the same procedures as candidate
graph procedures of a ``ProcedureStore``, see ``procmem_core.candidates``),
``system_prompt_2.txt``, ``session_2.json``/``.txt``, and ``error.json`` when a stage
fails. Metrics: tokens (prompt, completion, reasoning,
total; learn alone), latency, number of calls and cache hits, procedure counts (extracted,
dropped, shown in prompt 2), candidate counts (added, key collisions resolved, refused),
``failed`` and ``failed_stage`` (0 none, 1 session 1, 2 learn, 3 session 2,
4 candidates: a procedure the store refused). Table ``calls``: one row per call.

A failed stage always says so on stderr (the stage, the error, where the artifacts are).
``replay.on_error``: ``raise`` (default) writes ``error.json`` and re-raises, so the run
is FAILED (its artifacts are still logged) and the command exits non-zero; ``record``,
only when set explicitly, sets ``failed=1`` and returns, so a sweep goes on with every
artifact kept and the summary shows ``failed=1``.

``llm.offline_extraction``: the offline model's extraction behaviour,
``assistant_advice`` (default, also for null: the model turns its own advice into rules,
what the notebook seed observed) or ``user_requests`` (the named alternative: the user's
explicit requests first); a remote endpoint has its own behaviour and ignores it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from procmem_core.errors import ParameterError, check_int, check_probability
from procmem_core.flat import (
    BASE_PROMPT,
    DEFAULT_LIMIT,
    DEFAULT_THRESHOLD,
    build_system_prompt,
    prompt_order,
)
from procmem_core.graph import ProcedureStore, StoredProcedure
from procmem_core.learn import (
    CallRecord,
    LLMCallError,
    LLMConfig,
    chat,
    learn,
    make_client,
    transcript_text,
)
from procmem_core.learn.candidates import to_candidates
from procmem_core.learn.extraction import ExtractionError, LearnError
from procmem_core.learn.reply_cache import ReplyCache
from simulators.llm_server import OfflineServer
from simulators.offline_model import check_extraction
from simulators.result import ScenarioResult

SESSION_1 = (
    "Hi, my salary is ₹1,20,000 and expenses are ₹60,000. I'm risk-averse. "
    "I have ₹50,000 in an FD maturing soon. Where should I put it?",
    "What's the worst case scenario if I invest in a debt fund? "
    "OK, give me a clear list of what I should do next.",
)
"""The seed's session 1: the notebook's four user messages sent as two turns."""
DEFAULT_OFFLINE_EXTRACTION = "assistant_advice"
"""The replay's offline extraction when ``llm.offline_extraction`` is null: the seed's
observation (the model turned its own advice into rules); ``user_requests`` is the
named alternative."""
SESSION_2 = "Hi again. My FD matured. I have ₹50,000 to invest."
"""The opening message of the seed's session 2."""
GROUPS = ("llm", "replay", "rule")
KEY_METRICS = ("failed", "failed_stage", "n_procedures", "n_shown_session_2")
"""The headline metrics of a job's summary line (as a scenario's ``key_metrics``)."""
"""Config groups the task reads."""
ENDPOINTS = ("offline", "remote")
ON_ERROR = ("raise", "record")
STAGES = {"session_1": 1, "learn": 2, "session_2": 3, "candidates": 4}


class CandidateError(LearnError):
    """Extracted procedures the store refused (``learn.candidates.CandidateFailure``)."""

    def __init__(self, failures: list) -> None:
        self.failures = failures
        listed = "; ".join(f"{f.title!r}: {f.error}" for f in failures)
        super().__init__(f"{len(failures)} procedure(s) could not be stored: {listed}")


@dataclass(frozen=True)
class ReplaySettings:
    """Everything a replay needs, validated before any call is made."""

    endpoint: str
    llm: dict[str, Any]  # LLMConfig fields; base_url is None for the offline endpoint
    cache: str | None
    offline_extraction: str
    session_1: tuple[str, ...]
    session_2: str
    base_prompt: str
    threshold: float
    limit: int
    on_error: str


def settings_from_config(cfg: DictConfig) -> ReplaySettings:
    """Validate ``cfg.llm`` and ``cfg.replay``; raise ``ParameterError`` naming the key.

    The prompt filter (``threshold``, ``limit``) comes from the ``rule`` group, as for every
    other task; without one, the seed's 0.55 and 6.
    """
    endpoint, llm, cache, extraction = _llm_settings(cfg)
    replay = OmegaConf.to_container(cfg.replay, resolve=True) if "replay" in cfg else {}
    session_1 = tuple(replay.get("session_1", SESSION_1))
    if not session_1 or not all(isinstance(m, str) and m.strip() for m in session_1):
        raise ParameterError("replay.session_1", session_1, "expected non-empty user messages")
    session_2 = replay.get("session_2", SESSION_2)
    if not isinstance(session_2, str) or not session_2.strip():
        raise ParameterError("replay.session_2", session_2, "expected a non-empty message")
    base_prompt = replay.get("base_prompt") or BASE_PROMPT
    rule = OmegaConf.to_container(cfg.rule, resolve=True) if cfg.get("rule") else {}
    on_error = replay.get("on_error", "raise")
    if on_error not in ON_ERROR:
        raise ParameterError("replay.on_error", on_error, f"expected one of {list(ON_ERROR)}")
    return ReplaySettings(
        endpoint=endpoint,
        llm=llm,
        cache=cache,
        offline_extraction=extraction,
        session_1=session_1,
        session_2=session_2,
        base_prompt=base_prompt,
        threshold=check_probability("rule.threshold", rule.get("threshold", DEFAULT_THRESHOLD)),
        limit=check_int("rule.limit", rule.get("limit", DEFAULT_LIMIT), minimum=1),
        on_error=on_error,
    )


def _llm_settings(cfg: DictConfig) -> tuple[str, dict[str, Any], str | None, str]:
    """``cfg.llm`` checked: the endpoint, the ``LLMConfig`` fields (probed by building one),
    the reply cache path and the offline extraction."""
    llm = OmegaConf.to_container(cfg.llm, resolve=True) if "llm" in cfg else None
    if not isinstance(llm, dict):
        raise ParameterError("llm", llm, "expected an llm config group, e.g. llm=offline")
    endpoint = llm.pop("endpoint", "offline")
    cache = llm.pop("cache", None)
    extraction = llm.pop("offline_extraction", None)
    if endpoint not in ENDPOINTS:
        raise ParameterError("llm.endpoint", endpoint, f"expected one of {list(ENDPOINTS)}")
    if endpoint == "remote" and not llm.get("base_url"):
        raise ParameterError("llm.base_url", llm.get("base_url"), "required for endpoint=remote")
    if endpoint == "offline" and llm.get("base_url") is not None:
        raise ParameterError(
            "llm.base_url",
            llm["base_url"],
            "null for endpoint=offline (its URL is set at run time); use llm.endpoint=remote",
        )
    try:
        extraction = check_extraction(
            DEFAULT_OFFLINE_EXTRACTION if extraction is None else extraction
        )
    except ParameterError as exc:
        raise ParameterError("llm.offline_extraction", exc.value, exc.allowed) from None
    if cache is not None and (not isinstance(cache, str) or not cache.strip()):
        raise ParameterError("llm.cache", cache, "expected a SQLite file path or null")
    probe = dict(llm)
    if endpoint == "offline":
        probe["base_url"] = "http://127.0.0.1:1/v1"  # the real port is known once it runs
    try:
        LLMConfig.from_mapping(probe)
    except ParameterError as exc:
        raise ParameterError(f"llm.{exc.field}", exc.value, exc.allowed) from None
    return endpoint, llm, cache, extraction


@contextlib.contextmanager
def endpoint_url(settings: ReplaySettings) -> Iterator[str]:
    """The base URL to call: a fresh offline server for the run, or the configured one."""
    if settings.endpoint == "offline":
        with OfflineServer(extraction=settings.offline_extraction) as server:
            yield server.base_url
    else:
        yield settings.llm["base_url"]


def _write(path: Path, content: Any) -> None:
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_text(json.dumps(content, indent=2, ensure_ascii=False), encoding="utf-8")


def _save_session(art: Path, name: str, messages: list[dict]) -> None:
    _write(art / f"{name}.json", messages)
    _write(art / f"{name}.txt", transcript_text(messages) + "\n")


validate_config = settings_from_config
"""Called by ``experiments.build.validate`` before any MLflow run is created."""


@dataclass
class _Replay:
    """The state of one replay while it runs: calls made, counts, the stage reached."""

    settings: ReplaySettings
    art: Path
    calls: list[CallRecord] = dataclasses.field(default_factory=list)
    counts: dict[str, float] = dataclasses.field(default_factory=lambda: dict.fromkeys(COUNTS, 0.0))
    stage: str = "session_1"

    def run(self, client: Any, config: LLMConfig, cache: ReplyCache | None) -> None:
        prompt_1 = self.settings.base_prompt
        _write(self.art / "system_prompt_1.txt", prompt_1)
        session_1: list[dict] = []
        for message in self.settings.session_1:
            session_1.append({"role": "user", "content": message})
            reply = chat(prompt_1, session_1, client, config, cache)
            self.calls.append(reply.call)
            session_1.append({"role": "assistant", "content": reply.content})
            _save_session(self.art, "session_1", session_1)
        self.stage = "learn"
        learned = learn(session_1, client, config, cache)
        self.calls.extend(learned.calls)
        _write(self.art / "procedures.json", _procedures_record(learned))
        self.counts["n_procedures"] = float(len(learned.procedures))
        self.counts["n_dropped"] = float(len(learned.dropped))
        self.stage = "candidates"
        self._candidates(learned.procedures)
        prompt_2 = build_system_prompt(
            learned.procedures, self.settings.threshold, self.settings.limit, prompt_1
        )
        _write(self.art / "system_prompt_2.txt", prompt_2)
        shown = prompt_order(learned.procedures, self.settings.threshold, self.settings.limit)
        self.counts["n_shown_session_2"] = float(len(shown))
        self.stage = "session_2"
        session_2 = [{"role": "user", "content": self.settings.session_2}]
        reply = chat(prompt_2, session_2, client, config, cache)
        self.calls.append(reply.call)
        session_2.append({"role": "assistant", "content": reply.content})
        _save_session(self.art, "session_2", session_2)
        self.stage = "done"

    def _candidates(self, procedures: list) -> None:
        """The procedures as candidates of a store; any it refused fails the stage."""
        batch = to_candidates(ProcedureStore(), procedures)
        _write(self.art / "candidates.json", [_candidate_record(c) for c in batch.stored])
        self.counts["n_candidates"] = float(batch.added)
        self.counts["n_key_collisions"] = float(len(batch.collisions))
        self.counts["n_candidate_failures"] = float(len(batch.failures))
        if batch.failures:
            raise CandidateError(list(batch.failures))


COUNTS = (
    "n_procedures", "n_dropped", "n_shown_session_2", "n_candidates", "n_key_collisions",
    "n_candidate_failures",
)  # fmt: skip


def run_task(cfg: DictConfig, out_dir: Path) -> ScenarioResult:
    """Run the seed's replay; see the module docstring for what is written and measured."""
    settings = settings_from_config(cfg)
    art = Path(out_dir) / "artifacts"
    art.mkdir(parents=True, exist_ok=True)
    replay = _Replay(settings, art)
    cache = ReplyCache(settings.cache) if settings.cache else None
    try:
        with endpoint_url(settings) as base_url:
            config = LLMConfig.from_mapping({**settings.llm, "base_url": base_url})
            replay.run(make_client(config), config, cache)
    except LearnError as exc:
        replay.calls.extend(c for c in getattr(exc, "calls", []) if c not in replay.calls)
        _write(art / "error.json", _error_record(replay.stage, exc))
        print(
            f"llm_replay FAILED at stage {replay.stage}: {exc}\n"
            f"  error.json and the artifacts written so far are in {art}"
            + ("" if settings.on_error == "raise" else "\n  (replay.on_error=record: the run "
               "is recorded with failed=1 and the command goes on)"),
            file=sys.stderr,
        )  # fmt: skip
        if settings.on_error == "raise":
            raise
    finally:
        if cache is not None:
            cache.close()
    return _result(replay)


def _result(replay: _Replay) -> ScenarioResult:
    result = ScenarioResult("llm_replay")
    result.metrics.update(replay.counts)
    result.metrics.update(_call_metrics(replay.calls))
    result.metrics["failed"] = float(replay.stage != "done")
    result.metrics["failed_stage"] = float(STAGES.get(replay.stage, 0))
    result.tables["calls"] = pd.DataFrame(
        [{**dataclasses.asdict(c), "total_tokens": c.total_tokens} for c in replay.calls],
        columns=[f.name for f in dataclasses.fields(CallRecord)] + ["total_tokens"],
    )
    return result


def _procedures_record(learned: Any) -> dict[str, Any]:
    return {
        "procedures": [p.model_dump() for p in learned.extracted],
        "dropped": [
            {"index": d.index, "reason": d.reason, "entry": d.entry} for d in learned.dropped
        ],
        "raw": learned.raw,
    }


def _candidate_record(stored: StoredProcedure) -> dict[str, Any]:
    return {
        "ref": stored.ref,
        "name": stored.name,
        "situation": stored.situation,
        "steps": list(stored.steps),
        "status": stored.status,
        "metadata": stored.metadata,
    }


def _error_record(stage: str, exc: LearnError) -> dict:
    record: dict[str, Any] = {"stage": stage, "type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, ExtractionError):
        record.update(reason=exc.reason, raw=exc.raw, attempts=exc.attempts, errors=exc.errors)
    if isinstance(exc, LLMCallError):
        record.update(kind=exc.kind, status=exc.status, code=exc.code)
    if isinstance(exc, CandidateError):
        record.update(failures=[dataclasses.asdict(f) for f in exc.failures])
    return record


def _call_metrics(calls: list[CallRecord]) -> dict[str, float]:
    billed = [c for c in calls if not c.cached]
    learn_calls = [c for c in calls if c.purpose == "extraction"]
    return {
        "n_calls": float(len(calls)),
        "n_cached_calls": float(len(calls) - len(billed)),
        "n_truncated_replies": float(sum(c.finish_reason == "length" for c in calls)),
        "tokens_prompt": float(sum(c.prompt_tokens for c in billed)),
        "tokens_completion": float(sum(c.completion_tokens for c in billed)),
        "tokens_reasoning": float(sum(c.reasoning_tokens for c in billed)),
        "tokens_total": float(sum(c.total_tokens for c in billed)),
        "tokens_learn": float(sum(c.total_tokens for c in learn_calls if not c.cached)),
        "latency_s_total": float(sum(c.latency_s for c in calls)),
        "latency_s_learn": float(sum(c.latency_s for c in learn_calls)),
    }
