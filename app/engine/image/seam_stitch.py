"""Superpixels cut by a block's edge, joined again across it (DESIGN.md Sec. 9 and 12).

SLIC runs per block (``blockwise.py``), so without this every superpixel would end at its
block's edges: the block grid would be a line of superpixel borders across the picture, also
through a nucleus or a field the whole picture's SLIC would have kept in one piece. Blocks come
in row order; when one is done, each of its pieces along its top and left edges may join the
piece across the edge (in the block above, or before it) when

* they share at least half of the shorter one's run along the seam (a joint, not a corner
  that touches),
* they look alike to SLIC: their mean values (as SLIC compares them) are no further apart than
  their pixels spread about those means, ``|mean_a - mean_b|^2 <= (var_a + var_b) / 2`` (var:
  the mean squared distance to the piece's mean over every compared channel), so a piece of a
  nucleus never joins a piece of its background, and
* together they are no larger than ``JOINED_SUPERPIXELS`` superpixels of the picture's size.

Each piece joins at most one other (the pairs with the longest shared run first), so a piece's
final id is known as soon as its own block is done: a block's pieces join only pieces of blocks
already done, which keep their ids, and its other pieces take the next ids in order. Block-wise
and slide featurization stitch with this one class, block by block, so both give the same map.

A joined item's raw row is exact: means pooled by pixel count, spreads from the pooled second
moments (the means and spreads of every raw map over the joined pixels).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Int32Array = NDArray[np.int32]
Int64Array = NDArray[np.int64]
Float64Array = NDArray[np.float64]

# The largest joined item, in superpixels of the picture's size: SLIC's own ceiling
# (skimage's ``max_size_factor``). At 2, most pairs of full-sized pieces along a seam stayed
# apart (seams still 74-91 % superpixel borders, against 34-63 % at 3; bench_seams).
JOINED_SUPERPIXELS = 3.0
SHARED_RUN = 0.5  # of the shorter piece's run along the seam


@dataclass(frozen=True)
class BlockPieces:
    """One block's superpixels as SLIC left them, before stitching.

    * ``items``: (h, w) local ids 0..n-1; ``sizes``: (n,) pixels of each;
    * ``raw``: (n, k) each piece's means (then, with spreads, its spreads) of every raw map;
    * ``colour_mean``: (n, C) each piece's mean of the values SLIC compared, and
      ``colour_var``: (n,) their mean squared distance to it, summed over channels; only for
      the pieces touching the block's border (the only ones stitching compares), NaN inside.
    """

    items: Int32Array
    sizes: Int64Array
    raw: Float64Array
    colour_mean: Float64Array
    colour_var: Float64Array

    @classmethod
    def measure(
        cls,
        items: Int32Array,
        raw: Float64Array,
        compared: NDArray[np.floating],
    ) -> BlockPieces:
        """Pieces of ``items`` with their ``raw`` rows and the moments of ``compared`` (C, h, w),
        the values SLIC compared, over the pixels of border pieces only: a few percent of a
        block, where moments of every piece took float64 copies of the whole block per
        channel (about 80 MB per block thread on a slide)."""
        flat = items.ravel()
        n = raw.shape[0]
        sizes = np.bincount(flat, minlength=n).astype(np.int64)
        border = np.zeros(n, dtype=bool)
        border[np.concatenate([items[0], items[-1], items[:, 0], items[:, -1]])] = True
        at = np.flatnonzero(border[flat])
        owner = flat[at]
        means = np.full((n, compared.shape[0]), np.nan)
        spread = np.zeros(n)
        for k, channel in enumerate(compared.reshape(compared.shape[0], -1)):
            values = channel[at].astype(np.float64)
            means[border, k] = (np.bincount(owner, weights=values, minlength=n) / sizes)[border]
            spread += np.bincount(owner, weights=(values - means[owner, k]) ** 2, minlength=n)
        spread[~border] = np.nan
        return cls(items, sizes, raw, means, spread / sizes)


@dataclass(frozen=True)
class Joins:
    """Pieces of a block that joined an item of an earlier block: ``into`` (m,) the item's
    final id, ``pieces`` (m,) the block's local id, ``rows`` (m, k) the joined item's raw row."""

    into: Int64Array
    pieces: Int64Array
    rows: Float64Array


@dataclass(frozen=True)
class StitchedBlock:
    """A block's final ids (h, w) and of each local piece (n,), the raw rows of its new items
    (in id order, from ``first_id`` on) and what joined earlier items."""

    ids: Int32Array
    final: Int64Array
    first_id: int
    new_pieces: Int64Array  # local ids of the new items, in id order
    new_rows: Float64Array
    joins: Joins


@dataclass
class _Open:
    """An item along a done block's bottom or right edge that has joined nothing yet."""

    size: int
    raw: Float64Array
    colour_mean: Float64Array
    colour_var: float


