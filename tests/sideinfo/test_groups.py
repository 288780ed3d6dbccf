"""The groups the expert told apart (the default cluster count): label categories, or
must-linked sets that hard cannot-links keep pairwise apart; checked against brute force."""

import itertools

import numpy as np

from app.sideinfo.chunklets import chunklet_ids
from app.sideinfo.groups import count_groups, distinct_groups
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


def test_a_must_linked_set_kept_from_one_label_and_joined_to_none_is_a_group() -> None:
    """Issue 36's iris case: setosa and virginica labeled, eight versicolor items must-linked
    and cannot-linked from virginica: three groups, the set one of its own."""
    labels = [0] * 5 + [2] * 5 + [-1] * 10
    chain = [(10 + i, 11 + i) for i in range(7)]  # items 10..17 must-linked
    info = _info(20, labels=labels, must=chain, cannot=[(10, 5)])
    groups = count_groups(info)
    assert (groups.total, groups.categories, groups.new_sets) == (3, 2, 1)
    assert "1 must-linked set kept apart" in groups.explained()
    # Joined to setosa by a must-link: it is setosa, two groups.
    assert distinct_groups(_info(20, labels=labels, must=[*chain, (17, 0)], cannot=[(10, 5)])) == 2
    # A single item kept from a label says too little: two groups.
    assert distinct_groups(_info(20, labels=labels, cannot=[(10, 5)])) == 2
    # Two such sets count once, unless a cannot-link keeps them apart too.
    second = [(18, 19)]
    two = _info(20, labels=labels, must=[*chain, *second], cannot=[(10, 5), (18, 6)])
    assert distinct_groups(two) == 3
    apart = _info(20, labels=labels, must=[*chain, *second], cannot=[(10, 5), (18, 6), (18, 10)])
    assert distinct_groups(apart) == 4
    # A soft cannot-link does not count.
    assert (
        distinct_groups(_info(20, labels=labels, must=chain, cannot=[(10, 5)], confidence=0.5)) == 2
    )
