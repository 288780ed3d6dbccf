"""Compiling annotations into side information, checked against brute force on tiny inputs."""

import itertools

import numpy as np
import pytest
from scipy.sparse.csgraph import connected_components

from app.sideinfo import AnnotationRecord, compile_side_information
from app.sideinfo.boundary import side_scores
from app.sideinfo.links import MAX_PAIRS_PER_CANNOT_LINK


def label(i: int, items: list[int], name: str) -> AnnotationRecord:
    return AnnotationRecord(i, "label", {"items": items, "label": name})


def must(i: int, items: list[int], confidence: float | None = None) -> AnnotationRecord:
    return AnnotationRecord(i, "must_link", {"items": items}, confidence)


def cannot(i: int, a: list[int], b: list[int], confidence: float | None = None) -> AnnotationRecord:
    return AnnotationRecord(i, "cannot_link", {"items_a": a, "items_b": b}, confidence)


def compile_(n: int, *records: AnnotationRecord):  # type: ignore[no-untyped-def]
    return compile_side_information(n_items=n, revision=len(records), records=list(records))


def test_labels_later_annotation_wins_and_two_labels_conflict_names_both() -> None:
    info = compile_(6, label(1, [0, 1, 2], "A"), label(2, [2, 3], "B"), label(3, [4], "A"))
    assert info.label_names == ["A", "B"]
    assert info.labels.tolist() == [0, 0, 1, 1, 0, -1]
    assert [(c.kind, c.annotation_ids, c.items) for c in info.conflicts] == [
        ("two_labels", [1, 2], [2])
    ]


def test_relabelling_with_the_same_label_is_not_a_conflict() -> None:
    assert compile_(3, label(1, [0, 1], "A"), label(2, [1, 2], "A")).conflicts == []


def test_must_links_become_chains_and_chunklets() -> None:
    info = compile_(7, must(1, [0, 3, 5]), must(2, [5, 6]), must(3, [1, 2]))
    assert len(info.must_link) == 2 + 1 + 1  # k - 1 pairs per set, never k^2
    groups = {frozenset(np.flatnonzero(info.chunklets == c).tolist()) for c in info.chunklets}
    assert groups == {frozenset({0, 3, 5, 6}), frozenset({1, 2}), frozenset({4})}
    assert info.n_chunklets == 2


def test_cannot_link_expands_small_sets_and_samples_big_ones() -> None:
    info = compile_(10, cannot(1, [0, 1], [2, 3, 4], confidence=0.8))
    assert sorted(map(tuple, info.cannot_link.tolist())) == [
        (0, 2),
        (0, 3),
        (0, 4),
        (1, 2),
        (1, 3),
        (1, 4),
    ]
    assert info.cannot_link_confidence.tolist() == [0.8] * 6
    n = 1000
    big = compile_(n, cannot(1, list(range(500)), list(range(500, 1000))))
    assert len(big.cannot_link) == MAX_PAIRS_PER_CANNOT_LINK
    assert "sampled" in big.notes[0]
    assert (big.cannot_link[:, 0] < 500).all() and (big.cannot_link[:, 1] >= 500).all()


def test_must_link_inside_cannot_link_names_the_cannot_and_the_must_links() -> None:
    info = compile_(5, must(1, [0, 1]), must(2, [1, 2]), cannot(3, [0], [2]))
    assert len(info.conflicts) == 1
    conflict = info.conflicts[0]
    assert conflict.kind == "must_link_in_cannot_link"
    assert conflict.annotation_ids == [3, 1, 2]
    assert sorted(conflict.items) == [0, 2]


def test_a_chunklet_of_many_must_links_is_named_in_part_and_collected_once() -> None:
    """A chain of 300 must-links and 50 cannot-links across it: every cannot-link conflicts,
    each names the first 10 must-links and how many more (300 in all), and carries at most 100
    of their ids. (Collecting the chain's links anew per conflict made 100k annotations take
    20 s; bench_sideinfo.)"""
    links = [must(i, [i, i + 1]) for i in range(300)]
    cuts = [cannot(1000 + j, [j], [300 - j]) for j in range(50)]
    info = compile_(301, *links, *cuts)
    conflicts = [c for c in info.conflicts if c.kind == "must_link_in_cannot_link"]
    assert [c.annotation_ids[0] for c in conflicts] == [1000 + j for j in range(50)]
    for conflict in conflicts:
        assert conflict.annotation_ids[1:] == list(range(100))
        assert "must-link annotation(s) 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 290 more join" in (
            conflict.message
        )
    few = compile_(5, must(1, [0, 1]), must(2, [1, 2]), cannot(3, [0], [2])).conflicts[0]
    assert "must-link annotation(s) 1, 2 join" in few.message


def test_two_labels_joined_by_a_must_link_chain() -> None:
    info = compile_(5, label(1, [0], "A"), label(2, [3], "B"), must(3, [0, 2]), must(4, [2, 3]))
    (conflict,) = info.conflicts
    assert conflict.kind == "labels_joined_by_must_link"
    assert conflict.annotation_ids == [3, 4, 1, 2]
    assert "'A' and 'B'" in conflict.message


def test_soft_links_never_conflict() -> None:
    info = compile_(
        4,
        must(1, [0, 1], confidence=0.9),
        cannot(2, [0], [1]),
        label(3, [2], "A"),
        label(4, [3], "B"),
        must(5, [2, 3], confidence=0.7),
    )
    assert info.conflicts == []
    assert info.n_chunklets == 0


