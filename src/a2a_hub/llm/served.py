"""The models the hub serves to its agents at ``/llm/v1``, and where that endpoint is.

:class:`ServedModels` holds one provider per configured model of the hub's ``[llm]`` section:
``model`` (the default) and ``models`` (more models of the same provider).  A request names a
model by the id ``GET /llm/v1/models`` lists (or the name it was configured with); any other
name gets the default one, so a client configured with whatever model name still works.
Providers are made on first use and closed with :meth:`ServedModels.aclose`.

:func:`llm_base_url` is where an agent's OpenAI-compatible client should point: the
``A2A_HUB_LLM_URL`` that ``a2a-hub serve`` sets for the agents it hosts, else the local URL of
the hub built in this process (:func:`set_local_root`), else the default port's; and
:func:`llm_api_key` the key it should send (the hub's own token, which opens only that
endpoint on a hub that requires API keys).
"""

from __future__ import annotations

import os
import secrets

from a2a_hub.llm import get_provider
from a2a_hub.llm.base import LLMProvider
from a2a_hub.settings import LLMSettings

__all__ = [
    "LLM_PATH",
    "LLM_TOKEN_ENV",
    "LLM_URL_ENV",
    "ServedModels",
    "llm_api_key",
    "llm_base_url",
    "set_local_root",
]

#: The environment variable ``a2a-hub serve`` sets to the LLM endpoint's URL.
LLM_URL_ENV = "A2A_HUB_LLM_URL"
#: The environment variable holding the hub's own token for its endpoint (see
#: :func:`llm_api_key`).
LLM_TOKEN_ENV = "A2A_HUB_LLM_TOKEN"
#: Where the endpoint is mounted on a hub.
LLM_PATH = "/llm/v1"

_local_root = "http://127.0.0.1:8000"


def set_local_root(root: str) -> None:
    """Remember the local URL (``http://host:port``) of the hub built in this process."""
    global _local_root
    _local_root = root.rstrip("/")


def llm_base_url() -> str:
    """The base URL (ending in ``/llm/v1``) of the hub's OpenAI-compatible LLM endpoint, for
    the ``base_url``/``api_base`` of an agent's OpenAI-compatible client."""
    return os.environ.get(LLM_URL_ENV) or f"{_local_root}{LLM_PATH}"


def llm_api_key() -> str:
    """The hub's own token for its LLM endpoint, for the ``api_key`` of an agent's client:
    it opens ``/llm/v1`` (and nothing else) on a hub where API keys are required.

    ``A2A_HUB_LLM_TOKEN`` when set, else a random one made now and put there, so that the
    processes this one starts (``--workers``) share it.
    """
    token = os.environ.get(LLM_TOKEN_ENV)
    if not token:
        token = os.environ[LLM_TOKEN_ENV] = secrets.token_urlsafe(24)
    return token


class ServedModels:
    """The providers behind ``/llm/v1``: the default model and the other configured ones."""

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        #: The default model's name (``None``: the provider's own), then the others.
        self._configured = list(dict.fromkeys([settings.model, *settings.models]))
        self._by_id: dict[str, LLMProvider] | None = None
        self._default: LLMProvider | None = None

    def _load(self) -> tuple[LLMProvider, dict[str, LLMProvider]]:
        if self._by_id is None or self._default is None:
            by_id: dict[str, LLMProvider] = {}
            default: LLMProvider | None = None
            for name in self._configured:
                provider = get_provider(settings=self.settings, model=name)
                by_id.setdefault(provider.model, provider)
                if name is not None:
                    by_id.setdefault(name, provider)
                default = default or provider
            assert default is not None
            self._by_id, self._default = by_id, default
        return self._default, self._by_id

    def ids(self) -> list[str]:
        """The model ids served, the default first (makes the providers: may raise
        :class:`~a2a_hub.llm.LLMError` when the embedded model is not installed)."""
        default, by_id = self._load()
        return list(dict.fromkeys([default.model, *(p.model for p in by_id.values())]))

    def provider(self, model: str | None) -> LLMProvider:
        """The provider of ``model``, or the default one for any other name."""
        default, by_id = self._load()
        if model:
            found = by_id.get(model) or by_id.get(model.rpartition("/")[2])
            if found is not None:
                return found
        return default

    async def aclose(self) -> None:
        """Close the providers made (their HTTP connections)."""
        by_id, self._by_id, self._default = self._by_id, None, None
        for provider in {id(p): p for p in (by_id or {}).values()}.values():
            await provider.aclose()
