"""An image read in place: an OME-Zarr image (NGFF 0.4 or 0.5: a multiscale group, channels
named by its `omero` metadata) or a tiled (OME-)TIFF with or without pyramid levels, on the
local filesystem or in S3. Reads are windows of one resolution level, fetching only the chunks
or tiles they overlap; nothing is held open between reads but a few parsed TIFF headers
(`_open_tiff`, keyed by the object's version, so a changed file is parsed again).

`inspect_image` reads metadata only. `SourceImage.read(level, rows, cols)` gives (h, w, C)
pixels in the source's dtype: time and depth, when the image has them, at their first index.
Failures are `SourceError`s naming the object and no option value (`filesystems.reading`)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.store.sources.filesystems import filesystem, normal_path, path_of, reading, version
from app.store.sources.source_types import SourceError

IMAGE_FORMATS = ("ome-zarr", "tiff")
TIFF_SUFFIXES = (".tif", ".tiff", ".ome.tif", ".ome.tiff", ".btf", ".svs")
OME_ZARR_METADATA = ("zarr.json", ".zattrs")
SPATIAL = ("y", "x")


@dataclass(frozen=True)
class SourceLevel:
    height: int
    width: int
    key: str  # OME-Zarr: the level's array path in the group; TIFF: the level's index


@dataclass(frozen=True)
class SourceImage:
    """An image where it lives; level 0 is full resolution, each next one smaller."""

    protocol: str
    options: dict[str, Any] = field(repr=False, hash=False)  # never shown
    format: str  # "ome-zarr" | "tiff"
    url: str
    version: str
    levels: tuple[SourceLevel, ...]
    axes: str  # the stored axes, e.g. "cyx", "tczyx", "yxs" (s: a TIFF's samples)
    channels: tuple[str, ...]
    dtype: str
    photo: bool  # an 8-bit RGB(A) picture, not measured channels
    size: int  # bytes of the object (TIFF), or 0 (a Zarr group has no one size)

    @property
    def height(self) -> int:
        return self.levels[0].height

    @property
    def width(self) -> int:
        return self.levels[0].width

    def record(self) -> dict[str, Any]:
        """What ``meta.source`` keeps: enough to read it again and to see it changed."""
        return {
            "url": self.url,
            "format": self.format,
            "version": self.version,
            "levels": [[lv.height, lv.width, lv.key] for lv in self.levels],
            "axes": self.axes,
            "channels": list(self.channels),
            "dtype": self.dtype,
            "photo": self.photo,
            "size": self.size,
        }

    @classmethod
    def from_record(
        cls, protocol: str, options: dict[str, Any], record: dict[str, Any]
    ) -> SourceImage:
        return cls(
            protocol=protocol,
            options=options,
            format=record["format"],
            url=record["url"],
            version=record["version"],
            levels=tuple(SourceLevel(int(h), int(w), str(k)) for h, w, k in record["levels"]),
            axes=record["axes"],
            channels=tuple(record["channels"]),
            dtype=record["dtype"],
            photo=bool(record["photo"]),
            size=int(record.get("size", 0)),
        )

    def read(
        self, level: int, rows: tuple[int, int], cols: tuple[int, int], step: int = 1
    ) -> NDArray[Any]:
        """Pixels [rows) x [cols) of ``level`` as (h, w, C), clipped to the level; with
        ``step``, every step-th row and column (decoded a chunk at a time: the memory of the
        result, not of the window)."""
        lv = self.levels[level]
        r0, r1 = max(0, rows[0]), min(lv.height, rows[1])
        c0, c1 = max(0, cols[0]), min(lv.width, cols[1])
        if r1 <= r0 or c1 <= c0:
            return np.zeros((0, 0, len(self.channels)), dtype=self.dtype)
        with reading(self.url, self.options):
            array = self._array(lv)
            index = tuple(
                slice(r0, r1, step) if a == "y" else slice(c0, c1, step) if a == "x" else
                slice(None) if a in "cs" else 0
                for a in self.axes
            )  # fmt: skip
            window = np.asarray(array[index])
        kept = [a for a in self.axes if a in "cyxs"]
        channel = next((a for a in kept if a in "cs"), None)
        order = [kept.index("y"), kept.index("x")]
        if channel is None:
            return window.transpose(order)[:, :, None]
        return window.transpose([*order, kept.index(channel)])

    def current_version(self) -> str | None:
        return current_image_version(self.protocol, self.options, self.url, self.format)

    def _array(self, level: SourceLevel) -> Any:
        if self.format == "ome-zarr":
            return zarr_group(self.url, self.options)[level.key]
        return _open_tiff(self.protocol, self.options, self.url, self.version)[1][int(level.key)]


def image_format(protocol: str, path: str, options: dict[str, Any], format: str) -> str | None:
    """The image format ``path`` holds ("tiff", "ome-zarr"), as said or (``format`` "auto")
    as found; None for anything else (a table, perhaps)."""
    if format in IMAGE_FORMATS:
        return format
    if format != "auto":
        return None
    fs = filesystem(protocol, options)
    path = normal_path(fs, path)
    with reading(f"{protocol}://{path}", options, "inspected"):
        fs.invalidate_cache(path)
        return detect_image(fs, path, fs.info(path).get("type") == "directory")


@dataclass(frozen=True)
class ListedImage:
    url: str
    format: str  # "tiff" | "ome-zarr"
    version: str | None  # a TIFF's from the listing; an OME-Zarr group's is read at inspection


MAX_LISTING_DEPTH = 4  # folders below the prefix searched for images


def list_images(protocol: str, path: str, options: dict[str, Any], limit: int) -> list[ListedImage]:
    """The images under a prefix (a collection by reference), in URL order: TIFF files, and
    OME-Zarr images (groups with multiscales, not searched inside: their chunks are never
    listed). At most ``limit`` (SourceError beyond it)."""
    fs = filesystem(protocol, options)
    root = normal_path(fs, path)
    url = f"{protocol}://{root}"
    found: list[ListedImage] = []
    with reading(url, options, "listed"):
        fs.invalidate_cache(root)
        folders = [(root, 0)]
        while folders:
            folder, depth = folders.pop()
            for entry in fs.ls(folder, detail=True):
                name = str(entry["name"]).rstrip("/")
                if entry.get("type") == "directory":
                    if detect_image(fs, name, True) == "ome-zarr":
                        found.append(ListedImage(f"{protocol}://{name}", "ome-zarr", None))
                    elif depth + 1 < MAX_LISTING_DEPTH:
                        folders.append((name, depth + 1))
                elif name.lower().endswith(TIFF_SUFFIXES):
                    found.append(ListedImage(f"{protocol}://{name}", "tiff", version(entry)))
                if len(found) > limit:
                    raise SourceError(
                        f"{url} holds more than {limit:,} images; import a narrower prefix"
                    )
    return sorted(found, key=lambda image: image.url)


def current_image_version(
    protocol: str, options: dict[str, Any], url: str, format: str
) -> str | None:
    """The image's version now (None when it is gone)."""
    fs = filesystem(protocol, options)
    with reading(url, options, "checked", missing_passes=True):
        try:
            return _version_now(fs, format, path_of(url, protocol))
        except FileNotFoundError:
            return None


