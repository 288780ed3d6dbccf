"""Generated slides with a ground truth, drawn tile by tile from pixel coordinates (a slide of
any side is never held whole): the inputs of ``bench_slide``.

* ``cells``: round "cells" on a jittered grid (pitch 400, radius 96-144) whose cytoplasm is
  bright in channel 2 and nucleus in channel 1, against a background bright in channel 4,
  with noise on every channel (4 x uint16);
* ``disks``: bright disks of radius 20 to 70 pixels (pitch 200) on a textured background
  (scikit-image's bundled gravel and brick, tiled), 3 x uint16: the objects are small beside
  the filters' largest sigma, so a superpixel just outside a disk sees it in its smoothed
  maps, which is where a halo of false positives comes from.

Each scene gives the truth of any pixels, the pixels of any tile, and scribbles placed by the
truth (two strokes in objects, two in the background).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.image_tasks import TEXTURES

TILE = 512


def _hash01(a: np.ndarray, b: np.ndarray, salt: float) -> np.ndarray:
    """A fixed pseudo-random number in [0, 1) per grid square (no state: any tile alone)."""
    value = np.sin(a * 12.9898 + b * 78.233 + salt) * 43758.5453
    return value - np.floor(value)


def _tile_grid(row: int, col: int, side: int) -> tuple[np.ndarray, np.ndarray]:
    h, w = min(TILE, side - row), min(TILE, side - col)
    rows, cols = np.mgrid[row : row + h, col : col + w]
    return rows, cols


def _noise(row: int, col: int, shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(row * 100_003 + col).normal(0.0, 1.0, shape).astype(np.float32)


def _stroke(label: str, x: float, y: float, half: float, radius: int) -> dict[str, Any]:
    points = [[x - half, y], [x + half, y]]
    return {"kind": "scribble", "label": label, "strokes": [{"points": points, "radius": radius}]}


@dataclass(frozen=True)
class Cells:
    name: str = "cells"
    channels: tuple[str, ...] = ("nucleus", "cytoplasm", "other", "stroma")
    pitch: int = 400
    object_label: str = "cell"

    def centre(self, gy: np.ndarray, gx: np.ndarray) -> tuple[np.ndarray, ...]:
        """(row, column, radius) of the cell of grid square (gy, gx): jittered off its centre."""
        jitter = _hash01(gy, gx, 0.0)
        cy = gy * self.pitch + self.pitch / 2 + (jitter - 0.5) * 0.2 * self.pitch
        cx = gx * self.pitch + self.pitch / 2 + np.cos(gy * 4.1 + gx * 7.7) * 0.1 * self.pitch
        radius = self.pitch * (0.3 + 0.06 * np.sin(gy * 3.3 + gx * 1.7))
        return cy, cx, radius

    def truth_of(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """1 inside a cell, 0 outside."""
        cy, cx, radius = self.centre(rows // self.pitch, cols // self.pitch)
        return ((rows - cy) ** 2 + (cols - cx) ** 2 < radius**2).astype(np.uint8)

    def tile_pixels(self, row: int, col: int, side: int) -> np.ndarray:
        """(4, h, w) uint16 of the tile at (row, col)."""
        rows, cols = _tile_grid(row, col, side)
        cell = self.truth_of(rows, cols).astype(np.float32)
        noise = _noise(row, col, (4, *rows.shape))
        planes = np.stack(
            [
                600 + 900 * cell + 120 * noise[0],
                3_000 + 18_000 * cell + 2_500 * noise[1],
                800 + 150 * noise[2],
                9_000 - 6_000 * cell + 1_200 * noise[3],
            ]
        )
        return np.clip(planes, 0, 65_535).astype(np.uint16)

    def scribbles(self, side: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for gy, gx in ((3, 4), (int(side / self.pitch) - 2, 5)):
            cy, cx, _ = (float(v) for v in self.centre(np.array(gy), np.array(gx)))
            rows, cols = np.mgrid[int(cy) - 10 : int(cy) + 10, int(cx) - 50 : int(cx) + 50]
            assert self.truth_of(rows, cols).all(), "a cell stroke must lie in a cell"
            out.append(_stroke(self.object_label, cx, cy, 40, 8))
        out += _corner_strokes(self, side)
        return out


@dataclass(frozen=True)
class Disks:
    name: str = "disks"
    channels: tuple[str, ...] = ("signal", "membrane", "tissue")
    pitch: int = 200
    object_label: str = "disk"

    def centre(self, gy: np.ndarray, gx: np.ndarray) -> tuple[np.ndarray, ...]:
        """(row, column, radius) of the disk of grid square (gy, gx): radius 20 to 70, the
        centre within a tenth of the pitch of the square's, so a disk never leaves it."""
        cy = gy * self.pitch + self.pitch / 2 + (_hash01(gy, gx, 1.0) - 0.5) * 0.2 * self.pitch
        cx = gx * self.pitch + self.pitch / 2 + (_hash01(gy, gx, 2.0) - 0.5) * 0.2 * self.pitch
        radius = 20.0 + 50.0 * _hash01(gy, gx, 3.0)
        return cy, cx, radius

    def truth_of(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """1 inside a disk, 0 outside."""
        cy, cx, radius = self.centre(rows // self.pitch, cols // self.pitch)
        return ((rows - cy) ** 2 + (cols - cx) ** 2 < radius**2).astype(np.uint8)

    def tile_pixels(self, row: int, col: int, side: int) -> np.ndarray:
        """(3, h, w) uint16: the disks bright in the first channel and a little in the second,
        every channel textured where there is no disk."""
        rows, cols = _tile_grid(row, col, side)
        disk = self.truth_of(rows, cols).astype(np.float32)
        gravel = TEXTURES["gravel"]
        brick = TEXTURES["brick"]
        rough = gravel[rows % gravel.shape[0], cols % gravel.shape[1]].astype(np.float32) / 255
        bricks = brick[rows % brick.shape[0], cols % brick.shape[1]].astype(np.float32) / 255
        noise = _noise(row, col, (3, *rows.shape))
        background = 1 - disk
        planes = np.stack(
            [
                2_000 + 9_000 * rough * background + 24_000 * disk + 900 * noise[0],
                3_000 + 6_000 * bricks * background + 5_000 * disk + 700 * noise[1],
                6_000 + 14_000 * rough * bricks * background + 1_200 * noise[2],
            ]
        )
        return np.clip(planes, 0, 65_535).astype(np.uint16)

    def scribbles(self, side: int) -> list[dict[str, Any]]:
        """Strokes across the two largest disks near (3, 4) and near the bottom left."""
        out: list[dict[str, Any]] = []
        squares = side // self.pitch
        for gy0, gx0 in ((3, 4), (squares - 4, 5)):
            gy, gx = np.mgrid[gy0 : gy0 + 3, gx0 : gx0 + 3]
            cy, cx, radius = self.centre(gy, gx)
            best = int(np.argmax(radius))
            y, x, r = float(cy.flat[best]), float(cx.flat[best]), float(radius.flat[best])
            half = r * 0.6
            rows, cols = np.mgrid[int(y) - 6 : int(y) + 6, int(x - half) - 6 : int(x + half) + 6]
            assert self.truth_of(rows, cols).all(), "a disk stroke must lie in a disk"
            out.append(_stroke(self.object_label, x, y, half, 5))
        out += _corner_strokes(self, side)
        return out


def _corner_strokes(scene: SlideScene, side: int) -> list[dict[str, Any]]:
    """Two background strokes at grid corners, where no object reaches."""
    out = []
    for y in (scene.pitch * 2, side - scene.pitch * 3):
        x = scene.pitch * 5
        rows, cols = np.mgrid[y - 20 : y + 20, x - 30 : x + 30]
        assert not scene.truth_of(rows, cols).any(), "a background stroke must miss the objects"
        out.append(_stroke("background", x, y, 10, 6))
    return out


SlideScene = Cells | Disks
SCENES: dict[str, SlideScene] = {"cells": Cells(), "disks": Disks()}
