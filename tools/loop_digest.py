"""Digests of ``LoopScenario`` runs, to compare two checkouts bit for bit.

``python tools/loop_digest.py ROOT`` runs configurations beyond the committed decision
stream's (``tests/simulators/test_loop_decisions.py``): every quarantine exit policy
(conf/quarantine), explore rates above 0, concurrent control with a paired gate, utility
weight, delayed and missing feedback, the exported session log and a calibration block.
For each it prints one line: the name, a digest of the full decision stream (the test's
``record``: every pack, run, revision, evolve report, the worlds' logs) and a digest of the
result's metrics and tables, with floats kept exactly (``repr``). Run it with each
checkout's packages first on the path (``PYTHONPATH=ROOT``) and compare the outputs.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
sys.path.insert(0, str(ROOT))

from procmem_core.gates import make_gate  # noqa: E402
from procmem_core.quarantine import make_quarantine_policy  # noqa: E402
from simulators.feedback import Feedback  # noqa: E402


def _stream_module() -> Any:
    path = ROOT / "tests" / "simulators" / "test_loop_decisions.py"
    spec = importlib.util.spec_from_file_location("loop_decisions_stream", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def configs() -> dict[str, tuple[dict[str, Any], int]]:
    q = make_quarantine_policy
    return {
        "bench": ({"replications": 8, "sessions": 400, "evolve_every": 10}, 1),
        "seed_explore": ({"sessions": 300, "replications": 3, "explore_rate": 0.25}, 2),
        "probation": (
            {"sessions": 300, "replications": 3, "explore_rate": 0.2,
             "quarantine": q("probation", floor=0.05, candidates=2)}, 3),
        "probation_wide": (
            {"tasks": 5, "procedures_per_task": 3, "sessions": 300, "replications": 2,
             "explore_rate": 0.1, "strike_limit": 2, "utility_weight": 0.5,
             "quarantine": q("probation", floor=0.1, candidates=3)}, 4),
        "half_open": (
            {"sessions": 300, "replications": 3, "explore_rate": 0.15, "strike_limit": 2,
             "quarantine": q("half_open", cool_down=5, probes=3, release_after=2)}, 5),
        "half_open_concurrent": (
            {"sessions": 300, "replications": 2, "explore_rate": 0.1, "concurrent_share": 0.5,
             "gate": make_gate("discordant_sprt"), "revise_every": 20, "evolve_every": 3,
             "quarantine": q("half_open", cool_down=20, probes=3, release_after=2)}, 6),
        "decay": (
            {"sessions": 300, "replications": 3, "explore_rate": 0.3, "concurrent_share": 0.3,
             "quarantine": q("decay", decay_sessions=4)}, 7),
        "decay_feedback": (
            {"sessions": 300, "replications": 2, "explore_rate": 0.1, "streak_scope": "ledger",
             "feedback": Feedback.of(missing=0.3, delay=2, false_positive=0.1),
             "quarantine": q("decay", decay_sessions=10)}, 8),
        "export": (
            {"sessions": 200, "replications": 2, "explore_rate": 0.2, "export_log": 2,
             "calibration_blocks": 1, "calibration_replications": 2}, 9),
    }  # fmt: skip


def digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def main() -> None:
    from simulators.scenarios.loop import LoopScenario

    stream = _stream_module()
    patch = stream._Patch()
    for name, (params, seed) in configs().items():
        stream.CASES[name] = (params, seed)
        try:
            events = stream.record(name, patch)
        finally:
            patch.restore()
        result = LoopScenario(**params).run(seed + 100)
        metrics = {k: repr(v) for k, v in result.metrics.items()}
        tables = {
            k: [t.to_csv(float_format=repr), t.dtypes.astype(str).to_dict()]
            if hasattr(t, "to_csv")
            else repr(t)
            for k, t in result.tables.items()
        }
        print(name, digest(events), digest(metrics), digest(tables), flush=True)


if __name__ == "__main__":
    main()
