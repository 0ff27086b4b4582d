"""The web console at ``/ui``: static pages (no build step, nothing fetched from elsewhere)
over the hub's own public APIs, plus the few JSON routes those lack (``/ui/api``).

* :mod:`.pages` serves ``/ui`` and its files from ``static/`` (shipped in the wheel);
* :mod:`.api` is ``/ui/api``: who the caller is, the agents it may see with their task
  counts, the agent-wide feed as SSE, a task's push deliveries, the caller's conversations;
* :mod:`.inspector` fetches any A2A agent's card through the hub (the SSRF guard) and
  relays a chat with it; :mod:`.cardcheck` checks a card against the A2A 1.0 schema
  (``agent-card.schema.json``) and verifies its signatures.

Everything else the console shows comes from the A2A bindings (ListTasks, GetTask,
CancelTask, SubscribeToTask, the push config routes, the conversation route) and the admin
API, called by the page with the caller's key.  ``--no-ui`` leaves all of it out.
"""

from __future__ import annotations

from a2a_hub.server.console.api import UI_API_ROUTES
from a2a_hub.server.console.pages import UI_PAGE_ROUTES

__all__ = ["UI_API_ROUTES", "UI_PAGE_ROUTES"]
