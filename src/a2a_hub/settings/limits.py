"""``[[limits]]``: rate limits and running-task caps per caller (:class:`LimitSpec`).

Each entry applies to the requests of one ``caller`` (an API key's id, a token's subject,
``anonymous``, or ``*`` for every caller) to one ``agent`` and one A2A ``method`` (each
``*`` by default: every one)::

    [[limits]]
    caller = "*"
    rate = "20/second"        # also "1000/hour", "5/minute"
    burst = 40                # default: the rate's count
    max_running = 2           # running tasks of one caller on one agent, at once

The rate is enforced by :mod:`limits` (:mod:`a2a_hub.server.limits`); here it is only
parsed, so that a mistake is one clear line at start-up.
"""

from __future__ import annotations

import re

import msgspec

from a2a_hub.settings.fields import SettingsError

__all__ = ["LIMITS_HELP", "LimitSpec", "parse_rate"]

LIMITS_HELP = (
    "Rate limits and running-task caps: [[limits]] tables in hub.toml (caller = key id, "
    "token subject, 'anonymous' or '*'; agent; method; rate = '20/second'; burst; "
    "max_running), or entries like 'caller=*;rate=20/second;max_running=2' separated by "
    "commas."
)

_RATE = re.compile(r"\s*(\d+)\s*(?:/|per)\s*(\d*)\s*(second|minute|hour|day)s?\s*", re.I)
_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


def parse_rate(text: str) -> tuple[int, float]:
    """``"20/second"`` → (20, 1.0); ``"1000/hour"`` → (1000, 3600.0); ``"5/10 minutes"`` →
    (5, 600.0).  :class:`SettingsError` for anything else."""
    found = _RATE.fullmatch(text)
    if found is None or int(found.group(1)) < 1:
        raise SettingsError(
            f"limit rate {text!r}: write COUNT/UNIT, e.g. '20/second', '1000/hour', '5/minute'"
        )
    multiple = int(found.group(2) or 1)
    return int(found.group(1)), float(multiple * _SECONDS[found.group(3).lower()])


class LimitSpec(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """One ``[[limits]]`` entry (see the module's docstring)."""

    caller: str = "*"
    agent: str = "*"
    method: str = "*"
    rate: str | None = None
    burst: int | None = None
    max_running: int | None = None

    @classmethod
    def parse(cls, text: str) -> LimitSpec:
        """An entry written on one line: ``caller=alice;agent=echo;rate=10/second``."""
        fields: dict[str, object] = {}
        for part in text.split(";"):
            if not part.strip():
                continue
            name, eq, value = part.partition("=")
            if not eq:
                raise SettingsError(f"limit {text!r}: write NAME=VALUE;NAME=VALUE…")
            name = name.strip()
            fields[name] = int(value) if name in ("burst", "max_running") else value.strip()
        try:
            return msgspec.convert(fields, cls)
        except msgspec.ValidationError as exc:
            raise SettingsError(f"limit {text!r}: {exc}") from None

    def problem(self) -> str | None:
        """What is wrong with this entry (one sentence), or ``None``."""
        where = f"limit for caller {self.caller!r}, agent {self.agent!r}, method {self.method!r}"
        if self.rate is None and self.max_running is None:
            return f"{where}: give rate and/or max_running"
        if self.rate is not None:
            try:
                parse_rate(self.rate)
            except SettingsError as exc:
                return f"{where}: {exc}"
            if self.burst is not None and self.burst < 1:
                return f"{where}: burst must be at least 1"
        elif self.burst is not None:
            return f"{where}: burst needs a rate"
        if self.max_running is not None and self.max_running < 1:
            return f"{where}: max_running must be at least 1"
        return None
