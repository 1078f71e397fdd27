"""Throughput of ProcedureStore.match over many procedures (prints numbers; asserts nothing).

Usage: python benchmarks/bench_graph_match.py [n_procedures]
Compares the vectorized match with scoring the same procedures one by one in Python.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from procmem_core.graph import ProcedureStore

WORDS = ["refund", "invoice", "ledger", "deploy", "server", "customer", "month", "close"]
WORDS += ["runway", "cash", "review", "policy", "window", "escalate", "payment", "card"]
WORDS += ["bank", "forecast", "raise", "budget", "report", "audit"]
TOOLS = ["fetch", "post", "mail", "pay", "search", "book"]


def build(n: int, seed: int = 0) -> ProcedureStore:
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    store = ProcedureStore()
    for i in range(n):
        tools = rng.choice(TOOLS, size=2, replace=False)
        graph = {
            "nodes": [
                {"id": f"t{j}", "kind": "action", "tool": str(t)} for j, t in enumerate(tools)
            ],
            "edges": [{"src": "t0", "dst": "t1"}],
        }
        key = store.add(f"p{i}", " ".join(rng.choice(WORDS, size=6)), graph=graph).key
        if i % 3 == 0:
            store.record_run(key, ["t0", "t1"], ok=bool(rng.random() < 0.7))
    return store


def naive_top(store: ProcedureStore, situation: str, recent: list[str], k: int) -> list[str]:
    q = store.embedder.embed([situation])[0]
    scored = []
    for p in store.list():
        v = store.embedder.embed([p.situation])[0]
        cover = len(set(recent) & p.graph.tools()) / len(set(recent))
        scored.append((float(v @ q) + 0.2 * cover, p.key))
    return [key for _, key in sorted(scored, reverse=True)[:k]]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    t0 = time.perf_counter()
    store = build(n)
    t_build = time.perf_counter() - t0
    queries = ["refund the invoice at month close", "deploy the server after review"]
    reps = 50
    t0 = time.perf_counter()
    for i in range(reps):
        store.match(queries[i % 2], recent_tools=["fetch", "pay"], top_k=5)
    t_match = (time.perf_counter() - t0) / reps
    t0 = time.perf_counter()
    naive_top(store, queries[0], ["fetch", "pay"], 5)
    t_naive = time.perf_counter() - t0
    print(f"procedures            {n}")
    print(f"build (add + runs)    {t_build:.2f} s")
    print(f"match, vectorized     {t_match * 1e3:.2f} ms per call")
    print(f"match, one by one     {t_naive * 1e3:.1f} ms per call")
    print(f"speed-up              {t_naive / t_match:.0f}x")


if __name__ == "__main__":
    main()
