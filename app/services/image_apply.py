"""Whether a model fitted on one image can segment another: the same kind of channels, as
many raw features. Checked when the apply is asked for, so a mismatch is a 422 that writes
nothing, not a run that fails in the background."""

from dataclasses import dataclass
from typing import Any

from app.db.models import Dataset
from app.engine.image.featurize import Recipe, chosen_channels
from app.services.errors import InvalidInput
from app.store.dataset_arrays import is_slide

_GREY_MODES = {"1", "L", "LA", "La"}


@dataclass(frozen=True)
class _Channels:
    measured: bool  # channels of measurements (TIFF, 16-bit) rather than a photo's colours
    names: tuple[str, ...]  # measured channels' names; the colour space's for a photo

    def describe(self) -> str:
        if self.measured:
            return f"{len(self.names)} measured channel(s) ({', '.join(self.names)})"
        return "a grey photo" if len(self.names) == 1 else "a colour photo"


def check_applicable(source: Dataset, target: Dataset) -> None:
    """Refuse, saying why, a target image the source's recipe and reduction cannot take."""
    if is_slide(target):
        raise InvalidInput(
            f"dataset {target.id} is a slide (above IMAGE_WHOLE_PIXELS): a model is applied to "
            "images decoded whole; fit a run on the slide itself"
        )
    recipe = Recipe.from_dict((source.featurization or {}).get("recipe") or {})
    if recipe.channels:  # the model saw these channels only: the target needs them, not more
        try:
            chosen_channels(recipe, tuple(target.meta["image"].get("channels") or ()))
        except ValueError as exc:
            raise InvalidInput(f"dataset {target.id}: {exc} (the model's channels)") from None
        _check_items(source, target, recipe)
        return
    fitted_on, given = _channels(source.meta, recipe), _channels(target.meta, recipe)
    if fitted_on.measured != given.measured or len(fitted_on.names) != len(given.names):
        raise InvalidInput(
            f"the model was fitted on {fitted_on.describe()}; dataset {target.id} has "
            f"{given.describe()}: a model applies to images with the same channels"
        )
    if fitted_on.measured and _named(fitted_on) and _named(given) and fitted_on != given:
        raise InvalidInput(
            f"the model was fitted on channels {list(fitted_on.names)}; dataset {target.id} "
            f"has {list(given.names)}: the channels must be the same, in the same order"
        )
    _check_items(source, target, recipe)


def _check_items(source: Dataset, target: Dataset, recipe: Recipe) -> None:
    # Superpixels get each map's spread besides its mean: twice the raw features of pixels.
    image, fitted_image = target.meta["image"], source.meta["image"]
    was = recipe.uses_superpixels(fitted_image["height"], fitted_image["width"])
    would_be = recipe.uses_superpixels(image["height"], image["width"])
    if recipe.superpixel_std and was != would_be:
        kinds = {True: "superpixels", False: "pixels"}
        raise InvalidInput(
            f"the model's items are {kinds[was]} but dataset {target.id} "
            f"({image['width']} x {image['height']} pixels) would get {kinds[would_be]} under "
            f"the model's recipe (superpixels {recipe.superpixels!r}): apply it to images on "
            "the same side of 512 x 512 pixels, or featurize the model's image with "
            "superpixels 'always' or 'never'"
        )


def _channels(meta: dict[str, Any], recipe: Recipe) -> _Channels:
    image = meta["image"]
    names = tuple(image.get("channels") or ())
    if names:
        return _Channels(True, names)
    grey = image.get("mode") in _GREY_MODES or recipe.colour == "grey"
    return _Channels(False, ("grey",) if grey else ("1", "2", "3"))


def _named(channels: _Channels) -> bool:
    return not all(name == f"channel {k + 1}" for k, name in enumerate(channels.names))
