"""Push notification configs of an agent's tasks: checked, stored, read back masked.

The engine owns visibility (a caller who may not see a task gets "task not
found" for its configs too); this module holds the rules every config keeps:

* at most :data:`MAX_CONFIGS_PER_TASK` configs per task;
* no CR or LF in a value that becomes a header (token, scheme, credentials);
* a config without an id gets one (the 1.0 ``Create`` may omit it);
* what is read back never shows the credentials or the token in clear
  (:func:`masked`); the sender reads the store itself.

The webhook URL's safety (scheme, addresses) is the ``check_url`` hook the hub
gives the engine (:class:`a2a_hub.push.urls.WebhookPolicy`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec

from a2a_hub.engine.run import TaskRun
from a2a_hub.engine.state import new_id
from a2a_hub.protocol.errors import InvalidParamsError
from a2a_hub.protocol.types import AuthenticationInfo, TaskPushNotificationConfig
from a2a_hub.stores.base import Delivery, Store

__all__ = ["MASK", "MAX_CONFIGS_PER_TASK", "PushConfigs", "UrlCheck", "masked"]

MAX_CONFIGS_PER_TASK = 10
MASK = "********"

UrlCheck = Callable[[str], Awaitable[None]]


def masked(config: TaskPushNotificationConfig) -> TaskPushNotificationConfig:
    """The config as shown to clients: token and credentials replaced by a mask."""
    auth = config.authentication
    if auth is not None and auth.credentials is not None:
        auth = AuthenticationInfo(scheme=auth.scheme, credentials=MASK)
    token = None if config.token is None else MASK
    if auth is config.authentication and token == config.token and config.hub_protocol is None:
        return config
    return msgspec.structs.replace(config, token=token, authentication=auth, hub_protocol=None)


def _check_header_value(value: str | None, what: str) -> None:
    if value is not None and ("\r" in value or "\n" in value or "\0" in value):
        raise InvalidParamsError(f"push notification config {what} must not contain CR, LF or NUL")


def _as_stored(task_id: str, config: TaskPushNotificationConfig) -> TaskPushNotificationConfig:
    """``config`` as a task's stores it: with the task's id and an id of its own."""
    return msgspec.structs.replace(config, task_id=task_id, id=config.id or new_id())


class PushConfigs:
    """The push configs of one agent's tasks in ``store`` (visibility checked by the caller)."""

    def __init__(self, agent_id: str, store: Store, check_url: UrlCheck | None = None) -> None:
        self.agent_id = agent_id
        self.store = store
        #: Refuses unsafe webhook URLs (set by the hub from its push settings).
        self.check_url = check_url
        #: Told when deliveries were queued (the hub's dispatcher wakes up).
        self.on_queued: Callable[[], None] | None = None

    def queued(self) -> None:
        """Deliveries were queued in the store: wake the dispatcher, if there is one."""
        if self.on_queued is not None:
            self.on_queued()

    async def check(self, config: TaskPushNotificationConfig) -> None:
        """Refuse a config that may not be stored (-32602 naming the reason)."""
        if not config.url:
            raise InvalidParamsError("push notification config url is required")
        _check_header_value(config.token, "token")
        if config.authentication is not None:
            _check_header_value(config.authentication.scheme, "authentication.scheme")
            _check_header_value(config.authentication.credentials, "authentication.credentials")
            if not config.authentication.scheme.strip():
                raise InvalidParamsError("push notification authentication.scheme is empty")
        if config.id is not None:
            _check_header_value(config.id, "id")
        if self.check_url is not None:
            await self.check_url(config.url)

    async def set(
        self, task_id: str, config: TaskPushNotificationConfig
    ) -> TaskPushNotificationConfig:
        """Store ``config`` for the task (an existing id is replaced; checked by the caller
        with :meth:`check`); returns it as stored (with its id and task id)."""
        config = _as_stored(task_id, config)
        existing = await self.store.list_push_configs(self.agent_id, task_id)
        if len(existing) >= MAX_CONFIGS_PER_TASK and all(c.id != config.id for c in existing):
            raise InvalidParamsError(
                f"task {task_id} already has {len(existing)} push notification configs, the "
                f"most allowed ({MAX_CONFIGS_PER_TASK}); delete one first"
            )
        await self.store.set_push_config(self.agent_id, task_id, config)
        return config

    async def register_inline(self, run: TaskRun, config: TaskPushNotificationConfig) -> None:
        """A config given with ``SendMessage`` (checked by the caller with :meth:`check`).

        On a new task it is the first config (no count to check), stored in the task's
        first save (one write, not a save then a config; answers wait for that save), and
        every status change follows, so no snapshot is queued.  On a continued task it is
        a registration like any other, once the new message is written."""
        if run.task is not None:
            await run.flush()
            await self.registered(run, run.task_id, await self.set(run.task_id, config))
            return
        run.ensure_task()
        stored = _as_stored(run.task_id, config)
        run.push_configs_new = (stored,)
        run.push_configs = (stored.id or run.task_id,)
        run.push_queued = self.queued

    async def registered(
        self, run: TaskRun | None, task_id: str, config: TaskPushNotificationConfig
    ) -> None:
        """A config was stored: a running task's run (``run``, if it runs here) queues
        deliveries for it from now on, and the config gets the task's snapshot first."""
        if run is None or run.task is None or run.task.status.state.terminal:
            return
        config_id = config.id or task_id
        if config_id not in run.push_configs:
            run.push_configs = (*run.push_configs, config_id)
        run.push_queued = self.queued
        snapshot = Delivery(
            agent_id=self.agent_id, task_id=task_id, config_id=config_id, seq=run.seq, snapshot=True
        )
        await self.store.add_deliveries([snapshot])
        self.queued()

    async def load(self, run: TaskRun) -> TaskRun:
        """A continued task's run learns its push configs (one read per turn, not per event)."""
        if run.task is not None:
            configs = await self.store.list_push_configs(self.agent_id, run.task_id)
            if configs:
                run.push_configs = tuple(c.id or run.task_id for c in configs)
                run.push_queued = self.queued
        return run
