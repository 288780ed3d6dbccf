"""A run's mask written back beside the OME-Zarr image it was made from, as an NGFF label image
(`<image>/labels/<name>/`), so that napari, ilastik and QuPath show it over the source where
it lies. The levels are written band by band (each band's rows, then every 2nd, 4th, ... row
and column of them for the reduced levels), so a slide's mask is never held whole; the
`labels` group's list of label images gains the name. The Zarr format is the image's own (v2
for NGFF 0.4, v3 for 0.5).

`check_writable` is the import's check that the user's opt-in can be honoured: it writes and
removes a small object where the labels would go."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.store.sources.filesystems import filesystem, path_of, reading
from app.store.sources.images import SourceImage, zarr_group
from app.store.sources.source_types import SourceError

LABEL_CHUNK = 1024
PROBE = ".workbench-write-check"


def check_writable(image: SourceImage) -> None:
    """Refuse (SourceError) an image whose `labels/` cannot be written by these options."""
    if image.format != "ome-zarr":
        raise SourceError(
            f"{image.url}: labels are written back beside OME-Zarr images only (a TIFF has "
            "no place for them)"
        )
    fs = filesystem(image.protocol, image.options)
    labels = f"{path_of(image.url, image.protocol).rstrip('/')}/labels"
    try:
        with reading(image.url, image.options, "written (labels/)"):
            made = image.protocol == "file" and not fs.exists(labels)
            if made:  # a folder on disk must exist to hold the probe; it goes again after
                fs.makedirs(labels, exist_ok=True)
            fs.pipe_file(f"{labels}/{PROBE}", b"ok")
            fs.rm_file(f"{labels}/{PROBE}")
            if made:
                fs.rmdir(labels)
    except SourceError as exc:
        raise SourceError(f"labels cannot be written beside it: {exc}") from None


def write_label_image(
    image: SourceImage,
    name: str,
    bands: Iterator[tuple[int, NDArray[np.integer]]],
    band_rows: int,
    colours: Sequence[tuple[int, int, int]],
    properties: Sequence[dict[str, Any]],
) -> int:
    """Write ``bands`` ((first row, (rows, width) label values) in order, ``band_rows`` rows
    each but the last, a multiple of every level's step) as the label image ``name``; the
    number of levels written. Replaces a label image of that name."""

    height, width = image.height, image.width
    steps = [1]
    while max(height, width) // steps[-1] > LABEL_CHUNK and band_rows % (steps[-1] * 2) == 0:
        steps.append(steps[-1] * 2)
    v2 = _zarr_format(image) == 2
    with reading(image.url, image.options, "written (labels/)"):
        group = zarr_group(image.url, image.options, writable=True)
        labels = group.require_group("labels")
        target = labels.create_group(name, overwrite=True)
        arrays = [
            target.create_array(
                str(k),
                shape=(-(-height // step), -(-width // step)),
                dtype="uint16" if len(colours) < 65_535 else "uint32",
                chunks=(min(LABEL_CHUNK, band_rows // step), LABEL_CHUNK),
                fill_value=0,
            )
            for k, step in enumerate(steps)
        ]
        for start, band in bands:
            for array, step in zip(arrays, steps, strict=True):
                array[start // step : start // step + -(-band.shape[0] // step)] = band[
                    ::step, ::step
                ].astype(array.dtype)
        ome = _label_metadata(name, steps, colours, properties)
        if v2:
            target.attrs.update(ome)
            listed = list(labels.attrs.get("labels", []))
            labels.attrs["labels"] = [*[n for n in listed if n != name], name]
        else:
            target.attrs["ome"] = {"version": "0.5", **ome}
            listed = list((labels.attrs.get("ome") or {}).get("labels", []))
            labels.attrs["ome"] = {
                "version": "0.5",
                "labels": [*[n for n in listed if n != name], name],
            }
    return len(steps)


def _label_metadata(
    name: str,
    steps: list[int],
    colours: Sequence[tuple[int, int, int]],
    properties: Sequence[dict[str, Any]],
) -> dict[str, Any]:
    return {
        "multiscales": [
            {
                "version": "0.4",
                "name": name,
                "axes": [{"name": "y", "type": "space"}, {"name": "x", "type": "space"}],
                "datasets": [
                    {
                        "path": str(k),
                        "coordinateTransformations": [
                            {"type": "scale", "scale": [float(step), float(step)]}
                        ],
                    }
                    for k, step in enumerate(steps)
                ],
            }
        ],
        "image-label": {
            "version": "0.4",
            "colors": [
                {"label-value": value + 1, "rgba": [*colour, 255]}
                for value, colour in enumerate(colours)
            ],
            "properties": [{"label-value": k + 1, **p} for k, p in enumerate(properties)],
            "source": {"image": "../../"},
        },
    }


def _zarr_format(image: SourceImage) -> int:
    fs = filesystem(image.protocol, image.options)
    path = path_of(image.url, image.protocol).rstrip("/")
    with reading(image.url, image.options):
        return 3 if fs.exists(f"{path}/zarr.json") else 2


def label_names(image: SourceImage) -> list[str]:
    """The label images listed beside the image (for a test or a page)."""
    with reading(image.url, image.options):
        group = zarr_group(image.url, image.options)
        if "labels" not in group:
            return []
        attrs = dict(group["labels"].attrs)
    found = attrs.get("labels") or (attrs.get("ome") or {}).get("labels") or []
    return [str(n) for n in found] if isinstance(found, list) else json.loads(str(found))
