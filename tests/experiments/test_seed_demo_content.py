"""The seed demo by its content: the expected text is pinned to the seed by a committed
SHA-256 (so the check runs where ``../shared`` is absent), its numbers are those of an
exact walk of the seed's rule, and the figure plots exactly the seed's two paths and
threshold (read back from the figure's own lines, not its file size)."""

from __future__ import annotations

import hashlib
import json
import re
from fractions import Fraction as F
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from experiments.tasks import seed_demo

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
EXPECTED = (ROOT / "tests" / "data" / "seed_demo_expected.txt").read_text(encoding="utf-8")
PIN = json.loads((ROOT / "tests" / "data" / "seed_demo_excerpt.json").read_text())
SEED = ROOT.parent / "shared" / PIN["seed"]
OUTCOMES = {"Quantify the worst case": [1, 1, 0, 1, 1], "Push equity": [0, 0]}


def seed_walk(outcomes: list[int]) -> list[F]:
    """The notebook's record_outcome in exact arithmetic: +0.08 / -0.15 from 0.6 in [0, 1]."""
    c, path = F("0.6"), [F("0.6")]
    for ok in outcomes:
        c = min(F(1), c + F("0.08")) if ok else max(F(0), c - F("0.15"))
        path.append(c)
    return path


def test_the_expected_text_is_the_pinned_seed_excerpt():
    excerpt = EXPECTED.rstrip("\n")
    assert len(excerpt) == PIN["chars"]
    assert hashlib.sha256(excerpt.encode("utf-8")).hexdigest() == PIN["sha256"]


def test_the_pin_is_the_seeds_own_text_where_the_seed_is_present():
    if not SEED.exists():
        pytest.skip(f"the seed is not beside the clone ({SEED}); the hash check above ran")
    seed = SEED.read_text(encoding="utf-8")
    excerpt = seed[PIN["offset"] : PIN["offset"] + PIN["chars"]]
    assert hashlib.sha256(excerpt.encode("utf-8")).hexdigest() == PIN["sha256"]


def test_the_printed_paths_are_the_exact_walk():
    for title, outcomes in OUTCOMES.items():
        line = next(x for x in EXPECTED.splitlines() if x.startswith(title + ":"))
        printed = [F(x) for x in re.findall(r"\d\.\d\d", line.split("(")[0])]
        assert printed == seed_walk(outcomes)  # 2-decimal prints of exact 2-decimal values
        counts = re.search(r"successes (\d+), failures (\d+)", line).groups()
        assert (int(counts[0]), int(counts[1])) == (sum(outcomes), len(outcomes) - sum(outcomes))
    # the prompt holds the procedure at 0.77 and not the one at 0.30 (threshold 0.55)
    assert "Quantify the worst case" in EXPECTED.split("\n\n", 1)[1]
    assert "Push equity" not in EXPECTED.split("\n\n", 1)[1]


def test_the_figure_plots_the_seed_paths_and_threshold(tmp_path, monkeypatch):
    drawn, close = [], plt.close
    monkeypatch.setattr(plt, "close", drawn.append)  # keep the figure to read it back
    _, paths = seed_demo.confidence_paths()
    out = seed_demo.save_figure(paths, tmp_path / "confidence_paths.png")
    assert out.exists() and len(drawn) == 1
    (ax,) = drawn[0].axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    for title, outcomes in OUTCOMES.items():
        ref = [float(c) for c in seed_walk(outcomes)]
        assert list(lines[title].get_xdata()) == list(range(len(ref)))
        assert lines[title].get_ydata() == pytest.approx(ref, abs=1e-12)
    threshold = lines["threshold 0.55"]
    assert list(threshold.get_ydata()) == [0.55, 0.55]
    assert ax.get_ylim() == (0.0, 1.0)
    assert "+0.08 on success, -0.15 on failure" in ax.get_title()
    close(drawn[0])
