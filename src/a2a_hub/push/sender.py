"""One webhook POST, made safely.

:class:`WebhookSender` resolves the webhook's host itself, checks every address
against the :class:`~a2a_hub.push.urls.WebhookPolicy` (so a name rebound to a
private address after the config was accepted is still refused), then connects to
the checked IP: the request URL carries the IP, the ``Host`` header keeps the
webhook's host and, for ``https``, the TLS server name (SNI) and certificate check
use the host name (httpx's ``sni_hostname`` request extension).  Redirects are not
followed (a 3xx is a failure), and the whole request has a timeout (10 s).
"""

from __future__ import annotations

import email.utils
import time
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import httpx

from a2a_hub import tracing
from a2a_hub.push.urls import UnresolvedWebhookError, UnsafeWebhookError, WebhookPolicy

__all__ = ["Outcome", "WebhookSender", "retry_after_seconds"]

DEFAULT_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one POST gave: ``ok`` (2xx), ``gone`` (410: drop the config), ``permanent``
    (never worth retrying: an unsafe URL), the HTTP status (0: no answer), a
    ``Retry-After`` in seconds, and a description of the failure."""

    ok: bool
    status: int = 0
    gone: bool = False
    permanent: bool = False
    retry_after: float | None = None
    error: str = ""


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header (seconds or an HTTP date) in seconds from now."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class WebhookSender:
    """POSTs notification bodies to webhooks through one pooled httpx client."""

    def __init__(self, policy: WebhookPolicy, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.policy = policy
        self.client = httpx.AsyncClient(timeout=timeout, follow_redirects=False, trust_env=False)

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> Outcome:
        """POST ``body`` to ``url`` at a checked address; never raises for a failure."""
        try:
            host, ip = await self.policy.resolve(url)
        except UnresolvedWebhookError as exc:  # DNS may answer on a later try
            return Outcome(ok=False, error=str(exc))
        except UnsafeWebhookError as exc:
            return Outcome(ok=False, permanent=True, error=str(exc))
        parts = urlsplit(url)
        literal = f"[{ip}]" if ip.version == 6 else str(ip)
        netloc = literal if parts.port is None else f"{literal}:{parts.port}"
        target = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
        host_header = parts.netloc.rpartition("@")[2]
        extensions = {"sni_hostname": host} if parts.scheme.lower() == "https" else {}
        sent = {**headers, "Host": host_header}
        try:
            with tracing.client_span("a2a.push.deliver", {"url.full": url}):
                response = await self.client.post(
                    target,
                    content=body,
                    headers=tracing.inject_headers(sent),
                    extensions=extensions,
                )
        except httpx.HTTPError as exc:
            return Outcome(ok=False, error=f"{type(exc).__name__}: {exc}".strip(": "))
        status = response.status_code
        if 200 <= status < 300:
            return Outcome(ok=True, status=status)
        return Outcome(
            ok=False,
            status=status,
            gone=status == 410,
            retry_after=retry_after_seconds(response.headers.get("retry-after")),
            error=f"HTTP {status}",
        )

    async def close(self) -> None:
        """Close the connection pool."""
        await self.client.aclose()
