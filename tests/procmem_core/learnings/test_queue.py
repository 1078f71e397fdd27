"""The learnings review queue, statement by statement of the seed's section, on real
inputs, in memory and on SQLite (``backend``; its queue has assistant-turn learnings on).
Erasure, re-review, the blanked rejected row and per-agent serving live in
test_review.py and test_erasure.py."""

from __future__ import annotations

import sqlite3

import pytest

from procmem_core.errors import ParameterError
from procmem_core.learnings import (
    AGENT_LEARNINGS_ENV,
    LearningsQueue,
    LearningsSettings,
    UnknownLearning,
    file_session,
    self_rules,
)
from procmem_core.memory import AccessDenied, MemoryStore, Principal

APP = Principal("support-app", "writer")
ADMIN = Principal("ops-admin", "admin", user_id="admin-1")
VIEWER = Principal("dashboard", "viewer")
RULE = "Refund requests need the invoice number"


def session(user_words: str, reply: str) -> list[dict]:
    return [{"role": "user", "content": user_words}, {"role": "assistant", "content": reply}]


def test_a_candidate_lists_its_supporters_as_the_seed_defines_them(backend):
    q = backend.queue
    c = q.propose(RULE, principal=APP, namespace="billing")
    assert (c.status, c.source_kind, c.supporter_count, c.rationale) == (
        "pending",
        "supporters",
        0,
        (),
    )
    rows = [  # user, session, writer, quotes, confidence
        ("u1", "s1", APP, ("I always have the invoice number",), 0.9),
        ("u1", "s2", APP, ("invoice number is on the PDF",), 0.7),
        ("u2", "s3", Principal("crm-sync", "writer"), ("asked me for the invoice",), None),
        ("u3", "s3", APP, ("yes the invoice number",), 0.8),
    ]
    for user, sid, writer, quotes, conf in rows:
        c = q.support(
            c.candidate_id,
            principal=writer,
            user_id=user,
            session_id=sid,
            quotes=quotes,
            confidence=conf,
        )
    assert c.supporter_count == 3 and c.supporters == ("u1", "u2", "u3")
    assert c.supporter_sessions == 3  # s1, s2, s3
    assert c.supporter_writers == 2  # support-app, crm-sync
    assert c.confidence_avg == pytest.approx((0.9 + 0.7 + 0.8) / 3)  # rows that stated one
    assert c.rationale == ("I always have the invoice number",)  # the earliest row's quotes
    backend.reopen()
    again = backend.queue.get(c.candidate_id, principal=VIEWER)
    assert again == c
    assert [r.quotes for r in backend.queue.supporter_rows(c.candidate_id, principal=VIEWER)] == [
        r[3] for r in rows
    ]


def test_support_never_promotes(backend):
    q = backend.queue
    c = q.propose(RULE, principal=APP)
    for i in range(60):
        c = q.support(
            c.candidate_id,
            principal=Principal(f"w{i}", "writer"),
            user_id=f"u{i}",
            session_id=f"s{i}",
            quotes=(f"quote {i}",),
            confidence=1.0,
        )
    assert c.status == "pending" and c.supporter_writers == 60
    assert q.list(principal=VIEWER, status="promoted") == []
    assert len(backend.memory) == 0


def test_the_same_rule_is_one_candidate(backend):
    q = backend.queue
    a = q.propose(RULE, principal=APP)
    b = q.propose("  refund requests NEED the invoice   number ", principal=APP)
    assert a.candidate_id == b.candidate_id
    other_kind = q.propose(RULE, principal=APP, source_kind="conversation")
    other_space = q.propose(RULE, principal=APP, namespace="team")
    assert len({a.candidate_id, other_kind.candidate_id, other_space.candidate_id}) == 3


