"""The distill worker against the offline model server: off by default, the pairing rule
checked against cosines computed here, one model call per pair through learn's client,
faults recorded in the ledger (never lost) and retried on the next run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.graph import HashingEmbedder
from procmem_core.learn import LLMConfig, make_client
from procmem_core.memory import MemoryStore
from procmem_core.memory.index import VectorIndex
from procmem_core.reflections import (
    ENV_PREFIX,
    DistillLedger,
    DistillSettings,
    DistillWorker,
    SessionOutcome,
    pair_sessions,
    read_reflection,
)
from simulators.llm_server import Fault, OfflineServer

ON = DistillSettings(enabled=True)


def outcome(sid, lines, ok, confidence=1.0, evidence=()):
    return SessionOutcome(
        session_id=sid, text="\n".join(lines), ok=ok, confidence=confidence, evidence=evidence
    )


REFUND = "a customer asks for a refund on a paid invoice"
RESET = "a user is locked out and needs a password reset"
SESSIONS = [
    outcome("f1", [REFUND, "issued the refund at once"], False, 0.95, ("run:1",)),
    outcome("w1", [RESET, "sent a reset link"], True),
    outcome(
        "w2",
        [REFUND, "checked the refund policy window", "issued the refund"],
        True,
        evidence=("run:2",),
    ),
    outcome("f2", [RESET, "asked for the old password"], False, 0.6),  # not confident
    outcome("f3", [RESET, "closed the ticket"], False, 0.9),
    outcome("w3", [RESET, "sent a reset link"], True),
]


@pytest.fixture
def server():
    with OfflineServer() as s:
        yield s


def worker_for(server, memory=None, settings=ON, ledger=None, **llm):
    config = LLMConfig(base_url=server.base_url, model="procmem-offline", **llm)
    return DistillWorker(
        memory if memory is not None else MemoryStore(),
        make_client(config),
        config,
        settings,
        ledger if ledger is not None else DistillLedger(),
    )


def test_the_worker_is_off_by_default_and_makes_no_call(server):
    assert DistillSettings().enabled is False
    memory = MemoryStore()
    report = DistillWorker(memory).run(SESSIONS)
    assert not report.enabled and report.reflections == () and len(memory) == 0
    report = worker_for(server, memory, DistillSettings()).run(SESSIONS)
    assert not report.enabled and server.requests == []


def test_settings_from_the_environment():
    env = {
        f"{ENV_PREFIX}ENABLED": "on",
        f"{ENV_PREFIX}MAX_PAIRS": "4",
        f"{ENV_PREFIX}SIMILARITY_FLOOR": "0.3",
        f"{ENV_PREFIX}MODEL": "gpt-x",
    }
    got = DistillSettings.from_env(env)
    assert got == DistillSettings(enabled=True, max_pairs=4, similarity_floor=0.3, model="gpt-x")
    assert DistillSettings.from_env({}) == DistillSettings()
    with pytest.raises(ParameterError, match=f"{ENV_PREFIX}MAX_PAIRS='many'"):
        DistillSettings.from_env({f"{ENV_PREFIX}MAX_PAIRS": "many"})
    with pytest.raises(ParameterError, match=r"similarity_floor=1.5"):
        DistillSettings.from_env({f"{ENV_PREFIX}SIMILARITY_FLOOR": "1.5"})


def test_pairs_are_confident_failures_and_their_most_similar_success():
    emb = HashingEmbedder()
    pairing = pair_sessions(SESSIONS, VectorIndex(emb), ON)
    assert pairing.confident_failures == 2 and pairing.unpaired == 0
    assert [p.key for p in pairing.pairs] == [("f1", "w2"), ("f3", "w1")]  # w1 before w3: a tie
    wins = [s for s in SESSIONS if s.ok]
    vec = emb.embed([s.text for s in SESSIONS])
    for pair in pairing.pairs:  # the reference: cosines of the embedder, here
        f = vec[[s.session_id for s in SESSIONS].index(pair.failed.session_id)]
        sims = [float(vec[[s.session_id for s in SESSIONS].index(w.session_id)] @ f) for w in wins]
        assert pair.similarity == pytest.approx(max(sims), abs=1e-6)
        assert wins[int(np.argmax(sims))].session_id == pair.succeeded.session_id
    floor = pair_sessions(SESSIONS, VectorIndex(emb), DistillSettings(similarity_floor=0.99))
    assert floor.pairs == () and floor.unpaired == 2
    one = pair_sessions(SESSIONS, VectorIndex(emb), DistillSettings(max_pairs=1))
    assert [p.key for p in one.pairs] == [("f1", "w2")]
    lax = pair_sessions(SESSIONS, VectorIndex(emb), DistillSettings(min_confidence=0.5))
    assert [p.key for p in lax.pairs] == [("f1", "w2"), ("f2", "w1"), ("f3", "w1")]
    done = pair_sessions(SESSIONS, VectorIndex(emb), ON, frozenset({("f1", "w2")}))
    assert [p.key for p in done.pairs] == [("f3", "w1")] and done.already_done == 1


def test_each_pair_is_distilled_into_a_reflection_with_both_as_evidence(server):
    memory = MemoryStore()
    report = worker_for(server, memory).run(SESSIONS)
    assert [r.kind for r in server.requests] == ["distill", "distill"]
    assert len(report.reflections) == 2 and report.faults == () and len(report.calls) == 2
    first = read_reflection(report.reflections[0])
    assert first.evidence == ("session:f1", "run:1", "session:w2", "run:2")
    assert first.source == "distill"
    assert first.what_worked == "checked the refund policy window; issued the refund"
    assert first.what_failed == "issued the refund at once"
    assert first.lessons == (
        "Do: checked the refund policy window",
        "Do: issued the refund",
        "Avoid: issued the refund at once",
    )
    assert memory.search("refund policy", top_k=10) == []  # hidden from unfiltered recall
    assert memory.search("refund policy", "reflection")[0].record == report.reflections[0]


class Stores:
    """The distill ledger and the memory store, in memory or on SQLite; ``reopen()``
    closes and reopens the SQLite ones (nothing to do in memory), so both stores pass the
    same tests."""

    def __init__(self, kind, tmp_path):
        self.kind, self.dir = kind, tmp_path
        self.ledger, self.memory = self._open()

    def _open(self):
        if self.kind == "memory":
            return DistillLedger(), MemoryStore()
        return DistillLedger.open(self.dir / "distill.db"), MemoryStore.open(self.dir / "m.db")

    def reopen(self):
        if self.kind == "sqlite":
            self.ledger.close()
            self.memory.close()
            self.ledger, self.memory = self._open()
        return self


@pytest.fixture(params=["memory", "sqlite"])
def stores(request, tmp_path):
    s = Stores(request.param, tmp_path)
    yield s
    s.ledger.close()
    s.memory.close()


def test_a_pair_is_not_distilled_twice(server, stores):
    worker_for(server, stores.memory, ledger=stores.ledger).run(SESSIONS)
    n = len(server.requests)
    stores.reopen()
    again = worker_for(server, stores.memory, ledger=stores.ledger).run(SESSIONS)
    assert again.reflections == () and again.pairing.already_done == 2
    assert len(server.requests) == n


def test_a_failed_call_is_recorded_never_lost_and_tried_again(server, stores):
    server.inject(Fault("server_error", only="distill"))
    report = worker_for(server, stores.memory, ledger=stores.ledger, max_retries=0).run(SESSIONS)
    assert len(report.reflections) == 1  # the worker went on with the next pair
    (fault,) = report.faults
    assert (fault.pair, fault.outcome, fault.kind, fault.error) == (
        ("f1", "w2"),
        "fault",
        "server_error",
        "LLMCallError",
    )
    assert "HTTP 500" in fault.message and "not retried" not in fault.message
    stores.reopen()  # what failed survives a restart
    reopened, memory = stores.ledger, stores.memory
    assert [a.pair for a in reopened.faults] == [("f1", "w2")]
    assert len(memory.records("reflection")) == 1
    retry = worker_for(server, memory, ledger=reopened, max_retries=0).run(SESSIONS)
    assert [read_reflection(r).evidence[0] for r in retry.reflections] == ["session:f1"]
    assert [a.outcome for a in reopened.attempts] == ["fault", "reflection", "reflection"]
    assert len(memory.records("reflection")) == 2


def test_replies_are_retried_as_learn_retries_them(server):
    server.inject(Fault("truncate", only="distill"))
    report = worker_for(server, settings=DistillSettings(enabled=True, max_pairs=1)).run(SESSIONS)
    assert len(report.reflections) == 1 and [c.attempt for c in report.calls] == [1, 2]
    budgets = [r.max_tokens for r in server.requests]
    assert budgets == [2000, 4000]  # retry_room 2.0, as learn
    server.inject(Fault("invalid_json", only="distill"), Fault("invalid_json", only="distill"))
    failed = worker_for(server, settings=DistillSettings(enabled=True, max_pairs=1)).run(SESSIONS)
    (fault,) = failed.faults
    assert fault.kind == "invalid_json" and len(fault.raw) == 2 and fault.calls == 2
    assert fault.raw[0].startswith("Sure! Here are")


def test_a_reply_of_the_wrong_shape_is_recorded_without_a_retry(server):
    server.inject(Fault("reply", content='{"procedures": []}', only="distill"))
    report = worker_for(server, settings=DistillSettings(enabled=True, max_pairs=1)).run(SESSIONS)
    (fault,) = report.faults
    assert (fault.kind, fault.error, fault.calls) == ("shape", "ExtractionError", 1)
    assert fault.raw == ('{"procedures": []}',)
    server.inject(Fault("reply", content='{"reflection": {"lessons": []}}', only="distill"))
    empty = worker_for(server, settings=DistillSettings(enabled=True, max_pairs=1)).run(SESSIONS)
    assert empty.faults[0].kind == "empty"


def test_the_settings_model_is_the_one_called(server):
    worker_for(server, settings=DistillSettings(enabled=True, max_pairs=1, model="other")).run(
        SESSIONS
    )
    assert server.requests[0].body["model"] == "other"


def test_bad_workers_and_sessions_are_refused(server):
    with pytest.raises(ParameterError, match="an enabled worker needs a client"):
        DistillWorker(MemoryStore(), settings=ON)
    with pytest.raises(ParameterError, match="memory="):
        DistillWorker("memory")
    with pytest.raises(ParameterError, match=r"sessions\[0\]"):
        worker_for(server).run(["a session"])
    with pytest.raises(ParameterError, match="confidence=2"):
        outcome("x", ["y"], False, 2)
    with pytest.raises(ParameterError, match="max_pairs=0"):
        DistillSettings(max_pairs=0)


def test_matching_on_the_situation_ignores_what_was_done():
    sessions = [
        SessionOutcome(
            session_id="f", text="refund\nskipped the policy", ok=False, situation=REFUND
        ),
        SessionOutcome(
            session_id="w-same-steps", text="reset\nskipped the policy", ok=True, situation=RESET
        ),
        SessionOutcome(
            session_id="w-same-task", text="refund\nread the policy", ok=True, situation=REFUND
        ),
    ]
    index = VectorIndex(HashingEmbedder())
    by_text = pair_sessions(sessions, index, DistillSettings(similarity_floor=0.1))
    by_task = pair_sessions(sessions, index, DistillSettings(match_on="situation"))
    assert [p.succeeded.session_id for p in by_text.pairs] == ["w-same-steps"]
    assert [p.succeeded.session_id for p in by_task.pairs] == ["w-same-task"]
    assert by_task.pairs[0].similarity == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ParameterError, match="match_on='words'"):
        DistillSettings(match_on="words")


def test_a_ledger_with_a_damaged_row_is_refused_naming_it_and_left_closed(tmp_path):
    """A distill-ledger row whose JSON lacks a field raises ``StoreFileError`` naming the
    file and the table (it was a bare KeyError), and the opener keeps no connection to
    the file; the file is unchanged and a sound ledger still opens."""
    import os
    import sqlite3

    from procmem_core.reflections.ledger import TABLE
    from procmem_core.storefile import StoreFileError

    path = tmp_path / "distill.db"
    ledger = DistillLedger.open(path)
    ledger.record(failed_session="a", succeeded_session="b", similarity=0.9, outcome="fault")
    ledger.close()
    again = DistillLedger.open(path)
    assert [a.pair for a in again.attempts] == [("a", "b")]
    again.close()
    con = sqlite3.connect(path)
    con.execute(f"UPDATE {TABLE} SET body = ?", ('{"seq": 1}',))
    con.commit()
    con.close()
    before = path.read_bytes()

    def open_fds() -> int:
        return sum(os.path.realpath(f"/proc/self/fd/{fd}") == str(path.resolve())
                   for fd in os.listdir("/proc/self/fd"))  # fmt: skip

    held = open_fds()
    with pytest.raises(StoreFileError, match=rf"damaged row in {TABLE} \(KeyError"):
        DistillLedger.open(path)
    assert open_fds() == held
    assert path.read_bytes() == before


def test_a_floor_of_one_pairs_a_failure_with_an_identical_success():
    """similarity_floor=1.0 (allowed: only identical sessions pair) left most identical
    pairs unpaired: the float32 cosine of a unit row with itself is 1 - 6e-8 for many
    texts (80 of 203 texts paired). The floor now allows the rounding (1e-5)."""
    index = VectorIndex(HashingEmbedder())
    texts = [REFUND, RESET, "the the the"] + [
        f"refund the invoice for customer {i} then close ticket number {7 * i}" for i in range(40)
    ]
    exact = DistillSettings(similarity_floor=1.0)
    for text in texts:
        sessions = [outcome("f", [text], False), outcome("w", [text], True)]
        pairing = pair_sessions(sessions, index, exact)
        assert [p.key for p in pairing.pairs] == [("f", "w")], text
        assert pairing.pairs[0].similarity == pytest.approx(1.0, abs=1e-5)
    apart = [outcome("f", [REFUND], False), outcome("w", [REFUND, "and more"], True)]
    assert pair_sessions(apart, index, exact).unpaired == 1  # a different text still fails


def test_a_reflection_memory_would_refuse_is_a_recorded_fault_not_a_halt(server, stores):
    """A pair whose reflection the memory store refuses (an evidence key over 256
    characters; a reply over the record's caps) raised ParameterError out of run() after
    the model call, recorded nothing, and halted every run at that pair, so later pairs
    were never distilled. Now it is a fault of kind 'refused' (before any call when the
    evidence alone is refused) and the worker goes on."""
    long_key = "run:" + "9" * 300
    sessions = [outcome("f0", [REFUND, "gave up"], False, 0.95, (long_key,)), *SESSIONS]
    worker = worker_for(server, stores.memory, ledger=stores.ledger)
    report = worker.run(sessions)
    assert [read_reflection(r).evidence[0] for r in report.reflections] == [
        "session:f1",
        "session:f3",
    ]
    (fault,) = report.faults
    assert (fault.pair, fault.kind, fault.error, fault.calls) == (
        ("f0", "w2"),
        "refused",
        "ParameterError",
        0,
    )
    assert "lineage=" in fault.message and len(server.requests) == 2  # no call for f0
    stores.reopen()
    assert [a.pair for a in stores.ledger.faults] == [("f0", "w2")]
    # one 21,000-character word: within the reply's token budget, over the text cap
    huge = json.dumps({"reflection": {"what_worked": "checkthepolicy" * 1500}})
    server.inject(Fault("reply", content=huge, only="distill"))
    more = [outcome("f9", [RESET, "asked for the old password"], False, 0.95), *SESSIONS]
    again = worker_for(server, stores.memory, ledger=stores.ledger).run(more)
    (big,) = again.faults
    assert (big.pair, big.kind, big.calls) == (("f9", "w1"), "refused", 1)
    assert again.reflections == () and len(stores.memory.records("reflection")) == 2
