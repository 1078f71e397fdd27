"""Pinned ConfidenceScenario configurations: same config, same seed, same numbers.

``CASES`` names configurations that cover every branch of the scenario (the three rules,
withholding the top procedure or the whole prompt, interference, label flips, a biased
judge, missing and delayed ratings, exploration, heterogeneous and mixed base rates,
several chunks, a limit that binds and one that does not, the exact regime). Their
metrics and tables were recorded with the scenario as it was before the fused session
pass (commit 2f185fb; the three ``off_grid`` and ``fine_steps`` cases were added later and
recorded with that commit's scenario too) and are stored in ``tests/data/confidence_pinned.json``;
``test_confidence_pinned.py`` re-runs them and requires every value to be equal exactly.

``python tests/simulators/confidence_pins.py --write`` rewrites the fixture: only when a
change of numbers is intended, said in the commit message.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
FIXTURE = ROOT / "tests" / "data" / "confidence_pinned.json"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from procmem_core.flat import BaselineRule, ConfidenceRule, PosteriorRule  # noqa: E402
from simulators.feedback import Feedback  # noqa: E402
from simulators.scenarios.confidence import ConfidenceScenario  # noqa: E402
from simulators.users import UserPopulation  # noqa: E402

MIXED = UserPopulation(
    base_rate=0.7,
    base_rates=(0.5, 0.9),
    helpful_share=0.5,
    harmful_share=0.5,
    helpful_effect=0.1,
    harmful_effect=0.1,
)
CROWDED = UserPopulation(interference=0.03)
HETERO = UserPopulation(base_rate=0.65, heterogeneity=0.2)
NOISY = {"false_negative": 0.2, "false_positive": 0.1, "missing": 0.3, "delay": 2}


OFF_GRID = ConfidenceRule(initial=0.6033)  # two interleaved grids: moves by table lookup
FINE = ConfidenceRule(reward=0.0123457, penalty=0.1500001, arithmetic="grid")  # floats kept


def cases(c: type = ConfidenceScenario) -> dict[str, tuple[ConfidenceScenario, int]]:
    """Each pinned configuration (of scenario class ``c``) and its seed."""
    return {
        "seed_library": (c(replications=3000, sessions=40), 11),
        "seed_library_chunks": (c(replications=700, sessions=25, chunk_size=256), 12),
        "limit_not_binding": (c(replications=1500, procedures=5, limit=10, sessions=30), 13),
        "many_procedures": (c(replications=600, procedures=20, limit=6, sessions=30), 14),
        "other_step_rule": (
            c(
                rule=ConfidenceRule(initial=0.7, reward=0.05, penalty=0.1, floor=0.1, ceiling=0.9),
                threshold=0.5,
                limit=3,
                replications=1500,
                sessions=35,
            ),
            15,
        ),
        "baseline_withhold_top": (
            c(
                rule=BaselineRule(),
                population=MIXED,
                procedures=3,
                limit=2,
                withhold_rate=0.2,
                replications=1500,
                sessions=40,
            ),
            16,
        ),
        "posterior_withhold_all": (
            c(
                rule=PosteriorRule(prior_sessions=4.0),
                threshold=0.2,
                procedures=4,
                limit=3,
                withhold_rate=0.3,
                withhold="all",
                replications=1000,
                sessions=30,
            ),
            17,
        ),
        "crowded_withhold_all": (
            c(
                population=CROWDED,
                limit=2,
                withhold_rate=0.1,
                withhold="all",
                replications=1500,
                sessions=40,
            ),
            18,
        ),
        "noisy_explore": (
            c(feedback=Feedback.of(**NOISY), reshow_rate=0.2, replications=1500, sessions=40),
            19,
        ),
        "hetero_explore_limit": (
            c(population=HETERO, reshow_rate=0.3, limit=3, replications=1500, sessions=30),
            20,
        ),
        "judge_baseline_explore": (
            c(
                rule=BaselineRule(step=0.15),
                feedback=Feedback.of(leniency=0.3, harshness=0.2),
                reshow_rate=0.1,
                withhold_rate=0.15,
                replications=1200,
                sessions=30,
            ),
            21,
        ),
        "posterior_noisy_top": (
            c(
                rule=PosteriorRule(),
                population=MIXED,
                feedback=Feedback.of(false_negative=0.1, missing=0.2, delay=1),
                threshold=0.1,
                procedures=3,
                withhold_rate=0.2,
                replications=800,
                sessions=30,
            ),
            22,
        ),
        "single_exact_explore": (
            c(procedures=1, reshow_rate=0.2, replications=4000, sessions=40),
            23,
        ),
        "single_exact_mixed": (
            c(population=MIXED, procedures=1, replications=4000, sessions=40),
            24,
        ),
        "single_delay_missing": (
            c(procedures=1, feedback=Feedback.of(missing=0.4, delay=3), replications=3000),
            25,
        ),
        "off_grid_rule": (c(rule=OFF_GRID, procedures=6, limit=4, replications=1500), 27),
        "off_grid_explore_delay_withhold": (
            c(
                rule=OFF_GRID,
                feedback=Feedback.of(delay=1, missing=0.1),
                reshow_rate=0.1,
                withhold_rate=0.2,
                replications=1200,
            ),
            28,
        ),
        "fine_steps_rule": (c(rule=FINE, limit=3, replications=1200, sessions=30), 29),
        "crowded_noisy_explore_withhold_top": (
            c(
                population=CROWDED,
                feedback=Feedback.of(**NOISY),
                reshow_rate=0.15,
                withhold_rate=0.25,
                limit=4,
                replications=1200,
                sessions=40,
            ),
            26,
        ),
    }


def _number(v: Any) -> float | None:
    """A JSON-safe float (None for NaN)."""
    v = float(v)
    return None if math.isnan(v) else v


def record(scenario: ConfidenceScenario, seed: int) -> dict[str, Any]:
    """Every metric and every table column of one run."""
    result = scenario.run(seed)
    tables = {
        name: {col: [_number(x) if col != "kind" else x for x in df[col]] for col in df.columns}
        for name, df in result.tables.items()
    }
    return {"metrics": {k: _number(v) for k, v in result.metrics.items()}, "tables": tables}


def load() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="write the fixture")
    args = ap.parse_args(argv)
    data = {name: record(sc, seed) for name, (sc, seed) in cases().items()}
    if args.write:
        FIXTURE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {FIXTURE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
