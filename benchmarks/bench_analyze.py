"""Reading and analyzing a deployment's session log: 1,000,000 sessions over 200 procedures.

    .venv/bin/python benchmarks/bench_analyze.py [--sessions 1000000] [--procedures 200]

Writes a simulated log (``simulators.session_log``: 2,000 users, 10 % withheld, 10 %
ratings missing) as Parquet, as CSV and into a ``ProcedureStore`` file's pack log (rows
inserted by SQL) in a temporary directory (not timed), then times
reading and checking it (``experiments.analyze.read.read_log``), the lifts
(``estimate_lifts``), the seed rule's replay and the fitted world with its predictive
checks, all on one process. Goal (issue 26): at most 10 s and 2 GB on one core
(``OMP_NUM_THREADS=1``) for the whole analysis. Prints each step's wall and CPU time (on a
shared machine the CPU time is the one to read), the sessions per CPU second and the
peak resident memory; the last line is one JSON object. ``--formats store`` times the
store alone; ``PYTHONPATH=<checkout>`` times another checkout's code with this script.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.analyze.read import read_log
from procmem_core.flat import DEFAULT_RULE, DEFAULT_THRESHOLD
from procmem_core.logs import estimate_lifts
from procmem_core.logs.replay import rule_replay
from procmem_core.logs.world import fit_world
from simulators.session_log import LogWorld, log_columns, simulate


def world(procedures: int, rng: np.random.Generator) -> LogWorld:
    p1 = rng.beta(18, 12, procedures)
    lift = np.clip(rng.normal(0.03, 0.05, procedures), p1 - 0.99, p1 - 0.01)
    return LogWorld(tuple(p1 - lift), tuple(lift), explore_rate=0.1, users=2000,
                    user_sd=0.05, missing=0.1, delay=3.0)  # fmt: skip


def analyze(directory: Path) -> tuple[dict[str, float], dict[str, float]]:
    """Each step's wall time and CPU time (the process's: on a shared machine the wall
    time also counts the other jobs' turns, the CPU time only this one's)."""
    times, cpu = {}, {}
    result: dict = {}

    def step(name: str, run) -> None:
        w, c = time.perf_counter(), time.process_time()
        result[name] = run()
        times[name], cpu[name] = time.perf_counter() - w, time.process_time() - c

    step("read_and_check", lambda: read_log(directory))
    sessions = result["read_and_check"].sessions
    step("lifts", lambda: estimate_lifts(sessions))
    step("rule_replay", lambda: rule_replay(sessions, {"seed": (DEFAULT_RULE, DEFAULT_THRESHOLD)}))
    cols = result["lifts"].columns
    step("world", lambda: fit_world(sessions, cols["lift"], cols["se"], np.random.default_rng(0)))
    times["total"], cpu["total"] = sum(times.values()), sum(cpu.values())
    return times, cpu


def write_store(frame: pd.DataFrame, path: Path) -> Path:
    """The sessions as a store's pack log (``graph.packlog``), inserted by SQL (not timed)."""
    import sqlite3

    from procmem_core.graph import ProcedureStore
    from procmem_core.graph.packlog import COLUMNS

    ProcedureStore.open(path).close()
    f = frame.assign(withheld=frame["withheld"].astype(int), shown_keys="[]", agent=None)
    f = f.astype(object).where(f.notna(), None)
    con = sqlite3.connect(path)
    marks = ", ".join("?" * len(COLUMNS))
    con.executemany(f"INSERT INTO pack_log ({', '.join(COLUMNS)}) VALUES ({marks})",
                    f[list(COLUMNS)].itertuples(index=False, name=None))  # fmt: skip
    con.commit()
    con.close()
    return path


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sessions", type=int, default=1_000_000)
    p.add_argument("--procedures", type=int, default=200)
    p.add_argument("--formats", default="parquet,csv,store", help="which of parquet,csv,store")
    args = p.parse_args()
    rng = np.random.default_rng(2026)
    w = world(args.procedures, rng)
    frame = pd.DataFrame(log_columns(w, simulate(w, rng, args.sessions)))
    out = {"sessions": args.sessions, "procedures": args.procedures}
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in args.formats.split(","):
            d = Path(tmp) / fmt
            if fmt == "store":
                d = write_store(frame, Path(tmp) / "procedures.db")
            elif fmt == "parquet":
                d.mkdir()
                frame.to_parquet(d / "sessions.parquet", index=False)
            else:
                d.mkdir()
                frame.to_csv(d / "sessions.csv", index=False)
            times, cpu = analyze(d)
            rate = args.sessions / cpu["total"]
            steps = ", ".join(f"{k} {v:.2f} s ({cpu[k]:.2f} s CPU)" for k, v in times.items())
            print(f"{fmt}: {steps}; {rate:,.0f} sessions per CPU second")
            out[fmt] = {k: round(v, 3) for k, v in times.items()}
            out[f"{fmt}_cpu"] = {k: round(v, 3) for k, v in cpu.items()}
            out[f"{fmt}_sessions_per_second"] = round(rate)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB on Linux
    print(f"peak resident memory {peak:,.0f} MiB (the simulated frame included)")
    out["peak_rss_mib"] = round(peak)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
