"""Webhook URL safety (A2A 1.0 §13.2): who a push notification may be sent to.

A webhook URL must be ``https`` (``http`` only for an allow-listed host), and its host
must pass the hub's one outbound address policy (:mod:`a2a_hub.netpolicy`: not, and not
resolving to, a loopback, private, link-local, site-local, multicast, reserved,
unspecified or other non-global address, IPv4 inside IPv6 unwrapped).  The check runs
twice:

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

The allow-list is the hub's one outbound allow-list (``outbound_allow_hosts``, joined
with its older name ``push_allow_hosts``): chosen host names or address ranges (CIDR)
for development and tests, e.g. ``127.0.0.1`` or ``localhost``.
"""

from __future__ import annotations

from a2a_hub.netpolicy import (
    SETTING_HINT,
    OutboundPolicy,
    UnresolvedAddressError,
    UnsafeAddressError,
    address_problem,
)

__all__ = ["UnresolvedWebhookError", "UnsafeWebhookError", "WebhookPolicy", "address_problem"]

#: The names this module has always exported.
UnsafeWebhookError = UnsafeAddressError
UnresolvedWebhookError = UnresolvedAddressError


class WebhookPolicy(OutboundPolicy):
    """Which webhook URLs may be called: public ``https`` hosts plus the allow-list."""

    what = "push notification URL"

    def refusal(self, what: str, shown: str, problem: str) -> str:
        return f"{what} host {shown} is {problem}; webhooks must be public ({SETTING_HINT})"

    def split(self, url: str, what: str | None = None) -> tuple[str, str, int]:
        """``(scheme, host, port)`` of an acceptable-looking URL; scheme and form checked."""
        what = what or self.what
        if not url.lower().startswith(("https://", "http://")):
            raise UnsafeAddressError(f"{what} {url!r} must be an absolute https:// URL")
        scheme, host, port = super().split(url, what)
        if scheme == "http" and not self.allowed_host(host):
            raise UnsafeAddressError(
                f"{what} {url!r} uses http; webhooks must use https "
                "(http is accepted only for hosts in outbound_allow_hosts)"
            )
        if "@" in url.split("//", 1)[-1].split("/", 1)[0]:
            raise UnsafeAddressError(f"{what} must not carry user:password; use authentication")
        return scheme, host, port
