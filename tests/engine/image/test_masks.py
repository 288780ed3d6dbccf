"""Label masks: items to pixels, PNG round trips and ground-truth decoding, and mean IoU
against hand-computed values and a brute force over one-to-one matchings."""

from __future__ import annotations

import io
import itertools
import re

import numpy as np
import pytest
from numpy.typing import NDArray
from PIL import Image

from app.engine.image import decode_index_png, encode_png, item_labels_to_mask, mean_iou

IntArray = NDArray[np.int64]


def png(array: NDArray[np.generic], mode: str | None = None) -> bytes:
    image = Image.fromarray(array) if mode is None else Image.fromarray(array).convert(mode)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


# --- item labels to pixels ---------------------------------------------------------------------


def test_item_labels_to_mask_reads_each_pixels_item() -> None:
    items = np.array([[0, 0, 2], [1, 2, 2]])
    mask = item_labels_to_mask(np.array([5, 7, 9]), items)
    np.testing.assert_array_equal(mask, [[5, 5, 9], [7, 9, 9]])
    assert mask.dtype == np.int32
    identity = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(
        item_labels_to_mask(np.arange(6)[::-1], identity), [[5, 4, 3], [2, 1, 0]]
    )


@pytest.mark.parametrize(
    ("labels", "items", "message"),
    [
        (np.zeros((2, 2), int), np.zeros((2, 2), int), "labels must be a 1-D array"),
        (np.zeros(3, int), np.zeros(4, int), "item_of_pixel must be a non-empty H x W array"),
        (np.zeros(3), np.zeros((2, 2), int), "must hold integers, got float64 and int64"),
        (np.zeros(3, int), np.full((2, 2), 3), "refers to items 3..3 but labels has 3 entries"),
        (np.zeros(3, int), np.full((2, 2), -1), "refers to items -1..-1"),
        (np.array([2**40]), np.zeros((1, 1), int), "labels must fit in 32-bit integers"),
    ],
)
def test_item_labels_to_mask_errors(labels: IntArray, items: IntArray, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        item_labels_to_mask(labels, items)


# --- PNG ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("high", "mode"), [(0, "L"), (255, "L"), (256, "I;16"), (65535, "I;16")])
def test_png_round_trip_with_the_smallest_depth(high: int, mode: str) -> None:
    rng = np.random.default_rng(high)
    mask = rng.integers(0, high + 1, size=(7, 11))
    mask[3, 4] = high
    data = encode_png(mask)
    with Image.open(io.BytesIO(data)) as image:
        assert image.format == "PNG" and image.mode == mode and image.size == (11, 7)
    decoded = decode_index_png(data, (7, 11))
    assert decoded.dtype == np.int32
    np.testing.assert_array_equal(decoded, mask)


def test_boolean_masks_encode_as_zero_and_one() -> None:
    mask = np.array([[True, False], [False, True]])
    np.testing.assert_array_equal(decode_index_png(encode_png(mask), (2, 2)), mask.astype(int))


@pytest.mark.parametrize(
    ("mask", "message"),
    [
        (np.array([[0, -1]]), "mask ids must be in 0..65535 to be stored in a PNG, got -1..0"),
        (np.array([[0, 65536]]), "got 0..65536"),
        (np.zeros((2, 2)), "mask must hold integer cluster ids, got dtype float64"),
        (np.zeros((2, 2, 3), int), "mask must be a non-empty H x W array, got shape (2, 2, 3)"),
        (np.zeros((0, 3), int), "got shape (0, 3)"),
    ],
)
def test_encode_png_errors(mask: NDArray[np.generic], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        encode_png(mask)


def test_palette_and_binary_ground_truths_decode_to_indices() -> None:
    indices = np.array([[0, 1, 2], [2, 1, 0]], dtype=np.uint8)
    palette_image = Image.fromarray(indices, mode="P")
    palette_image.putpalette([255, 0, 0, 0, 255, 0, 0, 0, 255])
    buffer = io.BytesIO()
    palette_image.save(buffer, format="PNG")
    np.testing.assert_array_equal(decode_index_png(buffer.getvalue(), (2, 3)), indices)
    binary = np.array([[True, False, True]])
    np.testing.assert_array_equal(decode_index_png(png(binary), (1, 3)), [[1, 0, 1]])


def test_decode_refuses_colour_images_wrong_sizes_and_garbage() -> None:
    rgb = png(np.zeros((2, 3, 3), dtype=np.uint8))
    with pytest.raises(
        ValueError, match=re.escape("single-channel index image") + ".*got mode RGB"
    ):
        decode_index_png(rgb, (2, 3))
    rgba = png(np.zeros((2, 3, 4), dtype=np.uint8))
    with pytest.raises(ValueError, match="got mode RGBA"):
        decode_index_png(rgba, (2, 3))
    grey = png(np.zeros((2, 3), dtype=np.uint8))
    with pytest.raises(
        ValueError, match=re.escape("ground truth is 3 x 2 pixels but the image is 2 x 3")
    ):
        decode_index_png(grey, (3, 2))
    with pytest.raises(ValueError, match="ground truth is not a readable image"):
        decode_index_png(b"\x89PNG not really", (2, 3))
    with pytest.raises(ValueError, match="ground truth could not be decoded"):
        decode_index_png(png(np.arange(60000, dtype=np.uint8).reshape(200, 300))[:200], (200, 300))
    with pytest.raises(ValueError, match="data must be the bytes of an image file, got str"):
        decode_index_png("a.png", (2, 3))  # type: ignore[arg-type]


# --- mean IoU ----------------------------------------------------------------------------------


def test_mean_iou_by_hand() -> None:
    truth = np.array([0, 0, 1, 1, -1])
    predicted = np.array([5, 5, 5, 7, 7])
    # 0 <-> 5: 2 / 3; 1 <-> 7: 1 / 2 (the void pixel counts nowhere).
    assert mean_iou(truth, predicted) == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert mean_iou(truth[:4], truth[:4]) == 1.0


def test_classes_without_a_cluster_count_zero_and_extra_clusters_hurt_only_by_overlap() -> None:
    truth = np.array([[0, 0, 1, 1, 2, 2]])
    assert mean_iou(truth, np.zeros_like(truth)) == pytest.approx((2 / 6) / 3)
    # Class 0 split in two clusters: the bigger half is matched, the other is unmatched.
    assert mean_iou(truth, np.array([[3, 4, 1, 1, 2, 2]])) == pytest.approx((1 / 2 + 1 + 1) / 3)


def test_matching_maximises_agreement_not_iou() -> None:
    # Class 0 has 4 pixels, class 1 has 1. Cluster a covers 3 of class 0; cluster b covers one of
    # class 0 and the pixel of class 1. Matching on the confusion matrix: 0<->a, 1<->b (total 4).
    truth = np.array([0, 0, 0, 0, 1])
    predicted = np.array([0, 0, 0, 1, 1])
    assert mean_iou(truth, predicted) == pytest.approx((3 / 4 + 1 / 2) / 2)


def test_mean_iou_ignores_how_clusters_are_numbered() -> None:
    rng = np.random.default_rng(0)
    truth = rng.integers(-1, 4, size=(20, 30))
    predicted = rng.integers(0, 6, size=(20, 30))
    renamed = rng.permutation(np.arange(100, 106))[predicted]
    assert mean_iou(truth, renamed) == pytest.approx(mean_iou(truth, predicted), abs=0)


def brute_force_mean_iou(truth: IntArray, predicted: IntArray) -> float | None:
    """Over every one-to-one matching with the largest agreement; None when that is not unique."""
    valid = truth >= 0
    t, p = truth[valid], predicted[valid]
    classes, clusters = np.unique(t), np.unique(p)
    padded = list(clusters) + [None] * len(classes)
    best: list[tuple[int, float]] = []
    for chosen in itertools.permutations(padded, len(classes)):
        overlap = [
            0 if c is None else int(np.sum((t == k) & (p == c)))
            for k, c in zip(classes, chosen, strict=True)
        ]
        ious = [
            0.0 if c is None else o / np.sum((t == k) | (p == c))
            for k, c, o in zip(classes, chosen, overlap, strict=True)
        ]
        best.append((sum(overlap), float(np.mean(ious))))
    top = max(agreement for agreement, _ in best)
    scores = {round(iou, 12) for agreement, iou in best if agreement == top}
    return scores.pop() if len(scores) == 1 else None


def test_mean_iou_equals_brute_force_over_matchings() -> None:
    rng = np.random.default_rng(1)
    checked = 0
    for _ in range(60):
        n_classes, n_clusters = (int(v) for v in rng.integers(1, 5, 2))
        truth = rng.integers(-1, n_classes, size=14)
        truth[0] = 0
        predicted = rng.integers(0, n_clusters, size=14)
        expected = brute_force_mean_iou(truth, predicted)
        if expected is not None:
            assert mean_iou(truth, predicted) == pytest.approx(expected)
            checked += 1
    assert checked >= 30


@pytest.mark.parametrize(
    ("truth", "predicted", "message"),
    [
        (np.zeros(3, int), np.zeros(4, int), "one shape, got (3,) and (4,)"),
        (np.zeros(3), np.zeros(3, int), "must hold integers, got float64 and int64"),
        (np.full(3, -1), np.zeros(3, int), "truth has no labeled pixels"),
    ],
)
def test_mean_iou_errors(truth: IntArray, predicted: IntArray, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        mean_iou(truth, predicted)
