"""Store URLs for people: check one before use, say where it points, explain why it failed.

Everything here speaks to the person who typed the URL (``--store``,
``A2A_HUB_STORE``, ``store =`` in hub.toml): each message names what is wrong and
what to do, in one or two lines, and never shows a password.

SQLite URLs follow SQLAlchemy's rule: ``sqlite:///hub.db`` (three slashes) is a
path relative to the current directory, ``sqlite:////var/lib/hub.db`` (four) an
absolute one; ``sqlite://`` alone is a database in memory.
"""

from __future__ import annotations

import difflib
import inspect
import socket
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit, urlunsplit

__all__ = [
    "SUPPORTED_SCHEMES",
    "check_store_url",
    "describe_store_url",
    "open_failure",
    "safe_store_url",
    "sqlite_path",
]

SUPPORTED_SCHEMES = (
    "memory://",
    "sqlite:///path",
    "postgresql://user@host/db",
    "redis://host:6379/0",
)

_ENV = "--store (or A2A_HUB_STORE)"
_SQLITE_TODO = (
    "Choose a folder you can write to: --store sqlite:///PATH (relative to the current "
    "directory) or sqlite:////PATH (absolute)."
)


def _backend(url: str) -> str:
    """``memory``, ``sqlite``, ``postgresql``, ``redis`` or "" for a URL none serves."""
    scheme, sep, _ = url.partition("://")
    base = scheme.lower().partition("+")[0] if sep else ""
    if base == "postgres":
        return "postgresql"
    if base == "rediss":
        return "redis"
    return base if base in ("memory", "sqlite", "postgresql", "redis") else ""


#: Query options whose value is a secret (PostgreSQL's ``sslpassword`` included).
_SECRET_OPTIONS = frozenset({"password", "sslpassword", "passwd", "pwd", "secret", "token"})


def safe_store_url(url: str) -> str:
    """``url`` with any password (in the user part or a ``password=`` option) hidden."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.partition("://")[0] + "://…"
    if "@" not in parts.netloc and "=" not in parts.query:
        return url
    userinfo, at, hostinfo = parts.netloc.rpartition("@")
    if at and ":" in userinfo:
        userinfo = userinfo.partition(":")[0] + ":***"
    query = "&".join(
        f"{k}={'***' if k.lower() in _SECRET_OPTIONS else v}"
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
    )
    return urlunsplit((parts.scheme, f"{userinfo}{at}{hostinfo}", parts.path, query, ""))


def sqlite_path(url: str) -> Path | None:
    """The absolute path of the file a ``sqlite:`` URL names (None: in memory or not SQLite)."""
    if _backend(url) != "sqlite":
        return None
    rest = url.partition("://")[2].partition("?")[0]
    if not rest.startswith("/"):
        return None  # sqlite:// (memory), or two slashes (refused by check_store_url)
    database = rest[1:]
    if database in ("", ":memory:") or database.startswith("file:"):
        return None
    return Path(database).resolve()


def describe_store_url(url: str) -> str:
    """The URL as the start-up line shows it: no password, a SQLite file's absolute path."""
    path = sqlite_path(url)
    if path is not None:
        return f"{safe_store_url(url)} (file {path})"
    if _backend(url) == "memory" or url.partition("?")[0].rstrip("/") == "sqlite:":
        return f"{url} (in memory: lost on exit)"
    return safe_store_url(url)


def check_store_url(url: str) -> None:
    """Raise :class:`ValueError` (one line: what is wrong, what to write) for a URL that
    cannot work: an unknown scheme, ``sqlite://file.db`` with two slashes, an unknown
    Redis option.  Whether the server answers is :func:`open_failure`'s business."""
    backend = _backend(url)
    if not backend:
        scheme, sep, _ = url.partition("://")
        shown = f"{scheme}://…" if sep else repr(url)  # never echo a password
        raise ValueError(
            f"Unsupported store URL {shown}; supported: {', '.join(SUPPORTED_SCHEMES)}"
        )
    if backend == "sqlite":
        rest = url.partition("://")[2].partition("?")[0]
        if rest and not rest.startswith("/"):
            raise ValueError(
                f"store URL {url!r} has two slashes: write sqlite:///{rest} for {rest} in the "
                "current directory (four slashes before an absolute path: "
                "sqlite:////var/lib/a2a-hub/hub.db)"
            )
    if backend == "redis":
        _check_redis_options(url)


