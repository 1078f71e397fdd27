"""The loop section after a search (issue 29, item 4): the trials are the sampler's picks,
not a factorial grid. Synthetic trials with known numbers, read through ``loop_section``."""

from __future__ import annotations

import json

import pandas as pd

from reports.sections.loop import loop_section
from reports.source import Sweep

OPTUNA = "hydra_plugins.hydra_optuna_sweeper.optuna_sweeper.OptunaSweeper"
TRIALS = [  # strike limit, explore rate, concurrent share, regret change
    (0, 0.021, 0.42, -0.06), (0, 0.25, 0.11, -0.04), (2, 0.05, 0.30, 0.20),
    (2, 0.18, 0.55, 0.25), (0, 0.12, 0.02, -0.05), (2, 0.29, 0.07, 0.22),
]  # fmt: skip


def _search() -> Sweep:
    """Six trials: strike limit 0 low, strike limit 2 high; the explore rate and the
    concurrent share are continuous, so each trial has values of its own."""
    runs = []
    for i, (limit, eps, share, change) in enumerate(TRIALS):
        runs.append(
            {"run_id": f"r{i}", "scenario": "loop", "status": "FINISHED",
             "params.quarantine.name": "seed", "params.scenario.strike_limit": limit,
             "params.explore.explore_rate": eps, "params.scenario.concurrent_share": share,
             "params.scenario.replications": 8, "params.scenario.sessions": 1000,
             "regret_change": change, "regret_change_se": 0.015,
             "success_change": -change, "success_change_se": 0.015,
             **{f"{m}{s}": v for m, v in (("success_rate", 0.6), ("regret", 0.1),
                                          ("regret_early", 0.1), ("regret_late", 0.1),
                                          ("success_rate_early", 0.6),
                                          ("success_rate_late", 0.6), ("quarantines", 1.0))
                for s, v in (("", v), ("_se", 0.01))}}
        )  # fmt: skip
    frame = pd.DataFrame(runs)
    names = tuple(c for c in frame.columns if c.startswith("params."))
    metrics = tuple(c for c in frame.columns if c not in (*names, "run_id", "scenario", "status"))
    return Sweep("loop_search", "p", "loop_search", frame, names, metrics, {},
                 parent_tags={"procmem.sweeper": OPTUNA})  # fmt: skip


def test_a_search_reads_no_main_effects():
    """The grid's main effects read a search as if each value were averaged over the other
    settings: the old section said "the setting that moves the trend most is
    concurrent_share: regret change -0.05 ± 0.015 at 0.02 and 0.22 ± 0.015 at 0.07 and ...
    (means over every other setting and condition)", each value one trial (the explore
    rate's spread is the same, the share won alphabetically; here the strike limit moves
    it, and the sampler picks each trial's values from the trials before it)."""
    section = loop_section(_search())
    said = section.said
    assert "moves the trend" not in said and "widest spread" not in said
    assert "means over every other setting" not in said
    captions = [getattr(b, "caption", "") for b in section.blocks]
    assert not any(c.startswith("Regret change and regret by setting") for c in captions)
    # the search's own ranking is what compares the trials
    assert said.startswith("The search ran 6 trials of 8 replications each; the lowest ")
    assert "It beats 3 of the other 5 trials by more than 2 SE of the difference" in said


def test_a_search_names_each_trial_by_its_searched_values():
    """A grid's labels keep only the params that tell its rows apart; in a search one
    continuous value does that alone, so the old section said "The loop learns with
    concurrent share 0.42" of the trial at strike limit 0 and explore rate 0.021 (the
    share plays no part here), and loop_verdict.json's "configuration" read "concurrent
    share 0.42". The trials are now named as the search's table names them."""
    section = loop_section(_search())
    said = section.said
    name = "explore.explore_rate=0.021, scenario.concurrent_share=0.42, scenario.strike_limit=0"
    assert f"The loop learns with {name} (the lowest of 6 intervals" in said
    assert "concurrent share 0.42" not in said
    assert f"-0.06 ± 0.015 with {name}. It beats" in said
    verdict = json.loads(section.files["loop_verdict.json"])
    assert verdict["configuration"] == name
    assert verdict["setting"] == name.split(", ")
    learning = next(b.frame for b in section.blocks
                    if getattr(b, "caption", "").startswith("Does it learn"))  # fmt: skip
    assert name in set(learning["configuration"])
