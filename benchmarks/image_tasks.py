"""Segmentation tasks with ground truth, built only from what ships with scikit-image, and
scribbles drawn from the truth: the inputs of benchmarks/bench_image.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import skimage
from scipy import ndimage as ndi
from skimage import draw
from skimage.io import imread

from app.engine.image.strokes import rasterize_strokes

SIZE = 256
RADIUS = 2  # scribble radius, pixels
SCRIBBLE_FRACTION = 0.025


# ---------------------------------------------------------------------------------------------
# Images with ground truth, from scikit-image's bundled files only


def bundled(name: str) -> np.ndarray:
    """A picture that ships inside scikit-image (never fetched): read from its data folder."""
    path = Path(skimage.__file__).parent / "data" / name
    if not path.exists():
        raise FileNotFoundError(f"{path} is not bundled with this scikit-image")
    return np.asarray(imread(path))


TEXTURES = {name: bundled(f"{name}.png") for name in ("brick", "grass", "gravel")}


def crop(texture: np.ndarray, rng: np.random.Generator, size: int = SIZE) -> np.ndarray:
    height, width = texture.shape[:2]
    r = int(rng.integers(0, height - size + 1))
    c = int(rng.integers(0, width - size + 1))
    return texture[r : r + size, c : c + size]


def noise_regions(n: int, rng: np.random.Generator, sigma: float = 24.0) -> np.ndarray:
    """Irregular regions: the argmax of n smoothed random noise fields (balanced shares)."""
    fields = np.stack(
        [ndi.gaussian_filter(rng.normal(size=(SIZE, SIZE)), sigma, mode="wrap") for _ in range(n)]
    )
    fields /= fields.std(axis=(1, 2), keepdims=True)
    return fields.argmax(axis=0).astype(np.int32)


def mosaic(names: tuple[str, ...], seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = noise_regions(len(names), rng)
    image = np.zeros((SIZE, SIZE), dtype=np.uint8)
    for k, name in enumerate(names):
        image[truth == k] = crop(TEXTURES[name], rng)[truth == k]
    return image, truth


def shapes(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Background 0, discs 1, polygons 2, with Gaussian colour noise (sd 45 of 255)."""
    rng = np.random.default_rng(seed)
    truth = np.zeros((SIZE, SIZE), dtype=np.int32)
    for _ in range(4):
        rr, cc = draw.disk(
            (rng.uniform(30, SIZE - 30), rng.uniform(30, SIZE - 30)),
            rng.uniform(14, 30),
            shape=truth.shape,
        )
        truth[rr, cc] = 1
    for _ in range(3):
        centre = rng.uniform(35, SIZE - 35, size=2)
        n = int(rng.integers(3, 7))
        angles = np.linspace(0, 2 * np.pi, n, endpoint=False) + rng.uniform(0, 2 * np.pi)
        angles += rng.uniform(-0.25, 0.25, n)
        radii = rng.uniform(18, 34, n)
        rr, cc = draw.polygon(
            centre[0] + radii * np.sin(angles), centre[1] + radii * np.cos(angles), truth.shape
        )
        truth[rr, cc] = 2
    colours = np.array([[110, 120, 110], [165, 105, 90], [95, 110, 170]], dtype=float)
    pixels = colours[truth] + rng.normal(0, 45, size=(SIZE, SIZE, 3))
    return np.clip(pixels, 0, 255).astype(np.uint8), truth


