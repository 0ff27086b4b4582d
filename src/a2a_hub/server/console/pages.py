"""``GET /ui`` and ``GET /ui/{file}``: the console's page and its files, from ``static/``.

Plain HTML, CSS and JavaScript modules shipped in the package: no build step, nothing
fetched from elsewhere (the hub may run offline).  Every URL the page uses is relative to
it, so the console works under ``--public-url`` and behind a reverse proxy that serves the
hub under a path prefix.  The files are public (like the chat page): what the page shows
depends on the key the person types in, sent with each API call.
"""

from __future__ import annotations

from importlib import resources

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

__all__ = ["UI_PAGE_ROUTES", "console_asset", "console_page"]

_TYPES = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".svg": "image/svg+xml",
}
_HEADERS = {
    "Cache-Control": "no-cache",
    "Content-Security-Policy": "default-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "style-src 'self'; script-src 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_cache: dict[str, bytes] = {}


def _static() -> dict[str, bytes]:
    """The files of ``static/`` by name, read once."""
    if not _cache:
        folder = resources.files("a2a_hub.server.console") / "static"
        for entry in folder.iterdir():
            if entry.is_file() and not entry.name.startswith("."):
                _cache[entry.name] = entry.read_bytes()
    return _cache


async def console_page(request: Request) -> Response:
    """``GET /ui``: the page (its files are ``ui/…``, relative to it)."""
    return Response(_static()["index.html"], media_type=_TYPES[".html"], headers=_HEADERS)


async def console_slash(request: Request) -> Response:
    """``GET /ui/``: to ``../ui`` (relative, so a proxy's path prefix is kept)."""
    return Response(status_code=307, headers={"Location": "../ui"})


async def console_asset(request: Request) -> Response:
    """``GET /ui/{file}``: one of the page's files, or 404."""
    name: str = request.path_params["asset"]
    data = _static().get(name)
    kind = _TYPES.get(name[name.rfind(".") :]) if "." in name else None
    if data is None or kind is None or name == "index.html":
        return Response(b"not found", 404, media_type="text/plain")
    return Response(data, media_type=kind, headers=_HEADERS)


#: ``/ui`` and its files (the API, ``/ui/api``, is a mount of its own: see app.py).
UI_PAGE_ROUTES: list[BaseRoute] = [
    Route("/ui", console_page, methods=["GET"]),
    Route("/ui/", console_slash, methods=["GET"]),
    Route("/ui/{asset}", console_asset, methods=["GET"]),
]
