"""The design answers are those of the code before the speed-up (issue 28, item 4).

``tests/data/design_answers.json`` holds the full answers (``tools/design_fixture.py``:
picked config and levels, error rates, expected runs of both arms, frontier,
Wald-Wolfowitz bound) that ``design_gate`` gave at commit 2915019 for the quickstart's
question (both objectives) and a fixed-ledger question. The faster code must give the
same: strings, flags and integers exactly, every number within a relative 1e-7 (the
computation is reordered, so the last bits may move; the decisions it takes keep a margin
of 1e-9 relative, ``gates.tolerance``, far above those bits). The one deliberate change:
the calibrated SPRT's config gains ``recalibrate: True`` (it recalibrates per ledger size
since; at the design ledger its levels are the same).

The second speed-up (issue 28, item 4 again) is held to more: ``design_answers_head.json``
holds the full answers of commit 6de0adb, just before it, for four questions at max_runs
200: the quickstart's (alpha 0.05, beta 0.2, drop 0.15, ledger 20, share 0.5, p0 in
[0.3, 0.95]), fixed-ledger questions at ledgers 20 and 100, and alpha 0.1, beta 0.1 with
the quickstart's evidence. That speed-up only skips work whose result is already known (a
cache keyed by everything the result depends on; a candidate rejected at one p0 by more
than the decision margin is not evaluated at the others), so the picks must be identical
(strings, flags, integers) and every number within 1e-12 relative (1e-12 absolute near 0).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from procmem_core.gates import DesignQuestion, design_gate

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "design_answers.json"
RTOL = 1e-7
HEAD_FIXTURE = FIXTURE.with_name("design_answers_head.json")
"""The answers at commit 6de0adb, before the second speed-up (module docstring)."""
HEAD_RTOL = 1e-12


def differences(old: object, new: object, where: str = "", rtol: float = RTOL) -> list[str]:
    """Where ``new`` departs from ``old`` (numbers beyond ``rtol``, anything else at all)."""
    if isinstance(old, dict) and isinstance(new, dict):
        if old.keys() != new.keys():
            return [f"{where}: keys {sorted(old)} != {sorted(new)}"]
        return [d for k in old for d in differences(old[k], new[k], f"{where}.{k}", rtol)]
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{where}: {len(old)} items != {len(new)}"]
        return [
            d
            for i, (a, b) in enumerate(zip(old, new, strict=True))
            for d in differences(a, b, f"{where}[{i}]", rtol)
        ]
    if isinstance(old, float) or isinstance(new, float):
        same = math.isclose(float(old), float(new), rel_tol=rtol, abs_tol=1e-12)
        return [] if same else [f"{where}: {old!r} != {new!r}"]
    return [] if old == new else [f"{where}: {old!r} != {new!r}"]


def test_differences_sees_a_moved_number_and_a_changed_flag():
    old = {"a": [1.0, 2.0], "f": True, "cap": 185}
    assert differences(old, {"a": [1.0, 2.0 * (1 + 1e-9)], "f": True, "cap": 185}) == []
    found = differences(old, {"a": [1.0, 2.0 * (1 + 1e-6)], "f": False, "cap": 186})
    assert [d.split(":")[0] for d in found] == [".a[1]", ".f", ".cap"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["quickstart", "quickstart_max_runs", "fixed_ledger_50"])
def test_design_answers_match_the_fixture(name):
    stored = json.loads(FIXTURE.read_text())[name]
    question = DesignQuestion(**{k: tuple(v) if isinstance(v, list) else v
                                 for k, v in stored["question"].items()})  # fmt: skip
    answers = design_gate(question).answers
    new = [json.loads(json.dumps(dataclasses.asdict(a), default=float)) for a in answers]
    for old, now in zip(stored["answers"], new, strict=True):
        if old["family"] == "calibrated_sprt":  # its new field (issue 28, item b)
            assert now["config"].pop("recalibrate") is True
    assert differences(stored["answers"], new) == []


def test_differences_holds_the_head_fixture_to_1e_12():
    old = {"runs": 153.2, "cfg": {"accept_level": -1.25}}
    assert differences(old, {"runs": 153.2 * (1 + 1e-13), "cfg": {"accept_level": -1.25}},
                       rtol=HEAD_RTOL) == []  # fmt: skip
    moved = {"runs": 153.2 * (1 + 1e-11), "cfg": {"accept_level": -1.25}}
    assert [d.split(":")[0] for d in differences(old, moved, rtol=HEAD_RTOL)] == [".runs"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["quickstart", "fixed_ledger_20", "fixed_ledger_100", "alpha_10_beta_10"]
)
def test_design_answers_match_the_code_before_the_second_speed_up(name):
    stored = json.loads(HEAD_FIXTURE.read_text())[name]
    question = DesignQuestion(**{k: tuple(v) if isinstance(v, list) else v
                                 for k, v in stored["question"].items()})  # fmt: skip
    new = [json.loads(json.dumps(dataclasses.asdict(a), default=float))
           for a in design_gate(question).answers]  # fmt: skip
    assert differences(stored["answers"], new, rtol=HEAD_RTOL) == []
