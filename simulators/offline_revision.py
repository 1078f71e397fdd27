"""The offline model's answer to a revision request (the graph live loop's reflection).

A revision request's system prompt asks for ``{"revision": ...}`` JSON (the seed's
reflection, "what_worked, what_failed, lessons", plus the new ``step``); its user message
holds the procedure, then one ``FAILED RUN <id>:`` block per failed run with its last
reply and a ``THE CHECK REQUIRED: <check>`` line per check that reply failed
(``experiments.live.reflect.revision_request``). The offline model reads the check
lines only:

- the check required most often (ties: the first seen) is the lesson;
- ``step`` is that check read as a directive (``directive``): ``regex`` "Make the reply
  match the pattern P", ``not_regex`` "Never write anything that matches the pattern
  P", ``contains_all`` / ``contains_any`` "Include every one / at least one of: ...",
  ``max_words`` "Keep the reply brief: at most N words"; a check it cannot read is
  quoted ("Make sure the reply passes: <check>");
- ``what_failed``: "<k> of the <n> failed runs' last replies failed <check>";
  ``lessons``: the step; ``what_worked``: empty (the request shows no success).

Deterministic in the request; a stand-in for a model's reflection that a real model's
replaces, not a claim about what a real model would write.
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter

MARKER = '{"revision":'
REQUIRED = re.compile(r"^THE CHECK REQUIRED: (.+)$", re.MULTILINE)
RUN = re.compile(r"^FAILED RUN ", re.MULTILINE)
_CHECK = re.compile(r"^(regex|not_regex|contains_all|contains_any|max_words)=(.+)$", re.DOTALL)


def is_revision_request(messages: list[dict]) -> bool:
    """A system message asking for ``{"revision": ...}`` JSON."""
    return any(
        m.get("role") == "system" and MARKER in str(m.get("content") or "") for m in messages
    )


def directive(check: str) -> str:
    """The step the offline model writes for a failed check ``kind=repr(value)``."""
    found = _CHECK.match(check.strip())
    try:
        value = ast.literal_eval(found.group(2)) if found else None
    except (ValueError, SyntaxError):
        value = None
    kind = found.group(1) if found else ""
    if kind == "regex" and isinstance(value, str):
        return f"Make the reply match the pattern {value}"
    if kind == "not_regex" and isinstance(value, str):
        return f"Never write anything that matches the pattern {value}"
    if kind in ("contains_all", "contains_any") and isinstance(value, list):
        which = "every one" if kind == "contains_all" else "at least one"
        return f"Include {which} of: " + ", ".join(str(v) for v in value)
    if kind == "max_words" and isinstance(value, int):
        return f"Keep the reply brief: at most {value} words"
    return f"Make sure the reply passes: {check.strip()}"


def reflect(user_text: str) -> dict:
    """The reflection the offline model writes for one request's user text."""
    required = Counter(m.strip() for m in REQUIRED.findall(user_text))
    runs = len(RUN.findall(user_text))
    if not required:
        return {
            "what_worked": "",
            "what_failed": "The request named no check that the failed runs missed.",
            "lessons": [],
            "step": "",
        }
    order = list(required)
    check = max(order, key=lambda c: (required[c], -order.index(c)))
    step = directive(check)
    return {
        "what_worked": "",
        "what_failed": f"{required[check]} of the {runs} failed runs' last replies failed {check}",
        "lessons": [step],
        "step": step,
    }


def reply(messages: list[dict]) -> str:
    """The JSON reply text of a revision request."""
    users = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
    return json.dumps({"revision": reflect(users[-1] if users else "")}, ensure_ascii=False)
