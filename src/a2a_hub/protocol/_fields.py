"""Checks on the fields of decoded JSON, for the hand-written codecs (0.3 and 0.1).

Each takes the builtins ``msgspec.json.decode`` produced and the *path* of the value
(``params.message.parts[0]``), and raises :class:`InvalidParamsError` whose message starts
with that path, e.g. ``params.id: expected a string, got number``.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, NoReturn, TypeVar

import msgspec

from a2a_hub.protocol.errors import InvalidParamsError

__all__ = [
    "b64decode",
    "b64encode",
    "convert",
    "copy_keys",
    "fail",
    "json_type",
    "obj",
    "opt_bool",
    "opt_list",
    "opt_non_negative_int",
    "opt_str",
    "opt_str_list",
    "req",
    "req_list",
    "req_obj",
    "req_str",
    "str_items",
]

_T = TypeVar("_T")


def json_type(v: Any) -> str:
    """Name of the JSON type of a decoded value, for error messages."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def fail(path: str, problem: str) -> NoReturn:
    """Raise :class:`InvalidParamsError` ``"<path>: <problem>"``."""
    raise InvalidParamsError(f"{path}: {problem}")


def obj(v: Any, path: str) -> dict[str, Any]:
    """``v`` if it is a JSON object, else raise naming ``path``."""
    if isinstance(v, dict):
        return v
    fail(path, f"expected an object, got {json_type(v)}")


def req(d: dict[str, Any], key: str, path: str) -> Any:
    """``d[key]``, which must be present and not null."""
    v = d.get(key)
    if v is None:
        fail(f"{path}.{key}", "required field is missing")
    return v


def req_obj(d: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    """``d[key]``, a required JSON object."""
    return obj(req(d, key, path), f"{path}.{key}")


def req_str(d: dict[str, Any], key: str, path: str, *, non_empty: bool = False) -> str:
    """``d[key]``, a required string (not empty, with ``non_empty``)."""
    v = req(d, key, path)
    if not isinstance(v, str):
        fail(f"{path}.{key}", f"expected a string, got {json_type(v)}")
    if non_empty and not v:
        fail(f"{path}.{key}", "must not be empty")
    return v


def opt_str(d: dict[str, Any], key: str, path: str) -> str | None:
    """``d[key]``, an optional string."""
    v = d.get(key)
    if v is None or isinstance(v, str):
        return v
    fail(f"{path}.{key}", f"expected a string, got {json_type(v)}")


def opt_bool(d: dict[str, Any], key: str, path: str) -> bool | None:
    """``d[key]``, an optional boolean."""
    v = d.get(key)
    if v is None or isinstance(v, bool):
        return v
    fail(f"{path}.{key}", f"expected a boolean, got {json_type(v)}")


def opt_non_negative_int(d: dict[str, Any], key: str, path: str) -> int | None:
    """``d[key]``, an optional integer of at least 0 (``historyLength``)."""
    v = d.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        fail(f"{path}.{key}", f"expected an integer, got {json_type(v)}")
    if v < 0:
        fail(f"{path}.{key}", f"must not be negative, got {v}")
    return v


def req_list(d: dict[str, Any], key: str, path: str) -> list[Any]:
    """``d[key]``, a required array."""
    v = req(d, key, path)
    if not isinstance(v, list):
        fail(f"{path}.{key}", f"expected an array, got {json_type(v)}")
    return v


def opt_list(d: dict[str, Any], key: str, path: str) -> list[Any] | None:
    """``d[key]``, an optional array."""
    v = d.get(key)
    if v is None or isinstance(v, list):
        return v
    fail(f"{path}.{key}", f"expected an array, got {json_type(v)}")


def str_items(items: list[Any], path: str) -> list[str]:
    """``items`` if every one is a string, else raise naming ``path[i]``."""
    for i, s in enumerate(items):
        if not isinstance(s, str):
            fail(f"{path}[{i}]", f"expected a string, got {json_type(s)}")
    return items


def opt_str_list(d: dict[str, Any], key: str, path: str) -> list[str] | None:
    """``d[key]``, an optional array of strings."""
    v = opt_list(d, key, path)
    return None if v is None else str_items(v, f"{path}.{key}")


def b64decode(s: str, path: str) -> bytes:
    """The bytes of base64 text ``s``, or raise naming ``path``."""
    try:
        return base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError) as e:
        fail(path, f"invalid base64: {e}")


def b64encode(b: bytes) -> str:
    """``b`` as base64 text."""
    return base64.b64encode(b).decode("ascii")


_AT = re.compile(r"^(.*) - at `\$(.*)`$", re.DOTALL)


def convert(value: Any, typ: type[_T], path: str) -> _T:
    """``msgspec.convert`` with errors re-raised as InvalidParamsError under ``path``."""
    try:
        return msgspec.convert(value, typ)
    except msgspec.ValidationError as e:
        msg = str(e)
        m = _AT.match(msg)
        if m:
            raise InvalidParamsError(f"{path}{m.group(2)}: {m.group(1)}") from None
        raise InvalidParamsError(f"{path}: {msg}") from None


def copy_keys(src: dict[str, Any], dst: dict[str, Any], keys: tuple[str, ...]) -> None:
    """Copy the ``keys`` that ``src`` has (not null) into ``dst``."""
    for k in keys:
        v = src.get(k)
        if v is not None:
            dst[k] = v
