"""The quickstart's numbers as a committed fixture: same config, same seed, same numbers.

``python tools/quickstart_fixture.py --write [CASE ...]`` runs every quickstart job (or
the named cases) in this process and writes ``tests/data/quickstart_metrics.json``:
for each case its job seed (kept, so the numbers can be compared even where a config
change moves the config hash) and every metric, plus the seed demo's printed text.
``tests/experiments/test_quickstart_fixture.py`` re-runs the jobs at those seeds and
compares every metric exactly.

Regenerate a case only where a change of its numbers is intended, and say why in the
commit message.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "quickstart_metrics.json"
sys.path.insert(0, str(ROOT))


def quickstart_cases() -> list[str]:
    """The ``case`` values of the quickstart preset's sweep, in order."""
    text = (ROOT / "conf" / "experiment" / "quickstart.yaml").read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if x.strip().startswith("case:"))
    return [c.strip() for c in line.split(":", 1)[1].split(",")]


def run_case(case: str, job_seed: int | None = None) -> dict[str, Any]:
    """Compose ``experiment=quickstart case=<case>``, run it at its job seed (or the given
    one) and return ``{"job_seed", "metrics"}``."""
    from experiments.run import compose_job
    from experiments.spec import build_spec

    spec = build_spec(compose_job("quickstart", [f"case={case}"]))
    seed = spec.job_seed if job_seed is None else job_seed
    result = spec.scenario.run(seed)
    return {"job_seed": seed, "metrics": {k: float(v) for k, v in result.metrics.items()}}


def seed_demo_text() -> str:
    from experiments.tasks.seed_demo import demo_text

    return demo_text()


def load() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def same(a: float, b: float) -> bool:
    """Exactly equal, NaN equal to NaN."""
    return a == b or (math.isnan(a) and math.isnan(b))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write the fixture")
    ap.add_argument("cases", nargs="*", help="cases to (re)generate; default all")
    args = ap.parse_args(argv)
    data = load() if FIXTURE.exists() else {"jobs": {}}
    cases = args.cases or quickstart_cases()
    for case in cases:
        old = data["jobs"].get(case)
        data["jobs"][case] = run_case(case, None if old is None else old["job_seed"])
        print(f"{case}: job seed {data['jobs'][case]['job_seed']}", file=sys.stderr)
    data["seed_demo"] = seed_demo_text()
    if args.write:
        FIXTURE.parent.mkdir(parents=True, exist_ok=True)
        FIXTURE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {FIXTURE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
