"""The inputs (annotation records) and the output (`SideInformation`) of compilation."""

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

LABEL = "label"
MUST_LINK = "must_link"
CANNOT_LINK = "cannot_link"
BOUNDARY = "boundary"
KINDS = (LABEL, MUST_LINK, CANNOT_LINK, BOUNDARY)
# Drawn on an image in pixel coordinates; resolved into LABEL records (app/services/strokes.py)
# before compilation, as are links drawn between strokes.
SCRIBBLE = "scribble"
# The side-information kinds each conflict involves; it matters to an algorithm only if the
# algorithm uses all of them.
CONFLICT_NEEDS = {
    "two_labels": ("labels",),
    "must_link_in_cannot_link": ("must_link", "cannot_link"),
    "labels_joined_by_must_link": ("labels", "must_link"),
}
ITEMS_PER_CONFLICT = 20  # items listed per conflict; the message gives the count
MAX_CONFLICTS_PER_KIND = 1000  # listed in a report; a note counts the rest


@dataclass(frozen=True)
class AnnotationRecord:
    id: int
    kind: str
    payload: dict[str, Any]
    confidence: float | None = None

    @property
    def is_hard(self) -> bool:
        return self.confidence is None or self.confidence >= 1.0


@dataclass(frozen=True)
class Conflict:
    """Hard constraints that cannot all hold, with the annotations that cause it."""

    kind: str  # two_labels | must_link_in_cannot_link | labels_joined_by_must_link | ...
    message: str
    annotation_ids: list[int]
    items: list[int]  # a few of the items involved (at most ITEMS_PER_CONFLICT)

    @property
    def needs(self) -> tuple[str, ...]:
        return CONFLICT_NEEDS[self.kind]

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "needs": list(self.needs),
            "message": self.message,
            "annotation_ids": self.annotation_ids,
            "items": self.items,
        }


def _empty_pairs() -> NDArray[np.int64]:
    return np.empty((0, 2), dtype=np.int64)


def _empty_float() -> NDArray[np.float64]:
    return np.empty(0, dtype=np.float64)


# SideInformation's per-item and per-pair arrays (side_scores, when a boundary is in force, too).
ARRAY_FIELDS = (
    "labels",
    "must_link",
    "must_link_confidence",
    "cannot_link",
    "cannot_link_confidence",
    "chunklets",
)


@dataclass
class SideInformation:
    n_items: int
    revision: int
    labels: NDArray[np.int32]  # -1 = unlabeled
    label_names: list[str]
    must_link: NDArray[np.int64] = field(default_factory=_empty_pairs)
    must_link_confidence: NDArray[np.float64] = field(default_factory=_empty_float)
    cannot_link: NDArray[np.int64] = field(default_factory=_empty_pairs)
    cannot_link_confidence: NDArray[np.float64] = field(default_factory=_empty_float)
    # The hard must-links' components, an id per item; empty without a hard must-link (every
    # item its own); None until asked for (`components`): a run on 20M items that never counts
    # groups never holds 160 MB of them.
    chunklets: NDArray[np.int64] | None = None
    side_scores: NDArray[np.float64] | None = None
    boundary_labels: list[str] | None = None
    boundary_annotation_id: int | None = None
    conflicts: list[Conflict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def has_conflicts(self) -> bool:
        return bool(self.conflicts)

    @property
    def n_labeled(self) -> int:
        return int(np.count_nonzero(self.labels >= 0))

    def components(self) -> NDArray[np.int64]:
        """The chunklets, computed from the hard must-links the first time they are asked for."""
        if self.chunklets is None:
            from app.sideinfo.chunklets import chunklet_ids

            hard = self.must_link[self.must_link_confidence >= 1.0]
            self.chunklets = chunklet_ids(self.n_items, hard)
        return self.chunklets

    @property
    def n_chunklets(self) -> int:
        """Chunklets of two or more items (singletons are not reported as chunklets)."""
        chunklets = self.components()
        if chunklets.size == 0:
            return 0
        counts = np.bincount(chunklets)
        return int(np.count_nonzero(counts >= 2))

    def annotated_items(self) -> NDArray[np.int64]:
        """Every item a label or a link names, sorted."""
        named = [
            np.flatnonzero(self.labels >= 0),
            self.must_link.ravel(),
            self.cannot_link.ravel(),
        ]
        return np.unique(np.concatenate(named).astype(np.int64))

    def subset(self, items: NDArray[np.int64]) -> "SideInformation":
        """The side information of ``items`` (sorted, distinct) alone, renumbered 0..len - 1 in
        their order: labels and scores taken, links kept where both ends are among them. A fit
        on part of a slide's items sees what the expert said of those items."""
        items = np.asarray(items, dtype=np.int64)
        must, keep_must = pairs_within(items, self.must_link)
        cannot, keep_cannot = pairs_within(items, self.cannot_link)
        return SideInformation(
            n_items=int(items.size),
            revision=self.revision,
            labels=self.labels[items],
            label_names=list(self.label_names),
            must_link=must,
            must_link_confidence=self.must_link_confidence[keep_must],
            cannot_link=cannot,
            cannot_link_confidence=self.cannot_link_confidence[keep_cannot],
            side_scores=None if self.side_scores is None else self.side_scores[items],
            boundary_labels=self.boundary_labels,
            boundary_annotation_id=self.boundary_annotation_id,
            conflicts=list(self.conflicts),
            notes=list(self.notes),
        )


def pairs_within(
    items: NDArray[np.int64], pairs: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """The pairs (m, 2) whose both ends are among ``items`` (sorted, distinct), each end
    renumbered to its place in ``items``; and which pairs those were."""
    if pairs.size == 0 or items.size == 0:
        return np.empty((0, 2), dtype=np.int64), np.zeros(pairs.shape[0], dtype=bool)
    at = np.searchsorted(items, pairs)
    keep = ((at < items.size) & (items[np.minimum(at, items.size - 1)] == pairs)).all(axis=1)
    return at[keep].astype(np.int64).reshape(-1, 2), keep
