"""Annotations compiled into arrays and kept between runs.

An act adds its annotations and an undo or a delete takes some away, each at the cost of the
annotations involved; the side information is then derived from the arrays without Python per
annotation. Compiling every annotation at once is the same object filled in one call, so the
two can never disagree (tests/sideinfo/test_compiled.py replays random acts against it).
"""

import itertools
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.sideinfo.boundary import side_scores
from app.sideinfo.chunklets import chunklet_ids
from app.sideinfo.conflicts import (
    MustLinkIndex,
    labels_joined_by_must_link,
    must_link_inside_cannot_link,
)
from app.sideinfo.labels import ERASE, derive_labels, two_label_conflicts
from app.sideinfo.links import MAX_PAIRS_PER_CANNOT_LINK, cannot_link_pairs, must_link_pairs
from app.sideinfo.model import (
    BOUNDARY,
    CANNOT_LINK,
    KINDS,
    LABEL,
    MAX_CONFLICTS_PER_KIND,
    MUST_LINK,
    AnnotationRecord,
    Conflict,
    SideInformation,
)

ViewCoordinates = Callable[[int], NDArray[np.floating]]


class _Columns:
    """Arrays of equal length, appended in blocks and joined only when read."""

    def __init__(self, **empty: NDArray[Any]) -> None:
        self._blocks: dict[str, list[NDArray[Any]]] = {k: [v] for k, v in empty.items()}

    def append(self, **arrays: NDArray[Any]) -> None:
        for name, values in arrays.items():
            self._blocks[name].append(values)

    def __getitem__(self, name: str) -> NDArray[Any]:
        blocks = self._blocks[name]
        if len(blocks) > 1:
            self._blocks[name] = blocks = [np.concatenate(blocks)]
        return blocks[0]

    def keep(self, mask: NDArray[np.bool_]) -> None:
        for name in self._blocks:
            self._blocks[name] = [self[name][mask]]

    def sort_by(self, name: str) -> None:
        """Stable order by one column (a no-op in the common case: acts come in id order)."""
        key = self[name]
        if np.all(key[1:] >= key[:-1]):
            return
        order = np.argsort(key, kind="stable")
        for column in self._blocks:
            self._blocks[column] = [self[column][order]]


def _pairs() -> _Columns:
    return _Columns(
        pairs=np.empty((0, 2), dtype=np.int64),
        owner=np.empty(0, dtype=np.int64),
        confidence=np.empty(0, dtype=np.float64),
    )


