"""The Redis store's URL: its own options (prefix, TTLs) and what redis-py connects to.

The options are described in :mod:`.store`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = [
    "DEFAULT_HISTORY_TTL",
    "DEFAULT_PREFIX",
    "DEFAULT_PUSH_TTL",
    "DEFAULT_TASK_TTL",
    "RedisOptions",
]

DEFAULT_PREFIX = "a2a"
DEFAULT_TASK_TTL = 3600.0
DEFAULT_HISTORY_TTL = 86400.0
DEFAULT_PUSH_TTL = 3600.0


def _ttl(name: str, raw: str | None, default: float) -> float:
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"Redis store option {name}={raw!r} must be seconds >= 0 (0 = forever)")
    return value


@dataclass(frozen=True)
class RedisOptions:
    """A parsed store URL: the store's own options and what redis-py connects to."""

    connect_url: str  # the URL without the store options, for redis-py
    safe_url: str  # the URL for messages: no password
    prefix: str = DEFAULT_PREFIX
    task_ttl: float = DEFAULT_TASK_TTL  # seconds; 0 = forever
    history_ttl: float = DEFAULT_HISTORY_TTL
    push_ttl: float = DEFAULT_PUSH_TTL

    OWN = ("prefix", "task_ttl", "history_ttl", "push_ttl")

    @classmethod
    def from_url(cls, url: str) -> RedisOptions:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("redis", "rediss"):
            raise ValueError(
                f"RedisStore serves redis://host:port/db and rediss://… URLs, not {scheme}://…"
            )
        query = parse_qsl(parts.query, keep_blank_values=True)
        own = {k: v for k, v in query if k in cls.OWN}
        rest = [(k, v) for k, v in query if k not in cls.OWN]
        connect_url = urlunsplit((scheme, parts.netloc, parts.path, urlencode(rest), ""))

        userinfo, at, hostinfo = parts.netloc.rpartition("@")
        if at and ":" in userinfo:
            userinfo = userinfo.partition(":")[0] + ":***"
        shown_query = urlencode([(k, "***" if k == "password" else v) for k, v in query])
        safe_url = urlunsplit((scheme, f"{userinfo}{at}{hostinfo}", parts.path, shown_query, ""))

        prefix = own.get("prefix", DEFAULT_PREFIX)
        if not prefix or "{" in prefix or "}" in prefix:
            raise ValueError(
                f"Redis store option prefix={prefix!r} must be non-empty, without '{{' or '}}'"
            )
        task_ttl = _ttl("task_ttl", own.get("task_ttl"), DEFAULT_TASK_TTL)
        history_ttl = _ttl("history_ttl", own.get("history_ttl"), DEFAULT_HISTORY_TTL)
        push_ttl = _ttl("push_ttl", own.get("push_ttl"), DEFAULT_PUSH_TTL)
        if history_ttl and (not task_ttl or history_ttl < task_ttl):
            raise ValueError(
                f"Redis store option history_ttl={history_ttl:g} is shorter than task_ttl="
                f"{task_ttl:g} (0 = forever): a task's log must live at least as long as the "
                "task; raise history_ttl or set it to 0"
            )
        if task_ttl and (not push_ttl or push_ttl > task_ttl):
            raise ValueError(
                f"Redis store option push_ttl={push_ttl:g} is longer than task_ttl={task_ttl:g} "
                "(0 = forever): push configs may not outlive their task; lower push_ttl"
            )
        return cls(connect_url, safe_url, prefix, task_ttl, history_ttl, push_ttl)
