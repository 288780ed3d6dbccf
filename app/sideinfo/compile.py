"""Compile live annotations into `SideInformation`."""

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from app.sideinfo.boundary import side_scores
from app.sideinfo.chunklets import chunklet_ids
from app.sideinfo.conflicts import (
    MustLinkIndex,
    labels_joined_by_must_link,
    must_link_inside_cannot_link,
)
from app.sideinfo.labels import compile_labels, two_label_conflicts
from app.sideinfo.links import MAX_PAIRS_PER_CANNOT_LINK, cannot_link_pairs, must_link_pairs
from app.sideinfo.model import (
    BOUNDARY,
    CANNOT_LINK,
    LABEL,
    MAX_CONFLICTS_PER_KIND,
    MUST_LINK,
    AnnotationRecord,
    SideInformation,
)

ViewCoordinates = Callable[[int], NDArray[np.floating]]


def compile_side_information(
    *,
    n_items: int,
    revision: int,
    records: Sequence[AnnotationRecord],
    view_coordinates: ViewCoordinates | None = None,
    seed: int = 0,
) -> SideInformation:
    """`records` are the live annotations at `revision`, in creation order.

    `view_coordinates(view_id)` returns the (n_items, 2) coordinates a boundary was drawn in.
    """
    by_kind: dict[str, list[AnnotationRecord]] = {
        LABEL: [],
        MUST_LINK: [],
        CANNOT_LINK: [],
        BOUNDARY: [],
    }
    for record in sorted(records, key=lambda r: r.id):
        by_kind[record.kind].append(record)

    labels, names, label_owner, clashes, clash_items = compile_labels(n_items, by_kind[LABEL])
    must, must_conf, must_owner = must_link_pairs(by_kind[MUST_LINK])
    hard = must_conf >= 1.0
    chunklets = chunklet_ids(n_items, must[hard])
    index = MustLinkIndex(chunklets, must[hard], must_owner[hard])
    rng = np.random.default_rng(seed)
    cannot, cannot_conf, cannot_owner, sampled = cannot_link_pairs(by_kind[CANNOT_LINK], rng)
    notes = [
        f"cannot-link annotation {rid} joins many items; {MAX_PAIRS_PER_CANNOT_LINK:,} of its "
        "pairs were sampled"
        for rid in sorted(sampled)
    ]

    limit = MAX_CONFLICTS_PER_KIND
    found = [
        two_label_conflicts(clashes, clash_items, limit),
        must_link_inside_cannot_link(
            by_kind[CANNOT_LINK], cannot, cannot_owner, sampled, index, limit
        ),
        labels_joined_by_must_link(labels, names, label_owner, index, limit),
    ]
    conflicts = []
    for listed, total in found:
        conflicts += listed
        if total > len(listed):
            notes.append(f"{total:,} {listed[0].kind} conflicts; the first {limit:,} are listed")

    info = SideInformation(
        n_items=n_items,
        revision=revision,
        labels=labels,
        label_names=names,
        must_link=must,
        must_link_confidence=must_conf,
        cannot_link=cannot,
        cannot_link_confidence=cannot_conf,
        chunklets=chunklets,
        conflicts=conflicts,
        notes=notes,
    )
    boundaries = by_kind[BOUNDARY]
    if boundaries and view_coordinates is not None:
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
    return info
