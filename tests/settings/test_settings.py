"""Settings: one list of fields read from hub.toml, A2A_HUB_* variables and the command line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from a2a_hub import AgentSpec, Hub, create_app
from a2a_hub.llm import default_settings, get_provider, set_default_settings
from a2a_hub.llm.scripted import ScriptedProvider
from a2a_hub.settings import (
    DEFAULT_STORE,
    LLMSettings,
    MCPServerSpec,
    Settings,
    SettingsError,
    load_settings,
    setting_fields,
)
from a2a_hub.stores.memory import MemoryStore

# Every variable the README, the docs and earlier releases promise, with a value and where
# it lands.  A renamed field must keep its variable.
DOCUMENTED_ENV: list[tuple[str, str, Any]] = [
    ("A2A_HUB_HOST", "0.0.0.0", ("server", "host", "0.0.0.0")),
    ("A2A_HUB_PORT", "9123", ("server", "port", 9123)),
    ("A2A_HUB_PUBLIC_URL", "https://hub.example", ("server", "public_url", "https://hub.example")),
    ("A2A_HUB_DEFAULT_AGENT", "echo", ("server", "default_agent", "echo")),
    ("A2A_HUB_WORKERS", "3", ("server", "workers", 3)),
    ("A2A_HUB_LOG_LEVEL", "WARNING", ("server", "log_level", "warning")),
    ("A2A_HUB_APP_DIR", "src", ("server", "app_dir", "src")),
    ("A2A_HUB_MAX_BODY_BYTES", "4096", ("server", "max_body_bytes", 4096)),
    ("A2A_HUB_SSE_HEARTBEAT", "2.5", ("server", "sse_heartbeat", 2.5)),
    ("A2A_HUB_GRPC_PORT", "50051", ("server", "grpc_port", 50051)),
    ("A2A_HUB_CARD_V03_FIELDS", "false", ("server", "card_v03_fields", False)),
    ("A2A_HUB_STORE", "redis://127.0.0.1:6379/0", ("store", "url", "redis://127.0.0.1:6379/0")),
    ("A2A_HUB_ORPHAN_TIMEOUT", "7", ("store", "orphan_timeout", 7.0)),
    ("A2A_HUB_LLM_PROVIDER", "openai", ("llm", "provider", "openai")),
    ("A2A_HUB_LLM_MODEL", "gpt-4o-mini", ("llm", "model", "gpt-4o-mini")),
    ("A2A_HUB_LLM_BASE_URL", "http://x.test/v1", ("llm", "base_url", "http://x.test/v1")),
    ("A2A_HUB_LLM_API_KEY", "sk-1", ("llm", "api_key", "sk-1")),
]


@pytest.fixture(autouse=True)
def _keep_llm_defaults() -> Iterator[None]:
    saved = default_settings()
    yield
    set_default_settings(saved)


def test_every_documented_variable_is_read() -> None:
    env = {name: text for name, text, _ in DOCUMENTED_ENV}
    env["A2A_HUB_AGENTS"] = "echo,bot=tests.support.agents:PizzaExecutor"
    settings = load_settings(env=env)
    for name, _, (section, attr, expected) in DOCUMENTED_ENV:
        assert getattr(getattr(settings, section), attr) == expected, name
    assert [(a.id, a.kind, a.executor) for a in settings.agents] == [
        ("echo", "echo", None),
        ("bot", "python", "tests.support.agents:PizzaExecutor"),
    ]


def test_empty_variables_are_unset_and_the_defaults_hold() -> None:
    settings = load_settings(env={"A2A_HUB_PORT": "", "A2A_HUB_STORE": "  "})
    assert settings == Settings()
    assert (settings.server.port, settings.store.url) == (8000, DEFAULT_STORE)
    assert (settings.llm.provider, settings.llm.model) == ("embedded", None)


def test_openai_api_key_is_only_a_fallback(tmp_path: Path) -> None:
    assert load_settings(env={"OPENAI_API_KEY": "sk-o"}).llm.api_key == "sk-o"
    both = {"OPENAI_API_KEY": "sk-o", "A2A_HUB_LLM_API_KEY": "sk-hub"}
    assert load_settings(env=both).llm.api_key == "sk-hub"
    config = tmp_path / "hub.toml"
    config.write_text('[llm]\napi_key = "sk-file"\n')
    assert load_settings(config, env={"OPENAI_API_KEY": "sk-o"}).llm.api_key == "sk-file"


def test_readme_flat_hub_toml_still_loads(tmp_path: Path) -> None:
    config = tmp_path / "hub.toml"
    config.write_text(
        'store = "sqlite:///var/lib/a2a-hub/hub.db"\n'
        'default_agent = "helper"\n'
        "port = 9000\n"
        'llm_provider = "scripted"\n'
        "[[agents]]\n"
        'id = "helper"\nkind = "python"\nexecutor = "mypackage.agents:Helper"\n'
        'name = "Helper"\ndescription = "Answers questions about our product."\n'
        '[[agents]]\nid = "echo"\nkind = "echo"\n[agents.options]\nreply = "message"\n'
    )
    settings = load_settings(config, env={})
    assert settings.store.url == "sqlite:///var/lib/a2a-hub/hub.db"
    assert settings.server.default_agent == "helper"
    assert settings.server.port == 9000
    assert settings.llm.provider == "scripted"
    assert [a.id for a in settings.agents] == ["helper", "echo"]
    assert settings.agents[0].description == "Answers questions about our product."
    assert settings.agents[1].options == {"reply": "message"}


def test_sectioned_hub_toml(tmp_path: Path) -> None:
    config = tmp_path / "hub.toml"
    config.write_text(
        '[server]\nport = 9001\nlog_level = "DEBUG"\ndefault_agent = "echo"\n'
        '[store]\nurl = "memory://"\norphan_timeout = 5\n'
        '[llm]\nprovider = "openai"\nbase_url = "http://x.test/v1"\n'
        '[[agents]]\nid = "echo"\n'
    )
    settings = load_settings(config, env={})
    assert (settings.server.port, settings.server.log_level) == (9001, "debug")
    assert (settings.store.url, settings.store.orphan_timeout) == ("memory://", 5.0)
    assert (settings.llm.provider, settings.llm.base_url) == ("openai", "http://x.test/v1")
    assert settings.agents == [AgentSpec(id="echo")]


def test_file_then_environment_then_command_line(tmp_path: Path) -> None:
    config = tmp_path / "hub.toml"
    config.write_text('port = 1111\nhost = "file"\nstore = "memory://"\n[llm]\nmodel = "file"\n')
    env = {"A2A_HUB_PORT": "2222", "A2A_HUB_HOST": "env", "A2A_HUB_CONFIG": str(config)}
    settings = load_settings(env=env, overrides={"port": "3333", "host": None})
    assert settings.server.port == 3333  # command line over environment
    assert settings.server.host == "env"  # environment over file
    assert settings.store.url == "memory://"  # the file, named by A2A_HUB_CONFIG
    assert settings.llm.model == "file"
    # agents from the command line replace those of the environment
    env["A2A_HUB_AGENTS"] = "echo"
    settings = load_settings(env=env, overrides={"agents": ["a=echo", "b=echo?reply=message"]})
    assert [a.id for a in settings.agents] == ["a", "b"]
    assert settings.agents[1].options == {"reply": "message"}


@pytest.mark.parametrize(
    ("env", "overrides", "message"),
    [
        ({"A2A_HUB_PORT": "x"}, {}, "A2A_HUB_PORT must be a whole number from 1 to 65535; got 'x'"),
        ({}, {"port": "70000"}, "--port must be a whole number from 1 to 65535; got '70000'"),
        ({}, {"port": 0}, "--port must be a whole number from 1 to 65535; got 0"),
        (
            {},
            {"log_level": "loud"},
            "--log-level must be one of debug, info, warning, error, critical; got 'loud'",
        ),
        ({"A2A_HUB_WORKERS": "0"}, {}, "A2A_HUB_WORKERS must be a whole number of at least 1"),
        ({}, {"sse_heartbeat": "0"}, "--sse-heartbeat must be a number greater than 0"),
        ({}, {"orphan_timeout": "0.5"}, "--orphan-timeout must be a number of at least 1"),
        ({}, {"max_body_bytes": "10"}, "--max-body-bytes must be a whole number of at least 1024"),
        (
            {},
            {"agents": ["echo"], "workers": "2", "store": "memory://"},
            "--workers 2 needs a store the workers can share",
        ),
        (
            {},
            {"agents": ["echo"], "default_agent": "nope"},
            "default agent 'nope' is not one of the agents: echo",
        ),
        ({}, {"agents": ["a=echo", "a=echo"]}, "agent id 'a' is used twice"),
        ({}, {"agents": ["a=", "b"]}, "--agent 'a=': say which agent"),
        ({}, {"nonsense": "1"}, "unknown setting 'nonsense'"),
    ],
)
def test_a_bad_value_is_one_sentence_naming_its_source(
    env: dict[str, str], overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(SettingsError) as info:
        load_settings(env=env, overrides=overrides)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("prot = 8000\n", "unknown setting prot (did you mean 'port'?)"),
        ("[server]\nprot = 8000\n", "unknown setting [server] prot (did you mean 'port'?)"),
        ('port = "eighty"\n', "port in {path} must be a whole number from 1 to 65535"),
        ("[store]\norphan_timeout = 0\n", "[store] orphan_timeout in {path} must be a number"),
        ("port = 1\n[server]\nport = 2\n", "server.port is set twice (port and [server] port)"),
        ('server = "x"\n', "server must be a table ([server])"),
        ('[[agents]]\nid = "a"\ncolour = "red"\n', "unknown field `colour`"),
        ("port = \n", "is not valid TOML"),
    ],
)
def test_a_bad_hub_toml_is_named(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "hub.toml"
    config.write_text(text)
    with pytest.raises(SettingsError) as info:
        load_settings(config, env={})
    assert message.format(path=config) in str(info.value)
    with pytest.raises(SettingsError, match="does not exist"):
        load_settings(tmp_path / "missing.toml", env={})


def test_from_flat_takes_the_keys_of_every_source() -> None:
    settings = Settings.from_flat(
        agents=[AgentSpec(id="a")],
        store="memory://",
        port=9000,
        max_body_bytes="2048",
        default_agent=None,
        llm_provider="scripted",
    )
    assert settings.agents == [AgentSpec(id="a")]
    assert (settings.store.url, settings.server.port) == ("memory://", 9000)
    assert settings.server.max_body_bytes == 2048
    assert settings.server.default_agent is None
    assert settings.llm.provider == "scripted"
    with pytest.raises(SettingsError, match="unknown setting 'prot'"):
        Settings.from_flat(prot=1)
    with pytest.raises(SettingsError, match="port must be a whole number from 1 to 65535"):
        Settings.from_flat(port=65536)


def test_each_field_has_one_key_variable_and_option() -> None:
    fields = setting_fields()
    by_path = {f.path: f for f in fields}
    # the names people already use come out of the fields
    assert (by_path["store.url"].env, by_path["store.url"].flag) == ("A2A_HUB_STORE", "--store")
    assert by_path["agents"].env == "A2A_HUB_AGENTS"
    assert (by_path["agents"].flag, by_path["agents"].short) == ("--agent", "-a")
    assert by_path["llm.model"].flag == "--llm-model"
    assert by_path["llm.api_key"].flag is None  # a secret stays off the command line
    assert all(f.help for f in fields)
    for attr in ("key", "env"):
        values = [getattr(f, attr) for f in fields]
        assert len(values) == len(set(values)), attr
    flags = [f.flag for f in fields if f.flag]
    assert len(flags) == len(set(flags))


def test_settings_survive_the_trip_to_worker_processes() -> None:
    settings = load_settings(
        env={"A2A_HUB_LLM_PROVIDER": "scripted"},
        overrides={"agents": ["echo?reply=message"], "port": "9009", "store": "redis://r"},
    )
    again = msgspec.json.decode(msgspec.json.encode(settings), type=Settings)
    assert again == settings


async def test_a_hub_passes_its_llm_settings_to_llm_agents() -> None:
    """An ``llm`` agent that names no provider uses the hub's ``llm`` section."""
    settings = Settings.from_flat(
        agents=[AgentSpec(id="helper", kind="llm")], store="memory://", llm_provider="scripted"
    )
    hub = Hub(settings, store=MemoryStore())
    assert default_settings() == LLMSettings(provider="scripted")
    assert isinstance(get_provider(), ScriptedProvider)
    await hub.start()
    try:
        transport = httpx.ASGITransport(app=create_app(hub))
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            message = {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hello"}]}
            reply = await http.post(
                "/a2a/helper",
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "SendMessage",
                    "params": {"message": message},
                },
                headers={"A2A-Version": "1.0"},
            )
    finally:
        await hub.close()
    task = reply.json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "[scripted]" in task["status"]["message"]["parts"][0]["text"]


