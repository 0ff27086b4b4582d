"""Proto field names in 1.0 JSON: ``history_length`` is read as ``historyLength``.

The 1.0 JSON form is camelCase, but protobuf's JSON parser (and so the official SDK) also
accepts each field's proto name, and clients built on protobuf tooling send them.
:func:`decode` reads both.  Only the keys of protocol objects are renamed, following the
target type: free-form maps (``metadata``, ``Part.data``, extension ``params``) keep their
keys exactly.  When the camelCase and the proto name of a field are both present, the
camelCase one wins.  Answers are always camelCase.

The common case costs one regular-expression scan of the body: only a body with a key that
looks like ``snake_case`` goes the slow way (decode, rename, re-encode, typed decode).

Every JSON a client sends is decoded here (:func:`decode`, :func:`decode_with`), so that what
msgspec raises beyond a syntax error (``UnicodeDecodeError`` for a string that is not UTF-8,
``RecursionError`` for nesting deeper than the interpreter's recursion limit) is a
``msgspec.DecodeError`` too, which every binding answers as bad input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import msgspec
from msgspec import inspect as mi

__all__ = ["decode", "decode_with"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

#: A JSON key with an underscore between lower-case words: ``"history_length":``.
_SNAKE_KEY = re.compile(rb'"[a-z][a-z0-9]*_[a-z0-9_]*"\s*:')
_any = msgspec.json.Decoder()
_enc = msgspec.json.Encoder()


@dataclass(slots=True)
class _Shape:
    """How to rename one struct's keys: proto name → JSON name, and what each field holds."""

    names: dict[str, str] = field(default_factory=dict)
    #: JSON name → ("struct" | "list" | "dict", shape of the struct inside).
    children: dict[str, tuple[str, _Shape]] = field(default_factory=dict)


_shapes: dict[type, _Shape] = {}
_roots: dict[Any, _Shape] = {}


def _struct_of(info: mi.Type) -> mi.StructType | None:
    if isinstance(info, mi.StructType):
        return info
    if isinstance(info, mi.UnionType):
        structs = [t for t in info.types if isinstance(t, mi.StructType)]
        return structs[0] if len(structs) == 1 else None
    return None


def _child(info: mi.Type) -> tuple[str, _Shape] | None:
    if isinstance(info, mi.UnionType):
        kinds = [c for t in info.types if (c := _child(t)) is not None]
        return kinds[0] if len(kinds) == 1 else None
    struct = _struct_of(info)
    if struct is not None:
        return "struct", _shape(struct)
    if isinstance(info, mi.ListType):
        item = _struct_of(info.item_type)
        return ("list", _shape(item)) if item is not None else None
    if isinstance(info, mi.DictType):
        value = _struct_of(info.value_type)
        return ("dict", _shape(value)) if value is not None else None
    return None


def _shape(info: mi.StructType) -> _Shape:
    shape = _shapes.get(info.cls)
    if shape is None:
        shape = _shapes[info.cls] = _Shape()  # registered first: types may nest themselves
        for f in info.fields:
            if f.name != f.encode_name:
                shape.names[f.name] = f.encode_name
            child = _child(f.type)
            if child is not None:
                shape.children[f.encode_name] = child
    return shape


def _rename(obj: Any, shape: _Shape) -> Any:
    if not isinstance(obj, dict):
        return obj
    out: dict[str, Any] = {}
    for key, value in obj.items():
        name: str = shape.names.get(key) or key
        if name != key and name in obj:
            continue  # both spellings: the camelCase one wins
        child = shape.children.get(name)
        out[name] = value if child is None else _rename_child(value, child)
    return out


def _rename_child(value: Any, child: tuple[str, _Shape]) -> Any:
    kind, shape = child
    if kind == "struct":
        return _rename(value, shape)
    if kind == "list" and isinstance(value, list):
        return [_rename(item, shape) for item in value]
    if kind == "dict" and isinstance(value, dict):
        return {k: _rename(v, shape) for k, v in value.items()}
    return value


class _Decoder(Protocol[T_co]):
    def decode(self, buf: bytes, /) -> T_co: ...


def _undecodable(exc: UnicodeDecodeError | RecursionError) -> msgspec.DecodeError:
    if isinstance(exc, UnicodeDecodeError):
        return msgspec.DecodeError(f"JSON text is not valid UTF-8 ({exc.reason})")
    return msgspec.DecodeError("JSON is nested too deeply")


def decode_with(decoder: _Decoder[T_co], raw: bytes) -> T_co:
    """``decoder.decode(raw)``; a string that is not UTF-8, or too deep a nesting: DecodeError."""
    try:
        return decoder.decode(raw)
    except (UnicodeDecodeError, RecursionError) as exc:
        raise _undecodable(exc) from None


def decode(raw: bytes, kind: type[T]) -> T:
    """``msgspec.json.decode(raw, type=kind)``, also accepting proto field names.

    Raises what msgspec raises (``DecodeError`` / ``ValidationError``); a string that is not
    UTF-8 and too deep a nesting are ``DecodeError`` s as well.
    """
    try:
        return _decode(raw, kind)
    except (UnicodeDecodeError, RecursionError) as exc:
        raise _undecodable(exc) from None


def _decode(raw: bytes, kind: type[T]) -> T:
    if _SNAKE_KEY.search(raw) is None:
        return msgspec.json.decode(raw, type=kind)
    shape = _roots.get(kind)
    if shape is None:
        info = mi.type_info(kind)
        if not isinstance(info, mi.StructType):
            return msgspec.json.decode(raw, type=kind)
        shape = _roots[kind] = _shape(info)
    renamed = _rename(_any.decode(raw), shape)
    return msgspec.json.decode(_enc.encode(renamed), type=kind)
