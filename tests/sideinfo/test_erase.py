"""Eraser records unlabel items: checked against a plain sequential replay of the acts."""

import numpy as np
import pytest

from app.sideinfo import compile_side_information
from app.sideinfo.model import AnnotationRecord


def replay(n_items: int, records: list[AnnotationRecord]) -> tuple[list[str | None], set]:  # type: ignore[type-arg]
    """Each item's label after the acts in order, and the clashing (earlier, later) pairs:
    a later label differing from the label an item holds at that moment."""
    label: list[str | None] = [None] * n_items
    owner: list[int | None] = [None] * n_items
    history: list[list[tuple[int, str]]] = [[] for _ in range(n_items)]  # live labels per item
    for record in records:
        for item in record.payload["items"]:
            if record.payload.get("erase"):
                label[item], owner[item], history[item] = None, None, []
            else:
                label[item], owner[item] = record.payload["label"], record.id
                history[item].append((record.id, record.payload["label"]))
    clashes = set()
    for item in range(n_items):
        if label[item] is None:
            continue
        for rid, name in history[item]:
            if name != label[item]:
                clashes.add((rid, owner[item]))
    return label, clashes


@pytest.mark.parametrize("seed", range(40))
def test_labels_and_erasures_match_a_sequential_replay(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_items = 12
    records = []
    for rid in range(1, int(rng.integers(1, 9)) + 1):
        items = sorted(set(rng.integers(0, n_items, size=int(rng.integers(1, 6))).tolist()))
        if rng.random() < 0.3:
            payload = {"items": items, "erase": True}
        else:
            payload = {"items": items, "label": str(rng.choice(["a", "b", "c"]))}
        records.append(AnnotationRecord(id=rid, kind="label", payload=payload))
    info = compile_side_information(n_items=n_items, revision=1, records=records)
    expected, clashes = replay(n_items, records)
    got = [info.label_names[c] if c >= 0 else None for c in info.labels.tolist()]
    assert got == expected
    reported = {tuple(sorted(c.annotation_ids)) for c in info.conflicts if c.kind == "two_labels"}
    assert reported == {tuple(sorted(p)) for p in clashes}
