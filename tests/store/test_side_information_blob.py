"""A run's frozen side information survives its NPZ blob unchanged, and the blob is an ordinary
NPZ (numpy reads it)."""

import io

import numpy as np

from app.sideinfo import AnnotationRecord, compile_side_information
from app.sideinfo.model import ARRAY_FIELDS
from app.store.side_information_blob import from_npz, to_npz


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
    for name in (*ARRAY_FIELDS, "side_scores"):
        np.testing.assert_array_equal(getattr(back, name), getattr(info, name), err_msg=name)
        assert getattr(back, name).dtype == getattr(info, name).dtype, name
    assert (back.n_items, back.revision, back.label_names) == (10, 7, ["a", "b"])
    assert back.conflicts == info.conflicts and back.notes == info.notes
    assert (back.boundary_labels, back.boundary_annotation_id) == (["l", "r"], 5)
    with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
        assert "labels" in npz.files and "header" in npz.files
