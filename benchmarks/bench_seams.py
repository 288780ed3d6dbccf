"""Superpixels computed in blocks and stitched across the blocks' edges
(``app/engine/image/seam_stitch.py``) beside the whole picture's SLIC; in-process, printed,
never asserted.

    .venv/bin/python -m benchmarks.bench_seams [--block 256] [--cells 3]

For each picture (bench_collection's 1,024^2 x 3 x 16-bit cells, and two photos of
scikit-image's with superpixels forced), featurized whole and in blocks of ``--block`` pixels
with the default recipe:

* items: how many superpixels;
* seam borders: the share of pixel pairs across the blocks' edges that lie in two different
  superpixels (1.000 without stitching, by construction: SLIC runs per block), and the same
  share on lines through the middle of the blocks (what a line of an uncut picture shows);
* oracle mIoU (cells only, with their truth): every superpixel given its majority class, the
  best any labelling of these items can do;
* seconds to featurize.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numpy.typing import NDArray
from skimage import data

from app.engine.image.blockwise import MapRecipe, even_chunks
from app.engine.image.channels import Multichannel
from app.engine.image.featurize import Featurization, Recipe, featurize
from app.engine.image.masks import mean_iou
from benchmarks.bench_collection import CHANNELS, cells

RECIPE = Recipe(superpixels="always")


def edges(size: int, block: int) -> NDArray[np.int64]:
    """Where ``Blocks`` cuts an axis of ``size`` pixels (inner edges)."""
    maps = MapRecipe(RECIPE.filters, RECIPE.sigmas, RECIPE.energy_window, RECIPE.window)
    side = max(block, maps.reach + 1)
    return np.cumsum(even_chunks(size, side))[:-1]


def border_share(
    items: NDArray[np.int32], rows: NDArray[np.int64], cols: NDArray[np.int64]
) -> float:
    """The share of pixel pairs across these row and column lines in different items."""
    pairs = [items[r - 1] != items[r] for r in rows] + [
        items[:, c - 1] != items[:, c] for c in cols
    ]
    return float(np.concatenate(pairs).mean()) if pairs else float("nan")


def oracle(items: NDArray[np.int32], truth: NDArray[np.int32]) -> float:
    """mIoU of every item given its majority class."""
    n_classes = int(truth.max()) + 1
    counts = np.bincount(
        items.ravel().astype(np.int64) * n_classes + truth.ravel(),
        minlength=(int(items.max()) + 1) * n_classes,
    ).reshape(-1, n_classes)
    return mean_iou(truth, counts.argmax(axis=1)[items])


def timed(image: object, block: int) -> tuple[Featurization, float]:
    start = time.perf_counter()
    result = featurize(image, RECIPE, block_size=block)  # type: ignore[arg-type]
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--block", type=int, default=256)
    parser.add_argument("--cells", type=int, default=3, help="cells pictures (seeds 0..n-1)")
    args = parser.parse_args()

    pictures: list[tuple[str, object, NDArray[np.int32] | None]] = []
    for seed in range(args.cells):
        planes, cell_truth = cells(seed, 1024)
        pictures.append((f"cells {seed}", Multichannel(planes, tuple(CHANNELS)), cell_truth))
    pictures += [("astronaut", data.astronaut(), None), ("coffee", data.coffee(), None)]

    print(f"default recipe, superpixels always; blocks of {args.block} pixels (or the halo + 1)")
    print(
        "| picture | size | blocks | items whole / blocks | seam borders whole / blocks "
        "| mid-block lines, blocks | oracle mIoU whole / blocks | featurize s whole / blocks |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, image, truth in pictures:
        whole, whole_s = timed(image, 0)
        stitched, blocks_s = timed(image, args.block)
        height, width = whole.shape
        rows, cols = edges(height, args.block), edges(width, args.block)
        middle_rows = (np.concatenate([[0], rows]) + np.concatenate([rows, [height]])) // 2
        middle_cols = (np.concatenate([[0], cols]) + np.concatenate([cols, [width]])) // 2
        seams = (
            f"{border_share(whole.item_of_pixel, rows, cols):.3f} / "
            f"{border_share(stitched.item_of_pixel, rows, cols):.3f}"
        )
        middle = border_share(stitched.item_of_pixel, middle_rows, middle_cols)
        quality = "-"
        if truth is not None:
            quality = f"{oracle(whole.item_of_pixel, truth):.4f} / "
            quality += f"{oracle(stitched.item_of_pixel, truth):.4f}"
        print(
            f"| {name} | {width} x {height} | {(rows.size + 1) * (cols.size + 1)} "
            f"| {whole.n_items} / {stitched.n_items} | {seams} | {middle:.3f} | {quality} "
            f"| {whole_s:.1f} / {blocks_s:.1f} |"
        )


if __name__ == "__main__":
    main()
