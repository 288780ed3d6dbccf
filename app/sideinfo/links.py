"""Must-link and cannot-link pairs from link annotations, kept small: a must-link set of k items
becomes k - 1 chained pairs; a cannot-link A x B becomes all |A||B| pairs up to a cap, beyond
which pairs are sampled (a note says so)."""

import numpy as np
from numpy.typing import NDArray

from app.sideinfo.chunklets import chain_pairs
from app.sideinfo.model import AnnotationRecord

MAX_PAIRS_PER_CANNOT_LINK = 50_000


def confidence(record: AnnotationRecord) -> float:
    return 1.0 if record.confidence is None else float(record.confidence)


def must_link_pairs(
    records: list[AnnotationRecord],
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    """Pairs, their confidence, and the id of the annotation each came from."""
    sets = [np.asarray(r.payload["items"], dtype=np.int64) for r in records]
    pairs, owner = chain_pairs(sets)
    conf = np.array([confidence(r) for r in records], dtype=np.float64)
    ids = np.array([r.id for r in records], dtype=np.int64)
    if len(pairs) == 0:
        return pairs, np.empty(0), np.empty(0, dtype=np.int64)
    return pairs, conf[owner], ids[owner]


def cannot_link_pairs(
    records: list[AnnotationRecord], seed: int
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64], set[int]]:
    """Pairs, their confidence, the owning annotation id per pair, and the ids of the
    annotations whose pairs were sampled. A sample depends on the seed and its annotation's id
    only, so compiling annotations together or one act at a time samples the same pairs."""
    blocks: list[NDArray[np.int64]] = []
    owners: list[NDArray[np.int64]] = []
    confs: list[NDArray[np.float64]] = []
    sampled: set[int] = set()
    singles = [r for r in records if len(r.payload["items_a"]) == len(r.payload["items_b"]) == 1]
    if singles:
        # The common case (one pair drawn at a time) without a numpy call per annotation.
        blocks.append(
            np.array([(r.payload["items_a"][0], r.payload["items_b"][0]) for r in singles])
        )
        owners.append(np.array([r.id for r in singles], dtype=np.int64))
        confs.append(np.array([confidence(r) for r in singles], dtype=np.float64))
    for record in records:
        a = np.asarray(record.payload["items_a"], dtype=np.int64)
        b = np.asarray(record.payload["items_b"], dtype=np.int64)
        if len(a) == len(b) == 1:
            continue
        if len(a) * len(b) <= MAX_PAIRS_PER_CANNOT_LINK:
            pairs = np.column_stack([np.repeat(a, len(b)), np.tile(b, len(a))])
        else:
            k = MAX_PAIRS_PER_CANNOT_LINK
            rng = np.random.default_rng((seed, record.id))
            pairs = np.column_stack([rng.choice(a, k), rng.choice(b, k)])
            sampled.add(record.id)
        blocks.append(pairs)
        owners.append(np.full(len(pairs), record.id, dtype=np.int64))
        confs.append(np.full(len(pairs), confidence(record)))
    if not blocks:
        return np.empty((0, 2), dtype=np.int64), np.empty(0), np.empty(0, dtype=np.int64), sampled
    return (
        np.concatenate(blocks).astype(np.int64),
        np.concatenate(confs),
        np.concatenate(owners),
        sampled,
    )
