"""The engine's fast paths give what the rules give: scalar twins against the vectorized
rules on grids with boundary cases, caches against recomputation, the resumed replay of a
pending revision against a fresh one. (The loop's whole decision stream is pinned by
tests/simulators/test_loop_decisions.py; these pin each shortcut on its own.)"""

from __future__ import annotations

import itertools
import math
import zlib
from itertools import pairwise

import numpy as np
import pytest

from procmem_core.gates import CostGate, SPRTGate
from procmem_core.graph import ProcedureGraph, ProcedureStore, Tally, embedding, matching
from procmem_core.graph import findings as fd
from procmem_core.graph import status as st
from procmem_core.graph.matching import HashingEmbedder, match_score, match_scores
from procmem_core.graph.revision import Replay, replay_events
from procmem_core.proportions import smoothed_rate

SPECIAL = [-1.0, -0.0, 0.0, 1e-300, 0.25, 0.5, 1.0, 3.5, math.inf, -math.inf, math.nan]


def same_float(a: float, b: float) -> bool:
    """Bit for bit: equal with the same sign of zero, or both NaN."""
    return np.float64(a).tobytes() == np.float64(b).tobytes() or (a != a and b != b)


# -- statuses ---------------------------------------------------------------------------


def reference_status(runs: int, candidate: bool, template: bool, quarantined: bool) -> str:
    if quarantined:
        return "quarantined"
    if template:
        return "template"
    if runs > 0:
        return "exercised"
    return "candidate" if candidate else "authored"


def test_the_status_table_scalar_and_vectorized_follow_the_precedence():
    grid = list(itertools.product([0, 1, 7], [False, True], [False, True], [False, True]))
    runs, cand, tmpl, quar = (np.array(col) for col in zip(*grid, strict=True))
    vec = st.trust_status(runs, cand, tmpl, quar)
    assert vec.dtype == np.int64
    for i, args in enumerate(grid):
        want = reference_status(*args)
        assert st.STATUSES[st.trust_status(*args)] == want
        assert st.STATUSES[st.status_code(*args)] == want
        assert (
            st.trust_status(*(np.int64(a) if j == 0 else np.bool_(a) for j, a in enumerate(args)))
            == vec[i]
        )
        assert st.STATUSES[vec[i]] == want
    assert isinstance(st.trust_status(3, False, False, False), int)
    assert isinstance(st.trust_status(np.array(3), False, False, False), int)  # 0-d: an int


def test_template_bar_and_quarantine_scalar_equal_vectorized_on_a_grid():
    s, n = np.meshgrid(np.arange(13), np.arange(16), indexing="ij")
    for stable in (False, True):
        vec = st.meets_template_bar(s, n, np.full(s.shape, stable))
        for i, j in np.ndindex(s.shape):
            one = st.meets_template_bar(int(s[i, j]), int(n[i, j]), stable)
            assert one is bool(vec[i, j])
            assert one == (stable and s[i, j] >= 5 and s[i, j] >= 0.8 * n[i, j])
    streaks = np.arange(8)
    for limit in range(6):
        vec = st.should_quarantine(streaks, limit)
        assert [st.should_quarantine(int(k), limit) for k in streaks] == vec.tolist()
        assert vec.tolist() == [limit > 0 and k >= limit for k in streaks]


# -- matching ---------------------------------------------------------------------------


def test_match_score_equals_match_scores_bit_for_bit_on_a_grid():
    weights = [(0.0, 0.0), (0.2, 0.0), (0.2, 1.0), (-0.0, 0.5), (3.0, -0.0)]
    goals = [None, *SPECIAL]
    grid = itertools.product(SPECIAL, goals, [0.0, 0.5, 1.0], [0.0, 0.3, 1.0], weights)
    for s, g, c, r, (tb, uw) in grid:
        with np.errstate(invalid="ignore"):
            vec = match_scores(np.array([s]), None if g is None else np.array([g]), c, r, tb, uw)
        assert same_float(match_score(s, g, c, r, tb, uw), float(vec[0])), (s, g, c, r, tb, uw)


