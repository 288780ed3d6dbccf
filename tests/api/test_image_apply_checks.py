"""Which images a model fitted on one image may segment (app/services/image_apply.py): the
same kind and number of channels, named alike, and items of the same kind."""

from typing import Any

import pytest

from app.db.models import Dataset
from app.engine.image.featurize import Recipe
from app.services.errors import InvalidInput
from app.services.image_apply import check_applicable


def image(
    width: int = 100,
    height: int = 80,
    mode: str = "RGB",
    channels: list[str] | None = None,
    **recipe: Any,
) -> Dataset:
    return Dataset(
        id=7,
        kind="image",
        meta={"image": {"width": width, "height": height, "mode": mode, "channels": channels}},
        featurization={"recipe": Recipe(**recipe).to_dict()},
    )


def refusal(source: Dataset, target: Dataset) -> str:
    with pytest.raises(InvalidInput) as caught:
        check_applicable(source, target)
    return str(caught.value)


def test_images_of_the_same_kind_are_accepted() -> None:
    check_applicable(image(), image(300, 200))
    check_applicable(image(mode="L"), image(mode="L"))
    check_applicable(image(channels=["a", "b"]), image(channels=["a", "b"]))
    # Unnamed channels (no OME names) are matched by count.
    check_applicable(image(channels=["a", "b"]), image(channels=["channel 1", "channel 2"]))
    # A recipe that takes a colour photo's luminance makes it one channel, like a grey one.
    check_applicable(image(colour="grey"), image(mode="L", colour="grey"))
    # Superpixels without their spread have as many raw features as pixels.
    check_applicable(image(superpixel_std=False), image(600, 600))


def test_other_channels_are_refused() -> None:
    assert "a colour photo; dataset 7 has a grey photo" in refusal(image(), image(mode="L"))
    message = refusal(image(channels=["DAPI", "GFP"]), image())
    assert "2 measured channel(s) (DAPI, GFP)" in message and "a colour photo" in message
    message = refusal(image(channels=["a", "b"]), image(channels=["a", "b", "c"]))
    assert "3 measured channel(s)" in message
    message = refusal(image(channels=["a", "b"]), image(channels=["b", "a"]))
    assert "in the same order" in message


def test_pixels_against_superpixels_are_refused() -> None:
    message = refusal(image(), image(600, 600))
    assert "items are pixels" in message and "would get superpixels" in message
    check_applicable(image(superpixels="always"), image(600, 600, superpixels="always"))


def test_a_model_of_chosen_channels_needs_those_channels_only() -> None:
    source = Dataset(
        id=3,
        kind="image",
        meta={
            "image": {
                "width": 100,
                "height": 80,
                "mode": "3 x uint16",
                "channels": ["DAPI", "GFP", "RFP"],
            }
        },
        featurization={"recipe": Recipe(channels=("GFP",)).to_dict()},
    )
    # Any image with a GFP channel will do, whatever else it has.
    check_applicable(source, image(channels=["GFP", "Cy5"]))
    assert "no channel 'GFP'" in refusal(source, image(channels=["DAPI", "RFP"]))
    assert "chosen by colour" in refusal(source, image())
