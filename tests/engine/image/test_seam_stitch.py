"""Superpixels cut by a block's edge are joined across it (app/engine/image/seam_stitch.py):
when they share a run of the seam, look alike and stay under SLIC's size ceiling; each piece
joins at most one; joined rows equal the means and spreads of the joined pixels (brute force);
forgetting the open items no later block touches changes nothing."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from app.engine.image.seam_stitch import JOINED_SUPERPIXELS, BlockPieces, SeamStitcher


def _pieces(items: np.ndarray, maps: np.ndarray, compared: np.ndarray) -> BlockPieces:
    """A block's pieces with brute-force raw rows: each map's mean, then spread, per piece."""
    n = int(items.max()) + 1
    means = np.array([[maps[k][items == p].mean() for k in range(len(maps))] for p in range(n)])
    stds = np.array([[maps[k][items == p].std() for k in range(len(maps))] for p in range(n)])
    return BlockPieces.measure(items.astype(np.int32), np.hstack([means, stds]), compared)


def _stitch(
    stitcher: SeamStitcher,
    items: np.ndarray,
    maps: np.ndarray,
    compared: np.ndarray,
    cuts: tuple[list[int], list[int]],
) -> tuple[np.ndarray, np.ndarray]:
    """Stitch a picture cut at ``cuts`` (row and column edges) whose blocks' pieces are the
    connected ids of ``items`` within each block: the final map and raw rows, assembled as
    ``blockwise.superpixel_items`` does."""
    rows, cols = cuts
    final = np.empty(items.shape, dtype=np.int64)
    new_rows, joins = [], []
    for r0, r1 in itertools.pairwise(rows):
        for c0, c1 in itertools.pairwise(cols):
            _, local = np.unique(items[r0:r1, c0:c1], return_inverse=True)
            local = local.reshape(r1 - r0, c1 - c0)
            block = stitcher.add(
                r0,
                c0,
                _pieces(local, maps[:, r0:r1, c0:c1], compared[:, r0:r1, c0:c1]),
            )
            assert block.first_id == sum(len(r) for r in new_rows)
            final[r0:r1, c0:c1] = block.ids
            new_rows.append(block.new_rows)
            joins.append(block.joins)
    raw = np.concatenate(new_rows)
    for joined in joins:
        raw[joined.into] = joined.rows
    return final, raw


def _brute_rows(final: np.ndarray, maps: np.ndarray) -> np.ndarray:
    n = int(final.max()) + 1
    assert sorted(np.unique(final)) == list(range(n))
    means = np.array([[m[final == i].mean() for m in maps] for i in range(n)])
    stds = np.array([[m[final == i].std() for m in maps] for i in range(n)])
    return np.hstack([means, stds])


def _two_blocks(shift: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A 4 x 8 picture, one piece per 4 x 4 block; the right block's colour shifted."""
    rng = np.random.default_rng(seed)
    items = np.zeros((4, 8), dtype=np.int64)
    items[:, 4:] = 1
    compared = rng.normal(size=(3, 4, 8))
    compared[:, :, 4:] += shift
    maps = rng.normal(size=(2, 4, 8)) * [[[1.0]], [[5.0]]]
    return items, maps, compared


def test_alike_pieces_join_with_exact_means_and_spreads() -> None:
    items, maps, compared = _two_blocks(shift=0.0)
    final, raw = _stitch(SeamStitcher(16, True), items, maps, compared, ([0, 4], [0, 4, 8]))
    assert np.all(final == 0)
    np.testing.assert_allclose(raw, _brute_rows(final, maps), rtol=1e-12)


def test_pieces_that_differ_stay_apart() -> None:
    items, maps, compared = _two_blocks(shift=3.0)
    final, raw = _stitch(SeamStitcher(16, True), items, maps, compared, ([0, 4], [0, 4, 8]))
    assert np.array_equal(final, items)
    np.testing.assert_allclose(raw, _brute_rows(final, maps), rtol=1e-12)


def test_a_join_never_outgrows_slics_ceiling() -> None:
    items, maps, compared = _two_blocks(shift=0.0)
    # 32 pixels together: allowed at 32 / JOINED_SUPERPIXELS pixels per superpixel, not below.
    at_ceiling = 32 / JOINED_SUPERPIXELS
    cuts = ([0, 4], [0, 4, 8])
    assert np.all(_stitch(SeamStitcher(at_ceiling, True), items, maps, compared, cuts)[0] == 0)
    below = SeamStitcher(at_ceiling * 0.99, True)
    assert np.array_equal(_stitch(below, items, maps, compared, cuts)[0], items)


