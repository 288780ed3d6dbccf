"""How each user shows an image's measured channels: per channel, visible or not, a colour and
the range of values stretched from black to full colour (``engine/image/display.py``).

Kept per user and dataset (``DisplaySetting``): two experts looking at the same slide may each
isolate a different channel. A viewer of the project may keep one too: it changes what they
see, never the data. Tiles are drawn with the display the viewer names in their query
(``tile_query``), so a tile's address says what it shows and a browser may keep it."""

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sqlalchemy import delete
from sqlalchemy.orm import Session

from app.db.models import Dataset, DisplaySetting, User
from app.engine.image.channels import Multichannel
from app.engine.image.display import ChannelDisplay, default_display
from app.services.errors import InvalidInput
from app.services.stored_image import decoded
from app.store.dataset_arrays import IMAGE

OFF = "off"  # a channel hidden, in a tile query


def is_measured(dataset: Dataset) -> bool:
    """An image whose channels are measurements (shown through a display), not a photo (a
    photo's channel list is empty)."""
    image = dataset.meta.get("image") if dataset.kind == "image" else None
    return image is not None and not image.get("photo") and bool(image.get("channels"))


def require_measured(dataset: Dataset) -> dict[str, Any]:
    if dataset.kind != "image":
        raise InvalidInput(f"dataset {dataset.id} is a table; only images have channels to show")
    if not is_measured(dataset):
        raise InvalidInput(
            f"dataset {dataset.id} is a photo (8-bit RGB or grey): it is shown as it is; "
            "channel display applies to images of measured channels (e.g. 16-bit TIFF)"
        )
    image: dict[str, Any] = dataset.meta["image"]
    return image


def defaults(session: Session, dataset: Dataset) -> tuple[ChannelDisplay, ...]:
    """Every channel shown in its default colour over its robust range (the 0.5th to the
    99.5th percentile of its values)."""
    return default_display(channel_ranges(session, dataset)[0])


def channel_ranges(
    session: Session, dataset: Dataset
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each channel's robust range and extremes (C x 2 each): as recorded at upload, or, for a
    picture stored before they were, from its pixels."""
    image = require_measured(dataset)
    if "ranges" in image and "extremes" in image:
        return np.asarray(image["ranges"], float), np.asarray(image["extremes"], float)
    planes = picture_planes(session, dataset)
    flat = planes.planes.reshape(planes.planes.shape[0], -1)
    return planes.ranges(), np.stack([flat.min(axis=1), flat.max(axis=1)], axis=1).astype(float)


def picture_planes(session: Session, dataset: Dataset) -> Multichannel:
    """A picture's measured channels, decoded from its stored file (never a slide's)."""
    pixels = decoded(session, dataset, IMAGE)
    if not isinstance(pixels, Multichannel):
        raise InvalidInput(f"dataset {dataset.id} is a photo: it has no measured channels")
    return pixels


def saved(session: Session, dataset: Dataset, user: User) -> tuple[ChannelDisplay, ...] | None:
    row = session.get(DisplaySetting, (dataset.id, user.id))
    if row is None:
        return None
    try:
        return parse_channels(dataset, row.channels)
    except InvalidInput:  # saved for an image since replaced by one of other channels
        return None


def save(session: Session, dataset: Dataset, user: User, display: Sequence[ChannelDisplay]) -> None:
    rows = as_json(display)
    row = session.get(DisplaySetting, (dataset.id, user.id))
    if row is None:
        session.add(DisplaySetting(dataset_id=dataset.id, user_id=user.id, channels=rows))
    else:
        row.channels = rows


def reset(session: Session, dataset: Dataset, user: User) -> None:
    session.execute(
        delete(DisplaySetting).where(
            DisplaySetting.dataset_id == dataset.id, DisplaySetting.user_id == user.id
        )
    )


def described(session: Session, dataset: Dataset, user: User) -> dict[str, Any]:
    """The user's display (the default until they save one), the default, each channel's
    extremes and automatic range, and the tile query of the user's display."""
    image = require_measured(dataset)
    names = [str(name) for name in image["channels"]]
    ranges, extremes = channel_ranges(session, dataset)
    mine = saved(session, dataset, user)
    defaults = default_display(ranges)
    return {
        "saved": mine is not None,
        "channels": _named(names, mine or defaults),
        "defaults": _named(names, defaults),
        "ranges": [
            {"name": name, "minimum": lo, "maximum": hi, "low": d.low, "high": d.high}
            for name, (lo, hi), d in zip(names, extremes.tolist(), defaults, strict=True)
        ],
        "tile_query": tile_query(mine or defaults),
    }


def _named(names: list[str], display: Sequence[ChannelDisplay]) -> list[dict[str, Any]]:
    return [{"name": name, **row} for name, row in zip(names, as_json(display), strict=True)]


def as_json(display: Sequence[ChannelDisplay]) -> list[dict[str, Any]]:
    return [
        {
            "visible": shown.visible,
            "colour": _hex(shown.colour),
            "low": shown.low,
            "high": shown.high,
        }
        for shown in display
    ]


def parse_channels(
    dataset: Dataset, channels: Sequence[dict[str, Any]]
) -> tuple[ChannelDisplay, ...]:
    """One display per channel, in the image's order; InvalidInput naming the channel and what
    is wrong with it."""
    image = require_measured(dataset)
    names = list(image["channels"])
    if len(channels) != len(names):
        raise InvalidInput(
            f"channels: the image has {len(names)} channels ({', '.join(names)}); "
            f"got {len(channels)} displays"
        )
    out = []
    for name, channel in zip(names, channels, strict=True):
        try:
            out.append(
                ChannelDisplay(
                    bool(channel["visible"]),
                    _rgb(str(channel["colour"])),
                    float(channel["low"]),
                    float(channel["high"]),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"channel {name!r}: {_reason(exc)}") from None
    return tuple(out)


def parse_query(dataset: Dataset, text: str) -> tuple[ChannelDisplay, ...]:
    """A display from a tile query: per channel ``RRGGBB:low:high`` or ``off``, comma-separated
    in the image's channel order (``tile_query``)."""
    channels: list[dict[str, Any]] = []
    for part in text.split(","):
        if part == OFF:
            channels.append({"visible": False, "colour": "ffffff", "low": 0.0, "high": 1.0})
            continue
        fields = part.split(":")
        if len(fields) != 3:
            raise InvalidInput(
                f"display: each channel is RRGGBB:low:high or {OFF!r}, not {part[:40]!r}"
            )
        channels.append({"visible": True, "colour": fields[0], "low": fields[1], "high": fields[2]})
    return parse_channels(dataset, channels)


def tile_query(display: Sequence[ChannelDisplay]) -> str:
    """The ``display`` query of tiles drawn with ``display`` (``parse_query`` reads it)."""
    return ",".join(
        f"{_hex(d.colour)}:{d.low:.9g}:{d.high:.9g}" if d.visible else OFF for d in display
    )


def _rgb(text: str) -> tuple[float, float, float]:
    if len(text) != 6 or any(c not in "0123456789abcdefABCDEF" for c in text):
        raise ValueError(f"a colour is six hex digits (RRGGBB), not {text[:20]!r}")
    return (int(text[0:2], 16) / 255, int(text[2:4], 16) / 255, int(text[4:6], 16) / 255)


def _hex(colour: Sequence[float]) -> str:
    return "".join(f"{round(c * 255):02x}" for c in colour)


def _reason(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"{exc.args[0]!r} is missing"
    return str(exc)
