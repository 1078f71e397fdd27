"""Issue 25 item 7: each remote preset's extraction budget is the seed's for its model."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

CONF = Path(__file__).resolve().parents[2] / "conf" / "llm"


def test_openai_uses_the_notebooks_budget_for_gpt_4o_mini():
    cfg = OmegaConf.load(CONF / "openai.yaml")
    assert (cfg.model, cfg.max_tokens, cfg.reasoning_effort) == ("gpt-4o-mini", 600, None)


def test_groq_keeps_the_seed_codes_budget_for_gpt_oss():
    cfg = OmegaConf.load(CONF / "groq.yaml")
    assert (cfg.max_tokens, cfg.reasoning_effort) == (2000, "low")