def detect_image(fs: Any, path: str, is_dir: bool) -> str | None:
    """ "tiff" or "ome-zarr" when the path holds one, else None (a table, perhaps)."""
    name = path.rstrip("/").rsplit("/", 1)[-1].lower()
    if not is_dir:
        return "tiff" if name.endswith(TIFF_SUFFIXES) else None
    for document in OME_ZARR_METADATA:
        try:
            attrs = json.loads(fs.cat_file(f"{path.rstrip('/')}/{document}"))
        except FileNotFoundError:
            continue
        if _multiscales(attrs.get("attributes", attrs)):
            return "ome-zarr"
    return None


def inspect_image(protocol: str, path: str, options: dict[str, Any], format: str) -> SourceImage:
    """The image at ``path`` from its metadata only."""
    fs = filesystem(protocol, options)
    path = normal_path(fs, path)
    url = f"{protocol}://{path}"
    with reading(url, options, f"read as {format}"):
        fs.invalidate_cache(path)
        info = fs.info(path)
        now = _version_now(fs, format, path)
        if now is None:
            raise SourceError(f"{url} is not an OME-Zarr image (no zarr.json or .zattrs)")
        if format == "ome-zarr":
            return _inspect_ome_zarr(protocol, options, url, now)
        if info.get("type") == "directory":
            raise SourceError(f"{url} is a directory, not a TIFF file")
        return _inspect_tiff(protocol, options, url, now, int(info.get("size") or 0))


