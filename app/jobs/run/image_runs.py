"""What a run on an image adds: the items' layout (for continuity), a full-resolution mask,
and agreement with a pixel ground truth."""

from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.engine.image import grid_links
from app.engine.image.masks import encode_png, item_labels_to_mask, mean_iou
from app.engine.image.region_links import region_links
from app.jobs.algorithms.base import ItemStructure, Params
from app.jobs.algorithms.cec import CECIBParams
from app.jobs.algorithms.ppc import PPCParams

# Restarts of the CEC family on an image when the run leaves `n_init` empty (their table default
# is 10): on bench_image's images of 65,536 pixels 2 restarts find the same segmentations as 3
# and 10 (the labels seed the starts). `covariance: auto` fits two families, so a run on an
# image makes 4 fits, and a scribble-and-run session waits under 3 s.
IMAGE_N_INIT = 2
# CEC-IB's restarts on an image: its first start is the scribbled classes' means, its second
# the same after Lloyd steps; with the scribbles counted 10 times both ended in the same
# segmentation on all 15 bench_image draws, and the second start made the slowest task (three
# textures) take 3.7 s instead of 1.8 s.
IMAGE_CEC_IB_N_INIT = 1
# PPC's covariance on an image when the run leaves it at `auto`: one covariance shared by all
# components. Scribbled classes differ mostly in their mean colour and texture; separate full
# covariances let a broad component swallow the others (bench_image, noisy shapes: 0.59 mIoU
# with 'full', 0.95 with 'tied'; also faster).
IMAGE_PPC_COVARIANCE = "tied"
# The CEC family's smallest cluster on an image when the run leaves it empty (tables: 5 % of
# the items). An object covering 4 % of a picture is common; at 5 % CEC-IB removed the
# scribbled polygons of bench_image's noisy shapes with their cluster.
IMAGE_MIN_CLUSTER_FRACTION = 0.01
# How many times CEC-IB counts a scribbled pixel on an image when the run leaves it empty
# (tables: 1), the same weighting as PPC's 0.1 above. bench_image in-process, 5 tasks x 3 draws:
# mean mIoU 0.737 -> 0.764 (brick and grass mosaic, draw 1: 0.42 -> 0.65); 3 and 5 did not
# rescue that draw, 20 lost on others. Safe for a short stroke through the middle of a region
# (tests/api/test_image_sessions.py's disc) since the full/diagonal choice counts stray pixels.
IMAGE_CEC_IB_LABELED_WEIGHT = 10


def image_params(params: Params) -> Params:
    """The run's parameters with the image defaults where the run left them empty (a copy).

    `n_init`, `min_cluster_fraction` (CEC family) and `labeled_weight` (CEC-IB) are empty
    (None) unless the run sets them, so an explicit value, even the table's, is kept. PPC's
    empty `unlabeled_weight` is decided by its plan (`plan_ppc`: 0.1 on an image, refitted
    lower when the scribbles lose their component). PPC's
    `covariance: auto` means "the method's choice", which on an image is `tied`."""
    values = params.model_dump()
    update: dict[str, object] = {}
    if "n_init" in values and values["n_init"] is None:
        update["n_init"] = IMAGE_CEC_IB_N_INIT if isinstance(params, CECIBParams) else IMAGE_N_INIT
    if "min_cluster_fraction" in values and values["min_cluster_fraction"] is None:
        table = getattr(type(params), "TABLE_MIN_CLUSTER_FRACTION", IMAGE_MIN_CLUSTER_FRACTION)
        update["min_cluster_fraction"] = min(table, IMAGE_MIN_CLUSTER_FRACTION)
    if isinstance(params, PPCParams) and params.covariance == "auto":
        update["covariance"] = IMAGE_PPC_COVARIANCE
    if isinstance(params, CECIBParams) and params.labeled_weight is None:
        update["labeled_weight"] = IMAGE_CEC_IB_LABELED_WEIGHT
    return params.model_copy(update=update) if update else params


def image_structure(
    item_of_pixel: NDArray[np.int32] | None,
    superpixels: bool,
    borders: NDArray[np.int64] | None = None,
) -> ItemStructure:
    """4-neighbour links between pixels (weight 1), or links between superpixels that touch
    (weight proportional to the shared border, 1 on average: ``region_links``), from the map
    or, for a slide, from its items' ``borders`` (a, b, shared border) gathered block by
    block."""
    if borders is not None:
        if borders.shape[0] == 0:
            return ItemStructure(np.empty((0, 2), dtype=np.int64), np.empty(0))
        shared = borders[:, 2].astype(np.float64)
        return ItemStructure(np.ascontiguousarray(borders[:, :2]), shared / shared.mean())
    assert item_of_pixel is not None
    if superpixels:
        pairs, weights = region_links(item_of_pixel, 1.0)
    else:
        height, width = item_of_pixel.shape
        pairs, weights = grid_links(height, width, 1.0)
    return ItemStructure(np.asarray(pairs, dtype=np.int64), np.asarray(weights, dtype=np.float64))


def image_outputs(
    labels: NDArray[np.integer],
    item_of_pixel: NDArray[np.int32] | None,
    pixel_truth: NDArray[np.int32] | None,
    cluster_labels: list[str | None],
) -> tuple[bytes | None, dict[str, Any]]:
    """The cluster mask as a PNG index image, and pixel-level metrics: `mean_iou` of the label
    mask (clusters carrying the same scribble label count as one segment; unlabeled clusters
    each count alone), and `cluster_mean_iou` of the raw clusters. A slide (no map held) has
    neither: its mask is made from its labels where it is read (tiles, a streamed PNG)."""
    if item_of_pixel is None:
        return None, {}
    mask = item_labels_to_mask(labels, item_of_pixel)
    metrics: dict[str, Any] = {}
    if pixel_truth is not None:
        metrics["cluster_mean_iou"] = float(mean_iou(pixel_truth, mask))
        segments = _segment_of_cluster(cluster_labels, int(mask.max()) + 1)
        metrics["mean_iou"] = float(mean_iou(pixel_truth, segments[mask]))
    return encode_png(mask), metrics


def _segment_of_cluster(cluster_labels: list[str | None], n_clusters: int) -> NDArray[np.int32]:
    names = sorted({name for name in cluster_labels if name is not None})
    segment = np.arange(n_clusters, dtype=np.int32) + len(names)
    for cluster, name in enumerate(cluster_labels[:n_clusters]):
        if name is not None:
            segment[cluster] = names.index(name)
    return segment
