"""OAuth 2 client credentials for the client: a bearer token fetched and kept until near expiry.

:class:`ClientCredentials` is an :class:`httpx.Auth`: given to the ``httpx.AsyncClient`` of
an :class:`~a2a_hub.client.A2AClient` (the ``remote`` agent kind does, with its options
``client_id``, ``client_secret``, ``token_url`` and optional ``scope`` / ``audience``),
it puts ``Authorization: Bearer <access_token>`` on every request.  The token comes from
the token endpoint (``grant_type=client_credentials``, the client authenticated with HTTP
Basic, RFC 6749 §4.4), is kept until ``margin`` seconds before its ``expires_in``, and is
fetched again once when the agent answers 401 to a kept token (revoked, or the keys of
the issuer rotated).  A few lines over httpx rather than a second HTTP stack (authlib's
client would be one): the flow has one request and one cached value.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Generator

import httpx

__all__ = ["ClientCredentials", "TokenError"]


class TokenError(Exception):
    """The token endpoint refused or answered something that is not a token."""


class ClientCredentials(httpx.Auth):
    """Bearer tokens of the client-credentials grant (see the module's docstring)."""

    def __init__(
        self,
        token_url: str,
        client_id: str,
        client_secret: str,
        *,
        scope: str | None = None,
        audience: str | None = None,
        margin: float = 30.0,
        timeout: float = 10.0,
    ) -> None:
        if not token_url.startswith(("http://", "https://")):
            raise ValueError(f"token_url must be http(s)://…, not {token_url!r}")
        self.token_url = token_url
        self.client_id = client_id
        self.client_secret = client_secret
        self.scope = scope
        self.audience = audience
        self.margin = margin
        self.timeout = timeout
        self._token: str | None = None
        self._until = 0.0
        self._lock = asyncio.Lock()
        #: How many tokens were fetched (tells a cached token from a new one).
        self.fetched = 0

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response]:
        raise RuntimeError("ClientCredentials works with httpx.AsyncClient only")

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        token, fresh = await self.token()
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401 and not fresh:
            token, _ = await self.token(refresh=token)
            request.headers["Authorization"] = f"Bearer {token}"
            yield request

    async def token(self, *, refresh: str | None = None) -> tuple[str, bool]:
        """The current token and whether it was just fetched; ``refresh``: that token was
        refused, fetch another (unless another request already did)."""
        async with self._lock:
            now = time.monotonic()
            if (
                self._token is not None
                and now < self._until
                and (refresh is None or self._token != refresh)
            ):
                return self._token, False
            self._token, self._until = await self._fetch()
            return self._token, True

    async def _fetch(self) -> tuple[str, float]:
        form = {"grant_type": "client_credentials"}
        if self.scope:
            form["scope"] = self.scope
        if self.audience:
            form["audience"] = self.audience
        began = time.monotonic()
        try:
            async with httpx.AsyncClient(timeout=self.timeout) as http:
                reply = await http.post(
                    self.token_url, data=form, auth=(self.client_id, self.client_secret)
                )
            if reply.status_code != 200:
                raise TokenError(
                    f"the token endpoint {self.token_url} answered {reply.status_code}: "
                    f"{reply.text[:200]}"
                )
            body = reply.json()
            token = body["access_token"]
            expires_in = float(body.get("expires_in", 300))
        except httpx.HTTPError as exc:
            raise TokenError(f"cannot reach the token endpoint {self.token_url}: {exc}") from exc
        except (ValueError, KeyError, TypeError) as exc:
            raise TokenError(f"the token endpoint {self.token_url} sent no token: {exc}") from exc
        if not isinstance(token, str) or not token:
            raise TokenError(f"the token endpoint {self.token_url} sent no access_token")
        self.fetched += 1
        return token, began + max(0.0, expires_in - self.margin)
