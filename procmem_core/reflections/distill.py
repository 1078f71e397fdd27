"""The reflection distill worker (seed: loom-procedures.txt, "Reflections").

"The reflection_distill worker (off by default; makes model calls) pairs confidently
failed sessions with their nearest successful ones and distils the difference."

- ``pair_sessions``: each failed session whose label confidence is at least
  ``min_confidence``, oldest first, is paired with the successful session most similar
  to it (cosine similarity of the store's embedder over the session's text, or its
  situation with ``match_on="situation"``; ties go to the earliest success), if that
  similarity reaches ``similarity_floor``; pairs already distilled are skipped; at most
  ``max_pairs`` pairs per run.
- ``DistillWorker.run``: one model call per pair through the same OpenAI-compatible
  client and ``LLMConfig`` as ``learn`` (``DISTILL_PROMPT``; JSON reply
  ``{"reflection": {what_worked, what_failed, lessons}}``), handled as ``learn`` handles
  its calls: a reply cut off or not JSON is retried once with ``retry_room`` times the
  tokens; the client retries rate limits, server errors and time-outs; what still fails
  is recorded in the ``DistillLedger`` (kind, message, raw replies) and the worker goes
  on with the next pair. A reflection is written with both sessions (and their own
  evidence keys) as evidence.
- ``DistillSettings``: on/off (off by default), ``max_pairs``, ``similarity_floor``,
  ``min_confidence``, ``model`` (None: the LLM config's) and ``match_on``; from config
  values or the environment (``PROCMEM_REFLECTION_DISTILL_*``, as the seed's
  ``LOOM_REFLECTION_DISTILL_*``), which a worker built without ``settings`` reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationError

from procmem_core.errors import ParameterError
from procmem_core.learn.client import complete_checked
from procmem_core.learn.config import CallRecord, LLMConfig
from procmem_core.learn.extraction import ExtractionError, LearnError, reply_field
from procmem_core.learn.reply_cache import ReplyCache
from procmem_core.memory import MemoryRecord, MemoryStore
from procmem_core.memory.index import VectorIndex
from procmem_core.reflections.ledger import DistillAttempt, DistillLedger
from procmem_core.reflections.pairing import Pairing, SessionOutcome, SessionPair, pair_sessions
from procmem_core.reflections.records import (
    Reflection,
    reflection_fields,
    session_key,
    write_reflection,
)
from procmem_core.reflections.settings import DistillSettings

DISTILL_PROMPT = """You keep the reflections of an assistant agent: lessons about how it works.
You are shown two sessions on similar situations: one that FAILED and one that SUCCEEDED.
Compare what the agent did in each and write down the difference.
Reply with exactly one JSON object and nothing else:
{"reflection": {"what_worked": "what the successful session did that the failed one did not",
                "what_failed": "what the failed session did that the successful one did not",
                "lessons": ["a directive to the agent, one per lesson"]}}
Base every statement on the transcripts. If the agent acted the same way in both, say so
in what_failed and reply with an empty list of lessons."""
DISTILL_REQUEST = "Distil the difference between these two sessions.\n\n"
ACTOR = "reflection_distill"
"""The actor of every reflection the worker writes."""

Lesson = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class DistilledReflection(BaseModel):
    """The model's reply, validated: ``{"reflection": {what_worked, what_failed, lessons}}``."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True, frozen=True)

    what_worked: str = ""
    what_failed: str = ""
    lessons: list[Lesson] = []


def validate_distill(raw: str) -> DistilledReflection:
    """Parse one distill reply; ``InvalidJSONReply`` when it is not JSON (retried), else
    ``ExtractionError`` ("shape", "invalid_entry" or "empty")."""
    try:
        got = DistilledReflection.model_validate(reply_field(raw, "reflection", dict))
    except ValidationError as exc:
        raise ExtractionError(
            "invalid_entry", f"reflection: {exc.errors()[0]['msg']}", raw
        ) from None
    if not (got.what_worked or got.what_failed or got.lessons):
        raise ExtractionError("empty", "the reflection says nothing", raw)
    return got


def distill_request(pair: SessionPair) -> list[dict]:
    """The chat messages of one distill call."""
    body = (
        f"FAILED SESSION {pair.failed.session_id}:\n{pair.failed.text}\n\n"
        f"SUCCESSFUL SESSION {pair.succeeded.session_id}:\n{pair.succeeded.text}"
    )
    return [
        {"role": "system", "content": DISTILL_PROMPT},
        {"role": "user", "content": DISTILL_REQUEST + body},
    ]


