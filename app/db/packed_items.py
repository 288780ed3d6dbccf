"""An annotation's item lists kept compactly in SQL, read back as the same lists.

A label column of 2 million labels becomes label annotations of 100,000 item ids each: as JSON
numbers about 0.9 MB a row, parsed whole every time the row is read. A list of more than
``PACK_FROM`` integers is stored instead as the differences between successive ids, in the
smallest integer type that holds them, deflated and base64-encoded: sorted ids of a 20M-row
table (gaps of about 200) take 2 bytes an item before deflate, a contiguous range almost
nothing. Order and repeats are kept exactly, so every reader of ``payload["items"]`` sees the
list it wrote; a short list, or one that is not all integers, stays plain JSON.

They stay in the annotation's row rather than the array store: an act is one row written in
one transaction, so an act refused or rolled back leaves no file behind, and undo and redo
stay a change of one row.
"""

import base64
import zlib
from typing import Any

import numpy as np
from sqlalchemy import JSON, Dialect
from sqlalchemy.types import TypeDecorator

PACK_FROM = 256  # items; shorter lists stay readable JSON
ITEM_KEYS = ("items", "items_a", "items_b")
MARK = "packed_ids"  # {"packed_ids": {"dtype": "int16", "n": 100000, "deflated": "..."}}


def pack_ids(ids: list[Any]) -> dict[str, Any] | None:
    """The packed form of a list of integers, or None when it should stay a list."""
    if len(ids) <= PACK_FROM or not all(type(i) is int for i in ids):
        return None
    array = np.asarray(ids, dtype=np.int64)
    steps = np.diff(array, prepend=np.int64(0))
    low, high = int(steps.min()), int(steps.max())
    dtype = next(
        t
        for t in (np.int8, np.int16, np.int32, np.int64)
        if np.iinfo(t).min <= low and high <= np.iinfo(t).max
    )
    raw = steps.astype(dtype).tobytes()
    deflated = base64.b64encode(zlib.compress(raw, 1)).decode("ascii")
    return {MARK: {"dtype": np.dtype(dtype).name, "n": len(ids), "deflated": deflated}}


def unpack_ids(packed: dict[str, Any]) -> list[int]:
    facts = packed[MARK]
    raw = zlib.decompress(base64.b64decode(facts["deflated"]))
    steps = np.frombuffer(raw, dtype=np.dtype(facts["dtype"]))
    if steps.size != facts["n"]:
        raise ValueError(f"a packed item list holds {steps.size} ids, not {facts['n']}")
    return np.cumsum(steps, dtype=np.int64).tolist()


def is_packed(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {MARK}


def packed_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with its long item lists packed (a copy; the rest as it is)."""
    out = dict(payload)
    for key in ITEM_KEYS:
        value = out.get(key)
        if isinstance(value, list):
            packed = pack_ids(value)
            if packed is not None:
                out[key] = packed
    return out


def unpacked_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with its packed item lists read back as lists (rows written before packing
    are plain lists already)."""
    if not any(is_packed(payload.get(key)) for key in ITEM_KEYS):
        return payload
    out = dict(payload)
    for key in ITEM_KEYS:
        if is_packed(out.get(key)):
            out[key] = unpack_ids(out[key])
    return out


class PayloadWithPackedItems(TypeDecorator[dict[str, Any]]):
    """JSON whose ``items``, ``items_a`` and ``items_b`` lists are packed when long."""

    impl = JSON
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return packed_payload(value) if isinstance(value, dict) else value

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        return unpacked_payload(value) if isinstance(value, dict) else value