def test_mcp_servers_from_hub_toml_the_environment_and_code(tmp_path: Path) -> None:
    config = tmp_path / "hub.toml"
    config.write_text(
        '[[mcp_servers]]\nname = "calc"\ncommand = "python"\nargs = ["tools.py"]\ntimeout = 5\n'
    )
    from_file = load_settings(config, env={})
    assert from_file.mcp_servers == [
        MCPServerSpec(
            name="calc", transport="stdio", command="python", args=["tools.py"], timeout=5
        )
    ]
    from_env = load_settings(
        env={"A2A_HUB_MCP_SERVERS": "calc=stdio:python tools.py --fast, web=https://x.test/mcp"}
    )
    assert [(s.name, s.transport, s.command, s.args, s.url) for s in from_env.mcp_servers] == [
        ("calc", "stdio", "python", ["tools.py", "--fast"], None),
        ("web", "http", None, [], "https://x.test/mcp"),
    ]
    # the environment wins over the file, as for every setting
    assert load_settings(config, env={"A2A_HUB_MCP_SERVERS": "w=http://h/mcp"}).mcp_servers == [
        MCPServerSpec(name="w", transport="http", url="http://h/mcp")
    ]
    in_code = Settings.from_flat(mcp_servers=from_env.mcp_servers)
    assert in_code.mcp_servers == from_env.mcp_servers
    again = msgspec.json.decode(msgspec.json.encode(from_env), type=Settings)
    assert again == from_env


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("calc", "write 'NAME=http"),
        ("calc=ftp://x", "write 'http"),
        ("calc=stdio:", "names no command"),
        ("a=http://h/mcp,a=http://i/mcp", "MCP server name 'a' is used twice"),
    ],
)
def test_bad_mcp_servers_in_the_environment_are_refused(text: str, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        load_settings(env={"A2A_HUB_MCP_SERVERS": text})


def test_tool_using_agents_follow_the_hubs_llm_provider() -> None:
    """Tools need a provider that can call them: the hub's ``llm`` section decides."""
    spec = AgentSpec(id="calc", kind="llm", options={"mcp_servers": "http://127.0.0.1:1/mcp"})
    Hub(Settings.from_flat(agents=[spec], store="memory://", llm_provider="scripted"))
    with pytest.raises(SettingsError, match="embedded cannot call tools"):
        Hub(Settings.from_flat(agents=[spec], store="memory://", llm_provider="embedded"))
