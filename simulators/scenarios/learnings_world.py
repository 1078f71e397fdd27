"""The world of ``LearningsScenario``: one ``LearningsQueue`` driven session by session.

One ``LearningsWorld`` is one replication. ``agents x rules_per_agent`` bot rules exist
from the start, each helpful, neutral or harmful (known truth) with a per-session
endorsement rate by kind. Each session, in order:

1. users whose erasure falls in this session are erased (``queue.erase_user``); an
   erased user keeps coming back (only their past rows go);
2. with probability ``multi_user_share`` the session is a multi-user writer's: one of the
   ``multi_user_writers`` unpinned tokens, chosen uniformly, files each of its
   ``pushed_rules`` (chosen at random at the start, whatever their kind) with probability
   ``push_rate`` under an id drawn uniformly from its own pool of ``fabricated_ids``;
   otherwise it is an honest conversation: a user and an agent drawn uniformly, and each
   rule of that agent stated and endorsed with its kind's rate, filed through the user's
   pinned token (one writer per user);
3. every candidate filed this session that meets the review policy and is pending gets a
   review ``review_delay`` sessions later; at the review, if still pending and still
   meeting the policy, the reviewer is right with probability ``reviewer_accuracy``
   (promote a helpful rule, reject the others) and wrong otherwise.

A promoted rule is served to its agent's later conversations. Everything the world
decides is logged beside the queue, so metrics can be checked against the queue's own
state (the supporter counts at the end come from ``queue.get``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from procmem_core.learnings import (
    LearningsQueue,
    LearningsSettings,
    ReviewPolicy,
    UnknownLearning,
)
from procmem_core.memory import MemoryStore, Principal

KINDS = ("helpful", "neutral", "harmful")
REVIEWER = Principal("reviewer", "admin", user_id="reviewer")


@dataclass
class RuleLog:
    """One rule's truth and fate in one replication."""

    rule: int
    agent: int
    kind: str
    rate: float
    text: str
    pushed_by: list[int] = field(default_factory=list)
    honest_supporters: set[int] = field(default_factory=set)  # ever, erasures ignored
    reach_writers: int | None = None  # session the k-th distinct honest supporter came
    reach_users: int | None = None  # session the m-th distinct honest supporter came
    fabricated: dict[int, set[int]] = field(default_factory=dict)  # writer -> ids sent
    promoted_at: int | None = None
    rejected_at: int | None = None
    candidate_id: str | None = None


