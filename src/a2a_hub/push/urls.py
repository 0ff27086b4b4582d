"""Webhook URL safety (A2A 1.0 §13.2): who a push notification may be sent to.

A webhook URL must be ``https`` (``http`` only for an allow-listed host), and its
host must not be, or resolve to, a loopback, private, link-local, multicast,
reserved or unspecified address.  The check runs twice:

* at config time (:meth:`WebhookPolicy.check_url`): the URL's scheme and host, and
  every address the host name resolves to now; a refusal is ``-32602`` naming the
  reason.  A name that does not resolve *now* (a DNS hiccup, a host not yet
  published) is accepted: the connect-time check decides, and delivery retries it;
  a literal private or loopback address, or a name resolving to one, is refused at
  once;
* at connect time (:meth:`WebhookPolicy.resolve`): the sender resolves the host
  itself, checks every address, and connects to the checked IP while keeping the
  ``Host`` header and TLS server name of the URL, so a name that resolves to a
  public address when the config is set and to ``127.0.0.1`` later (DNS
  rebinding) is still refused.

``allow_hosts`` (setting ``push_allow_hosts``) opens chosen host names or address
ranges (CIDR) for development and tests, e.g. ``127.0.0.1`` or ``localhost``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from collections.abc import Iterable
from urllib.parse import urlsplit

from a2a_hub.protocol.errors import InvalidParamsError

__all__ = ["UnresolvedWebhookError", "UnsafeWebhookError", "WebhookPolicy", "address_problem"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class UnsafeWebhookError(InvalidParamsError):
    """A webhook URL the hub refuses to call (-32602); the message names the reason."""


class UnresolvedWebhookError(UnsafeWebhookError):
    """The webhook's host name does not resolve (now: it may later)."""


def address_problem(ip: IPAddress) -> str | None:
    """Why a push may not be sent to ``ip`` (``None``: it may)."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return address_problem(ip.ipv4_mapped)
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address (cloud metadata services live there)"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_private:
        return "a private address"
    if ip.is_reserved:
        return "a reserved address"
    return None


#: Seconds a URL accepted at config time is accepted again without a new check.
ACCEPTED_TTL = 10.0


class WebhookPolicy:
    """Which webhook URLs may be called: public ``https`` hosts plus ``allow_hosts``."""

    def __init__(self, allow_hosts: Iterable[str] = ()) -> None:
        #: url -> until when it is accepted without a new check.
        self._accepted: dict[str, float] = {}
        self.names: set[str] = set()
        self.networks: list[IPNetwork] = []
        for entry in allow_hosts:
            entry = entry.strip().lower()
            if not entry:
                continue
            try:
                self.networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                self.names.add(entry.rstrip("."))

    @classmethod
    def from_setting(cls, value: str | None) -> WebhookPolicy:
        """The policy of a comma-separated ``push_allow_hosts`` value."""
        return cls((value or "").split(","))

    def allowed_host(self, host: str) -> bool:
        """Whether ``host`` (a name or a literal address) is on the allow-list."""
        host = host.lower().rstrip(".")
        if host in self.names:
            return True
        ip = _literal(host)
        return ip is not None and self._allowed_ip(ip)

    def _allowed_ip(self, ip: IPAddress) -> bool:
        return any(ip.version == net.version and ip in net for net in self.networks)

    def check_address(self, url_host: str, ip: IPAddress) -> None:
        """Refuse ``ip`` (an address ``url_host`` resolved to) unless it is public or
        allow-listed (by the host name or the address)."""
        if self.allowed_host(url_host) or self._allowed_ip(ip):
            return
        problem = address_problem(ip)
        if problem is not None:
            shown = url_host if str(ip) == url_host else f"{url_host} ({ip})"
            raise UnsafeWebhookError(
                f"push notification URL host {shown} is {problem}; webhooks must be public "
                "(allow chosen hosts for development with push_allow_hosts / "
                "A2A_HUB_PUSH_ALLOW_HOSTS)"
            )

    def split(self, url: str) -> tuple[str, str, int]:
        """``(scheme, host, port)`` of an acceptable-looking URL; scheme and form checked."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise UnsafeWebhookError(f"push notification URL {url!r} is malformed: {exc}") from None
        scheme = parts.scheme.lower()
        host = (parts.hostname or "").lower()
        if scheme not in ("https", "http") or not host:
            raise UnsafeWebhookError(
                f"push notification URL {url!r} must be an absolute https:// URL"
            )
        if parts.username is not None or parts.password is not None:
            raise UnsafeWebhookError(
                "push notification URL must not carry user:password; use authentication"
            )
        if scheme == "http" and not self.allowed_host(host):
            raise UnsafeWebhookError(
                f"push notification URL {url!r} uses http; webhooks must use https "
                "(http is accepted only for hosts in push_allow_hosts)"
            )
        return scheme, host, port or (443 if scheme == "https" else 80)

    async def resolve(self, url: str) -> tuple[str, IPAddress]:
        """Check ``url`` and resolve its host: ``(host, the first acceptable address)``.

        Every address the name resolves to must be acceptable (a name with one private
        address among public ones is refused).  Raises :class:`UnsafeWebhookError`.
        """
        _, host, port = self.split(url)
        literal = _literal(host)
        if literal is not None:
            self.check_address(host, literal)
            return host, literal
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, port, type=socket.SOCK_STREAM
            )
        except OSError as exc:
            raise UnresolvedWebhookError(
                f"push notification URL host {host} does not resolve: {exc}"
            ) from None
        addresses: list[IPAddress] = []
        for info in infos:
            ip = ipaddress.ip_address(str(info[4][0]).split("%")[0])
            if ip not in addresses:
                addresses.append(ip)
        if not addresses:
            raise UnsafeWebhookError(f"push notification URL host {host} has no address")
        for ip in addresses:
            self.check_address(host, ip)
        return host, addresses[0]

    async def check_url(self, url: str) -> None:
        """Config-time check of a webhook URL (scheme, host, resolved addresses); an
        allow-listed host name is accepted without resolving it, and so is a name that
        does not resolve now (its delivery is retried: the connect-time check in
        :meth:`resolve` is what protects it).  A URL that passed is not checked again
        for :data:`ACCEPTED_TTL` seconds (every connection is checked again anyway,
        against the address it goes to)."""
        now = time.monotonic()
        if self._accepted.get(url, 0.0) > now:
            return
        _, host, _ = self.split(url)
        if not self.allowed_host(host):
            try:
                await self.resolve(url)
            except UnresolvedWebhookError:
                return  # not remembered: the next config of this URL resolves it again
        if len(self._accepted) >= 4096:
            self._accepted.clear()
        self._accepted[url] = now + ACCEPTED_TTL


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