def test_assistant_turn_learnings_are_off_by_default(tmp_path):
    assert LearningsSettings().agent_learnings is False
    assert LearningsSettings.from_env({}).agent_learnings is False
    assert LearningsSettings.from_env({AGENT_LEARNINGS_ENV: "true"}).agent_learnings is True
    assert LearningsSettings.from_env({AGENT_LEARNINGS_ENV: "0"}).agent_learnings is False
    with pytest.raises(ParameterError, match=f"{AGENT_LEARNINGS_ENV}='maybe'"):
        LearningsSettings.from_env({AGENT_LEARNINGS_ENV: "maybe"})
    memory = MemoryStore()
    q = LearningsQueue(memory)
    talk = session("Keep it short please", "Sure. I always answer in three bullet points.")
    assert self_rules(talk)  # the session does state a rule ...
    filed = file_session(q, talk, principal=APP, agent="triage", user_id="u1", session_id="s1")
    assert filed == [] and len(q) == 0 and len(memory) == 0  # ... and nothing is filed


def test_a_bots_rule_becomes_an_assistant_turn_candidate_never_a_memory(backend):
    q = backend.queue
    talks = [
        (
            "u1",
            "s1",
            session("Keep it short please", "Sure. I always answer in three bullet points."),
        ),
        ("u2", "s2", session("Too long!", "Noted: I always answer in three bullet points. Here.")),
        ("u1", "s3", session("Again too long", "i always answer in three bullet points.")),
        ("u3", "s4", session("What is my balance?", "Your balance is 40 EUR.")),
    ]
    for user, sid, talk in talks:
        file_session(q, talk, principal=APP, agent="triage", user_id=user, session_id=sid)
    (c,) = q.list(principal=VIEWER, source_kind="assistant_turn")
    assert c.text == "I always answer in three bullet points."
    assert (c.source_kind, c.agent, c.status) == ("assistant_turn", "triage", "pending")
    assert (c.supporter_count, c.supporter_sessions, c.supporter_writers) == (2, 3, 1)
    rows = q.supporter_rows(c.candidate_id, principal=VIEWER)
    assert [(r.user_id, r.session_id, r.quotes) for r in rows] == [
        ("u1", "s1", ("Keep it short please",)),
        ("u2", "s2", ("Too long!",)),
        ("u1", "s3", ("Again too long",)),
    ]
    assert len(backend.memory) == 0  # never a memory
    if backend.kind == "sqlite":  # the candidate row holds the rule and no user's words
        db = sqlite3.connect(backend.path)
        (body,) = db.execute("SELECT body FROM learnings_queue").fetchone()
        assert "three bullet points" in body
        for _, _, talk in talks:
            assert talk[0]["content"] not in body
        quotes = " ".join(b for (b,) in db.execute("SELECT body FROM learnings_supporters"))
        assert "Keep it short please" in quotes and "Too long!" in quotes


def test_one_unpinned_writer_sending_many_user_ids_is_one_source(backend):
    q = backend.queue
    relay = Principal("bulk-import", "writer")  # not pinned: it may send any user_id
    for i in range(25):
        c = q.file_agent_rule(
            RULE,
            principal=relay,
            agent="triage",
            user_id=f"imported-{i}",
            session_id=f"s{i}",
            quotes=(f"row {i}",),
        )
    assert c.supporter_count == 25 and c.supporter_writers == 1


def test_a_pinned_token_speaks_for_its_user_only(backend):
    q = backend.queue
    token = Principal("mobile-u1", "writer", read_user_id="u1", agent="triage")
    c = q.file_agent_rule(
        RULE, principal=token, agent="triage", user_id=None, session_id="s1", quotes=("hi",)
    )
    assert c.supporters == ("u1",)
    with pytest.raises(AccessDenied, match="needs user_id 'u1' \\(its pin\\)"):
        q.file_agent_rule(
            RULE, principal=token, agent="triage", user_id="u2", session_id="s2", quotes=("hi",)
        )
    assert q.get(c.candidate_id, principal=VIEWER).supporter_count == 1


