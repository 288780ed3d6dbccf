"""Annotations drawn on an image (scribbles, and links between strokes) are stored as strokes in
pixel coordinates, so they survive a new featurization; at compile time they become the items
under them (the engine's `items_under` rule) and then ordinary label and link records."""

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.engine.image.strokes import items_under, items_under_strokes, rasterize_strokes
from app.sideinfo.model import CANNOT_LINK, LABEL, MUST_LINK, SCRIBBLE, AnnotationRecord


def drawn_on_image(record: AnnotationRecord) -> bool:
    return record.kind == SCRIBBLE or any(k in record.payload for k in ("strokes", "strokes_a"))


Under = Callable[[list[dict[str, Any]]], list[int]]


def under_whole_map(item_of_pixel: NDArray[np.int32], n_items: int) -> Under:
    """The items strokes take on an image whose map of items is held whole."""
    shape = (int(item_of_pixel.shape[0]), int(item_of_pixel.shape[1]))

    def under(strokes: list[dict[str, Any]]) -> list[int]:
        mask = rasterize_strokes(strokes, shape)
        return items_under(mask, item_of_pixel, n_items).tolist()

    return under


def under_slide(
    shape: tuple[int, int],
    read_items: Callable[[tuple[int, int], tuple[int, int]], NDArray[np.integer]],
    n_items: int,
    sizes: NDArray[np.int64],
) -> Under:
    """The items strokes take on a slide: its map read only under the strokes."""

    def under(strokes: list[dict[str, Any]]) -> list[int]:
        return items_under_strokes(strokes, shape, read_items, n_items, sizes).tolist()

    return under


def resolve_strokes(records: Sequence[AnnotationRecord], under: Under) -> list[AnnotationRecord]:
    """`records` with every stroke-drawn one replaced by its item-based equivalent (dropped when
    it covers no item, or a link that no longer joins two items); ``under(strokes)``: the items
    they take."""

    out = []
    for record in records:
        if not drawn_on_image(record):
            out.append(record)
            continue
        payload = record.payload
        resolved: dict[str, Any]
        if record.kind == SCRIBBLE:
            items = under(payload["strokes"])
            if items and not payload.get("erase"):
                # Painting over earlier labels corrects them (as an eraser then a brush would),
                # rather than contradicting them: the erase comes first under the same id.
                out.append(AnnotationRecord(record.id, LABEL, {"items": items, "erase": True}))
                kind, resolved = LABEL, {"items": items, "label": payload["label"]}
            else:
                kind, resolved = LABEL, {"items": items, "erase": True}
            keep = bool(items)
        elif record.kind == MUST_LINK:
            kind, resolved = MUST_LINK, {"items": under(payload["strokes"])}
            keep = len(resolved["items"]) >= 2
        else:
            a, b = set(under(payload["strokes_a"])), set(under(payload["strokes_b"]))
            # An item under both sides cannot be apart from itself; it belongs to neither.
            kind = CANNOT_LINK
            resolved = {"items_a": sorted(a - b), "items_b": sorted(b - a)}
            keep = bool(resolved["items_a"]) and bool(resolved["items_b"])
        if keep:
            out.append(AnnotationRecord(record.id, kind, resolved, record.confidence))
    return out
