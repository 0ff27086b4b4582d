"""The debaters of founding note 004 as written: Google ADK agents, served by a2a-hub.

``pro_debater`` and ``con_debater`` are plain ADK ``LlmAgent`` objects, as their authors
would write them for ``to_a2a()``; ``a2a-hub serve --agent 'pro=a2a_hub.scenarios.adk_debaters:
pro_debater'`` hosts one (scenarios/debate-adk/scenario.toml runs the debate with them and the
usual judge).  Their model is the hub's own LLM, reached through LiteLLM at the hub's
OpenAI-compatible endpoint: the embedded model offline, or whatever ``A2A_HUB_LLM_*`` names
(the model name asked for, ``default``, gets the hub's configured model).

Needs the ``adk`` extra: ``pip install 'a2a-hub[adk]'``.
"""

from __future__ import annotations

from google.adk.agents import LlmAgent
from google.adk.models.lite_llm import LiteLlm
from google.genai import types

from a2a_hub.llm.served import llm_api_key, llm_base_url

__all__ = ["con_debater", "debater", "pro_debater"]


def debater(stance: str) -> LlmAgent:
    """A debater arguing for (``pro``) or against (``con``) the topic it is given."""
    side = "FOR" if stance == "pro" else "AGAINST"
    return LlmAgent(
        name=f"{stance}_debater",
        description=f"Argues {side.lower()} a debate topic and rebuts the opponent.",
        instruction=(
            f"You are a debater. You argue {side} the topic you are given, and only for your "
            "position. Answer in two or three short sentences of your own: give one concrete "
            "reason, and answer your opponent when they have spoken."
        ),
        model=LiteLlm(model="openai/default", api_base=llm_base_url(), api_key=llm_api_key()),
        generate_content_config=types.GenerateContentConfig(max_output_tokens=120, temperature=0.6),
    )


pro_debater = debater("pro")
con_debater = debater("con")
