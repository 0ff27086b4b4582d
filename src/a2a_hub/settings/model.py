"""The settings object: every setting once, with its type, default and help.

A setting is a field of a section (or of :class:`Settings` itself, like ``agents``),
annotated with :func:`~a2a_hub.settings.fields.setting`.  Its flat key, ``A2A_HUB_*``
variable and ``a2a-hub serve`` option are derived from the field (see
:mod:`a2a_hub.settings.fields`); :func:`setting_fields` is the flat list of them all.
"""

from __future__ import annotations

import functools
import shlex
from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl

import msgspec

from a2a_hub.protocol.types import AgentExtension
from a2a_hub.settings.fields import (
    Section,
    SettingField,
    SettingsError,
    fields_of,
    setting,
)
from a2a_hub.settings.limits import LIMITS_HELP, LimitSpec

__all__ = [
    "DEFAULT_STORE",
    "AgentSpec",
    "AuthSettings",
    "LLMSettings",
    "LogLevel",
    "MCPServerSpec",
    "PushSettings",
    "ServerSettings",
    "Settings",
    "StoreSettings",
    "assemble",
    "field_for_key",
    "parse_agent_spec",
    "section_types",
    "setting_fields",
]

DEFAULT_STORE = "sqlite:///.a2a-hub/hub.db"

LogLevel = Literal["debug", "info", "warning", "error", "critical"]


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
    app_dir: Annotated[
        str,
        setting(
            "Folder searched first for the modules of 'module:Class' agents (relative to the "
            "current directory), as uvicorn's --app-dir.",
            metavar="DIR",
        ),
    ] = "."
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
    long_poll_timeout: Annotated[
        float,
        setting(
            "Seconds an A2A 1.1 GetTask with currentGeneration waits for the task to move on "
            "before it answers the task as it is (preview).",
            gt=0,
            metavar="SECONDS",
        ),
    ] = 30.0
    # (msgspec puts the bounds of an optional number on the number itself)
    grpc_port: Annotated[
        Annotated[int, msgspec.Meta(ge=0, le=65535)] | None,
        setting(
            "Also serve A2A 1.0 over gRPC on this port (needs a2a-hub[grpc]).",
            metavar="PORT",
        ),
    ] = None
    card_v03_fields: Annotated[
        bool,
        setting("Keep the 0.3 top-level fields in the 1.0 card (0.3 clients need them)."),
    ] = True
    metrics: Annotated[bool, setting("Serve Prometheus metrics at /metrics and record them.")] = (
        True
    )
    ui: Annotated[
        bool, setting("Serve the web console at /ui (agents, tasks, operations, inspector).")
    ] = True
    access_log: Annotated[
        Literal["off", "plain", "json"],
        setting(
            "Access log: off, plain lines or JSON lines (logger a2a_hub.access).", metavar="FORMAT"
        ),
    ] = "off"
    log_format: Annotated[
        Literal["plain", "json"],
        setting("Application logs as plain text or JSON lines.", metavar="FORMAT"),
    ] = "plain"
    tracing: Annotated[
        Literal["off", "otlp", "console", "api"],
        setting(
            "OpenTelemetry spans (a2a-hub[otel]): off, otlp, console, or api (your provider).",
            metavar="MODE",
        ),
    ] = "off"
    graceful_timeout: Annotated[
        float,
        setting(
            "On SIGTERM/SIGINT, seconds running requests and tasks get to finish before "
            "they are failed with 'the instance shut down'.",
            ge=0,
            metavar="SECONDS",
        ),
    ] = 30.0
    header_timeout: Annotated[
        float,
        setting(
            "Seconds a connection gets to send a request's headers (from its opening or the "
            "request's first byte); then it is closed.",
            gt=0,
            metavar="SECONDS",
        ),
    ] = 10.0
    trusted_hosts: Annotated[
        list[str],
        setting(
            "Host headers served, others get 400 (repeatable; '*.example.com', '*'); "
            "default: bind address, localhost, --public-url's host.",
            metavar="HOST",
        ),
    ] = msgspec.field(default_factory=list)
    outbound_allow_hosts: Annotated[
        list[str],
        setting(
            "Hosts or CIDRs the hub may call although local or private (push webhooks, "
            "remote agents, MCP over HTTP, card fetches and redirects; repeatable).",
            metavar="HOST",
        ),
    ] = msgspec.field(default_factory=list)
    cors_origins: Annotated[
        list[str],
        setting(
            "Web origins a browser may call from (CORS; repeatable; '*': any); "
            "other sites' POSTs and WebSockets get 403.",
            metavar="ORIGIN",
        ),
    ] = msgspec.field(default_factory=list)
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
    ws_max_streams: Annotated[
        int,
        setting(
            "Streams one WebSocket of the JSON-RPC subprotocol (a2a.jsonrpc.v1) may have open.",
            ge=1,
            metavar="N",
        ),
    ] = 32
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
    executor: Annotated[
        str,
        setting(
            "Where agents run: 'inprocess', or 'temporal://HOST:PORT?namespace=NS&task_queue=Q' "
            "(an API node: 'a2a-hub worker' runs them; a2a-hub[temporal]).",
            metavar="URL",
        ),
    ] = "inprocess"


