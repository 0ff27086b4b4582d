"""The outbound address policy: which hosts the hub itself may connect to.

Every outbound call the hub makes on someone else's word goes through one
:class:`OutboundPolicy`: push notifications (:mod:`a2a_hub.push`), ``remote`` agents and
the remote children of composites, MCP servers over HTTP, agent-card fetches and every
redirect they follow, and the console's inspector (:meth:`OutboundPolicy.check_url`).
A host must not be, or resolve to, an address that is not global: the checks are the
standard library's :mod:`ipaddress` properties (``is_unspecified``, ``is_loopback``,
``is_link_local``, ``is_multicast``, ``is_site_local``, ``is_private``, ``is_reserved``,
and finally ``is_global``, which also excludes the shared address space
``100.64.0.0/10`` that ``is_private`` does not cover), after unwrapping the IPv4 address
an IPv6 one carries (IPv4-mapped ``::ffff:a.b.c.d``, 6to4 ``2002::/16``, Teredo, NAT64
``64:ff9b::/96``).

One allow-list opens chosen host names or address ranges (CIDR) for development, tests
and deliberate private deployments: the setting ``outbound_allow_hosts``
(``A2A_HUB_OUTBOUND_ALLOW_HOSTS``; ``push_allow_hosts``, its older name, is joined to it).
A URL the operator wrote in the hub's own configuration (hub.toml, ``--agent``) names a
host the operator chose: that host is *trusted* for the agent that names it (see
:func:`guarded_http`), while redirects elsewhere are checked.

The check runs when a URL is configured (:meth:`OutboundPolicy.check_url`: a literal
address or a name resolving to a refused address is refused at once; a name that does
not resolve now is left to the connect-time check) and before every connection
(:meth:`OutboundPolicy.resolve`, and :class:`GuardedTransport` for ``httpx`` clients).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from collections.abc import Iterable
from typing import Self
from urllib.parse import urlsplit

import httpx

from a2a_hub.protocol.errors import InvalidParamsError

__all__ = [
    "SETTING_HINT",
    "GuardedTransport",
    "OutboundPolicy",
    "UnresolvedAddressError",
    "UnsafeAddressError",
    "address_problem",
    "guarded_http",
    "host_of",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: How a refusal tells the operator to open a host.
SETTING_HINT = "allow chosen hosts with outbound_allow_hosts / A2A_HUB_OUTBOUND_ALLOW_HOSTS"

_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class UnsafeAddressError(InvalidParamsError):
    """An outbound URL the hub refuses to call (-32602); the message names the reason."""


class UnresolvedAddressError(UnsafeAddressError):
    """The URL's host name does not resolve (now: it may later)."""


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (mapped, 6to4, Teredo, NAT64)."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]  # the client's address
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def address_problem(ip: IPAddress) -> str | None:
    """Why the hub may not connect to ``ip`` (``None``: it may)."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_ipv4(ip)
        if inner is not None:
            problem = address_problem(inner)
            return None if problem is None else f"{problem} (inside {ip})"
        if ip.is_site_local:
            return "a site-local address"
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
    if not ip.is_global:
        return "a non-global address (shared, carrier-grade NAT or special-purpose)"
    return None


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%")[0])
    except ValueError:
        return None


def host_of(url: str) -> str:
    """The lower-case host of ``url`` (``""`` when it has none or is malformed)."""
    try:
        return (urlsplit(url).hostname or "").lower().rstrip(".")
    except ValueError:
        return ""


#: Seconds a URL accepted at config time is accepted again without a new check.
ACCEPTED_TTL = 10.0


class OutboundPolicy:
    """Which hosts may be called: public ones plus ``allow_hosts`` (names or CIDRs)."""

    #: What the URLs this policy checks are, in messages (e.g. "remote agent URL").
    what = "outbound URL"

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
    def from_setting(cls, *values: str | list[str] | None) -> Self:
        """The policy of comma-separated (or listed) allow-list settings, joined."""
        entries: list[str] = []
        for value in values:
            if isinstance(value, list):
                entries += value
            elif value:
                entries += value.split(",")
        return cls(entries)

    def allowed_host(self, host: str) -> bool:
        """Whether ``host`` (a name or a literal address) is on the allow-list."""
        host = host.lower().rstrip(".")
        if host in self.names:
            return True
        ip = _literal(host)
        return ip is not None and self._allowed_ip(ip)

    def _allowed_ip(self, ip: IPAddress) -> bool:
        return any(ip.version == net.version and ip in net for net in self.networks)

    def refusal(self, what: str, shown: str, problem: str) -> str:
        """The message refusing ``shown`` (a host, maybe with its address)."""
        return f"{what} host {shown} is {problem}; the hub calls only public hosts ({SETTING_HINT})"

    def check_address(self, url_host: str, ip: IPAddress, what: str | None = None) -> None:
        """Refuse ``ip`` (an address ``url_host`` resolved to) unless it is public or
        allow-listed (by the host name or the address)."""
        if self.allowed_host(url_host) or self._allowed_ip(ip):
            return
        problem = address_problem(ip)
        if problem is not None:
            shown = url_host if str(ip) == url_host.strip("[]") else f"{url_host} ({ip})"
            raise UnsafeAddressError(self.refusal(what or self.what, shown, problem))

    def split(self, url: str, what: str | None = None) -> tuple[str, str, int]:
        """``(scheme, host, port)`` of an http(s) URL; its form checked."""
        what = what or self.what
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise UnsafeAddressError(f"{what} {url!r} is malformed: {exc}") from None
        scheme = parts.scheme.lower()
        host = (parts.hostname or "").lower().rstrip(".")
        if scheme not in ("https", "http") or not host:
            raise UnsafeAddressError(f"{what} {url!r} must be an absolute http(s):// URL")
        return scheme, host, port or (443 if scheme == "https" else 80)

    async def resolve(self, url: str, what: str | None = None) -> tuple[str, IPAddress]:
        """Check ``url`` and resolve its host: ``(host, the first acceptable address)``.

        Every address the name resolves to must be acceptable (a name with one private
        address among public ones is refused).  Raises :class:`UnsafeAddressError`.
        """
        what = what or self.what
        _, host, port = self.split(url, what)
        literal = _literal(host)
        if literal is not None:
            self.check_address(host, literal, what)
            return host, literal
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, port, type=socket.SOCK_STREAM
            )
        except OSError as exc:
            raise UnresolvedAddressError(f"{what} host {host} does not resolve: {exc}") from None
        addresses: list[IPAddress] = []
        for info in infos:
            ip = ipaddress.ip_address(str(info[4][0]).split("%")[0])
            if ip not in addresses:
                addresses.append(ip)
        if not addresses:
            raise UnsafeAddressError(f"{what} host {host} has no address")
        for ip in addresses:
            self.check_address(host, ip, what)
        return host, addresses[0]

    async def check_url(self, url: str, what: str | None = None) -> None:
        """Config-time check of a URL (form, host, resolved addresses); an allow-listed
        host is accepted without resolving it, and so is a name that does not resolve
        now (the connect-time check protects it).  A URL that passed is not checked again
        for :data:`ACCEPTED_TTL` seconds (every connection is checked anyway)."""
        now = time.monotonic()
        if self._accepted.get(url, 0.0) > now:
            return
        _, host, _ = self.split(url, what)
        if not self.allowed_host(host):
            try:
                await self.resolve(url, what)
            except UnresolvedAddressError:
                return  # not remembered: the next check of this URL resolves it again
        if len(self._accepted) >= 4096:
            self._accepted.clear()
        self._accepted[url] = now + ACCEPTED_TTL


class GuardedTransport(httpx.AsyncBaseTransport):
    """An ``httpx`` transport that checks every request's host against ``policy`` before
    sending it: redirects followed by the client come here too, hop by hop.  ``trusted``
    hosts (named by the operator's own configuration) pass unchecked."""

    def __init__(
        self,
        policy: OutboundPolicy,
        *,
        trusted: Iterable[str] = (),
        what: str | None = None,
        inner: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.policy = policy
        self.trusted = {h.lower().rstrip(".") for h in trusted if h}
        self.what = what
        self.inner = inner or httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host.lower().rstrip(".")
        if host not in self.trusted:
            try:
                await self.policy.resolve(str(request.url), self.what)
            except UnsafeAddressError as exc:
                raise httpx.ConnectError(str(exc), request=request) from None
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def guarded_http(
    policy: OutboundPolicy | None,
    *,
    trusted: Iterable[str] = (),
    what: str | None = None,
    **kwargs: object,
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` (``kwargs`` as for it) whose every request, redirects
    included, passes ``policy`` (``None``: an unguarded client, for the operator's own
    command-line tools)."""
    if policy is None:
        return httpx.AsyncClient(**kwargs)  # type: ignore[arg-type]
    transport = GuardedTransport(policy, trusted=trusted, what=what)
    return httpx.AsyncClient(transport=transport, **kwargs)  # type: ignore[arg-type]
