"""A run's checkpoint state as bytes, exactly and without pickle.

A state is a tree of dicts (string keys), lists, tuples, ``None``, bools, ints, floats, strings
and numpy arrays. :func:`encode_state` stores the arrays bit for bit in an ``.npz`` archive and
the rest as JSON beside them (Python's JSON writes floats with ``repr``, which round-trips every
float64 exactly); :func:`decode_state` reads it back with ``allow_pickle=False``, so a run store
shared by many users cannot be used to run code on whoever resumes a run.
"""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np

from ..errors import InvalidDataError

_ARRAY, _TUPLE = "__ndarray__", "__tuple__"


def _flatten(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            raise InvalidDataError("a checkpoint cannot hold object arrays.")
        key = f"a{len(arrays)}"
        arrays[key] = value
        return {_ARRAY: key}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return {_TUPLE: [_flatten(v, arrays) for v in value]}
    if isinstance(value, list):
        return [_flatten(v, arrays) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value) or {_ARRAY, _TUPLE} & set(value):
            raise InvalidDataError("checkpoint dictionaries need string keys (not reserved names).")
        return {k: _flatten(v, arrays) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise InvalidDataError(f"a checkpoint cannot hold a {type(value).__name__}.")


def _restore(value: Any, arrays: Any) -> Any:
    if isinstance(value, dict):
        if _ARRAY in value:
            return arrays[value[_ARRAY]]
        if _TUPLE in value:
            return tuple(_restore(v, arrays) for v in value[_TUPLE])
        return {k: _restore(v, arrays) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore(v, arrays) for v in value]
    return value


def encode_state(state: dict[str, Any]) -> bytes:
    """``state`` (see the module docstring) as bytes; :func:`decode_state` gives it back exactly."""
    arrays: dict[str, np.ndarray] = {}
    tree = _flatten(state, arrays)
    header = np.frombuffer(json.dumps(tree, allow_nan=True).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    members: dict[str, Any] = {"__json__": header, **arrays}
    np.savez(buf, **members)
    return buf.getvalue()


def decode_state(data: bytes) -> dict[str, Any]:
    """The state :func:`encode_state` wrote (arrays bit-identical; no pickle is ever loaded)."""
    with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files if k != "__json__"}
        tree = json.loads(npz["__json__"].tobytes().decode())
    return _restore(tree, arrays)


__all__ = ["decode_state", "encode_state"]
