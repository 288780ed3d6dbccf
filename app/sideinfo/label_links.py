"""Labels as pairwise links, for methods that take links (PPC, C4s): items of one class are
chained by must-links (k - 1 pairs join k items), and classes are kept apart by cannot-links
sampled between every two classes, never all O(n^2) pairs."""

import numpy as np
from numpy.typing import NDArray

CANNOT_PAIRS_PER_CLASS_PAIR = 200


def label_links(
    labels: NDArray[np.integer], rng: np.random.Generator
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(must_link, cannot_link) pairs implied by partial labels (-1 = unlabeled)."""
    classes = [np.flatnonzero(labels == c) for c in np.unique(labels[labels >= 0])]
    must = [np.column_stack([m[:-1], m[1:]]) for m in classes if len(m) >= 2]
    cannot = []
    for i, a in enumerate(classes):
        for b in classes[i + 1 :]:
            k = min(CANNOT_PAIRS_PER_CLASS_PAIR, len(a) * len(b))
            cannot.append(np.column_stack([rng.choice(a, k), rng.choice(b, k)]))
    empty = np.empty((0, 2), dtype=np.int64)
    return (
        np.concatenate(must).astype(np.int64) if must else empty,
        np.concatenate(cannot).astype(np.int64) if cannot else empty,
    )
