"""Group commit for Redis: the script calls waiting at the same moment go out together.

Every ``save_task`` and ``claim_message`` queues its script call; one drainer sends
everything queued as one pipeline (no MULTI: each script is atomic by itself), so a
busy hub pays one round trip and one connection checkout per batch instead of one per
call.  Each caller gets its own script's result or error; a script the server forgot
(a restart or failover) is loaded and its calls sent again.  While a batch is on its
way, the next one gathers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import redis.asyncio as aioredis
from redis import exceptions as redis_exc

from a2a_hub.stores.redis.scripts import LuaScript

__all__ = ["ScriptBatch"]


class _Call(NamedTuple):
    script: LuaScript
    keys: Sequence[str]
    args: Sequence[str | bytes | int]
    future: asyncio.Future[Any]


class ScriptBatch:
    """Batches of script calls, one pipeline each (see the module docstring)."""

    def __init__(self, client: Callable[[], aioredis.Redis]) -> None:
        self._client = client
        self._pending: list[_Call] = []
        self._drainer: asyncio.Task[None] | None = None

    async def call(
        self, script: LuaScript, keys: Sequence[str], args: Sequence[str | bytes | int]
    ) -> Any:
        """Run ``script`` in the next batch; its result (or its error, raised here)."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append(_Call(script, keys, args, future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.ensure_future(self._drain())
        return await future

    async def _drain(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                results = await self._send(batch)
                missing = [c for c, r in zip(batch, results, strict=True) if _no_script(r)]
                if missing:  # the server forgot scripts: load them, send those calls again
                    client = self._client()
                    for script in {c.script.sha: c.script for c in missing}.values():
                        await client.script_load(script.source)
                    again = dict(zip(map(id, missing), await self._send(missing), strict=True))
                    results = [again.get(id(c), r) for c, r in zip(batch, results, strict=True)]
            except BaseException as exc:  # the pipeline failed as a whole
                for call in batch:
                    if not call.future.done():
                        call.future.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise
                continue
            for call, result in zip(batch, results, strict=True):
                if call.future.done():  # its caller was cancelled meanwhile
                    continue
                if isinstance(result, Exception):
                    call.future.set_exception(result)
                else:
                    call.future.set_result(result)

    async def _send(self, calls: Sequence[_Call]) -> list[Any]:
        async with self._client().pipeline(transaction=False) as pipe:
            for call in calls:
                pipe.evalsha(call.script.sha, len(call.keys), *call.keys, *call.args)
            return list(await pipe.execute(raise_on_error=False))

    async def close(self) -> None:
        """Finish what is queued."""
        if self._drainer is not None:
            await asyncio.gather(self._drainer, return_exceptions=True)


def _no_script(result: Any) -> bool:
    return isinstance(result, redis_exc.NoScriptError)
