"""A Google ADK agent, as written for ADK alone, hosted by a2a-hub unchanged.

    pip install 'a2a-hub[adk]'
    a2a-hub serve --app-dir examples --agent 'trips=adk_agent:root_agent' --store sqlite:///hub.db
    a2a-hub chat http://127.0.0.1:8000/a2a/trips

Its model is the hub's own LLM (the embedded model offline, or the provider the hub is
configured with, its key kept by the hub), reached through LiteLLM at the hub's
OpenAI-compatible endpoint.  Its ADK sessions live in the hub's database, so a conversation
survives a restart and continues on any instance sharing the database.  ``book_trip`` is a
long-running tool: the task waits ``input-required`` until the next message answers it.
"""

from __future__ import annotations

from google.adk.agents import LlmAgent
from google.adk.models.lite_llm import LiteLlm
from google.adk.tools import LongRunningFunctionTool

from a2a_hub import llm_api_key, llm_base_url


def distance_km(origin: str, destination: str) -> dict[str, object]:
    """The distance by road between two cities, in kilometres."""
    known = {frozenset({"paris", "lyon"}): 465, frozenset({"paris", "lille"}): 225}
    km = known.get(frozenset({origin.strip().lower(), destination.strip().lower()}))
    return {"origin": origin, "destination": destination, "km": km}


def book_trip(origin: str, destination: str) -> dict[str, str]:
    """Books a trip; a person confirms it later."""
    return {"status": "waiting for confirmation"}


root_agent = LlmAgent(
    name="trip_planner",
    description="Plans trips between cities: distances, and bookings a person confirms.",
    instruction="You plan trips. Use distance_km for distances and book_trip to book.",
    model=LiteLlm(model="openai/default", api_base=llm_base_url(), api_key=llm_api_key()),
    tools=[distance_km, LongRunningFunctionTool(book_trip)],
)
