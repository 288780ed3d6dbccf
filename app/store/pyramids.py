"""Deep Zoom pyramids in the array store: every level of an image's picture (RGB, uint8), of
its measured channels (as measured, so a viewer can colour and stretch each one), and of a
run's cluster mask (int32), each in square chunks of `CHUNK` pixels, so a viewer's tile reads
at most four chunks of one level (`app/engine/image/deep_zoom.py` has the levels)."""

import math
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session

from app.store import chunks
from app.store.writers import TiledWriter

CHUNK = 256  # a Deep Zoom tile with its overlap (254 + 2) spans at most two chunks a side
PICTURE = "picture_level_"  # + level: a dataset's picture
MASK = "mask_level_"  # + level: a run's cluster mask
# + level: a slide's item of every pixel (int32), kept at every level so that a run's mask
# tile is its labels looked up there, with no mask stored per run.
ITEMS = "items_level_"
# + level: an image's measured channels (h, w, C) in their own dtype, halved by averaging. A
# slide's full level is its stored pixels, not a copy.
CHANNELS = "channels_level_"


def _kind(owner_is_run: bool, level: int, layer: str = PICTURE) -> str:
    """``layer``: a dataset's pyramid (PICTURE, ITEMS, CHANNELS); a run has only its MASK."""
    return f"{MASK if owner_is_run else layer}{level}"


def write_levels(
    *,
    session: Session,
    levels: Iterable[tuple[int, NDArray[np.generic]]],
    dataset_id: int | None = None,
    run_id: int | None = None,
    layer: str = PICTURE,
) -> None:
    """Every (level, pixels) of a dataset's pyramid (``layer``: its picture's unless said), or
    of a run's mask when ``run_id``."""
    for level, pixels in levels:
        chunks.write_tiled(
            session=session,
            dataset_id=dataset_id,
            run_id=run_id,
            kind=_kind(run_id is not None, level, layer),
            image=pixels,
            tile=CHUNK,
        )


@contextmanager
def level_writer(
    *,
    session: Session,
    level: int,
    shape: tuple[int, ...],
    dtype: str | np.dtype,
    dataset_id: int | None = None,
    run_id: int | None = None,
    layer: str = PICTURE,
) -> Iterator[TiledWriter]:
    """One level of a pyramid too large to hold, written band by band; level 0 last.
    ``layer``: which of a dataset's pyramids (its picture's unless said)."""
    with chunks.tiled_writer(
        session=session,
        dataset_id=dataset_id,
        run_id=run_id,
        kind=_kind(run_id is not None, level, layer),
        shape=shape,
        dtype=dtype,
        tile=CHUNK,
    ) as writer:
        yield writer


def has_levels(
    *,
    session: Session,
    dataset_id: int | None = None,
    run_id: int | None = None,
    layer: str = PICTURE,
) -> bool:
    """Whether the pyramid is stored (its level 0, written last, is there)."""
    kind = _kind(run_id is not None, 0, layer)
    return chunks.stored(session, dataset_id, kind, run_id) is not None


def read_level_region(
    *,
    session: Session,
    level: int,
    rows: tuple[int, int],
    columns: tuple[int, int],
    dataset_id: int | None = None,
    run_id: int | None = None,
    layer: str = PICTURE,
) -> NDArray[np.integer] | None:
    """A region of one level, or None when that level is not stored."""
    return chunks.read_region(
        session=session,
        dataset_id=dataset_id,
        run_id=run_id,
        kind=_kind(run_id is not None, level, layer),
        rows=rows,
        columns=columns,
    )


# Rows a band-wise pyramid reads and writes at once: whole chunks, and even, so every 2 x 2
# block of a level lies in one band.
BAND = 8 * CHUNK

Bands = Callable[[int, int], NDArray[np.integer]]


def write_levels_in_bands(
    *,
    session: Session,
    width: int,
    height: int,
    full: Bands,
    halve: Callable[[Any], NDArray[Any]],
    dataset_id: int | None = None,
    layer: str = PICTURE,
    full_stored: bool = False,
    staging: chunks.Staging | None = None,
) -> None:
    """A pyramid too large to hold (a slide's picture, channels or items), band by band:
    ``full(start, stop)`` gives rows [start, stop) of the full image; each level below is
    ``halve``d from the one above it as written, ``BAND`` rows at a time (as ``halve`` would
    halve the whole). ``full_stored``: the full level is stored already under another kind (a
    slide's map of items, or its pixels), so it is read, not copied. ``staging``: written
    there, for a dataset not yet inserted (a slide's upload). Deep Zoom's levels: the full
    image is level ceil(log2(max side)), each level below halves the sides, rounding up, down
    to 1 x 1."""
    top = max(0, math.ceil(math.log2(max(width, height))))
    read: Bands = full
    for level in range(top, -1, -1):
        scale = 2 ** (top - level)
        level_width, level_height = -(-width // scale), -(-height // scale)
        if level == top and full_stored:
            read = _halving(read, level_height, halve)
            continue
        first = read(0, min(BAND, level_height))
        shape = (level_height, level_width, *first.shape[2:])
        writing = (
            staging.tiled_writer(
                _kind(False, level, layer), shape=shape, dtype=first.dtype, tile=CHUNK
            )
            if staging is not None
            else level_writer(
                session=session,
                level=level,
                shape=shape,
                dtype=first.dtype,
                dataset_id=dataset_id,
                layer=layer,
            )
        )
        with writing as writer:
            for start in range(0, level_height, BAND):
                band = first if start == 0 else read(start, min(start + BAND, level_height))
                writer.write(start, 0, band)
        read = _halving(writer.read, level_height, halve)


def _halving(above: Bands, height: int, halve: Callable[[Any], NDArray[Any]]) -> Bands:
    """Rows [start, stop) of the level below the one of ``height`` rows that ``above`` reads."""

    def rows(start: int, stop: int) -> NDArray[np.integer]:
        return halve(above(2 * start, min(2 * stop, height)))

    return rows
