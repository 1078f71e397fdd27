"""Live tasks: one JSON object a line, with a deterministic checker or a judge rubric.

Fields (docs/live.md): ``id`` (unique string), ``situation`` (what a pack matches on),
``user_turns`` (non-empty list of non-empty strings), ``check`` (a checker, or a list of
them that must all pass) and optionally ``judge`` (a rubric string for a judge model,
used instead of ``check``). A task has ``check`` or ``judge`` or both.

Checkers run on the agent's last reply:

- ``{"regex": P, "ignore_case": bool}``: ``re.search(P)`` finds a match;
- ``{"not_regex": P, "ignore_case": bool}``: it finds none;
- ``{"contains_all": [s, ...], "ignore_case": bool}``: every string occurs;
- ``{"contains_any": [s, ...], "ignore_case": bool}``: at least one occurs;
- ``{"max_words": N}``: at most N whitespace-separated words.

``ignore_case`` defaults to false for the regular expressions and to true for the
substrings, which then compare case-folded (``str.casefold``: "Straße" holds "STRASSE").

A bad file is refused before any call, naming the file, the line, the field, the value
and what is allowed (``TaskFileError``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procmem_core.errors import ParameterError

BUNDLED = {"fincoach": Path(__file__).parent / "data" / "fincoach.jsonl"}
"""Task sets shipped with procmem, by name (``live.tasks=fincoach``)."""
CHECK_KINDS = ("regex", "not_regex", "contains_all", "contains_any", "max_words")
FIELDS = ("id", "situation", "user_turns", "check", "judge")


class TaskFileError(ParameterError):
    """A task file that cannot be read: where, which field, which value, what is allowed."""

    def __init__(self, where: str, field: str, value: Any, allowed: str) -> None:
        super().__init__(f"{where}: {field}", value, allowed)


@dataclass(frozen=True)
class Check:
    """One deterministic checker (``kind`` one of ``CHECK_KINDS``; ``ignore_case`` None:
    the kind's default, false for the regular expressions, true for the substrings)."""

    kind: str
    value: Any
    ignore_case: bool | None = None

    def passes(self, reply: str) -> bool:
        """Whether ``reply`` passes this check (see the module doc for each kind)."""
        flags = re.IGNORECASE if self.ignore_case else 0
        if self.kind == "regex":
            return re.search(self.value, reply, flags) is not None
        if self.kind == "not_regex":
            return re.search(self.value, reply, flags) is None
        fold = str.casefold if self.ignore_case is not False else str
        text = fold(reply)
        if self.kind == "contains_all":
            return all(fold(s) in text for s in self.value)
        if self.kind == "contains_any":
            return any(fold(s) in text for s in self.value)
        return len(reply.split()) <= int(self.value)

    def describe(self) -> str:
        return f"{self.kind}={self.value!r}"


@dataclass(frozen=True)
class Task:
    """One live task; ``checks`` all must pass (empty when only ``judge`` scores it)."""

    id: str
    situation: str
    user_turns: tuple[str, ...]
    checks: tuple[Check, ...]
    judge: str | None = None

    def check(self, reply: str) -> list[tuple[str, bool]]:
        """``(description, passed)`` of every check on ``reply``."""
        return [(c.describe(), c.passes(reply)) for c in self.checks]


def parse_check(spec: Any, where: str, field: str = "check") -> tuple[Check, ...]:
    """The checks of a ``check`` value (one object or a list of them)."""
    if isinstance(spec, list):
        if not spec:
            raise TaskFileError(where, field, spec, "a checker object or a non-empty list")
        return tuple(c for i, s in enumerate(spec) for c in parse_check(s, where, f"{field}[{i}]"))
    if not isinstance(spec, dict):
        raise TaskFileError(where, field, spec, f"an object with one of {list(CHECK_KINDS)}")
    kinds = [k for k in spec if k in CHECK_KINDS]
    extra = sorted(set(spec) - {*CHECK_KINDS, "ignore_case"})
    if len(kinds) != 1 or extra:
        raise TaskFileError(
            where, field, spec, f"exactly one of {list(CHECK_KINDS)} (plus ignore_case)"
        )
    kind, value = kinds[0], spec[kinds[0]]
    ignore = spec.get("ignore_case")
    if "ignore_case" in spec and not isinstance(ignore, bool):
        raise TaskFileError(where, f"{field}.ignore_case", ignore, "true or false")
    return (Check(kind, _check_value(kind, value, where, f"{field}.{kind}"), ignore),)


def _check_value(kind: str, value: Any, where: str, field: str) -> Any:
    if kind in ("regex", "not_regex"):
        if not isinstance(value, str) or not value:
            raise TaskFileError(where, field, value, "a non-empty regular expression")
        try:
            re.compile(value)
        except re.error as exc:
            raise TaskFileError(
                where, field, value, f"a valid regular expression ({exc})"
            ) from None
        return value
    if kind in ("contains_all", "contains_any"):
        ok = isinstance(value, list) and value and all(isinstance(s, str) and s for s in value)
        if not ok:
            raise TaskFileError(where, field, value, "a non-empty list of non-empty strings")
        return tuple(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TaskFileError(where, field, value, "an integer >= 1")
    return value


def parse_task(data: Any, where: str) -> Task:
    """One task from its JSON object (``where`` names the file and line in errors)."""
    if not isinstance(data, dict):
        raise TaskFileError(where, "task", data, "a JSON object")
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise TaskFileError(
            where, unknown[0], data[unknown[0]], f"one of the fields {list(FIELDS)}"
        )
    for name in ("id", "situation"):
        value = data.get(name)
        if not isinstance(value, str) or not value.strip():
            raise TaskFileError(where, name, value, "a non-empty string")
    turns = data.get("user_turns")
    if (
        not isinstance(turns, list)
        or not turns
        or not all(isinstance(t, str) and t.strip() for t in turns)
    ):
        raise TaskFileError(where, "user_turns", turns, "a non-empty list of non-empty strings")
    judge = data.get("judge")
    if judge is not None and (not isinstance(judge, str) or not judge.strip()):
        raise TaskFileError(where, "judge", judge, "a non-empty rubric string or absent")
    if "check" not in data and judge is None:
        raise TaskFileError(where, "check", None, "a checker (or a judge rubric)")
    checks = parse_check(data["check"], where) if "check" in data else ()
    return Task(data["id"], data["situation"], tuple(turns), checks, judge)


def task_path(name: str) -> Path:
    """A bundled task set's file (``fincoach``) or the path given."""
    return BUNDLED[name] if name in BUNDLED else Path(name)


def load_tasks(name: str) -> tuple[Task, ...]:
    """Every task of the file ``name`` (a bundled name or a path), checked line by line."""
    path = task_path(name)
    if not path.is_file():
        raise ParameterError(
            "live.tasks", name, f"a bundled task set {sorted(BUNDLED)} or a JSON Lines file"
        )
    tasks: list[Task] = []
    seen: set[str] = set()
    text = path.read_text(encoding="utf-8-sig")  # a byte order mark (Windows editors) is not data
    # JSON Lines ends a line at \n (a \r before it is JSON whitespace); str.splitlines
    # would also break at U+2028, U+2029 or NEL, which a JSON string may hold raw
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TaskFileError(where, "line", line[:80], f"one JSON object ({exc.msg})") from None
        task = parse_task(data, where)
        if task.id in seen:
            raise TaskFileError(where, "id", task.id, "an id no earlier line uses")
        seen.add(task.id)
        tasks.append(task)
    if not tasks:
        raise TaskFileError(str(path), "tasks", 0, "at least one task")
    return tuple(tasks)


def passed(results: Sequence[tuple[str, bool]]) -> bool:
    """A session passes when every check passes."""
    return all(ok for _, ok in results)