def silhouette(inside: str, outside: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A random star-shaped blob (low radial harmonics) of one texture on another."""
    rng = np.random.default_rng(seed)
    rows, cols = np.mgrid[:SIZE, :SIZE].astype(float)
    centre = rng.uniform(0.4, 0.6, size=2) * SIZE
    theta = np.arctan2(rows - centre[0], cols - centre[1])
    radius = np.full_like(theta, 0.28 * SIZE)
    for k in range(2, 6):
        radius += rng.normal(0, 0.05 * SIZE / k**0.5) * np.cos(k * theta + rng.uniform(0, 6.3))
    truth = (np.hypot(rows - centre[0], cols - centre[1]) < radius).astype(np.int32)
    image = np.where(truth == 1, crop(TEXTURES[inside], rng), crop(TEXTURES[outside], rng))
    return image.astype(np.uint8), truth


@dataclass
class Task:
    name: str
    classes: tuple[str, ...]
    make: Callable[[int], tuple[np.ndarray, np.ndarray]]


TASKS = [
    Task("mosaic-2", ("brick", "grass"), lambda s: mosaic(("brick", "grass"), s)),
    Task(
        "mosaic-3",
        ("brick", "grass", "gravel"),
        lambda s: mosaic(("brick", "grass", "gravel"), s),
    ),
    Task("shapes", ("background", "disc", "polygon"), shapes),
    Task(
        "silhouette-gravel/grass", ("grass", "gravel"), lambda s: silhouette("gravel", "grass", s)
    ),
    Task(
        "silhouette-brick/gravel", ("gravel", "brick"), lambda s: silhouette("brick", "gravel", s)
    ),
]


# ---------------------------------------------------------------------------------------------
# Scribbles from the truth


def ridge_walk(
    inside: np.ndarray,
    depth: np.ndarray,
    start: np.ndarray,
    heading: float,
    length: float,
    avoid: list[np.ndarray],
) -> list[np.ndarray]:
    """Points from `start` (excluded) that follow the ridge of `depth` (the distance to the
    region's edge) within `inside`, in steps of 4 pixels, keeping clear of `avoid` and of
    themselves, until about `length` is covered or the way is blocked."""
    step = 4.0
    points: list[np.ndarray] = []
    here = start.astype(float)
    travelled = 0.0
    turns = np.deg2rad(np.linspace(-60, 60, 9))
    height, width = inside.shape
    while travelled < length:
        best, best_score = None, -np.inf
        earlier = np.array(avoid + points[:-2]) if avoid or len(points) > 2 else None
        for turn in turns:
            angle = heading + turn
            q = here + step * np.array([np.sin(angle), np.cos(angle)])
            mid = (here + q) / 2
            if not all(
                0 <= p[0] <= height - 1
                and 0 <= p[1] <= width - 1
                and inside[round(p[0]), round(p[1])]
                for p in (q, mid)
            ):
                continue
            if earlier is not None and np.min(np.hypot(*(earlier - q).T)) < 2 * RADIUS + 4:
                continue
            score = depth[round(q[0]), round(q[1])] - 2.0 * abs(turn)
            if score > best_score:
                best, best_score = (q, angle), score
        if best is None:
            break
        here, heading = best
        points.append(here)
        travelled += step
    return points


def scribbles(
    truth: np.ndarray, n_classes: int, seed: int
) -> tuple[list[list[dict[str, Any]]], np.ndarray]:
    """Per class a few strokes (up to 4) along the ridges of its region eroded by a margin,
    together about SCRIBBLE_FRACTION of the pixels; and the seed image (0 = unscribbled,
    class + 1) exactly as the server rasterizes the strokes."""
    rng = np.random.default_rng(seed)
    budget = SCRIBBLE_FRACTION * truth.size / n_classes / (2 * RADIUS + 1)  # length per class
    strokes: list[list[dict[str, Any]]] = []
    seeds = np.zeros(truth.shape, dtype=np.int32)
    for c in range(n_classes):
        region = truth == c
        # The image border counts as an edge: strokes stay inside the picture.
        depth = ndi.distance_transform_edt(np.pad(region, 1))[1:-1, 1:-1]
        inside = depth > RADIUS + 3
        if not inside.any():  # a class too thin for a margin: scribble its deepest pixels
            inside = depth >= depth.max()
        class_strokes: list[dict[str, Any]] = []
        avoid: list[np.ndarray] = []
        left = budget
        for _ in range(4):
            free = inside.copy()
            for p in avoid:  # start away from the strokes so far
                free[max(0, round(p[0]) - 12) : round(p[0]) + 13,
                     max(0, round(p[1]) - 12) : round(p[1]) + 13] = False  # fmt: skip
            if not free.any() or left <= 0:
                break
            start = np.array(np.unravel_index(np.argmax(np.where(free, depth, -1)), depth.shape))
            heading = rng.uniform(0, 2 * np.pi)
            # At most half the class budget per stroke, so each class gets a few strokes.
            share = min(left, budget / 2)
            forward = ridge_walk(inside, depth, start, heading, share / 2, [*avoid, start])
            backward = ridge_walk(
                inside, depth, start, heading + np.pi, share - 4 * len(forward), avoid + forward
            )
            points = [*backward[::-1], start.astype(float), *forward]
            avoid += points
            left -= 4 * (len(points) - 1) + 2 * RADIUS
            class_strokes.append(
                {"points": [[float(p[1]), float(p[0])] for p in points], "radius": RADIUS}
            )
        strokes.append(class_strokes)
        seeds[rasterize_strokes(class_strokes, truth.shape)] = c + 1
    return strokes, seeds