def test_smoothed_rate_of_two_ints_is_the_array_rule():
    for s, n in itertools.product(range(0, 40, 3), range(0, 60, 7)):
        one = smoothed_rate(s, n)
        assert isinstance(one, np.float64)
        assert one.tobytes() == smoothed_rate(np.array([s]), np.array([n]))[0].tobytes()
        assert one == (s + 1) / (n + 2)


def _random_store(rng: np.random.Generator, n: int) -> tuple[ProcedureStore, list[str]]:
    words = ["refund", "invoice", "card", "charge", "reset", "password", "ship", "address"]
    tools = ["pay", "mail", "search"]
    store = ProcedureStore(strike_limit=2)
    texts = []
    for i in range(n):
        text = " ".join(rng.choice(words, size=3))  # repeats: tied similarities
        texts.append(text)
        tool = [str(t) for t in rng.choice(tools, size=2, replace=False)]
        graph = {"nodes": [{"id": "a", "kind": "action", "tool": tool[0]},
                           {"id": "b", "kind": "action", "tool": tool[1]}],
                 "edges": [{"src": "a", "dst": "b"}]}  # fmt: skip
        key = store.add(f"p{i}", text, graph=graph, candidate=bool(rng.random() < 0.3)).key
        for _ in range(int(rng.integers(0, 7))):
            store.record_run(key, ["a", "b"], ok=bool(rng.random() < 0.6))
        if rng.random() < 0.5:
            store.evolve(key, min_runs=1)
    return store, texts


@pytest.mark.parametrize("seed", range(6))
def test_a_small_index_ranks_as_the_vectorized_rank(seed, monkeypatch):
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    store, texts = _random_store(rng, int(rng.integers(1, 40)))
    queries = [
        {"situation": texts[0]},
        {"situation": "refund a card charge", "goal": "reset the password", "top_k": 4},
        {"situation": "ship to a new address", "recent_tools": ["pay"], "utility_weight": 0.7},
        {"situation": "invoice", "top_k": 50, "include_quarantined": True, "tool_boost": 0.0},
        {"situation": "card", "templates_only": True, "top_k": 3},
        {"situation": "refund", "include_candidates": False, "utility_weight": 2.0, "top_k": 9},
    ]
    fast = [store.match(**q) for q in queries]
    monkeypatch.setattr(matching, "SMALL_INDEX", -1)  # every rank through numpy
    slow = [store.match(**q) for q in queries]
    assert any(len(f) > 1 for f in fast)
    for f, s in zip(fast, slow, strict=True):
        assert [m.ref for m in f] == [m.ref for m in s]
        for a, b in zip(f, s, strict=True):
            for name in ("score", "similarity", "success_rate"):
                assert same_float(getattr(a, name), getattr(b, name))
            assert a == b


@pytest.mark.parametrize("seed", range(4))
def test_a_remembered_rank_equals_a_fresh_one_while_the_store_changes(seed):
    """The small index's remembered ranks (``MatchIndex._remember``) against ranks made
    afresh, after every write that can move them: runs, evolves that quarantine or
    promote, a status back from quarantine, a new procedure."""
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    store, texts = _random_store(rng, int(rng.integers(3, 20)))
    queries = [
        {"situation": texts[0]},
        {"situation": "refund a card charge", "top_k": 4},
        {"situation": "invoice", "top_k": 50, "include_quarantined": True},
        {"situation": "ship to a new address", "recent_tools": ["pay"], "top_k": 3},
        {"situation": "card", "goal": "refund", "min_similarity": 0.1, "top_k": 5},
    ]
    hits = 0
    for step in range(60):
        keys = [ref.rsplit("/", 1)[-1] for ref in store._index.keys]
        key = keys[int(rng.integers(len(keys)))]
        action = rng.random()
        if action < 0.6:
            store.record_run(key, ["a", "b"], ok=bool(rng.random() < 0.5))
        elif action < 0.9:
            store.evolve(key, min_runs=1)
        else:
            graph = {"nodes": [{"id": "a", "kind": "action", "tool": "pay"},
                               {"id": "b", "kind": "step"}],
                     "edges": [{"src": "a", "dst": "b"}]}  # fmt: skip
            text = " ".join(rng.choice(["refund", "card", "ship"], 2))
            store.add(f"new {step}", text, graph=graph)
        for q in queries:
            index = store._index
            before = len(index._ranked)
            remembered = store.match(**q)
            hits += len(index._ranked) == before > 0  # nothing new remembered: a hit
            memo, index._ranked = index._ranked, {}  # rank afresh, keep what was remembered
            fresh = store.match(**q)
            index._ranked = memo
            assert fresh == remembered
    assert hits > 100  # the remembered ranks were used
    assert any(m.status == "quarantined" for m in store.match("refund", top_k=99,
               include_quarantined=True))  # fmt: skip


