"""A run's frozen side information survives its NPZ blob unchanged, the blob is an ordinary NPZ
(numpy reads it), and it holds what the annotations say, not a value per item."""

import io
import json

import numpy as np

from app.sideinfo import AnnotationRecord, SideInformation, compile_side_information
from app.sideinfo.model import ARRAY_FIELDS
from app.store.side_information_blob import encode, from_npz, is_empty, to_npz


def test_every_field_round_trips() -> None:
    records = [
        AnnotationRecord(1, "label", {"items": [0, 1], "label": "a"}),
        AnnotationRecord(2, "label", {"items": [1], "label": "b"}),  # a two-label conflict
        AnnotationRecord(3, "must_link", {"items": [2, 3, 4]}, 0.8),
        AnnotationRecord(4, "cannot_link", {"items_a": [5], "items_b": [6, 7]}),
        AnnotationRecord(
            5, "boundary", {"view_id": 1, "points": [[0, -1], [0, 1]], "labels": ["l", "r"]}
        ),
    ]
    coordinates = np.random.default_rng(0).normal(size=(10, 2))
    info = compile_side_information(
        n_items=10, revision=7, records=records, view_coordinates=lambda _v: coordinates
    )
    blob = to_npz(info)
    back = from_npz(blob)
    assert back.chunklets is None  # computed when first asked for
    back.components()
    for name in (*ARRAY_FIELDS, "side_scores"):
        np.testing.assert_array_equal(getattr(back, name), getattr(info, name), err_msg=name)
        assert getattr(back, name).dtype == getattr(info, name).dtype, name
    assert (back.n_items, back.revision, back.label_names) == (10, 7, ["a", "b"])
    assert back.conflicts == info.conflicts and back.notes == info.notes
    assert (back.boundary_labels, back.boundary_annotation_id) == (["l", "r"], 5)
    with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
        assert "labeled_items" in npz.files and "header" in npz.files


def _round_trips(info: SideInformation) -> None:
    back = from_npz(to_npz(info))
    back.components()
    for name in (*ARRAY_FIELDS, "side_scores"):
        got, want = getattr(back, name), getattr(info, name)
        if want is None:
            assert got is None, name
            continue
        np.testing.assert_array_equal(got, want, err_msg=name)
        assert got.dtype == want.dtype, name


def test_hard_must_links_give_the_same_chunklets_back() -> None:
    """The chunklets are not stored: they are computed again from the hard pairs only."""
    records = [
        AnnotationRecord(1, "must_link", {"items": [0, 5, 9]}),
        AnnotationRecord(2, "must_link", {"items": [9, 11]}),
        AnnotationRecord(3, "must_link", {"items": [2, 3]}, 0.5),  # soft: no chunklet
        AnnotationRecord(4, "label", {"items": [11], "label": "x"}),
    ]
    info = compile_side_information(n_items=15, revision=4, records=records)
    assert info.n_chunklets == 1
    _round_trips(info)


def test_the_blob_holds_the_annotated_items_not_one_value_per_item() -> None:
    n = 1_000_000
    info = compile_side_information(
        n_items=n, revision=1, records=[AnnotationRecord(1, "label", {"items": [7], "label": "a"})]
    )
    blob = to_npz(info)
    assert len(blob) < 10_000  # a dense int32 label per item would be 4 MB before deflate
    with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
        assert "labels" not in npz.files and "chunklets" not in npz.files
    _round_trips(info)


def test_a_blob_of_the_earlier_dense_form_is_read() -> None:
    info = compile_side_information(
        n_items=6,
        revision=2,
        records=[
            AnnotationRecord(1, "label", {"items": [1], "label": "a"}),
            AnnotationRecord(2, "must_link", {"items": [3, 4]}),
        ],
    )
    arrays = {name: getattr(info, name) for name in ARRAY_FIELDS}
    header = {
        "n_items": 6,
        "revision": 2,
        "label_names": ["a"],
        "boundary_labels": None,
        "boundary_annotation_id": None,
        "notes": [],
        "conflicts": [],
    }
    buffer = io.BytesIO()
    np.savez_compressed(buffer, header=np.array(json.dumps(header)), **arrays)
    back = from_npz(buffer.getvalue())
    for name in ARRAY_FIELDS:
        np.testing.assert_array_equal(getattr(back, name), getattr(info, name), err_msg=name)


def test_equal_content_has_equal_hashes_and_no_annotation_needs_no_blob() -> None:
    def label(item: int) -> SideInformation:
        records = [AnnotationRecord(1, "label", {"items": [item], "label": "a"})]
        return compile_side_information(n_items=10, revision=1, records=records)

    assert encode(label(3))[1] == encode(label(3))[1]
    assert encode(label(3))[1] != encode(label(4))[1]
    assert len(encode(label(3))[1]) == 32
    assert is_empty(compile_side_information(n_items=10, revision=5, records=[]))
    assert not is_empty(label(3))
    # A soft must-link makes no chunklet and labels nothing, and still says something.
    soft = compile_side_information(
        n_items=10,
        revision=2,
        records=[AnnotationRecord(1, "must_link", {"items": [3, 4]}, 0.3)],
    )
    assert not is_empty(soft)