def test_the_acting_agent_of_a_pinned_token_and_of_any_other(backend):
    q = backend.queue
    pinned = Principal("app-u1", "writer", read_user_id="u1", agent="triage")
    a = q.file_agent_rule(
        RULE, principal=pinned, agent="billing", user_id="u1", session_id="s1", quotes=("q",)
    )
    assert a.agent == "triage"  # the agent it names, never the body's
    own_user = Principal("own-user-token", "writer", user_id="u2")  # not pinned
    b = q.file_agent_rule(
        RULE, principal=own_user, agent="billing", user_id="u2", session_id="s2", quotes=("q",)
    )
    assert b.agent == "billing"  # the body's agent
    minted = Principal("minted-u3", "writer", read_user_id="u3")  # pinned, names no agent
    none = q.file_agent_rule(
        RULE, principal=minted, agent="billing", user_id="u3", session_id="s3", quotes=("q",)
    )
    assert none is None  # it files no bot's rule
    assert {c.agent for c in q.list(principal=VIEWER)} == {"triage", "billing"}


def test_caller_candidates_and_bot_rules_come_in_by_their_own_doors(backend):
    q = backend.queue
    with pytest.raises(ParameterError, match=r"source_kind='assistant_turn'.*file_agent_rule"):
        q.propose(RULE, principal=APP, source_kind="assistant_turn")
    bot = q.file_agent_rule(
        RULE, principal=APP, agent="triage", user_id="u1", session_id="s1", quotes=("q",)
    )
    with pytest.raises(ParameterError, match="file_agent_rule"):
        q.support(bot.candidate_id, principal=APP, user_id="u2", session_id="s2", quotes=("q",))


def test_list_by_status_kind_namespace_and_agent(backend):
    q = backend.queue
    fact = q.propose("u1's salary is paid on the 25th", principal=APP, source_kind="conversation")
    team = q.propose(RULE, principal=APP, namespace="team")
    bot = q.file_agent_rule(
        "I never share card numbers.",
        principal=APP,
        agent="triage",
        user_id="u1",
        session_id="s1",
        quotes=("my card",),
    )
    q.review(team.candidate_id, "reject", principal=ADMIN, reason="too vague")
    ids = lambda xs: [x.candidate_id for x in xs]  # noqa: E731
    assert ids(q.list(principal=VIEWER)) == [fact.candidate_id, bot.candidate_id]
    assert ids(q.list(principal=VIEWER, status="rejected")) == [team.candidate_id]
    assert ids(q.list(principal=VIEWER, source_kind="conversation")) == [fact.candidate_id]
    assert ids(q.list(principal=VIEWER, agent="triage")) == [bot.candidate_id]
    assert ids(q.list(principal=VIEWER, status="rejected", namespace="default")) == []
    backend.reopen()
    assert ids(backend.queue.list(principal=VIEWER)) == [fact.candidate_id, bot.candidate_id]


def test_quality_counts_the_conversation_seeder_by_default(backend):
    q = backend.queue
    facts = [q.propose(f"fact {i}", principal=APP, source_kind="conversation") for i in range(4)]
    bots = [
        q.file_agent_rule(
            f"I always do thing {i}.",
            principal=APP,
            agent="triage",
            user_id="u1",
            session_id="s1",
            quotes=("q",),
        )
        for i in range(3)
    ]
    q.propose("fact elsewhere", principal=APP, source_kind="conversation", namespace="team")
    q.review(facts[0].candidate_id, "promote", principal=ADMIN, reason="true")
    q.review(facts[1].candidate_id, "reject", principal=ADMIN, reason="wrong")
    q.review(facts[2].candidate_id, "reject", principal=ADMIN, reason="wrong")
    q.review(bots[0].candidate_id, "promote", principal=ADMIN, reason="good rule")
    default, team = q.quality(principal=VIEWER)
    assert (default.namespace, default.source_kind) == ("default", "conversation")
    assert (default.pending, default.promoted, default.rejected) == (1, 1, 2)
    assert default.approve_ratio == pytest.approx(1 / 3)
    assert (team.pending, team.promoted, team.rejected, team.approve_ratio) == (1, 0, 0, None)
    (rules,) = q.quality(principal=VIEWER, namespace="default", source_kind="assistant_turn")
    assert (rules.pending, rules.promoted, rules.rejected, rules.approve_ratio) == (2, 1, 0, 1.0)