def distill_pair(
    pair: SessionPair, client: Any, config: LLMConfig, cache: ReplyCache | None = None
) -> tuple[Reflection, list[CallRecord]]:
    """One pair's reflection (evidence: both sessions and their own keys) and its calls.

    Retries as ``learn`` does; raises ``LLMCallError`` or ``ExtractionError`` (with
    ``calls`` and, for the latter, every raw reply) when the pair cannot be distilled.
    """
    _, got, calls = complete_checked(
        client,
        config,
        distill_request(pair),
        purpose="distill",
        check=validate_distill,
        cache=cache,
    )
    reflection = Reflection(
        what_worked=got.what_worked,
        what_failed=got.what_failed,
        lessons=tuple(got.lessons),
        evidence=pair_evidence(pair),
        source="distill",
    )
    return reflection, calls


def pair_evidence(pair: SessionPair) -> tuple[str, ...]:
    """A distilled reflection's evidence: both sessions and their own keys."""
    return (
        session_key(pair.failed.session_id),
        *pair.failed.evidence,
        session_key(pair.succeeded.session_id),
        *pair.succeeded.evidence,
    )


@dataclass(frozen=True, kw_only=True)
class DistillReport:
    """One run of the worker: the pairing, the reflections written, the faults recorded."""

    enabled: bool
    pairing: Pairing | None = None
    reflections: tuple[MemoryRecord, ...] = ()
    faults: tuple[DistillAttempt, ...] = ()  # ledger rows with outcome "fault"
    calls: tuple[CallRecord, ...] = ()


@dataclass
class DistillWorker:
    """Pairs sessions, distils each pair through the model, writes reflections."""

    memory: MemoryStore
    client: Any = None
    config: LLMConfig | None = None
    settings: DistillSettings = field(default_factory=DistillSettings.from_env)
    ledger: DistillLedger = field(default_factory=DistillLedger)
    cache: ReplyCache | None = None
    namespace: str = "default"

    def __post_init__(self) -> None:
        if not isinstance(self.memory, MemoryStore):
            raise ParameterError("memory", self.memory, "expected a MemoryStore")
        if not isinstance(self.settings, DistillSettings):
            raise ParameterError("settings", self.settings, "expected DistillSettings")
        if self.settings.enabled and (
            self.client is None or not isinstance(self.config, LLMConfig)
        ):
            raise ParameterError(
                "config", self.config, "an enabled worker needs a client and an LLMConfig"
            )
        if self.config is not None and self.settings.model is not None:
            self.config = replace(self.config, model=self.settings.model)
        self._index = VectorIndex(self.memory.embedder)

    def _check_record(self, reflection: Reflection) -> None:
        """Raise what ``write_reflection`` would raise for ``reflection`` (a
        ``ParameterError``: an evidence key over the lineage cap, a text or metadata over
        the record's caps), so the pair is a recorded fault, not a halt of the run."""
        reflection_fields(replace(reflection, source="distill"), self.namespace, ACTOR)

    def run(self, sessions: Sequence[SessionOutcome]) -> DistillReport:
        """Distil every new pair (none, and no call, when the worker is off)."""
        if not self.settings.enabled:
            return DistillReport(enabled=False)
        pairing = pair_sessions(sessions, self._index, self.settings, self.ledger.done_pairs())
        written, faults, calls = [], [], []
        for pair in pairing.pairs:
            base = {
                "failed_session": pair.failed.session_id,
                "succeeded_session": pair.succeeded.session_id,
                "similarity": pair.similarity,
            }
            used: list[CallRecord] = []
            try:
                self._check_record(Reflection(lessons=("-",), evidence=pair_evidence(pair)))
                reflection, used = distill_pair(pair, self.client, self.config, self.cache)
                self._check_record(reflection)
            except (LearnError, ParameterError) as exc:
                used = list(getattr(exc, "calls", used))
                calls += used
                faults.append(self.ledger.record(**base, **_fault_fields(exc, used)))
                continue
            record = write_reflection(
                self.memory, reflection, namespace=self.namespace, actor=ACTOR
            )
            calls += used
            self.ledger.record(
                **base,
                outcome="reflection",
                record_id=record.record_id,
                calls=len(used),
                tokens=sum(c.total_tokens for c in used),
            )
            written.append(record)
        return DistillReport(
            enabled=True,
            pairing=pairing,
            reflections=tuple(written),
            faults=tuple(faults),
            calls=tuple(calls),
        )


def _fault_fields(exc: Exception, calls: list[CallRecord]) -> dict[str, Any]:
    if isinstance(exc, ParameterError):  # the memory store would refuse the record
        kind = "refused"
    else:
        kind = getattr(exc, "reason", None) or getattr(exc, "kind", None) or type(exc).__name__
    raw = getattr(exc, "attempts", None) or ([exc.raw] if getattr(exc, "raw", None) else [])
    return {
        "outcome": "fault",
        "kind": str(kind),
        "error": type(exc).__name__,
        "message": str(exc),
        "raw": tuple(str(r) for r in raw),
        "calls": len(calls),
        "tokens": sum(c.total_tokens for c in calls),
    }
