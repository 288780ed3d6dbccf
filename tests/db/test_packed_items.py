"""Long item lists packed in an annotation's JSON and read back exactly (order, repeats)."""

import json

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import example, given

from app.db.packed_items import (
    MARK,
    PACK_FROM,
    pack_ids,
    packed_payload,
    unpack_ids,
    unpacked_payload,
)

ids = st.lists(st.integers(min_value=-(2**62), max_value=2**62), min_size=PACK_FROM + 1)


@given(ids)
@example([0] * (PACK_FROM + 1))
@example(list(range(PACK_FROM + 1, 0, -1)))
@example([2**62, -(2**62)] * PACK_FROM)
def test_any_integer_list_comes_back_exactly(values: list[int]) -> None:
    packed = pack_ids(values)
    assert packed is not None
    back = unpack_ids(json.loads(json.dumps(packed)))  # through JSON, as the database keeps it
    assert back == values
    assert all(type(v) is int for v in back)


@pytest.mark.parametrize(
    "values",
    [
        [],
        list(range(PACK_FROM)),  # short: stays readable
        [1.5] * (PACK_FROM + 1),
        [True] * (PACK_FROM + 1),  # booleans are not ids
        [1, "2"] * PACK_FROM,
    ],
)
def test_short_or_non_integer_lists_stay_plain(values: list[object]) -> None:
    assert pack_ids(values) is None
    payload = {"items": values, "label": "x"}
    assert packed_payload(payload) == payload


def test_ids_of_a_large_table_take_a_fifth_of_their_json() -> None:
    values = np.sort(np.random.default_rng(0).choice(20_000_000, 100_000, replace=False)).tolist()
    packed = pack_ids(values)
    assert packed is not None and packed[MARK]["dtype"] == "int16"
    assert len(json.dumps(packed)) < len(json.dumps(values)) / 4
    assert len(json.dumps(pack_ids(list(range(10, 100_010))))) < 1_000  # a range: nothing


def test_payloads_pack_only_item_lists_and_unpack_to_what_was_written() -> None:
    payload = {
        "items_a": list(range(0, 2_000, 2)),
        "items_b": list(range(1, 2_001, 2)),
        "strokes": [{"points": [[float(i), 0.0] for i in range(400)], "radius": 3}],
        "label": "x",
    }
    stored = packed_payload(payload)
    assert set(stored["items_a"]) == {MARK} and set(stored["items_b"]) == {MARK}
    assert stored["strokes"] == payload["strokes"] and stored["label"] == "x"
    assert unpacked_payload(json.loads(json.dumps(stored))) == payload
    plain = {"items": [1, 2, 3]}
    assert unpacked_payload(plain) is plain  # rows written before packing read as they are


def test_a_damaged_packed_list_is_refused() -> None:
    packed = pack_ids(list(range(1_000)))
    assert packed is not None
    packed[MARK]["n"] = 999
    with pytest.raises(ValueError, match="holds 1000 ids, not 999"):
        unpack_ids(packed)
