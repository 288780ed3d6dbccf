"""A slide featurized from regions equals the picture featurized whole in the same blocks:
items, features (to float32 rounding of the spilled rows), pixel counts and shared borders;
strokes resolved on regions of the map equal strokes on the whole map; the streamed PNG of a
mask is the PNG of the whole mask."""

import io

import numpy as np
import pytest
from PIL import Image
from scipy import ndimage as ndi
from skimage import data

from app.engine.image import slide_featurize
from app.engine.image.blockwise import even_chunks
from app.engine.image.channels import Multichannel
from app.engine.image.featurize import Recipe, featurize
from app.engine.image.masks import png_stream
from app.engine.image.region_links import region_adjacency
from app.engine.image.slide_featurize import RawSpill, StoredPicture, featurize_slide
from app.engine.image.strokes import items_under, items_under_strokes, rasterize_strokes

RECIPE = Recipe(superpixels="always")


def _extremes(pixels: np.ndarray) -> np.ndarray:
    flat = pixels.reshape(-1, pixels.shape[2])
    return np.stack([flat.min(axis=0), flat.max(axis=0)], axis=1).astype(np.float64)


def _stored(pixels: np.ndarray, photo: bool) -> tuple[StoredPicture, object]:
    if photo:
        px = pixels if pixels.ndim == 3 else pixels[:, :, np.newaxis]
        picture = StoredPicture(px.shape[:2], lambda r, c: px[r, c], True, (), _extremes(px))
        return picture, pixels
    channels = Multichannel.of(np.moveaxis(pixels, 2, 0))
    picture = StoredPicture(
        pixels.shape[:2],
        lambda r, c: pixels[r, c],
        False,
        channels.names,
        _extremes(pixels),
        channels.ranges(),
    )
    return picture, channels


def _measured(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pixels = (rng.random((300, 260, 3)) * 3000).astype(np.uint16)
    pixels[:120, :150, 0] += 20_000
    return pixels


# Filters that reach 28 pixels: blocks of 64 pixels a side (the default recipe reaches 210,
# and a block is never narrower than its halo, so its cases are one block).
NEAR = Recipe(superpixels="always", sigmas=(1.0, 2.0))


@pytest.mark.parametrize(
    ("pixels", "photo", "recipe", "block"),
    [
        (data.astronaut()[:300, :280], True, RECIPE, 100),
        (data.camera()[:260, :300], True, RECIPE, 128),
        (_measured(0), False, RECIPE, 90),
        (data.astronaut()[:300, :280], True, NEAR, 64),
        (data.camera()[:260, :300], True, NEAR, 64),
        (_measured(0), False, NEAR, 64),
    ],
    ids=[
        "colour photo",
        "grey photo",
        "measured channels",
        "colour photo in stitched blocks",
        "grey photo in stitched blocks",
        "measured channels in stitched blocks",
    ],
)
def test_a_slide_read_by_region_is_featurized_as_the_whole_picture(
    pixels: np.ndarray, photo: bool, recipe: Recipe, block: int
) -> None:
    picture, image = _stored(pixels, photo)
    whole = featurize(image, recipe, block_size=block)  # type: ignore[arg-type]
    written = np.full(pixels.shape[:2], -1, dtype=np.int32)

    def write(row: int, col: int, items: np.ndarray) -> None:
        written[row : row + items.shape[0], col : col + items.shape[1]] = items

    got = featurize_slide(picture, recipe, write, block_size=block)
    if recipe is NEAR:  # several blocks, and some items joined across their edges
        row_edges = np.cumsum(even_chunks(pixels.shape[0], block))[:-1]
        col_edges = np.cumsum(even_chunks(pixels.shape[1], block))[:-1]
        assert row_edges.size and col_edges.size
        x0, y0, x1, y1 = got.boxes.T
        crosses_row = np.searchsorted(row_edges, y0, "right") != np.searchsorted(
            row_edges, y1, "right"
        )
        crosses_col = np.searchsorted(col_edges, x0, "right") != np.searchsorted(
            col_edges, x1, "right"
        )
        assert crosses_row.sum() >= 5 and crosses_col.sum() >= 5
    assert np.array_equal(written, whole.item_of_pixel)
    scale = np.abs(whole.features).max()
    assert np.abs(got.features - whole.features).max() <= 1e-5 * scale
    assert np.array_equal(got.sizes, np.bincount(whole.item_of_pixel.ravel()))
    pairs, border = region_adjacency(whole.item_of_pixel)
    order = np.lexsort((got.borders[:, 1], got.borders[:, 0]))
    assert np.array_equal(got.borders[order, :2], pairs)
    assert np.array_equal(got.borders[order, 2], border)
    boxes = [
        [s[1].start, s[0].start, s[1].stop - 1, s[0].stop - 1]
        for s in ndi.find_objects(whole.item_of_pixel + 1)
    ]
    assert got.boxes.tolist() == boxes


def test_a_slide_refuses_pixel_items() -> None:
    picture, _ = _stored(data.camera()[:64, :64], True)
    with pytest.raises(ValueError, match="superpixels"):
        featurize_slide(picture, Recipe(superpixels="never"), lambda *_: None)


@pytest.mark.parametrize(
    "strokes",
    [
        [{"points": [[10.5, 20.25], [80, 90]], "radius": 3.3}],
        [{"points": [[0, 0]], "radius": 5}, {"points": [[119, 99], [100, 60]], "radius": 1}],
        [{"points": [[60, 50]], "radius": 0.75}],
    ],
)
def test_strokes_resolved_on_a_region_take_the_items_the_whole_map_gives(
    strokes: list[dict],  # type: ignore[type-arg]
) -> None:
    rng = np.random.default_rng(3)
    items = np.repeat(np.repeat(rng.permutation(30).reshape(5, 6), 20, axis=0), 20, axis=1)
    items = items[:100, :120].astype(np.int32)
    sizes = np.bincount(items.ravel(), minlength=30)
    want = items_under(rasterize_strokes(strokes, items.shape), items, 30)

    def read(rows: tuple[int, int], cols: tuple[int, int]) -> np.ndarray:
        return items[rows[0] : rows[1], cols[0] : cols[1]]

    got = items_under_strokes(strokes, items.shape, read, 30, sizes)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("high", [200, 3000])
def test_a_streamed_mask_png_is_the_whole_masks_png(high: int) -> None:
    mask = np.random.default_rng(high).integers(0, high, size=(57, 41))
    stream = png_stream(41, 57, [mask[:20], mask[20:21], mask[21:]], high >= 256)
    back = np.asarray(Image.open(io.BytesIO(b"".join(stream))))
    assert back.dtype == (np.uint16 if high >= 256 else np.uint8)
    assert np.array_equal(back, mask)
    with pytest.raises(ValueError, match="rows"):
        b"".join(png_stream(41, 58, [mask], False))


def test_a_spilled_row_replaced_is_read_back_in_its_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slide_featurize, "SPILL_ROWS", 4)  # read back 4 rows at a time
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(11, 3)).astype(np.float32)
    spill = RawSpill(3)
    try:
        spill.append(rows[:5])
        spill.replace(4, np.ones(3))
        spill.append(rows[5:])
        spill.replace(0, np.full(3, 2.0))
        spill.replace(8, np.full(3, 3.0))
        spill.replace(10, np.full(3, 4.0))
        with pytest.raises(IndexError):
            spill.replace(11, np.zeros(3))
        expected = rows.copy()
        expected[4], expected[0], expected[8], expected[10] = 1.0, 2.0, 3.0, 4.0
        read = list(spill.blocks())
        assert [r.shape[0] for r in read] == [4, 4, 3]
        assert np.array_equal(np.concatenate(read), expected)
        assert np.array_equal(np.concatenate(list(spill.blocks())), expected)  # twice alike
    finally:
        spill.close()