class SeamStitcher:
    """Stitch blocks given in row order (each row of blocks cut into the same columns).

    ``superpixel_pixels``: the picture's pixels per superpixel (SLIC's, for the whole picture);
    ``with_std``: raw rows hold spreads after the means (pooled as spreads)."""

    def __init__(self, superpixel_pixels: float, with_std: bool) -> None:
        self.max_pixels = JOINED_SUPERPIXELS * superpixel_pixels
        self.with_std = with_std
        self.n_items = 0
        self._open: dict[int, _Open] = {}
        self._above: dict[int, Int64Array] = {}  # column -> bottom row of final ids
        # (row, column, right column of final ids) of the block done last
        self._before: tuple[int, int, Int64Array] | None = None

    def add(self, row: int, col: int, pieces: BlockPieces) -> StitchedBlock:
        """Stitch the block at (``row``, ``col``) to the blocks above and before it."""
        items = pieces.items
        edges: list[tuple[Int64Array, Int32Array]] = []
        if col in self._above:
            edges.append((self._above[col], items[0]))
        if self._before is not None and self._before[0] == row:
            edges.append((self._before[2], items[:, 0]))
        into = self._choose(edges, pieces)

        joined = into >= 0
        new_pieces = np.flatnonzero(~joined).astype(np.int64)
        first_id = self.n_items
        final = into.copy()
        final[new_pieces] = first_id + np.arange(new_pieces.size)
        self.n_items += int(new_pieces.size)
        ids = final[items].astype(np.int32)

        pieces_joined = np.flatnonzero(joined).astype(np.int64)
        rows = np.empty((pieces_joined.size, pieces.raw.shape[1]))
        for j, piece in enumerate(pieces_joined):
            earlier = self._open.pop(int(into[piece]))
            size = int(pieces.sizes[piece])
            rows[j] = self._pooled(earlier.size, earlier.raw, size, pieces.raw[piece])
        self._close_done(col)
        wide = ids.astype(np.int64)
        for piece in np.unique(np.concatenate([items[-1], items[:, -1]])).tolist():
            if not joined[piece]:
                self._open[int(final[piece])] = _Open(
                    int(pieces.sizes[piece]),
                    pieces.raw[piece],
                    pieces.colour_mean[piece],
                    float(pieces.colour_var[piece]),
                )
        self._above[col] = wide[-1]
        self._before = (row, col, wide[:, -1])
        return StitchedBlock(
            ids=ids,
            final=final,
            first_id=first_id,
            new_pieces=new_pieces,
            new_rows=pieces.raw[new_pieces],
            joins=Joins(into[pieces_joined], pieces_joined, rows),
        )

    def _close_done(self, col: int) -> None:
        """Forget the open items no block to come touches: the bottom row of the block above
        (this block was its only one below) and the right column of the block before, but for
        what lies on its bottom row too (the block below it is still to come)."""
        done: set[int] = set()
        if col in self._above:
            done.update(np.unique(self._above[col]).tolist())
        if self._before is not None:
            _, before_col, right = self._before
            below_pending = set(np.unique(self._above[before_col]).tolist())
            done.update(set(np.unique(right).tolist()) - below_pending)
        for item in done:
            self._open.pop(item, None)

    def _choose(
        self, edges: list[tuple[Int64Array, Int32Array]], pieces: BlockPieces
    ) -> Int64Array:
        """For each local piece, the earlier item it joins, or -1."""
        into = np.full(pieces.raw.shape[0], -1, dtype=np.int64)
        candidates: list[tuple[int, int, int]] = []  # (-shared run, earlier, piece)
        for seam, side in edges:
            earlier_ids, earlier_runs = np.unique(seam, return_counts=True)
            piece_ids, piece_runs = np.unique(side, return_counts=True)
            run_of_earlier = dict(zip(earlier_ids.tolist(), earlier_runs.tolist(), strict=True))
            run_of_piece = dict(zip(piece_ids.tolist(), piece_runs.tolist(), strict=True))
            keys, shared = np.unique(
                seam * np.int64(pieces.raw.shape[0]) + side.astype(np.int64), return_counts=True
            )
            for key, run in zip(keys.tolist(), shared.tolist(), strict=True):
                earlier, piece = divmod(key, pieces.raw.shape[0])
                shorter = min(run_of_earlier[earlier], run_of_piece[piece])
                if earlier in self._open and run >= SHARED_RUN * shorter:
                    candidates.append((-run, earlier, piece))
        taken: set[int] = set()
        for _, earlier, piece in sorted(candidates):
            if earlier in taken or into[piece] >= 0:
                continue
            if self._alike(self._open[earlier], pieces, piece):
                into[piece] = earlier
                taken.add(earlier)
        return into

    def _alike(self, earlier: _Open, pieces: BlockPieces, piece: int) -> bool:
        if earlier.size + int(pieces.sizes[piece]) > self.max_pixels:
            return False
        gap = float(np.sum((earlier.colour_mean - pieces.colour_mean[piece]) ** 2))
        return gap <= (earlier.colour_var + float(pieces.colour_var[piece])) / 2

    def _pooled(self, n_a: int, row_a: Float64Array, n_b: int, row_b: Float64Array) -> Float64Array:
        """The raw row of the pixels of both pieces: pooled means (and spreads)."""
        total = n_a + n_b
        if not self.with_std:
            return (n_a * row_a + n_b * row_b) / total
        half = row_a.shape[0] // 2
        mean_a, mean_b = row_a[:half], row_b[:half]
        mean = (n_a * mean_a + n_b * mean_b) / total
        second = n_a * (row_a[half:] ** 2 + (mean_a - mean) ** 2)
        second += n_b * (row_b[half:] ** 2 + (mean_b - mean) ** 2)
        return np.concatenate([mean, np.sqrt(second / total)])
