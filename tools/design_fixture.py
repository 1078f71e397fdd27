"""Write ``tests/data/design_answers.json``: the full design answers of a few questions.

    .venv/bin/python tools/design_fixture.py [OUT]
    .venv/bin/python tools/design_fixture.py --head [OUT]

The fixture pins what ``design_gate`` answers (picked config, levels, error rates,
expected runs, frontier, Wald-Wolfowitz bound) so that a change to how the answer is
computed (issue 28, item 4: the speed-ups) can be checked to leave it unchanged
(``tests/procmem_core/gates/test_design_fixture.py``). Regenerate it only for a deliberate
change of the answers, and say which figures moved in the commit: the last one was the
second-order bound between certification grid points (branch speed28e). ``--head`` writes
``tests/data/design_answers_head.json`` instead: the answers to ``HEAD_QUESTIONS``, which
the code must match within 1e-12 relative.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from procmem_core.gates import DesignQuestion, design_gate

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "design_answers.json"
HEAD_OUT = OUT.with_name("design_answers_head.json")
QUESTIONS = {
    "quickstart": DesignQuestion(ledger=20, concurrent=0.5, max_runs=200),
    "quickstart_max_runs": DesignQuestion(
        ledger=20, concurrent=0.5, max_runs=200, objective="max_runs"
    ),
    "fixed_ledger_50": DesignQuestion(ledger=50, concurrent=0.0, max_runs=200),
}

HEAD_QUESTIONS = {
    "quickstart": DesignQuestion(ledger=20, concurrent=0.5, max_runs=200),
    "fixed_ledger_20": DesignQuestion(ledger=20, concurrent=0.0, max_runs=200),
    "fixed_ledger_100": DesignQuestion(ledger=100, concurrent=0.0, max_runs=200),
    "alpha_10_beta_10": DesignQuestion(
        alpha=0.1, beta=0.1, ledger=20, concurrent=0.5, max_runs=200
    ),
}


def answers(question: DesignQuestion) -> list[dict]:
    """Every family's answer as plain JSON values (tuples as lists)."""
    return [json.loads(json.dumps(dataclasses.asdict(a), default=float)) for a in
            design_gate(question).answers]  # fmt: skip


def main() -> None:
    args = sys.argv[1:]
    head = "--head" in args
    args = [a for a in args if a != "--head"]
    out = Path(args[0]) if args else HEAD_OUT if head else OUT
    questions = HEAD_QUESTIONS if head else QUESTIONS
    data = {name: {"question": dataclasses.asdict(q), "answers": answers(q)}
            for name, q in questions.items()}  # fmt: skip
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
