"""The offline model's distill answers: line differences, deterministic, told apart from
extraction and chat requests."""

from __future__ import annotations

import json

from procmem_core.learn.learn import EXTRACTION_PROMPT
from procmem_core.reflections import SessionOutcome, SessionPair, distill_request
from simulators import offline_distill, offline_model


def request(failed: str, won: str) -> list[dict]:
    a = SessionOutcome(session_id="a", text=failed, ok=False)
    b = SessionOutcome(session_id="b", text=won, ok=True)
    return distill_request(SessionPair(failed=a, succeeded=b, similarity=0.5))


def test_the_reflection_is_the_line_difference():
    msgs = request("refund\nskipped the policy\nclosed", "refund\nread the policy\nclosed")
    assert offline_model.request_kind(msgs) == "distill"
    got = json.loads(offline_model.reply_content(msgs))["reflection"]
    assert got == {
        "what_worked": "read the policy",
        "what_failed": "skipped the policy",
        "lessons": ["Do: read the policy", "Avoid: skipped the policy"],
    }
    assert offline_model.reply_content(msgs) == offline_model.reply_content(msgs)


def test_sessions_that_do_not_differ_give_no_lesson():
    got = offline_distill.distill(request("refund\nsame steps", "refund\nsame steps")[1]["content"])
    assert got == {"what_worked": "", "what_failed": offline_distill.SAME, "lessons": []}


def test_lessons_are_capped():
    got = offline_distill.distill(request("x", "a\nb\nc\nd")[1]["content"])
    assert len(got["lessons"]) == offline_distill.MAX_LESSONS


def test_other_requests_are_not_distill_requests():
    extraction = [
        {"role": "system", "content": EXTRACTION_PROMPT},
        {"role": "user", "content": "x"},
    ]
    assert offline_model.request_kind(extraction) == "extraction"
    assert offline_model.request_kind([{"role": "user", "content": "hello"}]) == "chat"
    assert offline_distill.distill("no blocks here")["lessons"] == []