def _version_now(fs: Any, format: str, path: str) -> str | None:
    if format == "ome-zarr":  # a hash of the group's metadata documents
        found = []
        for name in OME_ZARR_METADATA:
            document = f"{path.rstrip('/')}/{name}"
            fs.invalidate_cache(document)
            try:
                found.append(bytes(fs.cat_file(document)))
            except FileNotFoundError:
                continue
        return hashlib.blake2b(b"\0".join(found), digest_size=16).hexdigest() if found else None
    fs.invalidate_cache(path)
    return version(fs.info(path))


# -- OME-Zarr ---------------------------------------------------------------------------------


def _multiscales(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    """NGFF 0.4 keeps `multiscales` in the group's attributes, 0.5 under `ome`."""
    found = attrs.get("multiscales") or (attrs.get("ome") or {}).get("multiscales")
    return list(found) if isinstance(found, list) else []


def zarr_group(url: str, options: dict[str, Any], writable: bool = False) -> Any:
    """The OME-Zarr group at ``url`` (read-only unless ``writable``: labels written back)."""
    import zarr
    import zarr.storage

    store: Any
    if url.startswith("file://"):  # zarr's own: it makes the folders a write needs
        store = zarr.storage.LocalStore(url[len("file://") :], read_only=not writable)
    else:
        store = zarr.storage.FsspecStore.from_url(
            url, storage_options=dict(options), read_only=not writable
        )
    return zarr.open_group(store=store, mode="r+" if writable else "r")


def _inspect_ome_zarr(protocol: str, options: dict[str, Any], url: str, now: str) -> SourceImage:
    group = zarr_group(url, options)
    attrs = dict(group.attrs)
    multiscales = _multiscales(attrs)
    if not multiscales:
        raise SourceError(f"{url}: a Zarr group with no `multiscales`: not an OME-Zarr image")
    scale = multiscales[0]
    axes = (
        "".join(
            str(a.get("name") if isinstance(a, dict) else a)[0].lower()
            for a in scale.get("axes", [])
        )
        or "tczyx"[-len(group[scale["datasets"][0]["path"]].shape) :]
    )
    if not set(SPATIAL) <= set(axes) or not set(axes) <= set("tczyx"):
        raise SourceError(f"{url}: axes {axes!r}; an image needs y and x (and t, c, z only)")
    levels: list[SourceLevel] = []
    dtype = None
    n_channels = 1
    for entry in scale["datasets"]:
        array = group[entry["path"]]
        shape = dict(zip(axes, array.shape, strict=True))
        levels.append(SourceLevel(int(shape["y"]), int(shape["x"]), str(entry["path"])))
        if dtype is None:
            dtype, n_channels = np.dtype(array.dtype), int(shape.get("c", 1))
    assert dtype is not None
    omero = attrs.get("omero") or (attrs.get("ome") or {}).get("omero") or {}
    labels = [str(c.get("label") or "") for c in omero.get("channels", [])]
    named = len(labels) == n_channels and all(labels)
    named = named and len(set(labels)) == n_channels
    channels = tuple(labels) if named else tuple(f"channel {k + 1}" for k in range(n_channels))
    return _checked(
        SourceImage(
            protocol=protocol,
            options=options,
            format="ome-zarr",
            url=url,
            version=now,
            levels=_by_size(levels),
            axes=axes,
            channels=channels,
            dtype=str(dtype),
            photo=dtype == np.uint8 and n_channels == 3 and not named,
            size=0,
        )
    )


# -- TIFF ---------------------------------------------------------------------------------------

_tiffs: OrderedDict[tuple[str, str, str], Any] = OrderedDict()
_tiffs_lock = threading.Lock()
OPEN_TIFFS = 8  # parsed headers kept (a slide's tiles are served from one, request after request)


def _open_tiff(protocol: str, options: dict[str, Any], url: str, now: str) -> tuple[Any, list[Any]]:
    """The parsed TIFF and its levels as zarr arrays, its headers parsed once per version of
    the file."""
    key = (url, now, json.dumps(options, sort_keys=True, default=str))
    with _tiffs_lock:
        if key in _tiffs:
            _tiffs.move_to_end(key)
            return _tiffs[key][0], list(_tiffs[key][1])
    import tifffile
    import zarr

    fs = filesystem(protocol, options)
    handle = fs.open(path_of(url, protocol), "rb", cache_type="none")
    try:
        tif = tifffile.TiffFile(handle)
        series = tif.series[0]
        arrays = [
            zarr.open_array(store=series.aszarr(level=k), mode="r")
            for k in range(len(series.levels))
        ]
    except BaseException:
        handle.close()
        raise
    with _tiffs_lock:
        _tiffs[key] = (tif, arrays, handle)
        while len(_tiffs) > OPEN_TIFFS:
            old_tif, _, old_handle = _tiffs.popitem(last=False)[1]
            old_tif.close()
            old_handle.close()
    return tif, arrays


def _inspect_tiff(
    protocol: str, options: dict[str, Any], url: str, now: str, size: int
) -> SourceImage:
    import tifffile

    try:
        tif, arrays = _open_tiff(protocol, options, url, now)
    except tifffile.TiffFileError as exc:
        raise SourceError(f"{url} is not a TIFF file ({exc})") from None
    series = tif.series[0]
    axes = series.axes.lower().replace("i", "t").replace("q", "t")
    if not set(SPATIAL) <= set(axes) or not set(axes) <= set("tczyxs"):
        raise SourceError(f"{url}: axes {series.axes!r}; an image needs Y and X")
    levels = [
        SourceLevel(
            int(dict(zip(axes, a.shape, strict=True))["y"]),
            int(dict(zip(axes, a.shape, strict=True))["x"]),
            str(k),
        )
        for k, a in enumerate(arrays)
    ]
    shape = dict(zip(axes, series.shape, strict=True))
    n_channels = int(shape.get("c") or shape.get("s") or 1)
    names = _ome_channel_names(tif, n_channels)
    dtype = np.dtype(series.dtype)
    photo = "s" in axes and dtype == np.uint8 and n_channels == 3
    return _checked(
        SourceImage(
            protocol=protocol,
            options=options,
            format="tiff",
            url=url,
            version=now,
            levels=tuple(levels),
            axes=axes,
            channels=names or tuple(f"channel {k + 1}" for k in range(n_channels)),
            dtype=str(dtype),
            photo=photo,
            size=size,
        )
    )


def _ome_channel_names(tif: Any, n_channels: int) -> tuple[str, ...]:
    if not tif.is_ome or not tif.ome_metadata:
        return ()
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(tif.ome_metadata)
    except ET.ParseError:
        return ()
    names = [(e.get("Name") or "").strip() for e in root.iter() if e.tag.endswith("}Channel")]
    distinct = len(set(names)) == n_channels
    return tuple(names) if len(names) == n_channels and all(names) and distinct else ()


def _by_size(levels: list[SourceLevel]) -> tuple[SourceLevel, ...]:
    return tuple(sorted(levels, key=lambda lv: -lv.height * lv.width))


def _checked(image: SourceImage) -> SourceImage:
    dtype = np.dtype(image.dtype)
    if dtype.kind not in "uif":
        raise SourceError(f"{image.url}: pixels of {dtype}; an image's are numbers")
    return image
