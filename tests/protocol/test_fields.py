"""The field checks the 0.3 and 0.1 codecs share: each names the path of a bad field."""

from __future__ import annotations

from typing import Any

import pytest

from a2a_hub.protocol import _fields as f
from a2a_hub.protocol.errors import InvalidParamsError
from a2a_hub.protocol.types import Part


@pytest.mark.parametrize(
    ("check", "value", "message"),
    [
        (lambda d: f.req(d, "x", "p"), {}, "p.x: required field is missing"),
        (lambda d: f.req_obj(d, "x", "p"), {"x": []}, "p.x: expected an object, got array"),
        (lambda d: f.req_str(d, "x", "p"), {"x": 1}, "p.x: expected a string, got number"),
        (lambda d: f.req_str(d, "x", "p", non_empty=True), {"x": ""}, "p.x: must not be empty"),
        (lambda d: f.opt_str(d, "x", "p"), {"x": True}, "p.x: expected a string, got boolean"),
        (lambda d: f.opt_bool(d, "x", "p"), {"x": "no"}, "p.x: expected a boolean, got string"),
        (
            lambda d: f.opt_non_negative_int(d, "x", "p"),
            {"x": True},
            "p.x: expected an integer, got boolean",
        ),
        (
            lambda d: f.opt_non_negative_int(d, "x", "p"),
            {"x": -1},
            "p.x: must not be negative, got -1",
        ),
        (lambda d: f.req_list(d, "x", "p"), {"x": {}}, "p.x: expected an array, got object"),
        (lambda d: f.opt_list(d, "x", "p"), {"x": None}, None),
        (
            lambda d: f.opt_str_list(d, "x", "p"),
            {"x": ["a", None]},
            "p.x[1]: expected a string, got null",
        ),
        (lambda d: f.b64decode(d["x"], "p.x"), {"x": "not base64!"}, "p.x: invalid base64"),
        (lambda d: f.convert(d, Part, "p"), {"text": 3}, "p.text: Expected `str | null`"),
    ],
)
def test_a_bad_field_is_named_by_its_path(
    check: Any, value: dict[str, Any], message: str | None
) -> None:
    if message is None:
        check(value)
        return
    with pytest.raises(InvalidParamsError) as info:
        check(value)
    assert str(info.value).startswith(message)


def test_good_fields_come_back() -> None:
    d = {"s": "x", "n": 3, "b": False, "l": ["a"], "o": {"k": 1}, "raw": "aGk="}
    assert f.req_str(d, "s", "p") == "x"
    assert f.opt_non_negative_int(d, "n", "p") == 3
    assert f.opt_bool(d, "b", "p") is False
    assert f.opt_str_list(d, "l", "p") == ["a"]
    assert f.req_obj(d, "o", "p") == {"k": 1}
    assert f.b64decode(f.req_str(d, "raw", "p"), "p.raw") == b"hi"
    assert f.b64encode(b"hi") == "aGk="
    out: dict[str, Any] = {}
    f.copy_keys({"a": 1, "b": None}, out, ("a", "b", "c"))
    assert out == {"a": 1}