def test_roles_viewer_writer_admin(backend):
    q = backend.queue
    with pytest.raises(
        AccessDenied, match=r"learnings.propose is refused for principal 'dashboard'"
    ):
        q.propose(RULE, principal=VIEWER)
    c = q.propose(RULE, principal=APP)
    with pytest.raises(
        AccessDenied,
        match=r"learnings.review is refused for principal "
        r"'support-app': it needs role 'admin' or higher, and the principal has "
        r"role 'writer'",
    ):
        q.review(c.candidate_id, "promote", principal=APP, reason="looks right")
    with pytest.raises(AccessDenied, match=r"learnings.erase_user"):
        q.erase_user("u1", principal=APP)
    assert q.get(c.candidate_id, principal=VIEWER).status == "pending"
    assert q.list(principal=VIEWER) and q.quality(principal=VIEWER)
    assert q.review(c.candidate_id, "promote", principal=ADMIN, reason="ok").changed


BAD = [
    (lambda q: q.propose("", principal=APP), "text=''"),
    (lambda q: q.propose(RULE, principal="admin"), "principal='admin'"),
    (lambda q: q.propose(RULE, principal=APP, source_kind="gossip"), "source_kind='gossip'"),
    (lambda q: q.propose(RULE, principal=APP, namespace="a b"), "namespace='a b'"),
    (lambda q: q.list(principal=VIEWER, status="open"), "status='open'"),
    (lambda q: q.quality(principal=VIEWER, source_kind="x"), "source_kind='x'"),
    (
        lambda q: q.file_agent_rule(
            RULE, principal=APP, agent="t", user_id=None, session_id="s", quotes=("q",)
        ),
        "user_id=None",
    ),
    (
        lambda q: q.file_agent_rule(
            RULE, principal=APP, agent="t", user_id="u", session_id="s", quotes="my words"
        ),
        "quotes='my words'",
    ),
    (
        lambda q: q.file_agent_rule(
            RULE, principal=APP, agent="t", user_id="u", session_id="s", quotes=(), confidence=0.5
        ),
        "quotes=()",
    ),
    (
        lambda q: q.file_agent_rule(
            RULE, principal=APP, agent="t", user_id="u", session_id="", quotes=("q",)
        ),
        "session_id=''",
    ),
    (
        lambda q: q.file_agent_rule(
            RULE,
            principal=APP,
            agent="t",
            user_id="u",
            session_id="s",
            quotes=("q",),
            confidence=1.5,
        ),
        "confidence=1.5",
    ),
]


@pytest.mark.parametrize(("call", "message"), BAD)
def test_bad_input_is_refused_naming_field_and_value(backend, call, message):
    with pytest.raises(ParameterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call(backend.queue)
    assert len(backend.queue) == 0


def test_a_missing_candidate_answers_not_found(backend):
    with pytest.raises(UnknownLearning, match="no learning 'lrn_404'"):
        backend.queue.get("lrn_404", principal=VIEWER)
    with pytest.raises(UnknownLearning):
        backend.queue.review("lrn_404", "promote", principal=ADMIN, reason="x")


def test_a_namespace_wide_read_agent_files_no_bots_rule(backend):
    """'*' is the read of every agent (the HTTP memory.ask default), not a bot: a call
    acting as '*' filed an assistant_turn candidate for agent '*', which a promotion tags
    agent:* and serves to every agent's reads and to reads under no agent ('-'), where
    the seed serves no rule promoted for a named bot. It now files nothing, as '-' does."""
    q = backend.queue
    for principal, agent in (
        (APP, "*"),
        (APP, "-"),
        (Principal("app-u1", "writer", read_user_id="u1", agent="*"), None),
    ):
        got = q.file_agent_rule(
            "I never share the fee table.", principal=principal, agent=agent, user_id="u1",
            session_id="s1", quotes=("q",),
        )  # fmt: skip
        assert got is None, (principal.name, agent)
    assert q.list(principal=VIEWER) == [] and len(q) == 0
