"""Each live session as an MLflow 3 trace, its outcome attached as feedback.

``SessionTracer(uri, experiment_id, run_id)`` writes, per session, a root span
``session`` (type AGENT) linked to the live job's run, with child spans ``prompt_build``
(the system prompt, the keys shown, the top key and whether it was withheld, as
attributes), ``chat_turn_<n>`` (CHAT_MODEL: the messages, the reply, tokens),
``checker`` or ``judge`` (EVALUATOR) and ``extraction`` (LLM), and the session id as the
trace's session (``mlflow.trace.session``), so ``mlflow ui`` lists the sessions under
Traces and Sessions. After the root span ends, ``mlflow.log_feedback`` attaches the
outcome (name ``outcome``, source CODE ``checker`` or LLM_JUDGE ``judge``) with the
checks as its rationale. Traces are written synchronously
(``MLFLOW_ENABLE_ASYNC_TRACE_LOGGING=false``), so a trace exists when its session is
journaled and a kill loses none that the journal has.

A graph run's revision reflection (``experiments.live.reflect``) is made while a
finished session is applied, after its trace ended: ``revision`` writes it as a trace of
its own (root span ``revision``, LLM) in that session's MLflow session, tagged
``procmem.revision`` and not ``procmem.session_id``.

``NullTracer`` does the same calls as no-ops (a loop run outside a job, e.g. in tests of
the loop alone).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

os.environ.setdefault("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")


class _NullSpan:
    trace_id = ""

    def set_attributes(self, attributes: dict[str, Any]) -> None:
        """Nothing: no trace is written."""

    def set_inputs(self, inputs: Any) -> None:
        """Nothing: no trace is written."""

    def set_outputs(self, outputs: Any) -> None:
        """Nothing: no trace is written."""


class NullTracer:
    """The tracer's interface without MLflow (every span a no-op)."""

    @contextlib.contextmanager
    def session(self, session_id: str, attributes: dict[str, Any]) -> Iterator[Any]:
        yield _NullSpan()

    @contextlib.contextmanager
    def span(self, name: str, span_type: str, attributes: dict[str, Any]) -> Iterator[Any]:
        yield _NullSpan()

    @contextlib.contextmanager
    def revision(self, session_id: str, attributes: dict[str, Any]) -> Iterator[Any]:
        yield _NullSpan()

    def feedback(self, trace_id: str, outcome: bool, judge: bool, rationale: str) -> None:
        """Nothing: no trace is written."""


class SessionTracer(NullTracer):
    """Sessions as MLflow traces in ``experiment_id``, linked to ``run_id``."""

    def __init__(self, uri: str, experiment_id: str, run_id: str) -> None:
        import mlflow

        mlflow.set_tracking_uri(uri)
        self.experiment_id = experiment_id
        self.run_id = run_id

    def session(self, session_id: str, attributes: dict[str, Any]) -> Any:
        """A session's trace: root span ``session`` (AGENT), tagged ``procmem.session_id``."""
        tags = {"procmem.session_id": session_id}
        return self._root("session", "AGENT", attributes, session_id, tags)

    def revision(self, session_id: str, attributes: dict[str, Any]) -> Any:
        """A revision's reflection call: a trace of its own (root span ``revision``, LLM)
        in ``session_id``'s MLflow session, without the ``procmem.session_id`` tag that
        marks a session's trace (``experiments.analyze`` reads those)."""
        return self._root("revision", "LLM", attributes, session_id, {"procmem.revision": "1"})

    @contextlib.contextmanager
    def _root(
        self, name: str, kind: str, attributes: dict[str, Any], session_id: str, tags: dict
    ) -> Iterator[Any]:
        """A root span in this run's experiment, its trace in MLflow session ``session_id``."""
        import mlflow
        from mlflow.entities.trace_location import MlflowExperimentLocation

        with mlflow.start_span(
            name,
            span_type=kind,
            attributes=attributes,
            run_id=self.run_id,
            trace_destination=MlflowExperimentLocation(self.experiment_id),
        ) as root:
            mlflow.update_current_trace(session_id=session_id, tags=tags)
            yield root

    @contextlib.contextmanager
    def span(self, name: str, span_type: str, attributes: dict[str, Any]) -> Iterator[Any]:
        import mlflow

        with mlflow.start_span(name, span_type=span_type, attributes=attributes) as span:
            yield span

    def feedback(self, trace_id: str, outcome: bool, judge: bool, rationale: str) -> None:
        import mlflow
        from mlflow.entities import AssessmentSource

        source = AssessmentSource(
            source_type="LLM_JUDGE" if judge else "CODE", source_id="judge" if judge else "checker"
        )
        mlflow.log_feedback(
            trace_id=trace_id, name="outcome", value=bool(outcome), source=source,
            rationale=rationale[:2000],
        )  # fmt: skip
