"""Throughput of one ProcedureStore shared by 1, 2 and 8 threads (prints numbers; asserts
nothing).

Usage: python benchmarks/bench_threads.py [operations]
The same mixed operations (record_run 50%, match 20%, pack 15%, evolve 10%, revise 5%),
split evenly over the threads, on the in-memory store and on SQLite (a temporary file).
Every public method runs under the store's lock (``procmem_core.locking``), so threads
add safety, not speed: the table shows what sharing one store costs.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from contextlib import suppress
from pathlib import Path

import numpy as np

from procmem_core.graph import ContextPacker, ProcedureGraph, ProcedureStore, RevisionError

NAMES = [f"task {w}" for w in ("refund", "invoice", "deploy", "audit", "payroll", "backup")]
STEPS = ["gather the inputs", "do the work", "check the result"]
REVISIONS = [["gather the inputs", "do the work", "report the result"], STEPS]
PATHS = (["n1"], ["n1", "n2"], ["n1", "n2", "n3"], [])
THREAD_COUNTS = (1, 2, 8)


def _key(name: str) -> str:
    return "procedure_" + name.replace(" ", "_")


def _work(store: ProcedureStore, number: int, ops: int, start: threading.Barrier, errors: list):
    try:
        _operate(store, number, ops, start)
    except Exception as exc:  # reported by measure
        errors.append(exc)
        start.abort()


def _operate(store: ProcedureStore, number: int, ops: int, start: threading.Barrier) -> None:
    rng = np.random.default_rng([7, number])
    packer = ContextPacker(store, explore_rate=0.1, rng=rng)
    start.wait()
    for j in range(ops):
        name = NAMES[j % len(NAMES)]
        u = rng.random()
        if u < 0.50:
            store.record_run(_key(name), PATHS[j % 4], bool(rng.random() < 0.7))
        elif u < 0.70:
            store.match(f"please handle the {name}", top_k=3)
        elif u < 0.85:
            packer.pack(f"please handle the {name}")
        elif u < 0.95:
            store.evolve(_key(name))
        else:
            with suppress(RevisionError):  # pending or unchanged: the store's answer
                store.revise(_key(name), ProcedureGraph.from_steps(REVISIONS[j % 2]), "bench")


def measure(store: ProcedureStore, threads: int, ops: int) -> tuple[float, int]:
    """Operations per second with ``threads`` threads sharing ``store``, and the runs it
    holds afterwards."""
    for name in NAMES:
        store.add(name, f"please handle the {name}", STEPS)
    start, errors = threading.Barrier(threads + 1), []
    workers = [
        threading.Thread(target=_work, args=(store, n, ops // threads, start, errors))
        for n in range(threads)
    ]
    for w in workers:
        w.start()
    start.wait()
    t0 = time.perf_counter()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise RuntimeError(f"{len(errors)} of {threads} threads failed") from errors[0]
    runs = sum(len(store.runs(_key(n))) for n in NAMES)
    return (ops // threads) * threads / elapsed, runs


def main() -> None:
    ops = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for backend in ("memory", "sqlite"):
            for threads in THREAD_COUNTS:
                path = Path(tmp) / f"threads{threads}.db"
                store = ProcedureStore() if backend == "memory" else ProcedureStore.open(path)
                rows[backend, threads] = measure(store, threads, ops)
                store.close()
    print(f"mixed operations      {ops} per row (split over the threads)")
    print("backend   " + "".join(f"{t:>8} thr" for t in THREAD_COUNTS) + "   (operations/s)")
    for backend in ("memory", "sqlite"):
        cells = "".join(f"{rows[backend, t][0]:>12,.0f}" for t in THREAD_COUNTS)
        print(f"{backend:<10}{cells}")
    print("runs kept " + "".join(f"{rows['sqlite', t][1]:>12}" for t in THREAD_COUNTS), "(sqlite)")


if __name__ == "__main__":
    main()