@dataclass
class LearningsWorld:
    """One replication: the queue, the rules' truth, and every logged decision."""

    scenario: object
    rng: np.random.Generator
    rules: list[RuleLog] = field(default_factory=list)
    session_agent: list[int] = field(default_factory=list)  # -1: a multi-user writer's
    due: dict[int, list[str]] = field(default_factory=dict)  # session -> candidate ids
    scheduled: set[str] = field(default_factory=set)
    erased_deleted: int = 0
    erased_blanked: int = 0
    reviews: int = 0
    reviews_lapsed: int = 0

    def __post_init__(self) -> None:
        sc = self.scenario
        self.queue = LearningsQueue(MemoryStore(), LearningsSettings(agent_learnings=True))
        self.policy = ReviewPolicy(sc.min_writers, sc.min_users, sc.combine)
        rates = dict(zip(KINDS, (sc.helpful_rate, sc.neutral_rate, sc.harmful_rate), strict=True))
        shares = (sc.helpful_share, 1.0 - sc.helpful_share - sc.harmful_share, sc.harmful_share)
        n = sc.agents * sc.rules_per_agent
        kinds = self.rng.choice(3, size=n, p=shares)
        for j in range(n):
            kind = KINDS[int(kinds[j])]
            agent = j // sc.rules_per_agent
            text = f"I always follow house rule {j} of agent {agent}."
            self.rules.append(RuleLog(j, agent, kind, rates[kind], text))
        for w in range(sc.multi_user_writers if sc.multi_user_share > 0 else 0):
            for j in self.rng.choice(n, size=min(sc.pushed_rules, n), replace=False):
                self.rules[int(j)].pushed_by.append(w)
        self.by_candidate: dict[str, RuleLog] = {}
        erasing = np.flatnonzero(self.rng.random(sc.users) < sc.erasure_share)
        self.erase_at: dict[int, list[int]] = {}
        for u, t in zip(erasing, self.rng.integers(0, sc.sessions, size=erasing.size), strict=True):
            self.erase_at.setdefault(int(t), []).append(int(u))
        self.tokens = {}  # (agent, user) -> the user's pinned token for that agent
        self.relays = [Principal(f"relay-{w}", "writer") for w in range(sc.multi_user_writers)]

    # -- one session ------------------------------------------------------------------

    def session(self, t: int) -> None:
        sc = self.scenario
        for u in self.erase_at.get(t, ()):
            gone = self.queue.erase_user(f"user-{u}", principal=REVIEWER)
            self.erased_deleted += len(gone.deleted)
            self.erased_blanked += len(gone.blanked)
        if self.rng.random() < sc.multi_user_share:
            filed = self._relay_session(t)
            self.session_agent.append(-1)
        else:
            filed = self._honest_session(t)
        for learning in filed.values():
            cid = learning.candidate_id
            if (
                learning.status == "pending"
                and cid not in self.scheduled
                and self.policy.meets(learning)
            ):
                self.scheduled.add(cid)
                self.due.setdefault(t + sc.review_delay, []).append(cid)
        for cid in self.due.pop(t, ()):
            self._review(t, cid)

    def _honest_session(self, t: int) -> dict:
        sc = self.scenario
        user = int(self.rng.integers(sc.users))
        agent = int(self.rng.integers(sc.agents))
        self.session_agent.append(agent)
        mine = self.rules[agent * sc.rules_per_agent : (agent + 1) * sc.rules_per_agent]
        coins = self.rng.random(len(mine))
        token = self.tokens.get((agent, user))
        if token is None:
            token = Principal(
                f"app-{agent}-user-{user}",
                "writer",
                read_user_id=f"user-{user}",
                agent=f"agent-{agent}",
            )
            self.tokens[(agent, user)] = token
        filed = {}
        for rule, coin in zip(mine, coins, strict=True):
            if coin >= rule.rate:
                continue
            self._count_honest(rule, user, t)
            got = self.queue.file_agent_rule(
                rule.text,
                principal=token,
                agent=None,
                user_id=None,
                session_id=f"s{t}",
                quotes=(f"user {user} agreed in session {t}",),
            )
            filed[got.candidate_id] = self._track(rule, got)
        return filed

    def _count_honest(self, rule: RuleLog, user: int, t: int) -> None:
        sc = self.scenario
        rule.honest_supporters.add(user)
        d = len(rule.honest_supporters)
        if sc.min_writers and rule.reach_writers is None and d >= sc.min_writers:
            rule.reach_writers = t
        if sc.min_users and rule.reach_users is None and d >= sc.min_users:
            rule.reach_users = t

    def _relay_session(self, t: int) -> dict:
        sc = self.scenario
        w = int(self.rng.integers(sc.multi_user_writers))
        pushed = [r for r in self.rules if w in r.pushed_by]
        coins = self.rng.random(len(pushed))
        ids = self.rng.integers(sc.fabricated_ids, size=len(pushed))
        filed = {}
        for rule, coin, i in zip(pushed, coins, ids, strict=True):
            if coin >= sc.push_rate:
                continue
            rule.fabricated.setdefault(w, set()).add(int(i))
            got = self.queue.file_agent_rule(
                rule.text,
                principal=self.relays[w],
                agent=f"agent-{rule.agent}",
                user_id=f"relay-{w}-id-{int(i)}",
                session_id=f"s{t}",
                quotes=(f"imported row {int(i)}",),
            )
            filed[got.candidate_id] = self._track(rule, got)
        return filed

    def _track(self, rule: RuleLog, learning):
        rule.candidate_id = learning.candidate_id
        self.by_candidate[learning.candidate_id] = rule
        return learning

    def _review(self, t: int, cid: str) -> None:
        self.scheduled.discard(cid)
        try:
            learning = self.queue.get(cid, principal=REVIEWER)
        except UnknownLearning:  # deleted by an erasure while it waited
            self.reviews_lapsed += 1
            return
        if learning.status != "pending" or not self.policy.meets(learning):
            self.reviews_lapsed += 1
            return
        rule = self.by_candidate[cid]
        right = self.rng.random() < self.scenario.reviewer_accuracy
        promote = (rule.kind == "helpful") == right
        self.reviews += 1
        decision = "promote" if promote else "reject"
        self.queue.review(cid, decision, principal=REVIEWER, reason=f"session {t} review")
        if promote:
            rule.promoted_at = t
        else:
            rule.rejected_at = t

    # -- what the queue holds at the end ------------------------------------------------

    def final_counts(self, rule: RuleLog) -> tuple[int, int]:
        """``(supporter_count, supporter_writers)`` of the rule's candidate now (0, 0 when
        none is held or it answers not found)."""
        if rule.candidate_id is None:
            return 0, 0
        try:
            got = self.queue.get(rule.candidate_id, principal=REVIEWER)
        except UnknownLearning:
            return 0, 0
        return got.supporter_count, got.supporter_writers

    def served_sessions(self, rule: RuleLog) -> int:
        """Conversations of the rule's agent after its promotion (it was served in each)."""
        if rule.promoted_at is None:
            return 0
        return sum(1 for a in self.session_agent[rule.promoted_at + 1 :] if a == rule.agent)
