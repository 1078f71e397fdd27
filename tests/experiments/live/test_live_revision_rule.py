"""The graph memory's revision rule on a real store, without a model: which procedure is
revised with which lesson, a reverted graph is not proposed again, the pack log rows."""

from __future__ import annotations

from experiments.live.graph_memory import GraphMemory
from experiments.live.revisions import LESSON

A, B = "procedure_quantify_risk", "procedure_close_with_steps"
LEARNED = [
    {"title": "Quantify risk", "trigger": "an investment question",
     "description": "State the worst case in rupees.", "confidence": 0.6},
    {"title": "Close with steps", "trigger": "what to do next",
     "description": "End with a numbered list.", "confidence": 0.6},
]  # fmt: skip


def session(memory: GraphMemory, index: int, key: str, ok: bool, failed: str = "") -> None:
    checks = [["worst case", failed != "worst case"], ["max_words=120", failed != "max_words=120"]]
    memory.apply_outcome({
        "index": index, "session_id": f"s{index:03d}", "top_key": key, "withheld": False,
        "shown_keys": [key], "outcome": int(ok), "tokens": 10, "checks": checks,
        "served": [memory._revision(key)],
    })  # fmt: skip


def test_the_most_failed_procedure_gets_its_lesson_and_a_reverted_one_is_skipped():
    memory = GraphMemory(0.0, seed=0, evolve_every=1, revise_every=5)
    try:
        memory.now = 0
        assert memory.add_learned(LEARNED) == [A, B]
        # A: 2 of 4 pass, its 2 failures fail "worst case"; B: 1 failure, on "max_words"
        for i, (ok, failed) in enumerate([(True, ""), (False, "worst case"), (True, ""),
                                          (False, "worst case")]):  # fmt: skip
            session(memory, i, A, ok, failed)
        session(memory, 4, B, False, "max_words=120")  # session 4 ends a revision step
        rows = [r for r in memory.revisions.log if r["prior_revision"] is not None]
        assert [(r["key"], r["revision"], r["prior_revision"], r["proposed_at"]) for r in rows] == [
            (A, 2, 1, 4)
        ]
        steps = memory.bot.store.get(f"default/{A}").steps
        assert steps[-1] == LESSON + "worst case" and len(steps) == 3
        # revision 2 fails until the gate reverts it (A's revision is 1 again)
        index = 5
        while memory.revisions.log[-1]["verdict"] == "pending":
            session(memory, index, A, False, "worst case")
            index += 1
            assert index < 40
        assert memory.revisions.log[-1]["verdict"] == "reverted"
        assert memory._revision(A) == 1
        # the next step: A (most failures) would get the reverted graph again; B is revised
        while (index + 1) % 5:  # both run and pass (B is not quarantined: 3 failed in a row)
            session(memory, index, A if index % 2 else B, True)
            index += 1
        session(memory, index, B, True)  # B: 1 failed run on revision 1, A: 2
        last = memory.revisions.log[-1]
        assert (last["key"], last["prior_revision"], last["proposed_at"]) == (B, 1, index)
        assert memory.bot.store.get(f"default/{B}").steps[-1] == LESSON + "max_words=120"
        packs = memory.bot.store.pack_log()
        assert [p.session_id for p in packs] == [f"s{i:03d}" for i in range(index + 1)]
        assert packs[4].top_key == f"default/{B}" and packs[4].outcome == 0
        assert len(memory.bot.store.get(f"default/{A}").rejected_revisions) == 1
    finally:
        memory.close()


def test_the_procedure_with_the_most_failed_runs_comes_first_not_the_most_failed_checks():
    memory = GraphMemory(0.0, seed=0, evolve_every=100, revise_every=6)
    try:
        assert memory.add_learned(LEARNED) == [A, B]
        # A: 2 failed runs, each failing both checks (4 failed checks);
        # B: 3 failed runs, each failing one check (3 failed checks)
        both = [["worst case", False], ["max_words=120", False]]
        for i in range(2):
            memory.apply_outcome({
                "index": i, "session_id": f"s{i:03d}", "top_key": A, "withheld": False,
                "shown_keys": [A], "outcome": 0, "tokens": 10, "checks": both,
                "served": [1],
            })  # fmt: skip
        for i in range(2, 6):  # session 5 ends the revision step
            session(memory, i, B, i == 5, "" if i == 5 else "max_words=120")
        [proposed] = [r for r in memory.revisions.log if r["prior_revision"] is not None]
        assert (proposed["key"], proposed["proposed_at"]) == (B, 5)
    finally:
        memory.close()
