"""Learning procedures from transcripts through any OpenAI-compatible model (seed: notebook).

``LLMConfig`` (endpoint, model, settings), the client (``make_client``, ``complete``,
``chat``), extraction and its validation, ``learn``, the reply cache and
``to_candidates`` (extracted procedures into a ``ProcedureStore``). docs/llm.md.
"""

from procmem_core.learn.candidates import (
    CandidateBatch,
    CandidateFailure,
    KeyCollision,
    to_candidates,
)
from procmem_core.learn.client import (
    LLMCallError,
    Reply,
    chat,
    complete,
    make_client,
    transcript_text,
)
from procmem_core.learn.config import CallRecord, LLMConfig
from procmem_core.learn.extraction import (
    DroppedEntry,
    ExtractedProcedure,
    ExtractionError,
    InvalidJSONReply,
    LearnError,
    validate_reply,
)
from procmem_core.learn.learn import LearnResult, learn
from procmem_core.learn.prompts import EXTRACTION_PROMPT, PROCEDURE_PROMPT, PROMPTS
from procmem_core.learn.reply_cache import CachedReply, ReplyCache, request_key

__all__ = [
    "EXTRACTION_PROMPT",
    "PROCEDURE_PROMPT",
    "PROMPTS",
    "CachedReply",
    "CallRecord",
    "CandidateBatch",
    "CandidateFailure",
    "DroppedEntry",
    "ExtractedProcedure",
    "ExtractionError",
    "InvalidJSONReply",
    "KeyCollision",
    "LLMCallError",
    "LLMConfig",
    "LearnError",
    "LearnResult",
    "Reply",
    "ReplyCache",
    "chat",
    "complete",
    "learn",
    "make_client",
    "request_key",
    "to_candidates",
    "transcript_text",
    "validate_reply",
]