def _set_partitions(n: int):  # type: ignore[no-untyped-def]
    """Every partition of range(n), as a block id per item (restricted growth strings)."""

    def grow(prefix: list[int], top: int):  # type: ignore[no-untyped-def]
        if len(prefix) == n:
            yield list(prefix)
            return
        for block in range(top + 2):
            yield from grow([*prefix, block], max(top, block))

    yield from grow([], -1)


def _satisfiable(n: int, records: list[AnnotationRecord]) -> bool:
    label_of: dict[int, set[str]] = {}
    for r in records:
        if r.kind == "label":
            for i in r.payload["items"]:
                label_of.setdefault(i, set()).add(r.payload["label"])
    if any(len(v) > 1 for v in label_of.values()):
        return False
    for blocks in _set_partitions(n):
        ok = True
        for r in records:
            if r.kind == "must_link":
                ok &= len({blocks[i] for i in r.payload["items"]}) == 1
            elif r.kind == "cannot_link":
                ok &= all(
                    blocks[a] != blocks[b]
                    for a, b in itertools.product(r.payload["items_a"], r.payload["items_b"])
                )
        for i, j in itertools.combinations(label_of, 2):
            if label_of[i] != label_of[j] and blocks[i] == blocks[j]:
                ok = False
        if ok:
            return True
    return False


@pytest.mark.parametrize("seed", range(60))
def test_conflicts_are_reported_exactly_when_no_partition_satisfies_the_hard_constraints(
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    n = 6
    records: list[AnnotationRecord] = []
    for i in range(rng.integers(1, 6)):
        kind = rng.choice(["label", "must_link", "cannot_link"])
        items = rng.choice(n, size=rng.integers(2, 4), replace=False).tolist()
        if kind == "label":
            records.append(label(i, items[: 1 + rng.integers(0, 2)], str(rng.choice(["A", "B"]))))
        elif kind == "must_link":
            records.append(must(i, items))
        else:
            records.append(cannot(i, items[:1], items[1:]))
    info = compile_(n, *records)
    assert info.has_conflicts == (not _satisfiable(n, records)), records


def test_chunklets_match_connected_components_on_random_graphs() -> None:
    rng = np.random.default_rng(0)
    n = 200
    sets = [rng.choice(n, size=rng.integers(2, 6), replace=False).tolist() for _ in range(60)]
    info = compile_(n, *[must(i, s) for i, s in enumerate(sets)])
    adjacency = np.zeros((n, n), dtype=bool)
    for s in sets:
        for i, j in itertools.combinations(s, 2):
            adjacency[i, j] = adjacency[j, i] = True
    _, expected = connected_components(adjacency, directed=False)
    same = info.chunklets[:, None] == info.chunklets[None, :]
    np.testing.assert_array_equal(same, expected[:, None] == expected[None, :])


def test_polyline_side_scores_are_signed_distances() -> None:
    line = np.array([[0.0, 0.0], [10.0, 0.0]])  # drawn left to right: "left" is above
    coords = np.array([[5.0, 2.0], [5.0, -3.0], [-4.0, 3.0], [13.0, -4.0]])
    np.testing.assert_allclose(side_scores(coords, line), [2.0, -3.0, 5.0, -5.0])


def test_polygon_side_scores_are_positive_inside() -> None:
    square = np.array([[0.0, 0.0], [4.0, 0.0], [4.0, 4.0], [0.0, 4.0], [0.0, 0.0]])
    coords = np.array([[1.0, 2.0], [5.0, 2.0], [2.0, -1.0], [2.0, 2.0]])
    np.testing.assert_allclose(side_scores(coords, square), [1.0, -1.0, -1.0, 2.0])


def test_the_latest_boundary_is_in_force() -> None:
    coords = np.array([[0.0, 1.0], [0.0, -1.0]])
    records = [
        AnnotationRecord(
            1, "boundary", {"view_id": 7, "points": [[-1, 0], [1, 0]], "labels": ["up", "down"]}
        ),
        AnnotationRecord(
            2, "boundary", {"view_id": 7, "points": [[1, 0], [-1, 0]], "labels": ["south", "north"]}
        ),
    ]
    info = compile_side_information(
        n_items=2, revision=2, records=records, view_coordinates=lambda view_id: coords
    )
    assert info.boundary_labels == ["south", "north"]
    assert info.boundary_annotation_id == 2
    np.testing.assert_allclose(info.side_scores, [-1.0, 1.0])
    assert "earlier boundaries (1)" in info.notes[0]


def test_a_long_conflict_report_is_capped_with_a_note() -> None:
    records = [label(2 * i, [i], "A") for i in range(1500)]
    records += [label(2 * i + 1, [i], "B") for i in range(1500)]
    info = compile_(1500, *records)
    assert len(info.conflicts) == 1000
    assert "1,500 two_labels conflicts; the first 1,000 are listed" in info.notes


def test_labels_become_chained_must_links_and_sampled_cannot_links() -> None:
    from app.sideinfo.label_links import CANNOT_PAIRS_PER_CLASS_PAIR, label_links

    labels = np.array([0, 0, 0, -1, 1, 1, 2] + [2] * 400)
    must, cannot = label_links(labels, np.random.default_rng(0))
    assert len(must) == 2 + 1 + 400  # k - 1 per class
    assert (labels[must[:, 0]] == labels[must[:, 1]]).all()
    assert (labels[cannot[:, 0]] != labels[cannot[:, 1]]).all()
    assert (labels[cannot] >= 0).all()
    # Classes 0 and 1 have 3 x 2 possible pairs; the larger class pairs are capped.
    assert len(cannot) == 6 + 2 * CANNOT_PAIRS_PER_CLASS_PAIR
    pairs_between = {tuple(sorted((int(labels[a]), int(labels[b])))) for a, b in cannot}
    assert pairs_between == {(0, 1), (0, 2), (1, 2)}
