"""Strict JSON: canonical dumps, no NaN/Infinity, duplicate keys rejected."""

from __future__ import annotations

import math

import pytest

from voicehub.core import StrictJSONError, strict_json


def test_dumps_is_canonical_and_order_independent() -> None:
    a = {"b": [1, 2.5, None], "a": {"y": True, "x": "é"}}
    b = {"a": {"x": "é", "y": True}, "b": [1, 2.5, None]}
    assert strict_json.dumps(a) == strict_json.dumps(b) == '{"a":{"x":"é","y":true},"b":[1,2.5,null]}'
    assert strict_json.loads(strict_json.dumps(a)) == a


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused_with_their_path(value: float) -> None:
    with pytest.raises(StrictJSONError, match=r"\$\.passes\[1\]\.speedup"):
        strict_json.dumps({"passes": [{}, {"speedup": value}]})


@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": Infinity}', "[-Infinity]"])
def test_non_finite_literals_are_refused_on_load(text: str) -> None:
    with pytest.raises(StrictJSONError, match="strict JSON does not allow"):
        strict_json.loads(text)


def test_duplicate_keys_and_bad_documents_are_refused() -> None:
    with pytest.raises(StrictJSONError, match="duplicate JSON object key 'a'"):
        strict_json.loads('{"a": 1, "b": {}, "a": 2}')
    with pytest.raises(StrictJSONError, match="not valid JSON"):
        strict_json.loads("{'a': 1}")
    with pytest.raises(StrictJSONError, match="not valid JSON"):
        strict_json.loads(b"\xff\xfe")


def test_non_json_types_and_keys_are_refused() -> None:
    with pytest.raises(StrictJSONError, match="object key 1 is int"):
        strict_json.dumps({1: "a"})
    with pytest.raises(StrictJSONError, match="set is not a JSON type"):
        strict_json.dumps({"a": {1, 2}})
