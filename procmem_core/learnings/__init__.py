"""The learnings review queue (seed: loom-procedures.txt, "Learnings review queue"):
candidates with supporters, assistant-turn rules filed by extraction, admin review with
destinations and lineage, per-agent serving, user erasure; a reviewer's policy and the
exact support arithmetic behind it. docs/learnings.md.
"""

from procmem_core.learnings.agent_rules import file_session
from procmem_core.learnings.exact import expected_distinct_ids, first_reach, reach_probability
from procmem_core.learnings.extraction import AgentRuleStatement, self_rules
from procmem_core.learnings.policy import COMBINE, ReviewPolicy
from procmem_core.learnings.publish import default_destination, memory_zone
from procmem_core.learnings.queue import LearningsQueue
from procmem_core.learnings.records import (
    DECISIONS,
    DESTINATIONS,
    EVERY_AGENT,
    SOURCE_KINDS,
    STATUSES,
    Decision,
    Erasure,
    HiddenLearning,
    Learning,
    Quality,
    ReviewResult,
    Supporter,
    UnknownLearning,
)
from procmem_core.learnings.settings import AGENT_LEARNINGS_ENV, LearningsSettings

__all__ = [
    "AGENT_LEARNINGS_ENV",
    "COMBINE",
    "DECISIONS",
    "DESTINATIONS",
    "EVERY_AGENT",
    "SOURCE_KINDS",
    "STATUSES",
    "AgentRuleStatement",
    "Decision",
    "Erasure",
    "HiddenLearning",
    "Learning",
    "LearningsQueue",
    "LearningsSettings",
    "Quality",
    "ReviewPolicy",
    "ReviewResult",
    "Supporter",
    "UnknownLearning",
    "default_destination",
    "expected_distinct_ids",
    "file_session",
    "first_reach",
    "memory_zone",
    "reach_probability",
    "self_rules",
]
