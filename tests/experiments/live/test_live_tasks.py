"""Live task files: the checkers' verdicts, the bundled FinCoach set, bad files refused."""

from __future__ import annotations

import json

import pytest

from experiments.live.session import JUDGE_PROMPT
from experiments.live.tasks import TaskFileError, load_tasks, parse_check, parse_task
from procmem_core.flat import BASE_PROMPT, Procedure, build_system_prompt
from simulators.offline_model import PROCEDURE_POOL, chat_reply, judge_reply


@pytest.mark.parametrize(
    ("spec", "reply", "expected"),
    [
        ({"regex": "worst case", "ignore_case": True}, "The Worst Case is 2%", True),
        ({"regex": "worst case"}, "The Worst Case is 2%", False),
        ({"not_regex": "TCS"}, "Buy TCS", False),
        ({"not_regex": "TCS"}, "Buy an index fund", True),
        ({"contains_all": ["fund", "SIP"]}, "a fund and a sip", True),
        ({"contains_all": ["fund", "SIP"]}, "a fund", False),
        ({"contains_any": ["FD", "bond"]}, "an fd", True),
        ({"contains_any": ["FD", "bond"]}, "gold", False),
        ({"contains_all": ["TCS"], "ignore_case": False}, "buy tcs", False),
        ({"contains_all": ["TCS"], "ignore_case": False}, "buy TCS", True),
        ({"contains_any": ["STRASSE"]}, "Die Straße", True),  # case-folded, not lowered
        ({"contains_any": ["straße"], "ignore_case": True}, "DIE STRASSE", True),
        ({"max_words": 3}, "one two three", True),
        ({"max_words": 3}, "one two three four", False),
        ([{"max_words": 3}, {"regex": "two"}], "one two", True),
        ([{"max_words": 3}, {"regex": "five"}], "one two", False),
    ],
)
def test_each_checker_kind_and_a_list_of_them(spec, reply, expected):
    assert all(c.passes(reply) for c in parse_check(spec, "x")) is expected


OK = {"id": "a", "situation": "s", "user_turns": ["hi"], "check": {"max_words": 3}}


def bad(**changes):
    """A task line with ``changes`` applied to a good one (None removes the field)."""
    task = {k: v for k, v in {**OK, **changes}.items() if v is not None}
    return json.dumps(task)


