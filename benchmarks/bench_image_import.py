"""A slide imported by reference on a live server: how soon the expert sees it (printed, never
asserted).

A generated 16-bit, 4-channel, ``--side`` x ``--side`` tiled TIFF with reduced levels (each
half the last, down to one tile; the cells of `bench_slide`, written tile by tile, never held
whole) lies under a folder the server's IMPORT_SOURCES opens. The benchmark imports it and
asks, as the viewer does on opening it, for the descriptor, the preview tile (the level where
the slide fits one tile) and the full-resolution tile at the centre. Printed: seconds to 201,
from the 201 to each tile, the server's peak RSS growth, and beside them the floor: the same
windows read straight from the file with tifffile in this process. Target: the first tile
within 2 s of the 201.

With ``--upload`` the same file is also uploaded (the peer a user has without import by
reference) and the same tiles asked for once its 201 comes.

    .venv/bin/python -m benchmarks.bench_image_import [--side 20000] [--upload]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import tifffile

from app.engine.image.deep_zoom import DeepZoom
from benchmarks._peak_memory import with_peak_rss
from benchmarks._server import live_server
from benchmarks.slide_scenes import Cells

CELLS = Cells()

TILE = 512
TARGET_S = 2.0


def level_tile(level: int, row: int, col: int, height: int, width: int) -> np.ndarray:
    """(TILE, TILE, 4) uint16 of level ``level`` (full resolution sampled every 2^level
    pixels) at (row, col) of that level; zero beyond its edge."""
    step = 2**level
    h, w = min(TILE, height - row), min(TILE, width - col)
    rows, cols = np.mgrid[row : row + h, col : col + w] * step
    cell = CELLS.truth_of(rows, cols).astype(np.float32)
    noise = np.random.default_rng(level * 1_000_003 + row * 100_003 + col).normal(
        0.0, 1.0, (h, w, 4)
    ).astype(np.float32)  # fmt: skip
    planes = np.stack(
        [
            600 + 900 * cell + 120 * noise[..., 0],
            3_000 + 18_000 * cell + 2_500 * noise[..., 1],
            800 + 150 * noise[..., 2],
            9_000 - 6_000 * cell + 1_200 * noise[..., 3],
        ],
        axis=-1,
    )
    out = np.zeros((TILE, TILE, 4), dtype=np.uint16)
    out[:h, :w] = np.clip(planes, 0, 65_535).astype(np.uint16)
    return out


def write_pyramid(path: Path, side: int) -> int:
    """The slide with its reduced levels (SubIFDs); how many levels it has."""
    sizes = [side]
    while sizes[-1] > TILE:
        sizes.append((sizes[-1] + 1) // 2)

    def tiles(level: int) -> Iterator[np.ndarray]:
        n = sizes[level]
        for row in range(0, n, TILE):
            for col in range(0, n, TILE):
                yield level_tile(level, row, col, n, n)

    with tifffile.TiffWriter(path, bigtiff=True) as tiff:
        for level, n in enumerate(sizes):
            tiff.write(
                tiles(level),
                shape=(n, n, 4),
                dtype=np.uint16,
                tile=(TILE, TILE),
                photometric="minisblack",
                planarconfig="contig",
                subifds=len(sizes) - 1 if level == 0 else None,
                subfiletype=1 if level else 0,
            )
    return len(sizes)


def floor_seconds(path: Path, windows: list[tuple[int, int, int, int, int]]) -> float:
    """Reading the same windows (level, y0, y1, x0, x1) with tifffile and zarr, cold."""
    import zarr

    started = time.perf_counter()
    with tifffile.TiffFile(path) as tif:
        series = tif.series[0]
        for level, y0, y1, x0, x1 in windows:
            np.asarray(zarr.open_array(series.aszarr(level=level), mode="r")[y0:y1, x0:x1])
    return time.perf_counter() - started


def ask_tiles(client: httpx.Client, dataset: int, zoom: DeepZoom) -> list[tuple[str, float]]:
    """The descriptor, the preview tile and the centre tile at full resolution, in that
    order: seconds from the call for each."""
    started = time.perf_counter()
    out = []
    preview = zoom.max_level
    while preview > 0 and max(zoom.level_size(preview)) > zoom.tile_size:
        preview -= 1
    centre_col, centre_row = (n // 2 for n in zoom.grid(zoom.max_level))
    for name, url in (
        ("descriptor", f"/datasets/{dataset}/image.dzi"),
        ("preview tile", f"/datasets/{dataset}/image_files/{preview}/0_0.png"),
        ("centre tile, full resolution",
         f"/datasets/{dataset}/image_files/{zoom.max_level}/{centre_col}_{centre_row}.png"),
    ):  # fmt: skip
        response = client.get(url)
        response.raise_for_status()
        out.append((name, time.perf_counter() - started))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--side", type=int, default=20_000)
    parser.add_argument("--upload", action="store_true")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-image-import-"))
    path = folder / "slide.tif"
    try:
        measure(args.side, args.upload, folder, path)
    finally:
        shutil.rmtree(folder)


def measure(side: int, upload: bool, folder: Path, path: Path) -> None:
    """Write the slide, import it (and upload it), print the table."""
    started = time.perf_counter()
    levels = write_pyramid(path, side)
    size = path.stat().st_size
    print(
        f"bench_image_import: {side:,} x {side:,} x 4 uint16 tiled TIFF, {levels} "
        f"levels, {size / 2**30:.2f} GiB, written in {time.perf_counter() - started:.0f} s "
        f"(cells of {CELLS.pitch} px)"
    )
    zoom = DeepZoom(side, side)
    sources = json.dumps({f"file://{folder}/": {}})
    rows: list[tuple[str, float, float, list[tuple[str, float]]]] = []
    with live_server(IMPORT_SOURCES=sources, MAX_UPLOAD_BYTES=str(2 * size)) as server:
        client = httpx.Client(base_url=server.base, headers=server.headers, timeout=3600)
        project = client.post("/projects", json={"name": "slides"}).json()["id"]
        response, seconds, rss = with_peak_rss(
            server.pid,
            lambda: client.post(
                f"/projects/{project}/datasets/import",
                json={"name": "slide", "url": f"file://{path}"},
            ),
            every_s=0.02,
        )
        response.raise_for_status()
        dataset = int(response.json()["id"])
        rows.append(("imported by reference", seconds, rss, ask_tiles(client, dataset, zoom)))
        client.delete(f"/datasets/{dataset}")  # its featurization stops
        if upload:
            with path.open("rb") as f:
                response, seconds, rss = with_peak_rss(
                    server.pid,
                    lambda: client.post(
                        f"/projects/{project}/datasets",
                        files={"file": ("slide.tif", f, "image/tiff")},
                    ),
                    every_s=0.05,
                )
            if response.status_code != 201:
                raise RuntimeError(f"the upload was refused: {response.text}")
            dataset = int(response.json()["id"])
            rows.append(("uploaded", seconds, rss, ask_tiles(client, dataset, zoom)))
    centre = (side // TILE // 2) * TILE
    floor = floor_seconds(
        path,
        [(levels - 1, 0, TILE, 0, TILE), (0, centre, centre + TILE, centre, centre + TILE)],
    )
    names = [name for name, _ in rows[0][3]]
    print(
        "| dataset | to 201 (s) | peak server RSS growth (MiB) | "
        + " | ".join(f"201 to {name} (s)" for name in names)
        + " |"
    )
    print("|---|---|---|" + "---|" * len(names))
    for label, took, grew, tiles in rows:
        print(
            f"| {label} | {took:.2f} | {grew / 2**20:.0f} | "
            + " | ".join(f"{t:.2f}" for _, t in tiles)
            + " |"
        )
    first = rows[0][3][1][1]
    print(
        f"first tile {first:.2f} s after the 201 (target < {TARGET_S:.0f} s); the same two "
        f"windows read straight from the file with tifffile: {floor:.2f} s"
    )


if __name__ == "__main__":
    main()
