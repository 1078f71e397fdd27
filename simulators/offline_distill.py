"""The offline model's answer to a distill request (``procmem_core.reflections``).

A distill request's system prompt asks for ``{"reflection": ...}`` JSON and its user
message holds two blocks, ``FAILED SESSION <id>:`` and ``SUCCESSFUL SESSION <id>:``. The
offline model compares them line by line (lines stripped, blanks dropped, order kept):

- ``what_worked``: the successful session's lines the failed one lacks, joined by "; ";
- ``what_failed``: the failed session's lines the successful one lacks (or, when there
  are none, "The agent acted the same way in both sessions.");
- ``lessons``: "Do: <line>" for each line only the success has, then "Avoid: <line>" for
  each line only the failure has, at most ``MAX_LESSONS``; none when the sessions do
  not differ.

Deterministic in the request; a stand-in for a model's comparison, not a claim about
what a real model would distil.
"""

from __future__ import annotations

import json
import re

MARKER = '{"reflection":'
MAX_LESSONS = 3
SAME = "The agent acted the same way in both sessions."
_BLOCKS = re.compile(
    r"FAILED SESSION [^\n]*:\n(?P<failed>.*?)\n\s*\nSUCCESSFUL SESSION [^\n]*:\n(?P<won>.*)\Z",
    re.DOTALL,
)


def is_distill_request(messages: list[dict]) -> bool:
    """A system message asking for ``{"reflection": ...}`` JSON."""
    return any(
        m.get("role") == "system" and MARKER in str(m.get("content") or "") for m in messages
    )


def _lines(block: str) -> list[str]:
    return list(dict.fromkeys(x.strip() for x in block.splitlines() if x.strip()))


def distill(user_text: str) -> dict:
    """The reflection the offline model distils from one request's user text."""
    found = _BLOCKS.search(user_text)
    if found is None:
        return {
            "what_worked": "",
            "what_failed": "The request held no two sessions to compare.",
            "lessons": [],
        }
    failed, won = _lines(found["failed"]), _lines(found["won"])
    only_won = [x for x in won if x not in set(failed)]
    only_failed = [x for x in failed if x not in set(won)]
    lessons = [f"Do: {x}" for x in only_won] + [f"Avoid: {x}" for x in only_failed]
    return {
        "what_worked": "; ".join(only_won),
        "what_failed": "; ".join(only_failed) if only_failed else SAME,
        "lessons": lessons[:MAX_LESSONS],
    }


def reply(messages: list[dict]) -> str:
    """The JSON reply text of a distill request."""
    users = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
    return json.dumps({"reflection": distill(users[-1] if users else "")}, ensure_ascii=False)