class CompiledAnnotations:
    """The live annotations of one dataset over `n_items` items, as arrays."""

    def __init__(self, n_items: int, *, seed: int = 0) -> None:
        self.n_items = n_items
        self.seed = seed
        self.ids: set[int] = set()
        # Label records are ordered by 2 * id + half: an image scribble resolves to an erase and
        # a label under one id, erase first (app/services/strokes.py).
        self._label_records = _Columns(
            order=np.empty(0, dtype=np.int64), code=np.empty(0, dtype=np.int32)
        )
        self._label_items = _Columns(
            order=np.empty(0, dtype=np.int64), item=np.empty(0, dtype=np.int64)
        )
        self._names: list[str] = []
        self._code_of: dict[str, int] = {}
        self._must = _pairs()
        self._cannot = _pairs()
        self._cannot_records: dict[int, AnnotationRecord] = {}
        self._sampled: set[int] = set()
        self._boundaries: dict[int, AnnotationRecord] = {}

    def add(
        self, records: Sequence[AnnotationRecord], *, ids: Collection[int] = ()
    ) -> "CompiledAnnotations":
        """Compile `records` (annotations not held yet) into the arrays. `ids` names more
        annotations they stand for: an image stroke that covers no item compiles to nothing, and
        is held all the same (so it is not read again)."""
        records = sorted(records, key=lambda r: r.id)
        fresh = {r.id for r in records} | set(ids)
        held = fresh & self.ids
        if held:
            raise ValueError(f"annotations {sorted(held)[:10]} are compiled already")
        by_kind: dict[str, list[AnnotationRecord]] = {kind: [] for kind in KINDS}
        for record in records:
            by_kind[record.kind].append(record)
        self._add_labels(by_kind[LABEL])
        must, must_confidence, must_owner = must_link_pairs(by_kind[MUST_LINK])
        self._must.append(pairs=must, owner=must_owner, confidence=must_confidence)
        self._must.sort_by("owner")
        cannot, cannot_confidence, cannot_owner, sampled = cannot_link_pairs(
            by_kind[CANNOT_LINK], self.seed
        )
        self._cannot.append(pairs=cannot, owner=cannot_owner, confidence=cannot_confidence)
        self._cannot.sort_by("owner")
        self._cannot_records.update((r.id, r) for r in by_kind[CANNOT_LINK])
        self._sampled |= sampled
        self._boundaries.update((r.id, r) for r in by_kind[BOUNDARY])
        self.ids |= fresh
        return self

    def _add_labels(self, records: list[AnnotationRecord]) -> None:
        if not records:
            return
        orders = np.array([2 * r.id for r in records], dtype=np.int64)
        orders[1:] += orders[1:] == orders[:-1]  # the second record under one id
        codes = np.array(
            [
                ERASE
                if r.payload.get("erase")
                else self._code_of.setdefault(str(r.payload["label"]), len(self._code_of))
                for r in records
            ],
            dtype=np.int32,
        )
        self._names = list(self._code_of)
        sizes = np.fromiter((len(r.payload["items"]) for r in records), dtype=np.int64)
        items = np.fromiter(
            itertools.chain.from_iterable(r.payload["items"] for r in records),
            dtype=np.int64,
            count=int(sizes.sum()),
        )
        self._label_records.append(order=orders, code=codes)
        self._label_records.sort_by("order")
        self._label_items.append(order=np.repeat(orders, sizes), item=items)

    def remove(self, ids: Collection[int]) -> "CompiledAnnotations":
        """Take the annotations with these ids out (ids not held are ignored)."""
        gone = np.fromiter(set(ids) & self.ids, dtype=np.int64)
        if gone.size == 0:
            return self
        self._label_records.keep(~np.isin(self._label_records["order"] // 2, gone))
        self._label_items.keep(~np.isin(self._label_items["order"] // 2, gone))
        for pairs in (self._must, self._cannot):
            pairs.keep(~np.isin(pairs["owner"], gone))
        for record_id in gone.tolist():
            self._cannot_records.pop(record_id, None)
            self._boundaries.pop(record_id, None)
            self._sampled.discard(record_id)
        self.ids -= set(gone.tolist())
        return self

    def side_information(
        self, *, revision: int, view_coordinates: ViewCoordinates | None = None
    ) -> SideInformation:
        """`view_coordinates(view_id)` returns the (n_items, 2) coordinates a boundary was
        drawn in."""
        n_items = self.n_items
        labels, names, label_owner, clashes, clash_items = self._derived_labels()
        must, must_confidence, chunklets, index = self._must_links()
        cannot = self._cannot["pairs"].astype(np.int64)
        cannot_confidence = self._cannot["confidence"].astype(np.float64)
        notes = self._sampling_notes()

        limit = MAX_CONFLICTS_PER_KIND
        found = [
            two_label_conflicts(clashes, clash_items, limit),
            must_link_inside_cannot_link(
                self._cannot_records,
                cannot,
                cannot_confidence,
                self._cannot["owner"].astype(np.int64),
                self._sampled,
                index,
                limit,
            ),
            labels_joined_by_must_link(labels, names, label_owner, index, limit),
        ]
        conflicts = _listed_conflicts(found, limit, notes)

        info = SideInformation(
            n_items=n_items,
            revision=revision,
            labels=labels,
            label_names=names,
            must_link=must,
            must_link_confidence=must_confidence,
            cannot_link=cannot,
            cannot_link_confidence=cannot_confidence,
            chunklets=chunklets,
            conflicts=conflicts,
            notes=notes,
        )
        if self._boundaries and view_coordinates is not None:
            boundaries = [self._boundaries[i] for i in sorted(self._boundaries)]
            _apply_boundary(info, boundaries, view_coordinates)
        return info

    def _derived_labels(
        self,
    ) -> tuple[
        NDArray[np.int32], list[str], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]
    ]:
        """``derive_labels`` of the label records held: labels, their names, the annotation
        that set each, and the clashes between two labels with their items."""
        orders = self._label_records["order"]
        return derive_labels(
            self.n_items,
            ids=orders // 2,
            order=orders,
            codes=self._label_records["code"].astype(np.int32),
            name_table=self._names,
            items=self._label_items["item"].astype(np.int64),
            record_of=np.searchsorted(orders, self._label_items["order"]),
        )

    def _must_links(
        self,
    ) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64], MustLinkIndex]:
        """The must-link pairs and their confidences, and the chunklets of the hard ones
        (confidence 1) with their index for the conflict checks."""
        must = self._must["pairs"].astype(np.int64)
        must_confidence = self._must["confidence"].astype(np.float64)
        must_owner = self._must["owner"].astype(np.int64)
        hard = must_confidence >= 1.0
        chunklets = chunklet_ids(self.n_items, must[hard])
        index = MustLinkIndex(chunklets, must[hard], must_owner[hard])
        return must, must_confidence, chunklets, index

    def _sampling_notes(self) -> list[str]:
        """A note for every cannot-link whose pairs were sampled, in annotation id order."""
        return [
            f"cannot-link annotation {rid} joins many items; {MAX_PAIRS_PER_CANNOT_LINK:,} of "
            "its pairs were sampled"
            for rid in sorted(self._sampled)
        ]


def _listed_conflicts(
    found: list[tuple[list[Conflict], int]], limit: int, notes: list[str]
) -> list[Conflict]:
    """The conflicts listed of each kind, in ``found``'s order; a note (appended to ``notes``)
    for every kind that has more than its first ``limit`` listed."""
    conflicts = []
    for listed, total in found:
        conflicts += listed
        if total > len(listed):
            notes.append(f"{total:,} {listed[0].kind} conflicts; the first {limit:,} are listed")
    return conflicts


def _apply_boundary(
    info: SideInformation, boundaries: list[AnnotationRecord], view_coordinates: ViewCoordinates
) -> None:
    latest = boundaries[-1]  # the most recent boundary is the one in force
    points = np.asarray(latest.payload["points"], dtype=np.float64)
    info.side_scores = side_scores(view_coordinates(int(latest.payload["view_id"])), points)
    info.boundary_labels = [str(x) for x in latest.payload["labels"]]
    info.boundary_annotation_id = latest.id
    if len(boundaries) > 1:
        earlier = ", ".join(str(b.id) for b in boundaries[:-1])
        info.notes.append(
            f"boundary {latest.id} is in force; earlier boundaries ({earlier}) are ignored"
        )