def test_a_nan_score_falls_back_to_the_vectorized_order(monkeypatch):
    class NaNEmbedder:
        dim = 16

        def embed(self, texts):
            out = np.zeros((len(texts), 16), dtype=np.float32)
            out[:, 0] = [math.nan if "odd" in t else 1.0 for t in texts]
            return out

    store = ProcedureStore(embedder=NaNEmbedder())
    for name in ("odd one", "even one", "odd two"):
        store.add(name, name, steps=["a", "b"])
    fast = [m.key for m in store.match("query", top_k=3)]
    monkeypatch.setattr(matching, "SMALL_INDEX", -1)
    assert fast == [m.key for m in store.match("query", top_k=3)]


def reference_embed(dim: int, weight: float, texts: list[str]) -> np.ndarray:
    """The embedding as the engine computed it before rows were cached."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for row, text in enumerate(texts):
        words = embedding._TOKEN.findall(str(text).lower())
        for w in words:
            out[row, zlib.crc32(b"w:" + w.encode()) % dim] += 1.0
        for a, b in pairwise(words):
            out[row, zlib.crc32(f"b:{a} {b}".encode()) % dim] += weight
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=out, where=norms > 0)


def test_the_embedding_cache_returns_fresh_rows_equal_to_the_computation(monkeypatch):
    monkeypatch.setattr(embedding, "EMBED_CACHE_TEXTS", 5)
    e = HashingEmbedder(dim=64, bigram_weight=0.75)
    texts = [f"refund invoice number {i} for the customer" for i in range(8)] + ["", "x y"]
    for batch in (texts, texts[::-1], texts[:3] * 2):
        got = e.embed(batch)
        assert got.dtype == np.float32
        assert got.tobytes() == reference_embed(64, 0.75, batch).tobytes()
    assert len(e._rows) == 5  # bounded: the oldest texts went first
    got = e.embed(texts[:1])
    got[:] = 7.0  # the caller's array is its own
    assert e.embed(texts[:1]).tobytes() == reference_embed(64, 0.75, texts[:1]).tobytes()
    assert HashingEmbedder(dim=64, bigram_weight=0.75) == e  # the cache is not part of it


# -- findings and graph queries ---------------------------------------------------------


def reference_fail_prone(counts, total_runs, total_successes, level=0.05, min_runs=5):
    items = [(k, v) for k, v in counts.items() if v.runs >= min_runs]
    if not items or total_runs <= 0:
        return []
    n = np.array([v.runs for _, v in items])
    f = n - np.array([v.successes for _, v in items])
    total_f = total_runs - total_successes
    p = fd.fail_prone_pvalues(n, f, total_runs, total_f)
    flagged = (p <= level / len(items)) & (f / n > total_f / total_runs)
    return sorted((items[i][0], int(n[i]), int(f[i]), float(p[i])) for i in np.flatnonzero(flagged))


@pytest.mark.parametrize("seed", range(20))
def test_fail_prone_tests_only_items_above_the_base_rate_and_finds_the_same(seed):
    rng = np.random.default_rng(np.random.SeedSequence(100 + seed))
    total = int(rng.integers(1, 80))
    wins = int(rng.integers(0, total + 1))
    counts = {}
    for i in range(int(rng.integers(0, 8))):
        runs = int(rng.integers(0, total + 1))
        counts[f"n{i}"] = Tally(runs, int(rng.integers(0, runs + 1)))
    counts["all"] = Tally(total, wins)  # the base rate itself: never above it
    if seed % 2:
        counts["bad"] = Tally(min(total, 30), 0)  # always failing: flagged when it is tested
    got = sorted((x.src, x.runs, x.failures, x.p_value) for x in fd.fail_prone(counts, total, wins))
    assert got == reference_fail_prone(counts, total, wins)


def test_memoized_graph_queries_equal_a_fresh_graph():
    data = {
        "nodes": [{"id": i} for i in ("a", "b", "c", "d", "e")],
        "edges": [{"src": "a", "dst": "b"}, {"src": "a", "dst": "c"}, {"src": "c", "dst": "d"}],
    }
    g = ProcedureGraph.from_dict(data)
    first = (g.reading_order(), g.entry_nodes(), g.edge_pairs(), g.node_ids, g.tools())
    fresh = ProcedureGraph.from_dict(data)
    assert (g.reading_order(), g.entry_nodes(), g.edge_pairs(), g.node_ids, g.tools()) == first
    assert first == (
        fresh._reading_order(), fresh._entry_nodes(), frozenset(e.pair for e in fresh.edges),
        tuple(n.id for n in fresh.nodes), frozenset(),
    )  # fmt: skip
    assert first[0] == ("a", "e", "b", "c", "d") and first[1] == ("a", "e")
    assert g == fresh and hash(g) == hash(fresh)


# -- the resumed replay of a pending revision ------------------------------------------

STEPS = ["look up the invoice", "check the refund policy window", "issue or decline"]
SHORT = {"nodes": [{"id": "n1", "text": "look up"}, {"id": "n2", "text": "refund at once"}],
         "edges": [{"src": "n1", "dst": "n2"}]}  # fmt: skip


def _pending(rng: np.random.Generator) -> tuple[ProcedureStore, str]:
    store = ProcedureStore()
    key = store.add("refund", "a customer asks for a refund", STEPS).key
    for _ in range(12):
        store.record_run(key, ["n1", "n2", "n3"], ok=bool(rng.random() < 0.8), cost=1.0)
    store.revise(key, SHORT, "shorter")
    return store, key


def _stats(pair):
    return [(s.runs, s.successes, s.success_costs, s.outcomes, s.concurrent) for s in pair]


@pytest.mark.parametrize("seed", range(5))
def test_a_resumed_replay_equals_a_fresh_one_and_decides_alike(seed):
    gate, cost = SPRTGate(max_runs=200, min_drop=0.3), CostGate()
    rng = np.random.default_rng(np.random.SeedSequence(200 + seed))
    store, key = _pending(rng)
    entry = store._get(key)
    for _ in range(40):
        revision = 1 if rng.random() < 0.4 else None  # the prior, served concurrently
        path = ["n1", "n2", "n3"] if revision == 1 else ["n1", "n2"]
        ok = bool(rng.random() < 0.7)
        store.record_run(key, path, ok=ok, revision=revision, cost=2.0 if ok else None)
        if rng.random() < 0.3:
            report = store.evolve(key, gate=gate, cost_gate=cost)
            if report.revision_outcome != "pending":
                return
            memo = entry.judged
            assert isinstance(memo, Replay) and memo.gates == (gate, cost)
            fresh = Replay.at_proposal(entry)
            last = fresh.advance(entry)[-1]
            assert (memo.events, memo.through) == (fresh.events, fresh.through)
            assert _stats((memo.prior.stats(), memo.rev.stats())) == _stats(last)
            assert _stats(replay_events(entry)[-1]) == _stats(last)
    pytest.fail("the revision should have been pending throughout")


def test_other_gate_objects_or_a_failing_gate_start_the_replay_afresh():
    rng = np.random.default_rng(np.random.SeedSequence(7))
    store, key = _pending(rng)
    entry = store._get(key)
    for ok in (True, False, True):
        store.record_run(key, ["n1", "n2"], ok=ok)
    store.evolve(key, gate=SPRTGate(max_runs=100))
    kept = entry.judged
    assert kept is not None and kept.events == 3

    class Failing(SPRTGate):
        def decide(self, prior, revision, p0=None):
            raise RuntimeError("gate down")

    with pytest.raises(RuntimeError, match="gate down"):
        store.evolve(key, gate=Failing())
    assert entry.judged is None  # taken, not put back half-advanced
    strict = SPRTGate(max_runs=4, at_cap="revert")
    store.record_run(key, ["n1", "n2"], ok=True)
    report = store.evolve(key, gate=strict)  # other gates: replayed from the proposal
    assert report.revision_outcome == "reverted"
    assert report.gate_decisions[0].revision_runs == 4
