"""The settings object: every setting once, with its type, default and help.

A setting is a field of a section (or of :class:`Settings` itself, like ``agents``),
annotated with :func:`setting`.  Its flat key, ``A2A_HUB_*`` variable and
``a2a-hub serve`` option are derived from the field (see :mod:`a2a_hub.settings.fields`).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import parse_qsl

import msgspec

__all__ = [
    "DEFAULT_STORE",
    "AgentSpec",
    "AuthSettings",
    "LLMSettings",
    "LogLevel",
    "PushSettings",
    "Section",
    "ServerSettings",
    "Settings",
    "SettingsError",
    "StoreSettings",
    "parse_agent_spec",
    "setting",
]

DEFAULT_STORE = "sqlite:///.a2a-hub/hub.db"

LogLevel = Literal["debug", "info", "warning", "error", "critical"]


class SettingsError(ValueError):
    """A configuration value is missing or wrong; the message says which and why."""


def setting(
    help: str,
    *,
    key: str | None = None,
    flag: str | None = None,
    short: str | None = None,
    cli: bool = True,
    metavar: str | None = None,
    fallback_env: tuple[str, ...] = (),
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
) -> msgspec.Meta:
    """Describe one setting; use it as ``name: Annotated[type, setting("help")] = default``.

    ``help`` is the text of ``--help``.  ``key`` replaces the flat key (by default the
    section's ``key_prefix`` + the field name), from which the variable
    (``A2A_HUB_{KEY}``) and the option (``--{key-with-dashes}``) are derived; ``flag``
    replaces the option alone.  ``cli=False`` keeps a setting off the command line
    (secrets).  ``fallback_env`` names variables read when no source sets the value.
    ``ge``/``gt``/``le``/``lt`` bound numbers, checked wherever the value comes from.
    """
    extra: dict[str, Any] = {"cli": cli}
    for name, value in (
        ("key", key),
        ("flag", flag),
        ("short", short),
        ("metavar", metavar),
        ("fallback_env", fallback_env),
    ):
        if value:
            extra[name] = value
    bounds = {
        name: value
        for name, value in (("ge", ge), ("gt", gt), ("le", le), ("lt", lt))
        if value is not None
    }
    # (Meta's overloads spell out each pair of bounds; msgspec checks them at run time)
    make: Any = msgspec.Meta
    meta: msgspec.Meta = make(description=help, extra=extra, **bounds)
    return meta


class Section(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A group of settings: a field of :class:`Settings` and a ``[table]`` of hub.toml."""

    #: Prefix of the flat keys of its fields: ``"llm_"`` gives ``llm_model``,
    #: ``A2A_HUB_LLM_MODEL`` and ``--llm-model``.
    key_prefix: ClassVar[str] = ""
    #: Heading of the section's options in ``a2a-hub serve --help``.
    title: ClassVar[str] = "Options"


class ServerSettings(Section):
    """How the hub listens and answers."""

    title = "Server"

    host: Annotated[str, setting("Address to bind.", metavar="HOST")] = "127.0.0.1"
    port: Annotated[int, setting("Port to listen on.", ge=1, le=65535, metavar="PORT")] = 8000
    public_url: Annotated[
        str | None,
        setting("External base URL written into agent cards (behind a proxy).", metavar="URL"),
    ] = None
    default_agent: Annotated[
        str | None,
        setting("Agent also served at the root URL (automatic with a single agent).", metavar="ID"),
    ] = None
    workers: Annotated[
        int,
        setting(
            "Worker processes; they need a shared store (redis:// or postgresql://).",
            ge=1,
            metavar="N",
        ),
    ] = 1
    log_level: Annotated[LogLevel, setting("How much the server logs.", metavar="LEVEL")] = "info"
    max_body_bytes: Annotated[
        int, setting("Largest request body accepted, in bytes.", ge=1024, metavar="BYTES")
    ] = 10 * 1024 * 1024
    sse_heartbeat: Annotated[
        float,
        setting(
            "Seconds of silence after which an SSE stream gets a keep-alive comment.",
            gt=0,
            metavar="SECONDS",
        ),
    ] = 15.0
    ws_max_frame_bytes: Annotated[
        int,
        setting(
            "Largest WebSocket frame a client may send, in bytes (larger: an error event).",
            ge=256,
            metavar="BYTES",
        ),
    ] = 1024 * 1024
    ws_max_sockets: Annotated[
        int, setting("Open WebSockets allowed per agent.", ge=1, metavar="N")
    ] = 1000
    ws_max_sockets_per_key: Annotated[
        int, setting("Open WebSockets allowed per API key.", ge=1, metavar="N")
    ] = 20
    ws_idle_timeout: Annotated[
        float,
        setting(
            "Seconds without any client frame (ping included) after which a WebSocket is closed.",
            gt=0,
            metavar="SECONDS",
        ),
    ] = 120.0
    ws_send_timeout: Annotated[
        float,
        setting(
            "Seconds a WebSocket client may take to read an event before it is cut loose "
            "(it resyncs from the log with sync_state).",
            gt=0,
            metavar="SECONDS",
        ),
    ] = 10.0


class StoreSettings(Section):
    """Where tasks live."""

    title = "Store"

    url: Annotated[
        str,
        setting(
            "Task store URL: sqlite:///PATH, memory:// (lost on exit), "
            "postgresql://USER@HOST/DB (pip install 'a2a-hub[postgres]') or "
            "redis://HOST:6379/0 (pip install 'a2a-hub[redis]').",
            key="store",
            metavar="URL",
        ),
    ] = DEFAULT_STORE
    orphan_timeout: Annotated[
        float,
        setting(
            "Seconds after which the tasks of an instance that died are failed by the others.",
            ge=1,
            metavar="SECONDS",
        ),
    ] = 30.0


class LLMSettings(Section):
    """The model behind ``llm`` agents and judges that name none themselves."""

    key_prefix = "llm_"
    title = "LLM (for agents that do not choose their own)"

    provider: Annotated[
        str,
        setting(
            "embedded (SmolLM2 on the CPU, offline), openai (any OpenAI-compatible API) or "
            "scripted (canned replies for tests).",
            metavar="NAME",
        ),
    ] = "embedded"
    model: Annotated[
        str | None, setting("Model name (default: the provider's own).", metavar="MODEL")
    ] = None
    base_url: Annotated[
        str | None,
        setting(
            "Base URL of the OpenAI-compatible API, e.g. http://localhost:11434/v1.",
            metavar="URL",
        ),
    ] = None
    api_key: Annotated[
        str | None,
        setting(
            "API key of the openai provider (OPENAI_API_KEY when unset); not a command-line "
            "option, so that it stays out of process listings.",
            cli=False,
            fallback_env=("OPENAI_API_KEY",),
        ),
    ] = None


class PushSettings(Section):
    """Push notifications (``[push]``, ``A2A_HUB_PUSH_*``, ``--push-*``)."""

    key_prefix = "push_"
    title = "Push notifications"


class AuthSettings(Section):
    """Authentication (``[auth]``, ``A2A_HUB_AUTH_*``, ``--auth-*``)."""

    key_prefix = "auth_"
    title = "Authentication"


class AgentSpec(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One hosted agent: its id (the ``/a2a/{id}`` path), kind and options.

    Kinds: ``echo`` and ``llm`` (built in) and ``python`` (``executor = "module:Class"``).
    """

    id: str
    kind: str = "echo"
    executor: str | None = None
    name: str | None = None
    description: str | None = None
    version: str = "1.0.0"
    options: dict[str, Any] = msgspec.field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> AgentSpec:
        """The spec written as on the command line (see :func:`parse_agent_spec`)."""
        return parse_agent_spec(text)


def parse_agent_spec(text: str) -> AgentSpec:
    """Parse ``[ID=]KIND_OR_IMPORT_PATH[?option=value&…]``.

    ``echo`` → the echo agent at ``/a2a/echo``; ``bot=pkg.mod:Bot`` → the
    executor class ``Bot`` at ``/a2a/bot``; ``pkg.mod:Bot`` alone gets the id
    ``bot``; ``echo?reply=message`` passes options.
    """
    spec, _, query = text.partition("?")
    agent_id, eq, target = spec.partition("=")
    if not eq:
        agent_id, target = "", spec
    target = target.strip()
    if not target:
        raise SettingsError(f"--agent {text!r}: say which agent, e.g. 'echo' or 'mymod:MyExecutor'")
    options: dict[str, Any] = dict(parse_qsl(query, keep_blank_values=True))
    if ":" in target:
        kind, executor = "python", target
        agent_id = agent_id or target.rsplit(":", 1)[1].lower()
    else:
        kind, executor = target, None
        agent_id = agent_id or target
    return AgentSpec(id=agent_id.strip(), kind=kind, executor=executor, options=options)


AGENT_HELP = (
    "Agent to host (repeatable): 'echo', 'llm', 'ID=echo', 'ID=llm?instruction=Be brief.', "
    "'module:ExecutorClass' or 'ID=module:ExecutorClass'; options after '?', "
    "e.g. 'echo?reply=message'."
)


class Settings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Everything ``a2a-hub serve`` needs: the agents and one section per concern.

    Read a setting through its section: ``settings.server.port``,
    ``settings.store.url``, ``settings.llm.provider``.  :func:`load_settings` fills it
    from hub.toml, ``A2A_HUB_*`` variables and the command line; :meth:`from_flat`
    builds one from flat keys in code and tests.
    """

    agents: Annotated[
        list[AgentSpec],
        setting(AGENT_HELP, flag="--agent", short="-a", metavar="SPEC"),
    ] = msgspec.field(default_factory=list)
    server: ServerSettings = msgspec.field(default_factory=ServerSettings)
    store: StoreSettings = msgspec.field(default_factory=StoreSettings)
    llm: LLMSettings = msgspec.field(default_factory=LLMSettings)
    push: PushSettings = msgspec.field(default_factory=PushSettings)
    auth: AuthSettings = msgspec.field(default_factory=AuthSettings)

    @classmethod
    def from_flat(cls, **values: Any) -> Settings:
        """Settings from flat keys, e.g. ``Settings.from_flat(agents=[...], store="memory://",
        port=9000, llm_provider="scripted")``; ``None`` means "the default".

        Values are checked like those of any other source (types, bounds), but not
        against each other (that is :func:`load_settings`'s job).
        """
        from a2a_hub.settings.fields import assemble, field_for_key

        chosen = {}
        for key, value in values.items():
            if value is not None:
                field = field_for_key(key)
                chosen[field] = field.parse(value, key)
        return assemble(chosen)
