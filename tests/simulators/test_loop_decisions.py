"""The loop's decisions, replayed: every decision the engine and the world make, exactly.

``LoopScenario`` drives the whole object engine (match, pack, record, evolve, gates). This
test re-runs a few small configurations at fixed seeds and requires the full decision
stream to equal the committed one (``tests/data/loop_decisions.json.gz``): in order,
every pack (situation, shown / withheld refs, served revisions, each match's score,
similarity, rate, status and revision, a digest of the prompt text), every recorded run
(the ``RunRecord`` as stored), every revision proposed, every evolve report (findings,
statuses, the gate records), then the world's logs and the scenario's metrics and tables.
So a change made for speed that alters any decision fails here, at the first event that
differs.

Every decision event compares exactly. The scenario's metrics and tables (summaries the
scenario computes with numpy reductions after the loop) compare at the fixture tolerance
(``tools/fixture_compare.close``: floats at 1e-12 relative, whole numbers exactly): numpy
picks its summation kernel by CPU, and on an AVX-512 machine ``regret_fixed_se`` of
``no_quarantine_ledger_streak`` came out 2 units in the last place from the stored value
(0.09761356146401386 against ...384) with every decision equal.

Regenerate only when a change of the loop's decisions is intended (and say why in the
commit message): ``python tests/simulators/test_loop_decisions.py --write``.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import importlib.util
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "data" / "loop_decisions.json.gz"
if str(ROOT) not in sys.path:  # run as a script: import the worktree's packages
    sys.path.insert(0, str(ROOT))

from procmem_core.gates import MarginGate, SPRTGate  # noqa: E402
from procmem_core.graph import ContextPacker, ProcedureStore  # noqa: E402
from simulators.feedback import Feedback  # noqa: E402
from simulators.scenarios.loop import LoopScenario  # noqa: E402

_cspec = importlib.util.spec_from_file_location(
    "fixture_compare", ROOT / "tools" / "fixture_compare.py"
)
compare = importlib.util.module_from_spec(_cspec)
_cspec.loader.exec_module(compare)
SUMMARIES = ("metrics", "tables")
"""The events computed after the loop, compared at the fixture tolerance."""

CASES: dict[str, tuple[dict[str, Any], int]] = {
    "defaults": ({"sessions": 240, "replications": 2, "evolve_every": 5}, 11),
    "concurrent": (
        {"sessions": 240, "replications": 2, "evolve_every": 3, "revise_every": 25,
         "concurrent_share": 0.4, "utility_weight": 0.5},
        12,
    ),
    "no_quarantine_ledger_streak": (
        {"sessions": 200, "replications": 2, "evolve_every": 1, "revise_every": 20,
         "strike_limit": 0, "streak_scope": "ledger", "gate": MarginGate()},
        13,
    ),
    "missing_and_delay": (
        {"sessions": 240, "replications": 2, "evolve_every": 4, "revise_every": 30,
         "feedback": Feedback.of(missing=0.25, delay=3, false_negative=0.1),
         "gate": SPRTGate(at_cap="accept")},
        14,
    ),
    "wide": (
        {"tasks": 6, "procedures_per_task": 3, "steps": 5, "sessions": 200,
         "replications": 1, "evolve_every": 2, "revise_every": 15, "strike_limit": 2,
         "revision_mix": (0.6, 0.2, 0.2)},
        15,
    ),
}  # fmt: skip


def canon(x: Any) -> Any:
    """A JSON value for ``x`` that keeps every float exactly (non-finite as text)."""
    if isinstance(x, bool | np.bool_):
        return bool(x)
    if isinstance(x, int | np.integer):
        return int(x)
    if isinstance(x, float | np.floating):
        v = float(x)
        return v if math.isfinite(v) else repr(v)
    if x is None or isinstance(x, str):
        return x
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        if type(x).__name__ == "ProcedureGraph":
            return x.canonical_hash()
        return {f.name: canon(getattr(x, f.name)) for f in dataclasses.fields(x)
                if not f.name.startswith("_")}  # fmt: skip
    if isinstance(x, dict):
        return {str(k): canon(v) for k, v in x.items()}
    if isinstance(x, list | tuple | set | frozenset):
        items = [canon(v) for v in x]
        return sorted(items, key=json.dumps) if isinstance(x, set | frozenset) else items
    if hasattr(x, "to_dict") and hasattr(x, "columns"):  # a DataFrame
        return canon(x.to_dict(orient="list"))
    raise TypeError(f"cannot record {type(x).__name__}")


def _match_row(m: Any) -> list[Any]:
    pending = m.pending_revision
    return [m.ref, m.score, m.similarity, m.success_rate, m.status, m.revision, m.runs,
            m.successes, None if pending is None else pending.prior_revision]  # fmt: skip


def _pack_event(situation: str, pack: Any) -> dict[str, Any]:
    return {
        "pack": situation,
        "shown": list(pack.procedure_keys),
        "withheld": list(pack.procedure_keys_withheld),
        "revisions": list(pack.procedure_revisions),
        "matches": [_match_row(m) for m in pack.matches],
        "text": hashlib.sha256(pack.text.encode()).hexdigest()[:16],
    }


def record(case: str, monkeypatch: Any) -> list[Any]:
    """The decision stream of one case (see the module doc), as JSON values."""
    params, seed = CASES[case]
    events: list[Any] = []
    pack, record_run = ContextPacker.pack_request, ProcedureStore.record_run
    evolve, revise = ProcedureStore.evolve, ProcedureStore.revise

    def packed(self, request, *a, **k):  # ``pack`` packs through ``pack_request`` too
        out = pack(self, request, *a, **k)
        events.append(_pack_event(request.situation, out))
        return out

    def recorded(self, *a, **k):
        out = record_run(self, *a, **k)
        events.append({"run": canon(out)})
        return out

    def evolved(self, *a, **k):
        out = evolve(self, *a, **k)
        events.append({"evolve": canon(out)})
        return out

    def revised(self, key, graph, reason, *a, **k):
        out = revise(self, key, graph, reason, *a, **k)
        events.append({"revise": [key, out.revision, graph.canonical_hash(), reason]})
        return out

    for name, fn in (("pack_request", packed),):
        monkeypatch.setattr(ContextPacker, name, fn)
    for name, fn in (("record_run", recorded), ("evolve", evolved), ("revise", revised)):
        monkeypatch.setattr(ProcedureStore, name, fn)
    sc = LoopScenario(**params)
    worlds = sc.simulate(seed)
    for w in worlds:
        events.append(
            {
                "world": {
                    "sessions": canon(w.sessions),
                    "runs": canon(w.runs),
                    "revisions": canon(w.revisions),
                    "events": canon(w.events),
                    "status_by_window": canon(w.status_by_window),
                    "stale_reports": w.stale_reports,
                    "gate_decisions": canon(w.store.gate_decisions()),
                }
            }
        )
    result = sc.run(seed)
    events.append({"metrics": canon(result.metrics)})
    events.append({"tables": canon(result.tables)})
    return events


class _Patch:
    """``monkeypatch`` for the script: set attributes, undo them all at the end."""

    def __init__(self) -> None:
        self.undo: list[tuple[Any, str, Any]] = []

    def setattr(self, obj: Any, name: str, value: Any) -> None:
        self.undo.append((obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    def restore(self) -> None:
        for obj, name, value in reversed(self.undo):
            setattr(obj, name, value)


ADDED_METRICS = {"lift_diff_n", "naive_lift_diff_n"}
"""Metrics the scenario logs that the stored stream predates (issue 30: the replications
behind the paired lift's SE); every stored value must still be equal."""


def load_fixture() -> dict[str, list[Any]]:
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def stored() -> dict[str, list[Any]]:
    return load_fixture()


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_loop_makes_the_recorded_decisions(case, stored, monkeypatch):
    expected = stored[case]
    got = json.loads(json.dumps(record(case, monkeypatch)))  # the fixture's round trip
    for i, (a, b) in enumerate(zip(got, expected, strict=False)):
        if "metrics" in a and "metrics" in b:  # metrics added since the stream was written
            added = set(a["metrics"]) - set(b["metrics"])
            assert added <= ADDED_METRICS, f"{case}: metrics {added} are new"
            a = {"metrics": {k: v for k, v in a["metrics"].items() if k not in added}}
        if set(a) == set(b) and set(a) <= set(SUMMARIES):
            bad = _summary_mismatches(a, b)
            assert not bad, f"{case}: event {i} differs at {bad[:5]}"
        else:
            assert a == b, f"{case}: event {i} differs"
    assert len(got) == len(expected)


def _summary_mismatches(got: Any, want: Any, at: str = "") -> list[tuple[str, Any, Any]]:
    """``[(path, got, want)]`` where a summary differs: the same keys and lengths, and each
    number equal under ``compare.close``."""
    if isinstance(want, dict) and isinstance(got, dict):
        if sorted(got) != sorted(want):
            return [(at, sorted(got), sorted(want))]
        return [m for k in want for m in _summary_mismatches(got[k], want[k], f"{at}/{k}")]
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return [(at, len(got), len(want))]
        return [m for i, (g, w) in enumerate(zip(got, want, strict=True))
                for m in _summary_mismatches(g, w, f"{at}[{i}]")]  # fmt: skip
    number = (int, float)
    if isinstance(want, number) and isinstance(got, number) and not isinstance(want, bool):
        return [] if compare.close(got, want) else [(at, got, want)]
    return [] if got == want else [(at, got, want)]


def test_summaries_compare_at_the_fixture_tolerance():
    """Last-bit differences pass; a real change of a metric, a count or a table fails."""
    want = next(e for e in load_fixture()["no_quarantine_ledger_streak"] if "metrics" in e)
    metrics = want["metrics"]
    name = next(k for k, v in metrics.items() if isinstance(v, float) and not v.is_integer())
    nudged = {**metrics, name: math.nextafter(math.nextafter(metrics[name], 1), 1)}
    assert nudged[name] != metrics[name]
    assert not _summary_mismatches({"metrics": nudged}, want)
    moved = {**metrics, name: metrics[name] * (1 + 1e-9)}
    assert _summary_mismatches({"metrics": moved}, want) == [
        (f"/metrics/{name}", moved[name], metrics[name])
    ]
    count = next(k for k, v in metrics.items() if isinstance(v, int | float) and v >= 1
                 and float(v).is_integer())  # fmt: skip
    assert _summary_mismatches({"metrics": {**metrics, count: metrics[count] + 1}}, want)
    assert _summary_mismatches({"metrics": {k: metrics[k] for k in list(metrics)[1:]}}, want)
    tables = next(e for e in load_fixture()["defaults"] if "tables" in e)
    table, columns = next(iter(tables["tables"].items()))
    column = next(iter(columns))
    cut = {**columns, column: columns[column][:-1]}
    assert _summary_mismatches({"tables": {**tables["tables"], table: cut}}, tables)


def test_the_cases_cover_what_the_fixture_must():
    kinds = {k for events in load_fixture().values() for e in events for k in e}
    assert {"pack", "run", "evolve", "revise", "world", "metrics", "tables"} <= kinds
    evolves = [e["evolve"] for events in load_fixture().values() for e in events if "evolve" in e]
    outcomes = {e["revision_outcome"] for e in evolves}
    assert {"accepted", "reverted", "pending"} <= outcomes
    assert any(e["fail_prone_steps"] for e in evolves)
    packs = [e for e in load_fixture()["concurrent"] if "pack" in e]
    assert any(not e["withheld"] and e["revisions"][:1] != [m[5] for m in e["matches"][:1]]
               for e in packs)  # fmt: skip


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print(__doc__)
        return 2
    data = {}
    for case in CASES:
        patch = _Patch()
        try:
            data[case] = json.loads(json.dumps(record(case, patch)))
        finally:
            patch.restore()
    with gzip.open(FIXTURE, "wt", encoding="utf-8", compresslevel=9) as f:
        json.dump(data, f, separators=(",", ":"))
    sizes = {case: len(events) for case, events in data.items()}
    print(f"wrote {FIXTURE.relative_to(ROOT)}: events per case {sizes}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
