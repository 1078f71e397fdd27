"""The notebook seed, exactly: its extraction prompt byte for byte (``llm.prompt=seed``),
its chat arguments, and the offline model's two extraction behaviours."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from procmem_core.errors import ParameterError
from procmem_core.learn import (
    EXTRACTION_PROMPT,
    PROCEDURE_PROMPT,
    PROMPTS,
    LLMConfig,
    chat,
    learn,
    make_client,
)
from simulators.llm_server import OfflineServer
from simulators.offline_model import EXTRACTION_MODES, extract_procedures

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
SEED = ROOT.parent / "shared" / "seeds" / "notebook-procedural-memory.txt"
SEED_PROMPT_SHA256 = "517184159fe5778a597aff5f4d0324b35e376ea7a79d894822923fff1fc96b83"
"""SHA-256 of the seed's PROCEDURE_PROMPT text (between its triple quotes), read from the
seed file when this test was written, so the constant is checked where the seed is absent."""

SESSION = [
    {"role": "user", "content": "I'm risk-averse, my FD matures. What's the worst case scenario "
     "in a debt fund? OK, give me a clear list of what I should do next."},
    {"role": "assistant", "content": "Keep an emergency fund first; for money you may need soon, "
     "a liquid fund or a short-term debt fund is a low-risk place to start."},
]  # fmt: skip


def test_the_seed_prompt_is_the_seeds_byte_for_byte():
    assert hashlib.sha256(PROCEDURE_PROMPT.encode("utf-8")).hexdigest() == SEED_PROMPT_SHA256
    for line in ('"confidence": 0.6 to 0.85}]}', "REUSABLE OPERATIONAL PROCEDURES",
                 "RULES: Return ONLY valid JSON. Maximum 3 procedures."):  # fmt: skip
        assert line in PROCEDURE_PROMPT
    assert PROMPTS == {"procmem": EXTRACTION_PROMPT, "seed": PROCEDURE_PROMPT}
    if not SEED.exists():
        pytest.skip(f"the seed is not beside the clone ({SEED})")
    found = re.search(r'PROCEDURE_PROMPT = """(.*?)"""', SEED.read_text(encoding="utf-8"), re.S)
    assert found.group(1) == PROCEDURE_PROMPT


@pytest.mark.parametrize(("name", "text"), [("procmem", EXTRACTION_PROMPT), ("seed", None)])
def test_llm_prompt_selects_the_extraction_prompt(name, text):
    with OfflineServer() as server:
        config = LLMConfig(base_url=server.base_url, model="procmem-offline", prompt=name)
        result = learn(SESSION, make_client(config), config)
        (request,) = [r for r in server.requests if r.kind == "extraction"]
    system = request.body["messages"][0]
    assert system == {"role": "system", "content": text or PROCEDURE_PROMPT}
    assert len(result.procedures) == 3  # the offline model reads either prompt


def test_chat_sends_exactly_the_seeds_arguments_and_extraction_keeps_its_own():
    with OfflineServer() as server:
        config = LLMConfig(
            base_url=server.base_url, model="m", reasoning_effort="low", temperature=0.3
        )
        client = make_client(config)
        chat("You are FinCoach.", [{"role": "user", "content": "Hi"}], client, config)
        learn(SESSION, client, config)
        chat_body, extraction_body = (r.body for r in server.requests)
    assert chat_body == {
        "model": "m",
        "messages": [
            {"role": "system", "content": "You are FinCoach."},
            {"role": "user", "content": "Hi"},
        ],
        "temperature": 0.0,
        "max_tokens": 800,
    }
    assert extraction_body["reasoning_effort"] == "low"
    assert extraction_body["temperature"] == 0.3 and extraction_body["max_tokens"] == 2000
    assert extraction_body["response_format"] == {"type": "json_object"}


def test_chat_options_set_explicitly_are_sent():
    with OfflineServer() as server:
        config = LLMConfig(
            base_url=server.base_url, model="m", chat_temperature=0.7, chat_max_tokens=50,
            chat_reasoning_effort="medium",
        )  # fmt: skip
        chat("s", [{"role": "user", "content": "Hi"}], make_client(config), config)
        (body,) = (r.body for r in server.requests)
    assert (body["temperature"], body["max_tokens"], body["reasoning_effort"]) == (
        0.7,
        50,
        "medium",
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [("prompt", "notebook"), ("chat_temperature", 2.5), ("chat_reasoning_effort", "max")],
)
def test_bad_llm_settings_name_the_field(field, value):
    with pytest.raises(ParameterError, match=field):
        LLMConfig(base_url="http://127.0.0.1:1/v1", model="m", **{field: value})


def _transcript(messages):
    return "\n".join(f"{m['role'].upper()}: {m['content']}" for m in messages)


def test_the_offline_model_turns_the_users_requests_or_the_assistants_advice_into_rules():
    text = _transcript(SESSION)
    requests = extract_procedures(text, "user_requests")
    advice = extract_procedures(text, "assistant_advice")
    assert [p["confidence"] for p in requests][:2] == [0.85, 0.85]
    assert {p["title"] for p in requests} >= {
        "Quantify the worst case",
        "End with a numbered action list",
    }
    # the seed's observed outcome: the assistant's own advice, none of the user's requests
    assert {p["title"] for p in advice} == {
        "Verify emergency fund before new investments",
        "Allocate maturing FD for risk-averse users",
        "Annual fund monitoring and rebalancing",
    }
    assert {p["confidence"] for p in advice} == {0.70}
    assert EXTRACTION_MODES == ("user_requests", "assistant_advice")
    with pytest.raises(ParameterError, match="extraction='both'"):
        extract_procedures(text, "both")


def test_the_offline_server_takes_the_extraction_behaviour():
    with OfflineServer(extraction="assistant_advice") as server:
        config = LLMConfig(base_url=server.base_url, model="procmem-offline")
        titles = [p.title for p in learn(SESSION, make_client(config), config).procedures]
    assert "Quantify the worst case" not in titles and len(titles) == 3
    with pytest.raises(ParameterError, match="extraction"):
        OfflineServer(extraction="nonsense")
