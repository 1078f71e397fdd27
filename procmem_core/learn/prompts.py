"""The extraction prompts: procmem's default and the notebook seed's, byte for byte.

``PROMPTS`` names them for ``LLMConfig.prompt`` (``llm.prompt=procmem`` or ``seed``).
"""

from __future__ import annotations

EXTRACTION_PROMPT = """You keep the procedural memory of FinCoach, an assistant agent.
Read the transcript of a finished session and write down the procedures the agent should
carry into its future sessions.
A procedure is a rule or a workflow for HOW THE AGENT behaves, written as a directive to
the agent ("Always ...", "When X, do Y"). A fact about the user (income, savings, risk
appetite, plans) is never a procedure.
Reply with exactly one JSON object and nothing else:
{"procedures": [{"title": "a short label",
                 "trigger": "the situation in which the procedure applies",
                 "description": "the directive, addressed to the agent",
                 "confidence": 0.6}]}
Confidence: 0.60 for behaviour seen once, 0.70 for behaviour clearly shown, 0.85 for
behaviour the user explicitly asked for.
List at most 3 procedures. If nothing is worth keeping, reply {"procedures": []}."""
"""The default extraction prompt: the seed's substance in the project's own words.

It differs from the seed's ``PROCEDURE_PROMPT`` in wording only where the seed's is
ambiguous for a model: it gives one example confidence (0.6) instead of the range text
``0.6 to 0.85`` (which is not a JSON number), names the facts that are never procedures,
and asks for "exactly one JSON object and nothing else"."""

PROCEDURE_PROMPT = """You are a procedural memory extractor for FinCoach.
Analyse a session transcript and identify REUSABLE OPERATIONAL PROCEDURES the agent
should remember for future sessions.
A procedure is NOT a fact about the user. It IS a rule or workflow for HOW THE AGENT should behave.
Return a JSON object:
{"procedures": [{"title": "Short label",
                 "trigger": "When should this procedure activate?",
                 "description": "A directive to the agent: 'Always...', 'When X, do Y'",
                 "confidence": 0.6 to 0.85}]}
CONFIDENCE: 0.60 seen once, 0.70 clearly demonstrated, 0.85 explicitly requested by the user.
RULES: Return ONLY valid JSON. Maximum 3 procedures.
If nothing is worth keeping, return {"procedures": []}."""
"""The notebook seed's extraction prompt, byte for byte (``llm.prompt=seed``)."""

PROMPTS = {"procmem": EXTRACTION_PROMPT, "seed": PROCEDURE_PROMPT}
"""Extraction prompts by name (``LLMConfig.prompt``); ``procmem`` is the default."""

EXTRACTION_REQUEST = "Extract reusable procedures from this session:\n\n"
