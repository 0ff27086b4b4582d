"""Logging set-up of a serving process: plain lines or JSON lines, credentials redacted.

Every line the hub's handler writes goes through :func:`redact` (message and traceback):
a password in a URL (``redis://:PW@host``, ``postgresql://user:PW@host``) or in a
``password=`` / ``token=`` option is replaced by ``***``, whichever code logged it (the
hub, SQLAlchemy, redis-py, asyncpg).  Store and registry URLs are also shown redacted
where the hub prints them itself (``stores.urls.safe_store_url``).
"""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any

__all__ = ["JsonFormatter", "RedactingFilter", "configure_logging", "redact", "redact_handlers"]

#: ``scheme://user:PASSWORD@`` (the user part may be empty: ``redis://:PASSWORD@``).
_URL_PASSWORD = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^:/?#@\s'\"]*:)([^@\s'\"/]+)(@)")
#: ``password=…`` and its kin in a query string or a DSN (``key=value`` separated by & or space).
_OPTION_SECRET = re.compile(
    r"(\b(?:password|sslpassword|passwd|pwd|secret|token|api_key|apikey)=)([^&\s'\",;]+)",
    re.IGNORECASE,
)


def redact(text: str) -> str:
    """``text`` with the passwords of URLs and ``password=``-style options replaced by ***."""
    if "=" not in text and "@" not in text:
        return text
    return _OPTION_SECRET.sub(r"\1***", _URL_PASSWORD.sub(r"\1***\3", text))


class RedactingFilter(logging.Filter):
    """Redact credentials (:func:`redact`) in a record's message and traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record in place; never drops it."""
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


_PLAIN = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message (and the exception)."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON."""
        entry: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_text:
            entry["exception"] = record.exc_text
        elif record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, separators=(",", ":"), default=str)


def configure_logging(level: str, fmt: str = "plain", access: str = "off") -> None:
    """Root logging at ``level``, as plain text or JSON lines (``fmt`` ``"json"``).

    With JSON, uvicorn's own loggers write JSON lines too.  A JSON access log (``access``
    ``"json"``) under plain logging writes its lines as they are, without the plain prefix
    (time, level, logger), so that each is one JSON object.
    """
    handler = logging.StreamHandler()
    handler.addFilter(RedactingFilter())
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(_PLAIN))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    access_logger = logging.getLogger("a2a_hub.access")
    access_logger.handlers[:] = []
    access_logger.propagate = True
    if access == "json" and fmt != "json":
        bare = logging.StreamHandler()
        bare.addFilter(RedactingFilter())
        bare.setFormatter(logging.Formatter("%(message)s"))
        access_logger.handlers[:] = [bare]
        access_logger.propagate = False
    if fmt == "json":
        for name in ("uvicorn", "uvicorn.error"):
            logger = logging.getLogger(name)
            logger.handlers[:] = []
            logger.propagate = True


def redact_handlers(*names: str) -> None:
    """Put a :class:`RedactingFilter` on every handler of the loggers ``names`` (uvicorn's own
    handlers, which its default logging config installs beside ours: its WebSocket line
    ``"WebSocket /a2a/x/ws?api_key=KEY" [accepted]`` would otherwise show the key)."""
    for name in names:
        for handler in logging.getLogger(name).handlers:
            if not any(isinstance(f, RedactingFilter) for f in handler.filters):
                handler.addFilter(RedactingFilter())
