"""A small, forgiving subset of JSON Schema: build a minimal valid value, and check a value.

Enough for the structured answers agents ask LLMs for: ``type`` (also as a list),
``properties``/``required``, ``items``/``minItems``/``maxItems``, ``enum``/``const``,
``minimum``/``maximum`` (and the exclusive forms), ``minLength``/``maxLength``,
``anyOf``/``oneOf``/``allOf`` and local ``$ref`` (``#/$defs/...``, ``#/definitions/...``).
Unknown keywords are ignored, so a value this module accepts may still break a rule it
does not know (``pattern``, ``format``); that is the price of having no dependency.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["example_for", "validate"]

_MAX_DEPTH = 32


def _resolve(schema: Any, root: dict[str, Any]) -> dict[str, Any]:
    """Follow local ``$ref`` chains; anything that is not a dict counts as "anything"."""
    for _ in range(_MAX_DEPTH):
        if not isinstance(schema, dict):
            return {}
        ref = schema.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#"):
            return schema
        target: Any = root
        for part in ref.lstrip("#").strip("/").split("/"):
            if not part:
                continue
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, dict) else None
        if target is None:
            raise ValueError(f"schema reference {ref!r} does not resolve")
        extra = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**target, **extra} if extra and isinstance(target, dict) else target
    raise ValueError("schema references nest too deeply")


def _types(schema: dict[str, Any]) -> list[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [x for x in t if isinstance(x, str)]
    return []


def _props(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties")
    return props if isinstance(props, dict) else {}


def _merge_all_of(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    parts = schema.get("allOf")
    if not isinstance(parts, list):
        return schema
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in parts:
        sub = _merge_all_of(_resolve(part, root), root)
        for key, value in sub.items():
            if key == "properties" and isinstance(value, dict):
                merged["properties"] = {**merged.get("properties", {}), **value}
            elif key == "required" and isinstance(value, list):
                merged["required"] = [*merged.get("required", []), *value]
            else:
                merged.setdefault(key, value)
    return merged


# --------------------------------------------------------------------------- examples


def example_for(schema: dict[str, Any], *, text: str = "example") -> Any:
    """A small value valid for ``schema``; strings are built from ``text``.

    Objects get their required properties only, arrays their minimum number of items,
    numbers the smallest allowed value (0 when unbounded), booleans ``False``.
    """
    return _example(schema, schema, text, 0)


def _example(schema: Any, root: dict[str, Any], text: str, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise ValueError("schema nests too deeply to build an example")
    s = _merge_all_of(_resolve(schema, root), root)
    if "const" in s:
        return s["const"]
    enum = s.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    if "default" in s and not validate(s["default"], s, root=root):
        return s["default"]
    for key in ("anyOf", "oneOf"):
        options = s.get(key)
        if isinstance(options, list) and options:
            return _example(options[0], root, text, depth + 1)
    types = _types(s)
    kind = next((t for t in types if t != "null"), types[0] if types else None)
    if kind is None:
        if "properties" in s or "required" in s:
            kind = "object"
        elif "items" in s:
            kind = "array"
        else:
            kind = "string"
    if kind == "object":
        props = _props(s)
        required = [r for r in s.get("required", []) if isinstance(r, str)]
        return {
            name: _example(props.get(name, {}), root, text, depth + 1)
            for name in dict.fromkeys(required)
        }
    if kind == "array":
        count = int(s.get("minItems", 0) or 0)
        items = s.get("items", {})
        prefix = s.get("prefixItems")
        if isinstance(prefix, list):
            values = [_example(p, root, text, depth + 1) for p in prefix[:count]]
            return values + [_example(items, root, text, depth + 1)] * (count - len(values))
        return [_example(items, root, text, depth + 1) for _ in range(count)]
    if kind in ("integer", "number"):
        return _number(s, integer=kind == "integer")
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return _string(s, text)


def _bound(s: dict[str, Any], key: str) -> float | None:
    value = s.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _number(s: dict[str, Any], *, integer: bool) -> int | float:
    minimum, maximum = _bound(s, "minimum"), _bound(s, "maximum")
    ex_min, ex_max = _bound(s, "exclusiveMinimum"), _bound(s, "exclusiveMaximum")
    if integer:
        lows = [math.ceil(minimum)] if minimum is not None else []
        lows += [math.floor(ex_min) + 1] if ex_min is not None else []
        highs = [math.floor(maximum)] if maximum is not None else []
        highs += [math.ceil(ex_max) - 1] if ex_max is not None else []
        if lows:
            return max(lows)
        return min([0, *highs])
    if minimum is not None and (ex_min is None or minimum > ex_min):
        return minimum
    upper = min((b for b in (maximum, ex_max) if b is not None), default=None)
    if ex_min is not None:
        return (ex_min + upper) / 2 if upper is not None else ex_min + 1
    value = 0.0 if maximum is None else min(0.0, maximum)
    if ex_max is not None and value >= ex_max:
        value = ex_max - 1
    return value


def _string(s: dict[str, Any], text: str) -> str:
    fmt = s.get("format")
    formats = {
        "date-time": "2000-01-01T00:00:00Z",
        "date": "2000-01-01",
        "time": "00:00:00Z",
        "email": "someone@example.com",
        "uri": "https://example.com/",
        "url": "https://example.com/",
        "uuid": "00000000-0000-4000-8000-000000000000",
    }
    value = formats.get(fmt, text) if isinstance(fmt, str) else text
    min_len = int(s.get("minLength", 0) or 0)
    max_len = s.get("maxLength")
    if len(value) < min_len:
        value = (value + " " + "x" * min_len)[:min_len]
    if isinstance(max_len, int) and len(value) > max_len:
        value = value[:max_len]
    return value


# --------------------------------------------------------------------------- validation


def validate(
    value: Any, schema: dict[str, Any], *, root: dict[str, Any] | None = None
) -> list[str]:
    """The ways ``value`` breaks ``schema`` (an empty list when it fits), as readable paths."""
    problems: list[str] = []
    _check(value, schema, root if root is not None else schema, "$", problems, 0)
    return problems


def _type_ok(value: Any, kind: str) -> bool:
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    return True


def _check(
    value: Any, schema: Any, root: dict[str, Any], path: str, out: list[str], depth: int
) -> None:
    if depth > _MAX_DEPTH:
        return
    s = _merge_all_of(_resolve(schema, root), root)
    types = _types(s)
    if types and not any(_type_ok(value, t) for t in types):
        out.append(f"{path}: expected {' or '.join(types)}, got {type(value).__name__}")
        return
    if "const" in s and value != s["const"]:
        out.append(f"{path}: expected {s['const']!r}")
    enum = s.get("enum")
    if isinstance(enum, list) and value not in enum:
        out.append(f"{path}: {value!r} is not one of {enum!r}")
    for key in ("anyOf", "oneOf"):
        options = s.get(key)
        if (
            isinstance(options, list)
            and options
            and all(validate(value, o, root=root) for o in options)
        ):
            out.append(f"{path}: matches none of the {key} options")
    if isinstance(value, dict):
        props = _props(s)
        for name in s.get("required", []):
            if isinstance(name, str) and name not in value:
                out.append(f"{path}: missing required property {name!r}")
        for name, sub in props.items():
            if name in value:
                _check(value[name], sub, root, f"{path}.{name}", out, depth + 1)
        if s.get("additionalProperties") is False:
            extra = sorted(set(value) - set(props))
            if extra:
                out.append(f"{path}: unexpected properties {extra!r}")
    elif isinstance(value, list):
        if isinstance(s.get("minItems"), int) and len(value) < s["minItems"]:
            out.append(f"{path}: needs at least {s['minItems']} items, has {len(value)}")
        if isinstance(s.get("maxItems"), int) and len(value) > s["maxItems"]:
            out.append(f"{path}: allows at most {s['maxItems']} items, has {len(value)}")
        items = s.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                _check(item, items, root, f"{path}[{i}]", out, depth + 1)
    elif isinstance(value, str):
        if isinstance(s.get("minLength"), int) and len(value) < s["minLength"]:
            out.append(f"{path}: shorter than {s['minLength']} characters")
        if isinstance(s.get("maxLength"), int) and len(value) > s["maxLength"]:
            out.append(f"{path}: longer than {s['maxLength']} characters")
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if isinstance(s.get("minimum"), int | float) and value < s["minimum"]:
            out.append(f"{path}: {value} is below the minimum {s['minimum']}")
        if isinstance(s.get("maximum"), int | float) and value > s["maximum"]:
            out.append(f"{path}: {value} is above the maximum {s['maximum']}")
        if isinstance(s.get("exclusiveMinimum"), int | float) and value <= s["exclusiveMinimum"]:
            out.append(f"{path}: {value} is not above {s['exclusiveMinimum']}")
        if isinstance(s.get("exclusiveMaximum"), int | float) and value >= s["exclusiveMaximum"]:
            out.append(f"{path}: {value} is not below {s['exclusiveMaximum']}")
