"""Operating push notifications: ``push dead list|requeue``, ``keys rotate-signing``
(on the store the hub uses) and ``webhook listen`` (a development receiver)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from a2a_hub.cli._options import Command, Group
from a2a_hub.cli._output import console, escape, fail, print_json

if TYPE_CHECKING:
    from a2a_hub.stores.base import Store

__all__ = ["push_app", "rotate_signing", "webhook_app"]

push_app = typer.Typer(cls=Group, help="Push notification deliveries.", no_args_is_help=True)
dead_app = typer.Typer(
    cls=Group, help="Deliveries that gave up retrying (kept in the store).", no_args_is_help=True
)
push_app.add_typer(dead_app, name="dead")
webhook_app = typer.Typer(cls=Group, help="Receive push notifications.", no_args_is_help=True)

StoreUrl = Annotated[
    str | None,
    typer.Option(
        "--store",
        metavar="URL",
        help="The hub's store URL (default: A2A_HUB_STORE, else --config, else the default).",
    ),
]
Config = Annotated[
    Path | None, typer.Option("--config", "-c", metavar="FILE", help="The hub's hub.toml.")
]


def _with_store(
    store_url: str | None, config: Path | None, use: Callable[[Store], Awaitable[None]]
) -> None:
    from a2a_hub.protocol.errors import A2AError
    from a2a_hub.settings import SettingsError, load_settings
    from a2a_hub.stores import open_store

    try:
        settings = load_settings(config, overrides={"store": store_url})
        store = open_store(settings.store.url)
    except (SettingsError, ValueError, ImportError) as exc:
        fail(str(exc), 2)

    async def work() -> None:
        await store.open()
        try:
            await use(store)
        finally:
            await store.close()

    try:
        asyncio.run(work())
    except A2AError as exc:
        fail(exc.message, 1)


@dead_app.command("list", cls=Command)
def dead_list(
    store: StoreUrl = None,
    config: Config = None,
    as_json: Annotated[bool, typer.Option("--json", metavar="", help="Print JSON.")] = False,
) -> None:
    """List dead deliveries."""

    async def use(s: Store) -> None:
        dead = await s.dead_deliveries()
        if as_json:
            print_json([{"id": d.id, **_fields(d)} for d in dead])
            return
        if not dead:
            console.print("no dead deliveries")
        for d in dead:
            what = "snapshot" if d.snapshot else f"event {d.seq}"
            console.print(
                f"{d.id}  {escape(d.agent_id)}/{escape(d.task_id)} config "
                f"{escape(d.config_id)} {what}: {d.attempts} attempts, {escape(d.last_error)}"
            )

    _with_store(store, config, use)


def _fields(d: Any) -> dict[str, Any]:
    import msgspec

    out: dict[str, Any] = msgspec.to_builtins(d)
    return out


@dead_app.command("requeue", cls=Command)
def dead_requeue(
    ids: Annotated[
        list[str] | None,
        typer.Argument(metavar="[ID]...", help="Delivery ids (default: every dead one)."),
    ] = None,
    store: StoreUrl = None,
    config: Config = None,
) -> None:
    """Queue dead deliveries again (a running hub sends them)."""

    async def use(s: Store) -> None:
        count = await s.requeue_deliveries(ids or None)
        console.print(f"requeued {count} deliveries")

    _with_store(store, config, use)


def rotate_signing(store: StoreUrl = None, config: Config = None) -> None:
    """Start a new push signing key; the old one stays in the JWKS for a day."""
    from a2a_hub.push.signing import SigningKeys

    async def use(s: Store) -> None:
        keys = SigningKeys(s)
        await keys.refresh()
        key = await keys.rotate()
        console.print(f"new signing key {key.kid}; {len(keys.jwks()['keys'])} keys published")

    _with_store(store, config, use)


@webhook_app.command("listen", cls=Command)
def listen(
    port: Annotated[int, typer.Option(metavar="PORT", help="Port to listen on.")] = 9000,
    host: Annotated[str, typer.Option(metavar="HOST", help="Address to bind.")] = "127.0.0.1",
    jwks: Annotated[
        str | None,
        typer.Option(
            metavar="URL", help="The hub's JWKS URL: verify each notification's signature."
        ),
    ] = None,
    token: Annotated[
        str | None, typer.Option(metavar="TOKEN", help="The token the config was given.")
    ] = None,
    audience: Annotated[
        str | None,
        typer.Option(
            metavar="URL",
            help="This receiver's URL as registered (default: http://HOST:PORT/ + the path).",
        ),
    ] = None,
) -> None:
    """A development webhook: prints each notification (verified with --jwks)."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from a2a_hub.push import NotificationError, verify

    async def receive(request: Request) -> Response:
        body = await request.body()
        headers = dict(request.headers)
        seq = headers.get("x-a2a-event-seq", "?")
        ident = headers.get("x-a2a-notification-id", "?")
        if jwks is not None:
            aud = audience or str(request.url)
            try:
                await verify(body, headers, audience=aud, jwks_url=jwks, token=token)
            except NotificationError as exc:
                console.print(f"[red]REFUSED[/red] {escape(ident)}: {escape(str(exc))}")
                return Response(status_code=401)
            status = "[green]verified[/green]"
        else:
            status = "[yellow]not verified[/yellow] (no --jwks)"
        console.print(f"notification {escape(ident)} seq {seq} {status}")
        console.print(escape(body.decode(errors="replace")))
        return Response(status_code=200)

    app = Starlette(routes=[Route("/{path:path}", receive, methods=["POST"])])
    console.print(f"listening on http://{host}:{port}/ (any path)")
    uvicorn.run(app, host=host, port=port, log_level="warning")
