"""Matching: the default embedder, the score rule, and the vectorized store.match against a
procedure-by-procedure computation."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from procmem_core.errors import ParameterError
from procmem_core.graph import ProcedureStore
from procmem_core.graph.matching import Embedder, HashingEmbedder, match_scores
from procmem_core.proportions import smoothed_rate as smoothed_success_rate

STEPS = ["look up the invoice", "check the refund policy window", "issue or decline"]


def test_hashing_embedder_is_deterministic_unit_norm_and_word_based():
    e = HashingEmbedder(dim=64)
    a = e.embed(["Refund the invoice", "refund   THE invoice!", ""])
    assert np.array_equal(a[0], a[1])
    assert np.linalg.norm(a[0]) == pytest.approx(1.0, abs=1e-6) and not a[2].any()
    one = e.embed(["refund"])[0]
    assert np.flatnonzero(one).tolist() == [zlib.crc32(b"w:refund") % 64]
    assert isinstance(e, Embedder)


def test_similar_situations_score_higher():
    e = HashingEmbedder()
    q, near, far = e.embed(
        [
            "customer wants a refund for an invoice",
            "a customer asks for a refund on a paid invoice",
            "deploy the web server",
        ]
    )
    assert q @ near > 0.3 > q @ far


def test_score_rule_goal_geometric_mean_tool_boost_and_utility():
    s = np.array([0.64, 0.5, 0.0])
    g = np.array([0.25, 0.5, 0.9])
    cover = np.array([1.0, 0.5, 0.0])
    rate = smoothed_success_rate([3, 0, 1], [3, 0, 8])
    assert rate.tolist() == [0.8, 0.5, 0.2]
    out = match_scores(s, g, cover, rate, tool_boost=0.2, utility_weight=0.5)
    assert out == pytest.approx([0.4 + 0.2 + 0.4, 0.5 + 0.1 + 0.25, 0.0 + 0.0 + 0.1])
    assert match_scores(s) == pytest.approx(s)


def _tool_graph(tools):
    nodes = [{"id": f"t{i}", "kind": "action", "tool": t} for i, t in enumerate(tools)]
    edges = [{"src": f"t{i}", "dst": f"t{i + 1}"} for i in range(len(tools) - 1)]
    return {"nodes": nodes, "edges": edges}


def test_tool_boost_rewards_covering_recent_tools(store):
    a = store.add("a", "reconcile the ledger", graph=_tool_graph(["fetch", "post"])).key
    b = store.add("b", "reconcile the ledger", graph=_tool_graph(["fetch", "mail"])).key
    both = store.match("reconcile the ledger", recent_tools=["fetch", "post"])
    assert [m.key for m in both] == [a, b]
    assert both[0].score - both[1].score == pytest.approx(0.2 * 0.5)
    assert both[0].score - both[0].similarity == pytest.approx(0.2)


def test_utility_weight_adds_the_smoothed_success_rate(store):
    a = store.add("a", "reconcile the ledger", STEPS).key
    b = store.add("b", "reconcile the ledger", STEPS).key
    for _ in range(3):
        store.record_run(a, ["n1"], ok=False)
        store.record_run(b, ["n1"], ok=True)
    plain = store.match("reconcile the ledger")
    assert [m.key for m in plain] == [a, b]  # ties keep insertion order
    ranked = store.match("reconcile the ledger", utility_weight=1.0)
    assert [m.key for m in ranked] == [b, a]
    assert ranked[0].score - ranked[0].similarity == pytest.approx(4 / 5)
    assert (ranked[0].runs, ranked[0].successes, ranked[0].success_rate) == (3, 3, 0.8)


def test_candidates_last_and_droppable(store):
    c = store.add("mined", "reconcile the ledger exactly", STEPS, candidate=True).key
    a = store.add("authored", "reconcile something", STEPS).key
    hits = store.match("reconcile the ledger exactly")
    assert [m.key for m in hits] == [a, c] and hits[1].score > hits[0].score
    assert [m.key for m in store.match("reconcile the ledger", include_candidates=False)] == [a]


def test_namespace_filter_and_per_agent_stats(store):
    a = store.add("refund", "refund an invoice", STEPS)
    store.fork(a.key, "team")
    store.record_run("default/procedure_refund", ["n1"], ok=True, agent="bot")
    store.record_run("default/procedure_refund", ["n1"], ok=False, agent="other")
    store.record_run("default/procedure_refund", ["n1"], ok=True, agent="bot")
    assert [m.namespace for m in store.match("refund an invoice")] == ["default", "team"]
    assert [m.namespace for m in store.match("refund an invoice", namespace="team")] == ["team"]
    assert store.match("refund an invoice", namespace=["nowhere"]) == []
    m = store.match("refund an invoice", namespace="default", for_agent="bot")[0]
    assert (m.agent_stats.runs, m.agent_stats.successes) == (2, 2)
    assert [(s.agent, s.runs, s.successes) for s in m.run_stats_by_agent] == [
        ("bot", 2, 2),
        ("other", 1, 0),
    ]
    assert store.match("refund an invoice", for_agent="ghost")[0].agent_stats.runs == 0


def test_goal_is_combined_by_geometric_mean(store):
    store.add("refund", "refund an invoice", STEPS)
    e = store.embedder
    s, g, q1, q2 = e.embed(
        ["refund an invoice", "refund an invoice", "refund the invoice", "issue a refund"]
    )
    m = store.match("refund the invoice", goal="issue a refund")[0]
    assert m.similarity == pytest.approx(np.sqrt(max(s @ q1, 0) * max(g @ q2, 0)), rel=1e-5)


def test_vectorized_match_equals_procedure_by_procedure_scoring():
    rng = np.random.default_rng(np.random.SeedSequence(3))
    words = ["refund", "invoice", "ledger", "deploy", "server"]
    words += ["customer", "month", "close", "runway", "cash"]
    tools = ["fetch", "post", "mail", "pay"]
    store = ProcedureStore()
    for i in range(120):
        situation = " ".join(rng.choice(words, size=4))
        graph = _tool_graph(list(rng.choice(tools, size=2, replace=False)))
        key = store.add(f"p{i}", situation, graph=graph, candidate=bool(rng.random() < 0.1)).key
        for _ in range(int(rng.integers(0, 4))):
            store.record_run(key, ["t0"], ok=bool(rng.random() < 0.5))
    for i in range(0, 120, 7):
        store.delete(f"procedure_p{i}")  # rows move inside the index
    query, goal, recent = "refund the invoice at month close", "close the ledger", ["fetch", "pay"]
    got = store.match(query, goal, recent, top_k=200, tool_boost=0.3, utility_weight=0.4)
    e = store.embedder
    q, gq = e.embed([query, goal])
    expected = []
    for p in store.list():
        v = e.embed([p.situation])[0]
        cover = len(set(recent) & p.graph.tools()) / len(set(recent))
        rate = (p.successes + 1) / (p.runs + 2)
        score = np.sqrt(max(v @ q, 0) * max(v @ gq, 0)) + 0.3 * cover + 0.4 * rate
        expected.append((p.status == "candidate", -score, p.key))
    expected.sort(key=lambda t: (t[0], round(t[1], 9)))
    assert len(got) == len(expected)
    assert [m.score for m in got] == pytest.approx([-t[1] for t in expected], abs=1e-6)
    assert [m.status == "candidate" for m in got] == [t[0] for t in expected]


MATCH_ERRORS = [
    ({"situation": ""}, "situation=''"),
    ({"situation": "s", "goal": ""}, "goal=''"),
    ({"situation": "s", "recent_tools": "fetch"}, "recent_tools='fetch'"),
    ({"situation": "s", "top_k": 0}, "top_k=0"),
    ({"situation": "s", "tool_boost": -0.1}, "tool_boost=-0.1"),
    ({"situation": "s", "utility_weight": float("nan")}, "utility_weight=nan"),
    ({"situation": "s", "for_agent": 3}, "for_agent=3"),
]


@pytest.mark.parametrize(("kwargs", "fragment"), MATCH_ERRORS)
def test_match_rejects_bad_input(store, kwargs, fragment):
    store.add("refund", "refund an invoice", STEPS)
    with pytest.raises(ParameterError) as err:
        store.match(**kwargs)
    assert fragment in str(err.value)


class KeywordEmbedder:
    """A second embedder: one dimension per known keyword."""

    dim = 3
    words = ("refund", "deploy", "ledger")

    def embed(self, texts):
        out = np.array([[float(w in t.lower()) for w in self.words] for t in texts])
        n = np.linalg.norm(out, axis=1, keepdims=True)
        return np.divide(out, n, out=np.zeros_like(out), where=n > 0)


def test_a_second_embedder_plugs_in():
    store = ProcedureStore(embedder=KeywordEmbedder())
    store.add("a", "deploy it", STEPS)
    store.add("b", "refund it", STEPS)
    assert [m.key for m in store.match("please REFUND")] == ["procedure_b", "procedure_a"]
    with pytest.raises(ParameterError, match="embedder"):
        ProcedureStore(embedder=object())


class BrokenEmbedder(KeywordEmbedder):
    dim = 4  # but embeds 3 wide


def test_an_embedder_of_the_wrong_width_is_refused_before_writing():
    store = ProcedureStore(embedder=BrokenEmbedder())
    with pytest.raises(ParameterError, match=r"returned shape \(1, 3\)"):
        store.add("a", "deploy it", STEPS)
    assert len(store) == 0


def test_ties_follow_registration_order_through_deletes_updates_and_reopen(tmp_path):
    def build(store):
        for i in range(5):
            store.add(f"p{i}", "reconcile the ledger", STEPS)
        store.delete("procedure_p1")
        store.record_run("procedure_p0", ["n1"], ok=True)  # an update of p0's row
        store.add("p5", "reconcile the ledger", STEPS)
        return [m.key for m in store.match("reconcile the ledger", top_k=10)]

    expected = ["procedure_p0", "procedure_p2", "procedure_p3", "procedure_p4", "procedure_p5"]
    assert build(ProcedureStore()) == expected
    with ProcedureStore.open(tmp_path / "p.db") as disk:
        assert build(disk) == expected
    with ProcedureStore.open(tmp_path / "p.db") as reopened:
        assert [m.key for m in reopened.match("reconcile the ledger", top_k=10)] == expected


@pytest.mark.parametrize("size", [10, 80])  # both scoring paths: per row and in arrays
def test_a_similarity_floor_of_one_matches_every_identical_situation(size):
    """``min_similarity=1`` (allowed) means "only this very situation"; the float32 cosine
    of a row with itself is 1 within about 7e-7 either way, so without the slack the
    distill worker's floor already has (``reaches_floor``) identical situations went
    unmatched (3 of 30 here)."""
    store = ProcedureStore()
    texts = [f"customer asks for a refund on a damaged item number {i} today" for i in range(size)]
    for i, text in enumerate(texts):
        store.add(f"refund flow {i}", text, steps=["a", "b"])
    for i, text in enumerate(texts):
        hits = store.match(text, min_similarity=1.0, top_k=size)
        assert [m.key for m in hits] == [f"procedure_refund_flow_{i}"], i
