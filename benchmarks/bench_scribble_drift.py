"""How far PPC's components move from their own scribbles on an image, and what the refit
(``app/engine/image/scribble_drift.py``) gives; in-process, printed, never asserted.

    .venv/bin/python -m benchmarks.bench_scribble_drift [--seeds 0,1,2] [--apply 3]

* bench_image's five tasks (256 x 256 photos, pixel items), each drawn once per seed: the
  drift of a PPC fit with the image defaults (tied covariance, one start, 4-neighbour
  continuity, unscribbled weight 0.1). The refit's limit must lie above all of them.
* bench_collection's first image, one per seed (1,024^2 x 3 x 16-bit, superpixel items) with
  the old default superpixels (~256 pixels) and the current ones (~64): the drift at 0.1, its
  mIoU on the first image and applied to ``--apply`` more images, and the same for the fit
  ``ScribbleFaithfulFit`` keeps.

Drift: the largest Mahalanobis distance, under the components' pooled covariance, between a
scribbled component's mean and the mean of the items scribbled for it.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from app.engine import PPC
from app.engine.image import grid_links
from app.engine.image.channels import Multichannel
from app.engine.image.featurize import Featurization, Recipe, apply_featurization, featurize
from app.engine.image.masks import mean_iou
from app.engine.image.region_links import region_links
from app.engine.image.scribble_drift import DRIFT_LIMIT, ScribbleFaithfulFit, scribble_drift
from app.engine.image.strokes import items_under
from benchmarks.bench_collection import CHANNELS, CLASSES, cells
from benchmarks.image_tasks import TASKS, scribbles

IMAGE_WEIGHT = 0.1  # app.jobs.algorithms.ppc.IMAGE_UNLABELED_WEIGHT
COARSE = 4096  # superpixels of a 1,024^2 image under the rule before 2026-11-30 (~256 pixels)


def scribbled(f: Featurization, seeds: np.ndarray, n_classes: int) -> np.ndarray:
    """Each item's scribbled class (-1: none), by the server's rule."""
    labels = np.full(f.n_items, -1, dtype=np.int64)
    for c in range(n_classes):
        labels[items_under(seeds == c + 1, f.item_of_pixel, f.n_items)] = c
    return labels


def links(f: Featurization) -> dict[str, Any]:
    if f.n_items == f.item_of_pixel.size:
        height, width = f.item_of_pixel.shape
        pairs, weights = grid_links(height, width, 1.0)
    else:
        pairs, weights = region_links(f.item_of_pixel, 1.0)
    return {"pairs": np.asarray(pairs, np.int64), "weights": np.asarray(weights, np.float64)}


def ppc(n_classes: int) -> Any:
    def make(weight: float) -> PPC:
        return PPC(n_classes, covariance="tied", unlabeled_weight=weight, random_state=0)

    return make


def photos(seeds: list[int]) -> None:
    print("| bench_image task | " + " | ".join(f"seed {s}" for s in seeds) + " |")
    print("|---|" + "---|" * len(seeds))
    worst = 0.0
    for index, task in enumerate(TASKS):
        cells_ = []
        for seed in seeds:
            image, truth = task.make(seed + 1000 * index)
            _, strokes = scribbles(truth, len(task.classes), seed + index)
            f = featurize(image)
            labels = scribbled(f, strokes, len(task.classes))
            fitted = ppc(len(task.classes))(IMAGE_WEIGHT).fit(f.features, labels=labels, **links(f))
            drift = scribble_drift(f.features, labels, fitted)
            worst = max(worst, drift)
            miou = mean_iou(truth, fitted.labels_[f.item_of_pixel])
            cells_.append(f"drift {drift:.2f}, mIoU {miou:.3f}")
        print(f"| {task.name} | " + " | ".join(cells_) + " |")
    print(f"\nlargest drift on bench_image: {worst:.2f} (refit above {DRIFT_LIMIT})\n")


def collections(seeds: list[int], n_apply: int) -> None:
    print(
        "| bench_collection first image | superpixels | at 0.1: drift, mIoU first / applied "
        "| kept: weight, drift, mIoU first / applied |"
    )
    print("|---|---|---|---|")
    for seed in seeds:
        first, truth = cells(seed, 1024)
        _, strokes = scribbles(truth, len(CLASSES), seed)
        others = [cells(seed + 1 + k, 1024) for k in range(n_apply)]
        for name, recipe in (("~256 px", Recipe(n_segments=COARSE)), ("~64 px", Recipe())):
            f = featurize(Multichannel(first, tuple(CHANNELS)), recipe)
            applied = [
                (apply_featurization(Multichannel(p, tuple(CHANNELS)), recipe, f.fitted), t)
                for p, t in others
            ]
            labels = scribbled(f, strokes, len(CLASSES))

            plain = ppc(len(CLASSES))(IMAGE_WEIGHT).fit(f.features, labels=labels, **links(f))
            drift = scribble_drift(f.features, labels, plain)
            chooser = ScribbleFaithfulFit(ppc(len(CLASSES)), IMAGE_WEIGHT)
            kept = chooser.fit(f.features, labels=labels, **links(f)).best_estimator_
            print(
                f"| seed {seed} ({np.count_nonzero(labels >= 0)} of {f.n_items} items "
                f"scribbled) | {name} | {drift:.2f}, {scores(plain, (f, truth), applied)} "
                f"| {kept.unlabeled_weight:.3g}, {scribble_drift(f.features, labels, kept):.2f}, "
                f"{scores(kept, (f, truth), applied)} |"
            )


def scores(
    fitted: Any,
    first: tuple[Featurization, np.ndarray],
    applied: list[tuple[Featurization, np.ndarray]],
) -> str:
    """mIoU of the fit on its own image / mean mIoU of its model on the others."""
    f, truth = first
    own = mean_iou(truth, fitted.labels_[f.item_of_pixel])
    rest = [mean_iou(t, fitted.predict(g.features)[g.item_of_pixel]) for g, t in applied]
    return f"{own:.3f} / {np.mean(rest):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2", help="draws, comma-separated")
    parser.add_argument("--apply", type=int, default=3, help="images the model is applied to")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    photos(seeds)
    collections(seeds, args.apply)


if __name__ == "__main__":
    main()
