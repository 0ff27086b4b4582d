"""The console's inspector: any A2A agent, reached through the hub.

``POST /ui/api/inspect`` ``{"url"}`` fetches the agent's card (the URL itself when it names
a ``.json`` file, else ``URL/.well-known/agent-card.json``), checks it against the A2A 1.0
schema and verifies its signatures (:mod:`.cardcheck`), and answers ``{"cardUrl", "card",
"findings", "error"}``: ``error`` is one sentence when there is no card to show (the host
is refused or unreachable, no card there, not JSON, over 1 MB, not an agent card).

``POST /ui/api/inspect/call`` ``{"url", "body", "version", "apiKey"}`` relays one JSON-RPC or REST
call (a chat turn) to an agent and streams its answer back byte for byte, so the page shows
the raw frames; ``X-Upstream-Status`` carries the agent's HTTP status.

Every outbound request goes through :func:`outbound`, the one place the hub's address
policy (the push SSRF guard, :class:`~a2a_hub.push.urls.WebhookPolicy`) is applied: https
only (http for allow-listed hosts), no private, loopback or link-local address unless
allow-listed (``outbound_allow_hosts``), the checked address connected to (no DNS rebinding), no
redirects followed.  Who may use it: a caller with a key on a hub with keys; anyone on a
hub without keys (which is open anyway).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import msgspec
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from a2a_hub.protocol import fieldnames
from a2a_hub.protocol.errors import InvalidParamsError, UnauthenticatedError
from a2a_hub.push.urls import UnsafeWebhookError
from a2a_hub.server.caller import caller_of
from a2a_hub.server.console.cardcheck import Finding, schema_findings, signature_findings
from a2a_hub.server.errors import JSON, protocol_endpoint
from a2a_hub.server.http import hub_of, read_body
from a2a_hub.server.hub import Hub

__all__ = ["InspectError", "fetch_json", "inspect_call", "inspect_card", "outbound"]

#: The largest card (or JWKS) read, in bytes.
MAX_CARD = 1 << 20
#: The most of one relayed answer passed on, in bytes.
MAX_RELAY = 16 << 20
#: Seconds to connect and to get a card; a relayed stream may be quiet up to READ_TIMEOUT.
TIMEOUT = 10.0
READ_TIMEOUT = 300.0

_enc = msgspec.json.Encoder()


class InspectError(Exception):
    """Why there is nothing to show: one sentence for the page."""


class _Target(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    url: str


class _Call(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="camel"):
    url: str
    body: dict[str, Any]
    version: str | None = None
    #: Sent to the agent as ``X-API-Key`` (a key of that agent, not of this hub).
    api_key: str | None = None


def _check_caller(request: Request, hub: Hub) -> None:
    if hub.registry is not None and caller_of(request).anonymous:
        raise UnauthenticatedError("The inspector is for callers with an API key: enter one")


async def outbound(hub: Hub, url: str) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The request to make for ``url`` under the hub's address policy: the URL with the
    checked address in place of the host name, the ``Host`` header and, for https, the TLS
    server name (httpx's ``sni_hostname``), so certificates are checked against the name.
    Raises :class:`InspectError` naming why a URL is refused."""
    try:
        host, ip = await hub.webhooks.resolve(url)
    except UnsafeWebhookError as exc:
        text = str(exc).replace("push notification URL", "URL").replace("webhooks", "URLs")
        raise InspectError(f"the hub will not call {url}: {text}") from None
    parts = urlsplit(url)
    address = f"[{ip}]" if ip.version == 6 else str(ip)
    if parts.port is not None:
        address += f":{parts.port}"
    target = urlunsplit(parts._replace(netloc=address))
    netloc = parts.netloc.rsplit("@", 1)[-1]
    extensions = {"sni_hostname": host} if parts.scheme.lower() == "https" else {}
    return target, {"Host": netloc}, extensions


def _client(read: float = TIMEOUT) -> httpx.AsyncClient:
    timeout = httpx.Timeout(TIMEOUT, read=read)
    return httpx.AsyncClient(timeout=timeout, follow_redirects=False, trust_env=False)