def test_the_channels_a_recipe_names_are_the_only_ones_featurized() -> None:
    """A slide and a picture featurized with ``channels`` equal the same image holding only
    those channels, featurized whole."""
    pixels = _measured(1)
    picture, image = _stored(pixels, False)
    chosen = Recipe(superpixels="always", sigmas=(1.0, 2.0), channels=("channel 1", "channel 3"))
    alone = Multichannel(np.moveaxis(pixels[:, :, [0, 2]], 2, 0), ("channel 1", "channel 3"))
    expected = featurize(alone, Recipe(superpixels="always", sigmas=(1.0, 2.0)), block_size=64)
    assert expected.raw_feature_names == featurize(image, chosen, block_size=64).raw_feature_names  # type: ignore[arg-type]
    got = featurize_slide(picture, chosen, lambda *_: None, block_size=64)
    assert got.raw_feature_names == expected.raw_feature_names
    assert not any("channel 2" in name for name in got.raw_feature_names)
    scale = np.abs(expected.features).max()
    assert np.abs(got.features - expected.features).max() <= 1e-5 * scale


@pytest.mark.parametrize(
    ("channels", "reason"),
    [
        (("GFP",), "no channel 'GFP'"),
        (("channel 3", "channel 1"), "keep the image's order"),
    ],
)
def test_a_recipe_naming_channels_the_image_lacks_is_refused(
    channels: tuple[str, ...], reason: str
) -> None:
    picture, image = _stored(_measured(2)[:80, :80], False)
    recipe = Recipe(superpixels="always", channels=channels)
    with pytest.raises(ValueError, match=reason):
        featurize(image, recipe)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=reason):
        featurize_slide(picture, recipe, lambda *_: None)
    with pytest.raises(ValueError, match="chosen by colour"):
        featurize(data.camera()[:64, :64], Recipe(channels=("channel 1",)))


@pytest.mark.parametrize(
    "channels", [("a", "a"), ("",), "GFP", (3,)], ids=["repeat", "blank", "string", "number"]
)
def test_a_recipe_s_channels_are_names(channels: object) -> None:
    with pytest.raises(ValueError, match=r"Recipe\.channels"):
        Recipe(channels=channels)  # type: ignore[arg-type]
    assert Recipe.from_dict(Recipe(channels=("DAPI", "GFP")).to_dict()).channels == ("DAPI", "GFP")
