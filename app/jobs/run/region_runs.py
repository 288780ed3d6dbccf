"""A run on a region of a slide: the expert's loop on what is on screen, in seconds where the
whole slide (millions of superpixels) takes minutes.

The model is fitted on every item the side information names (the scribbles, wherever they
are), the items the region touches, and a fixed-seed sample of the others up to
``FIT_ITEMS`` in all: the scribbles teach, the region and the sample show what else the slide
holds. Neighbour links (PPC's, C4S's) join the region's and the annotated items, not the
sample. It is then applied (``predict``) to the items the region touches. Every other item's
label is -1: the region's tiles and PNG show the result, the rest of the slide shows none.
The run is measured on the items it labelled (the fitted ones and the region's), so a
cluster still carries the scribble label of strokes outside the region.
"""

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.jobs.algorithms.base import ItemStructure
from app.sideinfo import SideInformation
from app.sideinfo.model import pairs_within

FIT_ITEMS = 50_000  # items a region run fits on (more when the scribbles and region hold more)
SAMPLE_SEED = 0


@dataclass(frozen=True)
class RegionPlan:
    """Which items a region run fits on and which it labels (both sorted)."""

    region: dict[str, int]  # x, y, width, height (level-0 pixels)
    n_items: int
    fitted: NDArray[np.int64]
    labelled: NDArray[np.int64]  # the items the region touches
    linked: NDArray[np.int64]  # the region's items and the annotated ones: whole patches

    def restricted(self, structure: ItemStructure) -> ItemStructure:
        """The links between the region's and the annotated items, renumbered as they are in
        the fit. The sampled items stay unlinked: a random part of a slide's neighbour graph
        falls apart into thousands of small loopy pieces, each of which PPC would solve
        exactly (by enumeration: minutes on a 129k-item slide); the region and the strokes
        are contiguous patches, linked as in a run on the whole slide."""
        pairs, keep = pairs_within(self.linked, structure.pairs)
        at = np.searchsorted(self.fitted, self.linked[pairs])
        return ItemStructure(at.astype(np.int64).reshape(-1, 2), structure.weights[keep])

    def labels(self, fitted: NDArray[np.integer], applied: NDArray[np.integer]) -> Any:
        """Every item's label as measured: the model's on the region's items, the fit's on
        the items fitted (where both are, the fit's: it kept the expert's links, as a run on
        the whole slide does)."""
        out = np.full(self.n_items, -1, dtype=np.int32)
        out[self.labelled] = applied
        out[self.fitted] = fitted
        return out

    def shown(self, labels: NDArray[np.integer]) -> NDArray[np.int32]:
        """The labels stored: the region's items', -1 elsewhere."""
        out = np.full(self.n_items, -1, dtype=np.int32)
        out[self.labelled] = labels[self.labelled]
        return out

    def metrics(self) -> dict[str, Any]:
        return {
            **self.region,
            "items": int(self.labelled.size),
            "fitted_on": int(self.fitted.size),
            "of": self.n_items,
        }


def touched_items(boxes: NDArray[np.integer], region: dict[str, int]) -> NDArray[np.int64]:
    """The items whose bounding box (x0, y0, x1, y1, inclusive) meets the region: every item
    with a pixel in it, and a few whose box only grazes it (labelled too; harmless)."""
    x0, y0 = region["x"], region["y"]
    x1, y1 = x0 + region["width"] - 1, y0 + region["height"] - 1
    meets = (boxes[:, 0] <= x1) & (boxes[:, 2] >= x0) & (boxes[:, 1] <= y1) & (boxes[:, 3] >= y0)
    return np.flatnonzero(meets).astype(np.int64)


def plan_region(
    info: SideInformation, boxes: NDArray[np.integer], region: dict[str, int]
) -> RegionPlan:
    n_items = int(boxes.shape[0])
    labelled = touched_items(boxes, region)
    chosen = linked = np.union1d(info.annotated_items(), labelled)
    room = FIT_ITEMS - chosen.size
    if room > 0:
        others = np.setdiff1d(np.arange(n_items, dtype=np.int64), chosen, assume_unique=True)
        if others.size > room:
            rng = np.random.default_rng(SAMPLE_SEED)
            others = rng.choice(others, size=room, replace=False)
        chosen = np.union1d(chosen, others)
    return RegionPlan(dict(region), n_items, chosen.astype(np.int64), labelled, linked)