async def fetch_json(hub: Hub, url: str, what: str = "document") -> Any:
    """GET a JSON document of at most :data:`MAX_CARD` bytes through :func:`outbound`;
    :class:`InspectError` says in one sentence why not."""
    target, headers, extensions = await outbound(hub, url)
    headers["Accept"] = "application/json"
    body = bytearray()
    try:
        async with (
            _client() as client,
            client.stream("GET", target, headers=headers, extensions=extensions) as answer,
        ):
            if answer.is_redirect:
                where = answer.headers.get("location", "elsewhere")
                raise InspectError(f"{url} redirects to {where}; enter that URL instead")
            if answer.status_code != 200:
                raise InspectError(f"{url} answered HTTP {answer.status_code}: no A2A {what} there")
            async for chunk in answer.aiter_bytes():
                body += chunk
                if len(body) > MAX_CARD:
                    raise InspectError(f"the {what} at {url} is over 1 MB: not read")
    except httpx.TimeoutException:
        raise InspectError(f"{url} did not answer within {TIMEOUT:.0f} s") from None
    except httpx.HTTPError as exc:
        reason = str(exc) or type(exc).__name__
        raise InspectError(f"cannot reach {url}: {reason}") from None
    try:
        return json.loads(body)
    except ValueError:
        start = bytes(body[:40]).decode("utf-8", "replace")
        raise InspectError(f"the {what} at {url} is not JSON (it starts {start!r})") from None


def card_url(url: str) -> str:
    """Where an agent's card is: ``url`` when it names a ``.json`` file, else the agent's
    well-known card path."""
    if urlsplit(url).path.endswith(".json"):
        return url
    return url.rstrip("/") + "/.well-known/agent-card.json"


async def _findings(hub: Hub, card: dict[str, Any]) -> list[Finding]:
    async def fetch(url: str) -> Any:
        try:
            return await fetch_json(hub, url, "key set")
        except InspectError as exc:
            raise ValueError(str(exc)) from None

    return schema_findings(card) + await signature_findings(card, fetch)


def _url_of(raw: str) -> str:
    url = raw.strip()
    scheme = urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise InvalidParamsError(f"enter an http:// or https:// URL, not {raw[:200]!r}")
    return url


@protocol_endpoint
async def inspect_card(request: Request) -> Response:
    """``POST /ui/api/inspect``: the card at a URL, with what the checks found."""
    hub = hub_of(request)
    _check_caller(request, hub)
    target = _decode(await read_body(request, 64 * 1024), _Target)
    url = card_url(_url_of(target.url))
    result: dict[str, Any] = {"cardUrl": url, "card": None, "findings": [], "error": None}
    try:
        card = await fetch_json(hub, url, "agent card")
        if not isinstance(card, dict) or not {"name", "supportedInterfaces", "url"} & set(card):
            raise InspectError(
                f"{url} is JSON but not an A2A agent card (no name, supportedInterfaces or url)"
            )
    except InspectError as exc:
        result["error"] = str(exc)
    else:
        result["card"] = card
        result["findings"] = [msgspec.to_builtins(f) for f in await _findings(hub, card)]
    return Response(_enc.encode(result), media_type=JSON)


def _decode(body: bytes, type_: type[Any]) -> Any:
    try:
        return fieldnames.decode_with(msgspec.json.Decoder(type_), body or b"{}")
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise InvalidParamsError(f"bad request body: {exc}") from None


@protocol_endpoint
async def inspect_call(request: Request) -> Response:
    """``POST /ui/api/inspect/call``: one call relayed to an agent, its answer streamed
    back unchanged (an SSE stream frame by frame)."""
    hub = hub_of(request)
    _check_caller(request, hub)
    call = _decode(await read_body(request, hub.settings.server.max_body_bytes), _Call)
    url = _url_of(call.url)
    try:
        target, headers, extensions = await outbound(hub, url)
    except InspectError as exc:
        return _failed(str(exc))
    headers |= {
        "Content-Type": "application/json",
        "Accept": "text/event-stream, application/json",
    }
    if call.version:
        headers["A2A-Version"] = call.version
    if call.api_key:
        headers["X-API-Key"] = call.api_key
    client = _client(READ_TIMEOUT)
    outgoing = client.build_request(
        "POST", target, content=_enc.encode(call.body), headers=headers, extensions=extensions
    )
    try:
        answer = await client.send(outgoing, stream=True)
    except httpx.HTTPError as exc:
        await client.aclose()
        return _failed(f"cannot reach {url}: {str(exc) or type(exc).__name__}")

    async def relay() -> AsyncIterator[bytes]:
        sent = 0
        try:
            async for chunk in answer.aiter_bytes():
                sent += len(chunk)
                if sent > MAX_RELAY:
                    break
                yield chunk
        except httpx.HTTPError:
            pass  # the agent went away mid-answer: what came is what the page shows
        finally:
            await answer.aclose()
            await client.aclose()

    kind = answer.headers.get("content-type", "application/octet-stream")
    relayed = {
        "X-Upstream-Status": str(answer.status_code),
        "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",
    }
    return StreamingResponse(relay(), media_type=kind, headers=relayed)


def _failed(message: str) -> Response:
    return Response(_enc.encode({"error": message}), 502, media_type=JSON)
