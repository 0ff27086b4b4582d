"""Fetching an agent card and reading it, whatever the version that wrote it."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec

from a2a_hub.client.card_signature import CardCheck, CardSignatureError
from a2a_hub.protocol.errors import A2AError, InvalidAgentResponseError
from a2a_hub.protocol.types import AgentCard

__all__ = ["CARD_PATH", "LEGACY_CARD_PATH", "CardRefusedError", "fetch_card", "parse_card"]

CARD_PATH = "/.well-known/agent-card.json"
LEGACY_CARD_PATH = "/.well-known/agent.json"


def parse_card(data: Any, source: str = "card") -> AgentCard:
    """Read a 1.0 card, a 0.3 card (``url`` + ``preferredTransport`` + ``additionalInterfaces``)
    or a 0.1 card (``url`` only) into the 1.0 model, filling what old cards lack."""
    if not isinstance(data, dict):
        raise InvalidAgentResponseError(f"{source} is not a JSON object")
    card = dict(data)
    if not card.get("supportedInterfaces"):
        url = card.get("url")
        if not isinstance(url, str):
            raise InvalidAgentResponseError(f"{source} has neither supportedInterfaces nor url")
        version = str(card.get("protocolVersion") or "")
        major_minor = ".".join(version.split(".")[:2]) if version else ""
        if not major_minor:
            # 0.3 cards always carry protocolVersion; a card without one is a 0.1 card
            major_minor = "0.1"
        interfaces = [
            {
                "url": url,
                "protocolBinding": card.get("preferredTransport") or "JSONRPC",
                "protocolVersion": major_minor,
            }
        ]
        for extra in card.get("additionalInterfaces") or []:
            if isinstance(extra, dict) and isinstance(extra.get("url"), str):
                interfaces.append(
                    {
                        "url": extra["url"],
                        "protocolBinding": extra.get("transport") or "JSONRPC",
                        "protocolVersion": major_minor,
                    }
                )
        card["supportedInterfaces"] = interfaces
    card.setdefault("name", "agent")
    card.setdefault("description", "")
    card.setdefault("version", "")
    card.setdefault("defaultInputModes", [])
    card.setdefault("defaultOutputModes", [])
    card.setdefault("skills", [])
    caps = card.get("capabilities")
    card["capabilities"] = {
        k: v
        for k, v in (caps if isinstance(caps, dict) else {}).items()
        if k in ("streaming", "pushNotifications", "extensions", "extendedAgentCard")
    }
    for key in (
        "securitySchemes",
        "securityRequirements",
        "additionalInterfaces",
        "security",
        "authentication",
        "signatures",
    ):
        card.pop(key, None)
    card["skills"] = [
        {
            **s,
            "tags": s.get("tags") or [],
            "description": s.get("description") or "",
            "name": s.get("name") or s.get("id", ""),
        }
        for s in card["skills"]
        if isinstance(s, dict) and "id" in s
    ]
    try:
        return msgspec.convert(card, AgentCard)
    except msgspec.ValidationError as exc:
        raise InvalidAgentResponseError(f"{source} is not a valid agent card: {exc}") from None


class CardRefusedError(A2AError):
    """A card that failed its signature check (:class:`CardCheck`); one line saying why."""


async def fetch_card(
    http: httpx.AsyncClient,
    url: str,
    headers: dict[str, str] | None = None,
    check: CardCheck | None = None,
) -> tuple[AgentCard, str]:
    """Fetch the card of the agent at ``url`` (a base URL or the card's own URL).

    Tries ``/.well-known/agent-card.json`` then the 0.1 ``/.well-known/agent.json``,
    following redirects (through ``http``'s transport, which may check each hop: see
    :mod:`a2a_hub.netpolicy`).  ``check`` verifies the card's signature as served, before
    it is read (:class:`CardRefusedError` when it fails).  Returns the card and the URL it
    came from.
    """
    base = url.rstrip("/")
    candidates = [url] if base.endswith(".json") else [base + CARD_PATH, base + LEGACY_CARD_PATH]
    last_error = ""
    for candidate in candidates:
        try:
            response = await http.get(candidate, headers=headers, follow_redirects=True)
        except httpx.HTTPError as exc:
            raise A2AError(f"cannot reach {candidate}: {exc or type(exc).__name__}") from None
        if response.status_code == 200:
            try:
                data = response.json()
            except ValueError:
                raise InvalidAgentResponseError(f"{candidate} did not return JSON") from None
            if check is not None:
                try:
                    await check.verify(data, candidate, http)
                except CardSignatureError as exc:
                    raise CardRefusedError(str(exc)) from None
            return parse_card(data, candidate), candidate
        last_error = f"{candidate} answered HTTP {response.status_code}"
    raise A2AError(f"no agent card found at {url}: {last_error}")