def test_pieces_that_meet_at_a_corner_stay_apart() -> None:
    # Across the seam at column 4: the left piece 1 runs rows 3..7, the right piece 2 rows
    # 0..3; they share row 3 only, under half of the shorter run (4).
    items = np.zeros((8, 8), dtype=np.int64)
    items[3:, :4] = 1
    items[:4, 4:] = 2
    items[4:, 4:] = 3
    compared = np.random.default_rng(1).normal(size=(1, 8, 8))
    compared[:, items == 0] += 50.0  # piece 0 alike nothing
    compared[:, items == 3] += 50.0  # nor piece 3
    maps = np.random.default_rng(2).normal(size=(1, 8, 8))
    final, _ = _stitch(SeamStitcher(100, True), items, maps, compared, ([0, 8], [0, 4, 8]))
    assert np.unique(final).size == 4
    # The same pieces sharing rows 3..5 of a run of 4 (half of it or more) join.
    items[:6, 4:] = 2
    items[6:, 4:] = 3
    compared = np.random.default_rng(1).normal(size=(1, 8, 8))
    compared[:, items == 0] += 50.0
    compared[:, items == 3] += 50.0
    final, _ = _stitch(SeamStitcher(100, True), items, maps, compared, ([0, 8], [0, 4, 8]))
    assert np.unique(final).size == 3
    assert np.unique(final[items == 1]).tolist() == np.unique(final[items == 2]).tolist()


def test_a_piece_joins_at_most_one_and_the_longest_run_first() -> None:
    # One piece on the left along all 8 rows; two alike ones on the right, rows 0..2 and 3..7.
    items = np.zeros((8, 8), dtype=np.int64)
    items[:3, 4:] = 1
    items[3:, 4:] = 2
    compared = np.random.default_rng(3).normal(size=(2, 8, 8))
    maps = np.random.default_rng(4).normal(size=(1, 8, 8))
    final, _ = _stitch(SeamStitcher(100, False), items, maps, compared, ([0, 8], [0, 4, 8]))
    assert np.unique(final).size == 2
    assert np.all(final[items == 2] == final[0, 0])
    assert np.all(final[items == 1] != final[0, 0])


def _voronoi_picture(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An 18 x 24 picture of convex pieces, the left half dark and the right half bright."""
    rng = np.random.default_rng(seed)
    height, width = 18, 24
    seeds = rng.uniform(0, [height, width], size=(40, 2))
    rows, cols = np.mgrid[:height, :width]
    distance = (rows[..., None] - seeds[:, 0]) ** 2 + (cols[..., None] - seeds[:, 1]) ** 2
    cells = distance.argmin(axis=2)
    half = cols >= width // 2
    items = cells * 2 + half  # a cell across the middle is two pieces
    compared = rng.normal(size=(2, height, width)) + 20.0 * half
    maps = rng.normal(size=(3, height, width))
    return items, maps, compared


class _NeverForgets(SeamStitcher):
    def _close_done(self, col: int) -> None:
        pass


@pytest.mark.parametrize("seed", range(6))
def test_a_grid_of_blocks_stitches_exactly_and_never_across_a_colour_edge(seed: int) -> None:
    items, maps, compared = _voronoi_picture(seed)
    cuts = ([0, 6, 12, 18], [0, 7, 12, 18, 24])
    final, raw = _stitch(SeamStitcher(12, True), items, maps, compared, cuts)
    np.testing.assert_allclose(raw, _brute_rows(final, maps), rtol=1e-10, atol=1e-12)
    half = np.zeros(items.shape, dtype=bool)
    half[:, 12:] = True
    for item in np.unique(final):
        assert np.unique(half[final == item]).size == 1
    n_pieces = sum(
        np.unique(items[r0:r1, c0:c1]).size
        for r0, r1 in zip(cuts[0][:-1], cuts[0][1:], strict=True)
        for c0, c1 in zip(cuts[1][:-1], cuts[1][1:], strict=True)
    )
    assert int(final.max()) + 1 < n_pieces  # some pieces joined
    # Forgetting the items no block to come touches changes nothing.
    again, raw_again = _stitch(_NeverForgets(12, True), items, maps, compared, cuts)
    assert np.array_equal(again, final)
    assert np.array_equal(raw_again, raw)


def test_colour_moments_are_exact_on_border_pieces_and_not_taken_inside() -> None:
    """Only pieces touching the block's border are ever compared, so only theirs are taken."""
    rng = np.random.default_rng(3)
    items = np.repeat(np.repeat(np.arange(16).reshape(4, 4), 3, axis=0), 3, axis=1)  # 12 x 12
    compared = rng.normal(size=(3, 12, 12)).astype(np.float32)
    pieces = _pieces(items, rng.normal(size=(1, 12, 12)), compared)
    inside = {5, 6, 9, 10}
    for piece in range(16):
        if piece in inside:
            assert np.isnan(pieces.colour_mean[piece]).all() and np.isnan(pieces.colour_var[piece])
            continue
        pixels = compared[:, items == piece].astype(np.float64)  # (3, 9)
        mean = pixels.mean(axis=1)
        np.testing.assert_allclose(pieces.colour_mean[piece], mean, rtol=1e-12)
        spread = ((pixels - mean[:, None]) ** 2).sum(axis=0).mean()
        np.testing.assert_allclose(pieces.colour_var[piece], spread, rtol=1e-12)
    assert pieces.sizes.tolist() == [9] * 16