class StoreSettings(Section):
    """Where tasks live."""

    title = "Store"

    url: Annotated[
        str,
        setting(
            "Task store URL: sqlite:///REL/PATH, sqlite:////ABS/PATH, memory://, "
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
    task_ttl: Annotated[
        float,
        setting(
            "Seconds after which finished tasks (with their events and push configs) are "
            "removed, in small batches every minute; 0 keeps them forever.",
            ge=0,
            metavar="SECONDS",
        ),
    ] = 7 * 86400.0


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
        str | None,
        setting("Model name.", metavar="MODEL", shown_default="the provider's own"),
    ] = None
    models: Annotated[
        list[str],
        setting(
            "More models of the same provider that the hub's LLM endpoint (/llm/v1) serves by "
            "name (repeatable); any other name gets the default model.",
            metavar="MODEL",
        ),
    ] = msgspec.field(default_factory=list)
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

    allow_hosts: Annotated[
        str,
        setting(
            "Older name of outbound_allow_hosts (joined to it); webhooks to these hosts "
            "may use http too.",
            metavar="HOSTS",
        ),
    ] = ""
    retry_steps: Annotated[
        str,
        setting(
            "Waits before the first retries of a notification; then doubling, ±20 %.",
            metavar="SECONDS",
        ),
    ] = "5,30,120,600,1800"
    retry_horizon: Annotated[
        float,
        setting(
            "Seconds after its first failure a notification is given up (kept as dead).",
            ge=0,
            metavar="SECONDS",
        ),
    ] = 86400.0
    claim_lease: Annotated[
        float,
        setting(
            "Seconds a claimed notification is held before another instance may send it.",
            gt=0,
            metavar="SECONDS",
        ),
    ] = 60.0
    concurrency: Annotated[
        int,
        setting(
            "Notifications an instance sends at once (fewer: requests get more of the CPU "
            "under load, notifications wait longer).",
            ge=1,
            metavar="N",
        ),
    ] = 128
    busy_concurrency: Annotated[
        int,
        setting(
            "Notifications an instance sends at once while it is busy serving requests "
            "(its event loop lagging over 2 ms): background sends yield to requests.",
            ge=1,
            metavar="N",
        ),
    ] = 8


class AuthSettings(Section):
    """Authentication (``[auth]``, ``A2A_HUB_AUTH_*``, ``--auth-*``)."""

    key_prefix = "auth_"
    title = "Authentication"

    registry: Annotated[
        str | None,
        setting(
            "Registry of API keys and agents: sqlite:///PATH or postgresql://… "
            "(default: the store's database if SQL).",
            key="registry",
            metavar="URL",
        ),
    ] = None
    require_keys: Annotated[
        bool,
        setting("Every agent requires an API key (as if each had auth = 'api-key')."),
    ] = False
    secret: Annotated[
        str | None,
        setting(
            "Server secret keying the hashes of API keys (HMAC-SHA-256); when unset one is "
            "generated once and kept in the registry.  Not a command-line option.",
            cli=False,
        ),
    ] = None
    cache_seconds: Annotated[
        float,
        setting(
            "Seconds a looked-up API key is cached (a revoked key stops within this).",
            ge=0,
            metavar="SECONDS",
        ),
    ] = 1.0
    admin_allow_commands: Annotated[
        list[str],
        setting(
            "Commands the admin API may name for MCP stdio servers (inline ones of agents "
            "too); none by default: an admin key is not a shell on the host.",
            key="admin_allow_commands",
            metavar="COMMAND",
        ),
    ] = msgspec.field(default_factory=list)
    admin_allow_modules: Annotated[
        list[str],
        setting(
            "Modules (or packages, 'pkg.*' for all below) whose classes the admin API may "
            "name as executors of 'python' agents; none by default.",
            key="admin_allow_modules",
            metavar="MODULE",
        ),
    ] = msgspec.field(default_factory=list)
    conversation_retention: Annotated[
        float,
        setting(
            "Days after which a conversation nobody continued is deleted (0: keep forever).",
            key="conversation_retention",
            ge=0,
            metavar="DAYS",
        ),
    ] = 0.0
    oidc_issuer: Annotated[
        str | None,
        setting(
            "OpenID Connect issuer whose bearer tokens agents with auth = 'oidc' accept "
            "(https, or http on a loopback host).",
            metavar="URL",
        ),
    ] = None
    oidc_audience: Annotated[
        str | None,
        setting("The audience (aud) the tokens must be issued for.", metavar="AUDIENCE"),
    ] = None
    oidc_jwks_url: Annotated[
        str | None,
        setting(
            "The issuer's JWKS URL (default: jwks_uri of its /.well-known/openid-configuration).",
            metavar="URL",
        ),
    ] = None
    oidc_scopes: Annotated[
        str,
        setting(
            "Token scopes granting the hub's key scopes: invoke=NAME,read-all=NAME,admin=NAME "
            "(a token with none of them invokes, like a key with no scopes).",
            metavar="MAP",
        ),
    ] = "invoke=invoke,read-all=read-all,admin=admin"
    oidc_leeway: Annotated[
        float,
        setting(
            "Seconds of clock skew allowed for a token's exp and nbf.", ge=0, metavar="SECONDS"
        ),
    ] = 30.0


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
    #: ``"api-key"``: every request needs an API key opening this agent; ``"oidc"``: a
    #: bearer token of ``auth.oidc_issuer``; ``"api-key|oidc"``: either; ``None``: open
    #: (unless ``auth.require_keys``).
    auth: Literal["api-key", "oidc", "api-key|oidc"] | None = None
    #: Skills (A2A ``AgentSkill`` objects) shown only on the extended card, to
    #: authenticated callers; ``None``: no extended card (``GetExtendedAgentCard`` -32007).
    extended_skills: list[dict[str, Any]] | None = None
    options: dict[str, Any] = msgspec.field(default_factory=dict)
    #: Extensions for the card (``[[agents.extensions]]``: uri, description, required, params).
    extensions: list[AgentExtension] = msgspec.field(default_factory=list)
    #: With a ``temporal://`` executor: the Temporal task queue of this agent's turns (only
    #: the workers hosting it poll it; ``None``: the executor URL's ``task_queue``).
    task_queue: str | None = None
    #: With a ``temporal://`` executor: how many times a turn whose worker was lost is run
    #: again on another worker (0: never; the task fails saying the worker was lost).
    retry_on_worker_loss: int = 0
    #: With a ``temporal://`` executor: seconds an input-required or auth-required task
    #: waits for its next message before it fails (``None``: for ever).
    input_timeout: float | None = None

    @classmethod
    def parse(cls, text: str) -> AgentSpec:
        """The spec written as on the command line (see :func:`parse_agent_spec`)."""
        return parse_agent_spec(text)


#: The values of an agent's ``auth``.
AGENT_AUTH = (None, "api-key", "oidc", "api-key|oidc")


def _options(text: str, query: str) -> dict[str, Any]:
    """The options after ``?``: a JSON object, or a query string."""
    if not query.lstrip().startswith("{"):
        return dict(parse_qsl(query, keep_blank_values=True))
    try:
        found = msgspec.json.decode(query)
    except msgspec.DecodeError as exc:
        raise SettingsError(
            f"--agent {text!r}: the options are not a JSON object ({exc})"
        ) from None
    if not isinstance(found, dict):
        raise SettingsError(f"--agent {text!r}: the options must be a JSON object")
    return found


def parse_agent_spec(text: str) -> AgentSpec:
    """Parse ``[ID=]KIND_OR_IMPORT_PATH[?option=value&…]``.

    ``echo`` → the echo agent at ``/a2a/echo``; ``bot=pkg.mod:Bot`` → the
    executor class ``Bot`` at ``/a2a/bot``; ``pkg.mod:Bot`` alone gets the id
    ``bot``; ``echo?reply=message`` passes options; ``auth=api-key`` among them is the
    spec's :attr:`AgentSpec.auth` (the agent requires API keys), not an executor option.
    Options are a query string (``%2C`` is a comma, ``%26`` an ampersand, ``+`` a space)
    or a JSON object (``bot=llm?{"instruction": "Be brief, & polite."}``), whose values
    are kept as they are.
    """
    spec, _, query = text.partition("?")
    agent_id, eq, target = spec.partition("=")
    if not eq:
        agent_id, target = "", spec
    target = target.strip()
    if not target:
        raise SettingsError(f"--agent {text!r}: say which agent, e.g. 'echo' or 'mymod:MyExecutor'")
    options = _options(text, query)
    auth = options.pop("auth", None)
    if auth not in AGENT_AUTH:
        raise SettingsError(
            f"--agent {text!r}: auth must be 'api-key', 'oidc' or 'api-key|oidc', not {auth!r}"
        )
    placement: dict[str, Any] = {}
    try:  # where the agent's turns run (a temporal:// executor), not executor options
        if "task_queue" in options:
            placement["task_queue"] = options.pop("task_queue") or None
        if "retry_on_worker_loss" in options:
            placement["retry_on_worker_loss"] = int(options.pop("retry_on_worker_loss"))
        if "input_timeout" in options:
            placement["input_timeout"] = float(options.pop("input_timeout"))
    except ValueError as exc:
        raise SettingsError(f"--agent {text!r}: {exc}") from None
    if ":" in target:
        kind, executor = "python", target
        agent_id = agent_id or target.rsplit(":", 1)[1].lower()
    else:
        kind, executor = target, None
        agent_id = agent_id or target
    return AgentSpec(
        id=agent_id.strip(),
        kind=kind,
        executor=executor,
        auth=auth,
        options=options,
        **placement,
    )


class MCPServerSpec(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """An MCP server whose tools ``llm`` agents may use (``[[mcp_servers]]`` in hub.toml).

    ``transport`` is ``stdio`` (``command`` and ``args`` start it, ``python`` meaning the
    Python that runs the hub, with its ``PYTHONPATH``; the process gets only the MCP SDK's
    few safe environment variables plus ``env``; ``cwd`` optional) or ``http`` (streamable
    HTTP at ``url``, with ``headers``).  ``timeout`` is
    the limit of one tool call in seconds, ``connect_timeout`` that of connecting.
    """

    name: str
    transport: str = "stdio"
    command: str | None = None
    args: list[str] = msgspec.field(default_factory=list)
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    timeout: float = 30.0
    connect_timeout: float = 30.0

    @classmethod
    def inline(cls, value: str, *, name: str | None = None) -> MCPServerSpec:
        """A server written on one line: ``http(s)://…`` or ``stdio:<command line>``,
        named ``name`` (by default the line itself)."""
        if value.startswith(("http://", "https://")):
            return cls(name=name or value, transport="http", url=value)
        if value.startswith("stdio:"):
            words = shlex.split(value.removeprefix("stdio:"))
            if not words:
                raise SettingsError(f"MCP server {value!r} names no command")
            return cls(name=name or value, transport="stdio", command=words[0], args=words[1:])
        raise SettingsError(
            f"MCP server {value!r}: write 'http(s)://host/mcp' or 'stdio:command args'"
        )

    @classmethod
    def parse(cls, text: str) -> MCPServerSpec:
        """``NAME=http(s)://…`` or ``NAME=stdio:<command line>`` (``A2A_HUB_MCP_SERVERS``)."""
        name, eq, value = text.partition("=")
        if not eq or not name.strip() or not value.strip():
            raise SettingsError(
                f"MCP server {text!r}: write 'NAME=http(s)://host/mcp' or 'NAME=stdio:command args'"
            )
        return cls.inline(value.strip(), name=name.strip())

    def problem(self) -> str | None:
        """What is wrong with this definition (one sentence), or ``None``."""
        where = f"MCP server {self.name!r}"
        if self.transport == "stdio":
            if not self.command:
                return f"{where}: transport 'stdio' needs command (and args)"
        elif self.transport == "http":
            if not self.url or not self.url.startswith(("http://", "https://")):
                return f"{where}: transport 'http' needs url = 'http(s)://…'"
        else:
            return f"{where}: transport must be 'stdio' or 'http', not {self.transport!r}"
        if self.timeout <= 0 or self.connect_timeout <= 0:
            return f"{where}: timeout and connect_timeout must be positive numbers of seconds"
        return None


MCP_SERVERS_HELP = (
    "MCP servers whose tools llm agents may use (agent option mcp_servers names them): "
    "[[mcp_servers]] tables in hub.toml (name, transport = stdio|http, command, args, env, "
    "cwd, url, headers, timeout, connect_timeout), or NAME=http(s)://HOST/mcp and "
    "NAME=stdio:COMMAND ARGS separated by commas."
)


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
    mcp_servers: Annotated[list[MCPServerSpec], setting(MCP_SERVERS_HELP, cli=False)] = (
        msgspec.field(default_factory=list)
    )
    server: ServerSettings = msgspec.field(default_factory=ServerSettings)
    store: StoreSettings = msgspec.field(default_factory=StoreSettings)
    llm: LLMSettings = msgspec.field(default_factory=LLMSettings)
    push: PushSettings = msgspec.field(default_factory=PushSettings)
    auth: AuthSettings = msgspec.field(default_factory=AuthSettings)
    limits: Annotated[list[LimitSpec], setting(LIMITS_HELP, cli=False)] = msgspec.field(
        default_factory=list
    )

    @classmethod
    def from_flat(cls, **values: Any) -> Settings:
        """Settings from flat keys, e.g. ``Settings.from_flat(agents=[...], store="memory://",
        port=9000, llm_provider="scripted")``; ``None`` means "the default".

        Values are checked like those of any other source (types, bounds), but not
        against each other (that is :func:`load_settings`'s job).
        """
        chosen = {}
        for key, value in values.items():
            if value is not None:
                field = field_for_key(key)
                chosen[field] = field.parse(value, key)
        return assemble(chosen)


def section_types() -> dict[str, type[Section]]:
    """The sections of :class:`Settings` by attribute name (``server``, ``store``, ``llm``…)."""
    out: dict[str, type[Section]] = {}
    for info in msgspec.structs.fields(Settings):
        if isinstance(info.type, type) and issubclass(info.type, Section):
            out[info.name] = info.type
    return out


@functools.cache
def setting_fields() -> tuple[SettingField, ...]:
    """Every setting, those of Settings itself first, then section by section."""
    fields = fields_of(Settings, None, "", Section.title)
    for name, section in section_types().items():
        fields += fields_of(section, name, section.key_prefix, section.title)
    for attr in ("key", "env", "flag"):
        seen: dict[object, str] = {}
        for field in fields:
            value = getattr(field, attr)
            if value is not None and value in seen:
                raise TypeError(f"settings {seen[value]} and {field.path} share the {attr} {value}")
            seen[value] = field.path
    return tuple(fields)


def field_for_key(key: str) -> SettingField:
    """The setting with that flat key (``port``, ``store``, ``llm_model``)."""
    for field in setting_fields():
        if field.key == key:
            return field
    raise SettingsError(f"unknown setting {key!r}")


def assemble(values: dict[SettingField, Any]) -> Settings:
    """Settings holding ``values`` (already checked) and the defaults for the rest."""
    tree: dict[str, Any] = {}
    for field, value in values.items():
        if field.section is None:
            tree[field.name] = value
        else:
            tree.setdefault(field.section, {})[field.name] = value
    return msgspec.convert(tree, Settings)
