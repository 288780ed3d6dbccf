"""Partial labels from label annotations; a later annotation's label wins, and an item given
two different labels is reported as a conflict naming both annotations."""

import numpy as np
from numpy.typing import NDArray

from app.sideinfo.model import ITEMS_PER_CONFLICT, AnnotationRecord, Conflict


def compile_labels(
    n_items: int, records: list[AnnotationRecord]
) -> tuple[NDArray[np.int32], list[str], NDArray[np.int64], list[Conflict]]:
    """Labels per item (-1 unlabeled), label names, the annotation that set each label (-1 for
    none), and the two-label conflicts."""
    names = sorted({str(r.payload["label"]) for r in records})
    labels = np.full(n_items, -1, dtype=np.int32)
    owner = np.full(n_items, -1, dtype=np.int64)
    if not records:
        return labels, names, owner, []
    code_of = {name: code for code, name in enumerate(names)}
    sets = [np.asarray(r.payload["items"], dtype=np.int64) for r in records]
    sizes = np.array([len(s) for s in sets])
    items = np.concatenate(sets)
    record_index = np.repeat(np.arange(len(records)), sizes)
    codes = np.repeat([code_of[str(r.payload["label"])] for r in records], sizes)

    order = np.lexsort((record_index, items))  # by item, then in creation order
    items, record_index, codes = items[order], record_index[order], codes[order]
    last = np.append(items[1:] != items[:-1], True)
    labels[items[last]] = codes[last]
    ids = np.array([r.id for r in records], dtype=np.int64)
    owner[items[last]] = ids[record_index[last]]

    clash = codes != labels[items]
    conflicts = []
    if clash.any():
        pairs = np.column_stack([ids[record_index[clash]], owner[items[clash]]])
        unique, inverse = np.unique(pairs, axis=0, return_inverse=True)
        clash_items = items[clash]
        for k, (earlier, later) in enumerate(unique.tolist()):
            involved = clash_items[inverse.ravel() == k]
            conflicts.append(
                Conflict(
                    kind="two_labels",
                    message=(
                        f"{len(involved)} item(s) have two different labels, from annotations "
                        f"{earlier} and {later}"
                    ),
                    annotation_ids=[earlier, later],
                    items=involved[:ITEMS_PER_CONFLICT].tolist(),
                )
            )
    return labels, names, owner, conflicts