def _redis_options() -> tuple[tuple[str, ...], set[str]]:
    """(the store's own URL options, every option redis-py takes from a URL)."""
    from a2a_hub.stores.redis import RedisOptions

    own = tuple(RedisOptions.OWN)
    try:
        from redis.asyncio import connection
    except ImportError:  # open_store names the extra to install
        return own, set()
    names = set(connection.URL_QUERY_ARGUMENT_PARSERS)
    for cls in (connection.SSLConnection, connection.ConnectionPool):
        for klass in cls.__mro__:
            init = vars(klass).get("__init__")
            if init is not None:
                names.update(inspect.signature(init).parameters)
    names -= {"self", "args", "kwargs", "connection_kwargs"}
    return own, names


def _check_redis_options(url: str) -> None:
    query = urlsplit(url).query
    given = [key for key, _ in parse_qsl(query, keep_blank_values=True)]
    if not given:
        return
    try:
        own, theirs = _redis_options()
    except ImportError:
        return  # open_store says which extra to install
    if not theirs:
        return
    for key in given:
        if key in own or key in theirs:
            continue
        near = difflib.get_close_matches(key, [*own, *sorted(theirs)], n=1, cutoff=0.6)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ValueError(
            f"unknown Redis store option {key!r}{hint} in {safe_store_url(url)}; options: "
            f"{', '.join(own)} and redis-py's (db, socket_timeout, health_check_interval, …)"
        )


def _causes(exc: BaseException) -> list[BaseException]:
    """``exc``, then what caused it (``__cause__``, ``__context__``, SQLAlchemy's ``orig``)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        orig = getattr(current, "orig", None)
        below = orig if isinstance(orig, BaseException) else None
        current = below or current.__cause__ or current.__context__
    return chain


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def open_failure(url: str, exc: BaseException) -> str:
    """Why opening the store at ``url`` failed with ``exc``, and what to do: two lines."""
    backend = _backend(url)
    product = {"postgresql": "PostgreSQL", "redis": "Redis", "sqlite": "SQLite"}.get(
        backend, "the store"
    )
    shown = safe_store_url(url)
    parts = urlsplit(url)
    try:
        port = parts.port or {"postgresql": 5432, "redis": 6379}.get(backend)
    except ValueError:
        port = None
    host = parts.hostname or "localhost"
    where = f"{host}:{port}" if port else host
    user = parts.username or ("postgres" if backend == "postgresql" else "")
    database = parts.path.lstrip("/") or user
    chain = _causes(exc)
    names = {type(e).__name__ for e in chain}

    def said(*types: type[BaseException]) -> BaseException | None:
        return next((e for e in chain if isinstance(e, types)), None)

    what: str
    todo: str
    if said(ConnectionRefusedError):
        what = f"nothing answers at {where} (connection refused)"
        todo = f"Is {product} running there? Start it, or point {_ENV} at the right host and port."
    elif gai := said(socket.gaierror):
        what = f"host {host!r} not found ({_first_line(gai)})"
        todo = f"Check the host name in {_ENV}."
    elif said(TimeoutError):
        what = f"{where} did not answer in time"
        todo = f"Check that {product} runs at {where} and that no firewall is in the way."
    elif "InvalidCatalogNameError" in names:
        what = f'database "{database}" does not exist on {where}'
        todo = (
            f"Create it (createdb -h {host} -p {port} -U {user} {database}) "
            f"or name an existing one in {_ENV}."
        )
    elif "InvalidAuthorizationSpecificationError" in names or "InvalidPasswordError" in names:
        detail = next(e for e in chain if type(e).__name__.startswith("Invalid"))
        what = f"{product} at {where} refused the login: {_first_line(detail)}"
        todo = f"Fix the user or password in {_ENV}, or create that role (createuser {user})."
    elif "AuthenticationError" in names or "AuthenticationWrongNumberOfArgsError" in names:
        detail = next(e for e in chain if "Authentication" in type(e).__name__)
        what = f"Redis at {where} refused the login: {_first_line(detail)}"
        todo = f"Fix the user or password in {_ENV} (redis://:PASSWORD@host:6379/0)."
    elif backend == "sqlite" and (bad := said(OSError)) is not None:
        what = f"cannot create or open {sqlite_path(url) or url}: {_first_line(bad)}"
        todo = _SQLITE_TODO
    elif backend == "sqlite" and "OperationalError" in names:
        detail = next(e for e in reversed(chain) if type(e).__name__ == "OperationalError")
        what = f"cannot open {sqlite_path(url) or url}: {_first_line(detail)}"
        todo = _SQLITE_TODO
    else:
        root = chain[-1] if len(chain) > 1 else exc
        what = f"{type(root).__name__}: {_first_line(root)}"
        todo = f"Check {_ENV}."
    return f"cannot open the task store {shown}: {what}\n  {todo}"