@pytest.mark.parametrize(
    ("line", "field", "value"),
    [
        (bad(user_turns=[]), "user_turns", "[]"),
        (bad(check={"max_words": 0}), "check.max_words", "0"),
        (bad(check={"regex": "("}), "check.regex", "'('"),
        (bad(check={"near": "x"}), "check", "near"),
        (bad(check=None), "check", "None"),
        (bad(id=""), "id", "''"),
        (bad(check=[{"max_words": 3}, {"contains_any": []}]), "check[1].contains_any", "[]"),
        (bad(judge=3), "judge", "3"),
        (bad(check={"contains_any": ["x"], "ignore_case": None}), "check.ignore_case", "None"),
        ("not json", "line", "not json"),
    ],
)
def test_a_bad_line_is_refused_naming_file_line_field_and_value(tmp_path, line, field, value):
    path = tmp_path / "tasks.jsonl"
    path.write_text(bad(id="ok") + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(TaskFileError) as err:
        load_tasks(str(path))
    message = str(err.value)
    assert f"{path}, line 2: {field}=" in message and value in message


def test_a_duplicate_id_and_a_missing_file_are_refused(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text(bad(id="ok") + "\n" + bad(id="ok") + "\n", encoding="utf-8")
    with pytest.raises(TaskFileError, match="line 2: id='ok'"):
        load_tasks(str(path))
    with pytest.raises(Exception, match=r"live\.tasks="):
        load_tasks(str(tmp_path / "nowhere.jsonl"))


def test_the_fincoach_set_starts_with_the_seed_sessions_and_uses_every_checker():
    tasks = load_tasks("fincoach")
    assert len(tasks) >= 20
    assert [t.id for t in tasks[:2]] == ["seed_session_1", "seed_session_2"]
    assert tasks[0].user_turns[1].startswith("What's the worst case scenario")
    assert tasks[1].user_turns == ("Hi again. My FD matured. I have ₹50,000 to invest.",)
    kinds = {c.kind for t in tasks for c in t.checks}
    assert kinds == {"regex", "not_regex", "max_words"}
    assert all(any(c.kind == "max_words" and c.value == 120 for c in t.checks) for t in tasks)


def _pass_rate(procedures):
    prompt = build_system_prompt(procedures)
    tasks = load_tasks("fincoach")
    wins = 0
    for task in tasks:
        messages = [{"role": "system", "content": prompt}]
        for turn in task.user_turns:
            messages.append({"role": "user", "content": turn})
            messages.append({"role": "assistant", "content": chat_reply(messages)})
        wins += all(ok for _, ok in task.check(messages[-1]["content"]))
    return wins / len(tasks)


def test_the_offline_model_passes_more_checks_with_the_right_procedures():
    pool = {p.title: Procedure(p.title, p.trigger, p.description, 0.7) for p in PROCEDURE_POOL}
    useful = [
        "Quantify the worst case", "End with a numbered action list",
        "Verify emergency fund before new investments", "Never name individual stocks",
        "Keep answers brief",
    ]  # fmt: skip
    assert _pass_rate([]) == 0.0  # the base prompt alone fails every task here
    assert _pass_rate([pool[t] for t in useful]) == 1.0
    singles = [round(_pass_rate([pool[t]]) * 22) for t in useful]
    assert singles == [3, 3, 5, 4, 3]  # each useful procedure helps on its own tasks
    others = [t for t in pool if t not in useful]
    assert len(others) == 5 and all(_pass_rate([pool[t]]) == 0.0 for t in others)
    assert _pass_rate(list(pool.values())) > _pass_rate([pool[others[0]]])
    assert build_system_prompt([]) == BASE_PROMPT


def test_the_offline_judge_passes_a_reply_holding_every_quoted_phrase():
    def verdict(rubric, reply):
        messages = [
            {"role": "system", "content": JUDGE_PROMPT},
            {"role": "user", "content": f"RUBRIC:\n{rubric}\n\nREPLY:\n{reply}"},
        ]
        return json.loads(judge_reply(messages))["pass"]

    assert verdict('Mentions "emergency fund" and "SIP".', "Emergency fund first, then a SIP.")
    assert not verdict('Mentions "emergency fund" and "SIP".', "Start a SIP.")
    assert verdict("Any helpful answer.", "Start a SIP.")


def test_parse_task_keeps_a_judge_rubric_without_checks():
    task = parse_task({"id": "j", "situation": "s", "user_turns": ["hi"], "judge": "Polite."}, "x")
    assert task.judge == "Polite." and task.checks == ()


def test_a_task_file_with_a_byte_order_mark_or_crlf_lines_is_read(tmp_path):
    path = tmp_path / "tasks.jsonl"
    lines = [bad(id="a"), bad(id="b")]
    path.write_bytes(("\ufeff" + "\r\n".join(lines) + "\r\n").encode("utf-8"))
    assert [t.id for t in load_tasks(str(path))] == ["a", "b"]


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\x85"])
def test_a_task_file_holding_a_unicode_line_separator_in_a_string_is_read(tmp_path, sep):
    """JSON Lines separates lines by \\n alone: U+2028, U+2029 and NEL are valid inside a
    JSON string, and ``json.dumps(ensure_ascii=False)`` writes them raw. ``str.splitlines``
    also broke lines there, so such a file was refused as 'not one JSON object'."""
    path = tmp_path / "tasks.jsonl"
    turn = f"I have ₹50,000.{sep}What is the worst case?"
    rows = [json.loads(bad(id="a")), json.loads(bad(id="b"))]
    rows[0]["user_turns"] = [turn]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    tasks = load_tasks(str(path))
    assert [t.id for t in tasks] == ["a", "b"]
    assert tasks[0].user_turns == (turn,)
