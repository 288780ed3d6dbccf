"""What a run on an image adds: the items' layout (for continuity), a full-resolution mask,
and agreement with a pixel ground truth."""

from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.engine.image import grid_links
from app.engine.image.masks import encode_png, item_labels_to_mask, mean_iou
from app.jobs.algorithms.base import ItemStructure


def image_structure(item_of_pixel: NDArray[np.int32], superpixels: bool) -> ItemStructure:
    """4-neighbour links between pixels (weight 1), or region adjacency between superpixels."""
    if superpixels:
        from app.engine.image.adjacency import region_adjacency

        pairs, weights = region_adjacency(item_of_pixel)
    else:
        height, width = item_of_pixel.shape
        pairs, weights = grid_links(height, width, 1.0)
    return ItemStructure(np.asarray(pairs, dtype=np.int64), np.asarray(weights, dtype=np.float64))


def image_outputs(
    labels: NDArray[np.integer],
    item_of_pixel: NDArray[np.int32],
    pixel_truth: NDArray[np.int32] | None,
) -> tuple[bytes, dict[str, Any]]:
    """The cluster mask as a PNG index image, and pixel-level metrics."""
    mask = item_labels_to_mask(labels, item_of_pixel)
    metrics: dict[str, Any] = {}
    if pixel_truth is not None:
        metrics["mean_iou"] = float(mean_iou(pixel_truth, mask))
    return encode_png(mask), metrics
