"""What a region run fits on and labels, against brute force on small slides."""

import numpy as np
import pytest

from app.jobs.algorithms.base import ItemStructure
from app.jobs.run import region_runs
from app.jobs.run.region_runs import plan_region, touched_items
from app.sideinfo import compile_side_information
from app.sideinfo.model import AnnotationRecord


def _boxes(rng: np.random.Generator, n: int) -> np.ndarray:
    x0, y0 = rng.integers(0, 90, n), rng.integers(0, 90, n)
    w, h = rng.integers(0, 12, n), rng.integers(0, 12, n)
    return np.stack([x0, y0, x0 + w, y0 + h], axis=1).astype(np.int32)


def test_touched_items_are_those_whose_box_shares_a_pixel_with_the_region() -> None:
    rng = np.random.default_rng(1)
    boxes = _boxes(rng, 400)
    for _ in range(20):
        x, y = (int(v) for v in rng.integers(0, 90, 2))
        width, height = (int(v) for v in rng.integers(1, 30, 2))
        region = {"x": x, "y": y, "width": width, "height": height}
        inside = np.zeros((110, 110), dtype=bool)
        inside[y : y + height, x : x + width] = True
        want = [
            k
            for k, (bx0, by0, bx1, by1) in enumerate(boxes.tolist())
            if inside[by0 : by1 + 1, bx0 : bx1 + 1].any()
        ]
        assert touched_items(boxes, region).tolist() == want


def test_the_fit_holds_every_annotated_item_the_region_and_a_fixed_sample(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(2)
    boxes = _boxes(rng, 3_000)
    records = [
        AnnotationRecord(1, "label", {"items": [5, 2_900], "label": "a"}),
        AnnotationRecord(2, "must_link", {"items": [7, 1_500]}),
        AnnotationRecord(3, "cannot_link", {"items_a": [9], "items_b": [2_000]}),
    ]
    info = compile_side_information(n_items=3_000, revision=3, records=records)
    region = {"x": 10, "y": 10, "width": 20, "height": 20}
    monkeypatch.setattr(region_runs, "FIT_ITEMS", 400)
    plan = plan_region(info, boxes, region)
    again = plan_region(info, boxes, region)
    assert np.array_equal(plan.fitted, again.fitted)  # the sample is fixed
    assert plan.fitted.size == 400 and np.all(np.diff(plan.fitted) > 0)
    assert set(plan.labelled.tolist()) <= set(plan.fitted.tolist())
    assert {5, 2_900, 7, 1_500, 9, 2_000} <= set(plan.fitted.tolist())

    # The side information of the fitted items, renumbered in their order.
    part = info.subset(plan.fitted)
    at = {int(item): k for k, item in enumerate(plan.fitted)}
    assert part.n_items == 400
    assert np.array_equal(part.labels, info.labels[plan.fitted])
    assert part.must_link.tolist() == [[at[7], at[1_500]]]
    assert part.cannot_link.tolist() == [[at[9], at[2_000]]]

    # Links between annotated or region items kept, renumbered as in the fit; a link with an
    # end outside the fit, or at a sampled item, dropped (the sample stays unlinked).
    outside = int(np.setdiff1d(np.arange(3_000), plan.fitted)[0])
    sampled = int(np.setdiff1d(plan.fitted, plan.linked)[0])
    inside = int(plan.labelled[0])
    pairs = np.array([[5, 7], [5, outside], [9, 2_000], [5, sampled], [inside, 9]])
    links = plan.restricted(ItemStructure(pairs, np.array([1.0, 2.0, 3.0, 4.0, 5.0])))
    assert links.pairs.tolist() == [[at[5], at[7]], [at[9], at[2_000]], [at[inside], at[9]]]
    assert links.weights.tolist() == [1.0, 3.0, 5.0]
    assert set(plan.linked.tolist()) == set(plan.labelled.tolist()) | {5, 2_900, 7, 1_500, 9, 2_000}

    # Stored: the region's items only; measured: the fit's labels win where both are.
    fitted = np.arange(400, dtype=np.int32) % 3
    applied = np.full(plan.labelled.size, 7, dtype=np.int32)
    measured = plan.labels(fitted, applied)
    assert np.array_equal(measured[plan.fitted], fitted)
    shown = plan.shown(measured)
    assert (shown[np.setdiff1d(np.arange(3_000), plan.labelled)] == -1).all()
    assert np.array_equal(shown[plan.labelled], measured[plan.labelled])
