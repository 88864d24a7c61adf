"""Strict JSON: the only JSON VoiceHub reads or writes.

Strict means: no ``NaN``/``Infinity`` in either direction, duplicate object keys rejected,
object keys must be strings, and :func:`dumps` is canonical (sorted keys, compact
separators, UTF-8 preserved) so equal values always give equal bytes. The encoding is
RFC 8259 JSON; the canonical form follows the ordering rule of RFC 8785 for ASCII keys.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from voicehub.core.errors import StrictJSONError

JSONValue = Any
"""A value made of dict (str keys), list, str, int, float (finite), bool and None."""


def _reject_constant(name: str) -> None:
    raise StrictJSONError(f"strict JSON does not allow {name}; write a finite number or null")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise StrictJSONError(f"duplicate JSON object key {key!r}")
        out[key] = value
    return out


def _check(value: Any, where: str) -> None:
    if value is None or isinstance(value, (bool, str, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise StrictJSONError(f"{where}: non-finite number {value!r} is not strict JSON")
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise StrictJSONError(f"{where}: object key {key!r} is {type(key).__name__}, not str")
            _check(item, f"{where}.{key}")
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check(item, f"{where}[{index}]")
        return
    raise StrictJSONError(f"{where}: {type(value).__name__} is not a JSON type")


def dumps(value: JSONValue, *, indent: int | None = None) -> str:
    """Serialize ``value`` as canonical strict JSON.

    Args:
        value: nested dict/list/tuple/str/int/float/bool/None; floats must be finite.
        indent: pretty-print indent in spaces; ``None`` gives the compact canonical form.

    Returns:
        The JSON text, keys sorted. Equal values always produce equal text.

    Raises:
        StrictJSONError: on NaN/Infinity, a non-string key, or a non-JSON type, naming
            the path to the offending value (``$.passes[2].metadata``).
    """
    _check(value, "$")
    separators = (",", ":") if indent is None else (",", ": ")
    return json.dumps(value, sort_keys=True, allow_nan=False, ensure_ascii=False, indent=indent, separators=separators)


def loads(text: str | bytes) -> JSONValue:
    """Parse strict JSON.

    Args:
        text: the document, as ``str`` or UTF-8 ``bytes``.

    Returns:
        The decoded value.

    Raises:
        StrictJSONError: on malformed JSON, NaN/Infinity literals or duplicate keys.
    """
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except StrictJSONError:
        raise
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise StrictJSONError(f"not valid JSON: {err}") from err


__all__ = ["JSONValue", "dumps", "loads"]
