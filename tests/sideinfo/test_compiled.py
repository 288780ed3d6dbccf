"""Compiling act by act (`CompiledAnnotations.add` / `remove`) gives exactly what compiling the
live annotations at once gives, whatever the order of acts, undos and redos."""

import numpy as np
import pytest

from app.sideinfo import AnnotationRecord, SideInformation, compile_side_information
from app.sideinfo.compiled import CompiledAnnotations
from app.sideinfo.links import MAX_PAIRS_PER_CANNOT_LINK
from app.sideinfo.model import ARRAY_FIELDS

N_ITEMS = 40


def _random_act(rng: np.random.Generator, record_id: int) -> list[AnnotationRecord]:
    """One act: what an expert makes (an image scribble is an erase and a label under one id)."""

    def items(k: int) -> list[int]:
        return sorted(rng.choice(N_ITEMS, size=k, replace=False).tolist())

    kind = rng.choice(["label", "erase", "scribble", "must", "cannot", "soft", "boundary"])
    label = str(rng.choice(["a", "b", "c"]))
    if kind == "label":
        return [AnnotationRecord(record_id, "label", {"items": items(3), "label": label})]
    if kind == "erase":
        return [AnnotationRecord(record_id, "label", {"items": items(2), "erase": True})]
    if kind == "scribble":
        covered = items(4)
        return [
            AnnotationRecord(record_id, "label", {"items": covered, "erase": True}),
            AnnotationRecord(record_id, "label", {"items": covered, "label": label}),
        ]
    if kind == "must":
        return [AnnotationRecord(record_id, "must_link", {"items": items(2)})]
    if kind in ("cannot", "soft"):
        a, b = items(2)
        confidence = None if kind == "cannot" else 0.7
        payload = {"items_a": [a], "items_b": [b]}
        return [AnnotationRecord(record_id, "cannot_link", payload, confidence)]
    points = rng.normal(size=(3, 2)).tolist()
    payload = {"view_id": 1, "points": points, "labels": ["x", "y"]}
    return [AnnotationRecord(record_id, "boundary", payload)]


COORDINATES = np.random.default_rng(7).normal(size=(N_ITEMS, 2))


def _assert_same(got: SideInformation, want: SideInformation) -> None:
    for name in ARRAY_FIELDS:
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
    assert got.label_names == want.label_names
    assert [c.as_dict() for c in got.conflicts] == [c.as_dict() for c in want.conflicts]
    assert got.notes == want.notes
    assert got.boundary_annotation_id == want.boundary_annotation_id
    if want.side_scores is None:
        assert got.side_scores is None
    else:
        np.testing.assert_array_equal(got.side_scores, want.side_scores)


def _reference_labels(records: list[AnnotationRecord]) -> dict[int, str]:
    """Brute force: replay the label records in creation order (an id's erase half first)."""
    labels: dict[int, str] = {}
    for record in records:
        if record.kind != "label":
            continue
        for item in record.payload["items"]:
            if record.payload.get("erase"):
                labels.pop(item, None)
            else:
                labels[item] = record.payload["label"]
    return labels


@pytest.mark.parametrize("seed", range(8))
def test_acts_undos_and_redos_compile_as_the_live_set_does(seed: int) -> None:
    rng = np.random.default_rng(seed)
    compiled = CompiledAnnotations(N_ITEMS)
    live: dict[int, list[AnnotationRecord]] = {}
    undone: list[tuple[int, list[AnnotationRecord]]] = []
    next_id = 1
    for step in range(60):
        move = rng.random()
        if move < 0.15 and live:  # undo or delete any one
            record_id = int(rng.choice(sorted(live)))
            undone.append((record_id, live.pop(record_id)))
            compiled.remove([record_id])
        elif move < 0.25 and undone:  # redo: an old id comes back
            record_id, records = undone.pop()
            live[record_id] = records
            compiled.add(records)
        else:
            records = _random_act(rng, next_id)
            live[next_id] = records
            compiled.add(records)
            next_id += 1
        every = [r for record_id in sorted(live) for r in live[record_id]]
        want = compile_side_information(
            n_items=N_ITEMS, revision=step, records=every, view_coordinates=lambda _v: COORDINATES
        )
        got = compiled.side_information(revision=step, view_coordinates=lambda _v: COORDINATES)
        _assert_same(got, want)
        shown = {i: got.label_names[c] for i, c in enumerate(got.labels.tolist()) if c >= 0}
        assert shown == _reference_labels(every)
    assert compiled.ids == set(live)


def test_a_sampled_cannot_link_samples_the_same_pairs_alone_or_among_others() -> None:
    big = AnnotationRecord(
        9, "cannot_link", {"items_a": list(range(0, 300)), "items_b": list(range(300, 600))}
    )
    small = AnnotationRecord(3, "cannot_link", {"items_a": [0], "items_b": [700]})
    together = compile_side_information(n_items=1000, revision=1, records=[small, big])
    alone = CompiledAnnotations(1000).add([big]).side_information(revision=1)
    assert len(alone.cannot_link) == MAX_PAIRS_PER_CANNOT_LINK
    np.testing.assert_array_equal(together.cannot_link[1:], alone.cannot_link)


def test_compiling_a_held_annotation_again_is_refused() -> None:
    record = AnnotationRecord(1, "label", {"items": [0], "label": "a"})
    compiled = CompiledAnnotations(5).add([record])
    with pytest.raises(ValueError, match="compiled already"):
        compiled.add([record])
    assert compiled.remove([1, 2]).ids == set()
    assert compiled.side_information(revision=2).n_labeled == 0


def test_a_stroke_that_covers_nothing_is_held_without_arrays() -> None:
    compiled = CompiledAnnotations(5).add([], ids=[4])
    assert compiled.ids == {4}
    assert compiled.side_information(revision=1).n_labeled == 0
