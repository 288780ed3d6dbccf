"""The groups the expert told apart (the default cluster count): label categories, or
must-linked sets that hard cannot-links keep pairwise apart; checked against brute force."""

import itertools

import numpy as np

from app.sideinfo.chunklets import chunklet_ids
from app.sideinfo.groups import distinct_groups
from app.sideinfo.model import SideInformation


def _info(n: int, labels=None, must=(), cannot=(), confidence=1.0) -> SideInformation:  # type: ignore[no-untyped-def]
    must_pairs = np.array(must, dtype=np.int64).reshape(-1, 2)
    cannot_pairs = np.array(cannot, dtype=np.int64).reshape(-1, 2)
    return SideInformation(
        n_items=n,
        revision=1,
        labels=np.full(n, -1, np.int32) if labels is None else np.asarray(labels, np.int32),
        label_names=[],
        must_link=must_pairs,
        must_link_confidence=np.ones(len(must_pairs)),
        cannot_link=cannot_pairs,
        cannot_link_confidence=np.full(len(cannot_pairs), confidence),
        chunklets=chunklet_ids(n, must_pairs),
    )


def test_label_categories_count() -> None:
    assert distinct_groups(_info(6, labels=[0, 0, 1, -1, 2, -1])) == 3
    assert distinct_groups(_info(4)) == 0


def test_sets_kept_apart_by_cannot_links() -> None:
    # Ten sets of three items, must-linked inside, one cannot-link between every two sets.
    must = [(3 * s + i, 3 * s + i + 1) for s in range(10) for i in range(2)]
    cannot = [(3 * a, 3 * b + 2) for a in range(10) for b in range(a + 1, 10)]
    assert distinct_groups(_info(30, must=must, cannot=cannot)) == 10
    assert distinct_groups(_info(30, must=must, cannot=cannot, confidence=0.8)) == 0  # soft
    assert distinct_groups(_info(3, cannot=[(0, 1), (1, 2)])) == 2  # a path, not a triangle


def test_a_lower_bound_on_the_largest_set_pairwise_apart() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = 7
        cannot = [p for p in itertools.combinations(range(n), 2) if rng.random() < 0.5]
        found = distinct_groups(_info(n, cannot=cannot))
        edges = set(cannot)
        largest = max(
            (
                size
                for size in range(1, n + 1)
                for nodes in itertools.combinations(range(n), size)
                if all(p in edges for p in itertools.combinations(nodes, 2))
            ),
            default=1,
        )
        assert (2 if cannot else 0) <= found <= largest
