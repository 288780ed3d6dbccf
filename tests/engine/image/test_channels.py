"""Images of measured channels: robust per-channel scaling, the display composite, and
featurization channel by channel (app/engine/image/channels.py, featurize.py)."""

import numpy as np
import pytest
from skimage.segmentation import slic

from app.engine.image import channels, display
from app.engine.image.channels import HIGH, LOW, Multichannel
from app.engine.image.featurize import Recipe, apply_featurization, featurize


def two_marked_regions(
    height: int = 40, width: int = 56, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Four 16-bit channels: a disc bright in channel 2 (high range) and dim in channel 1 (low
    range), the others noise only; the disc is the class 1."""
    rng = np.random.default_rng(seed)
    rows, cols = np.mgrid[:height, :width]
    truth = ((rows - height / 2) ** 2 + (cols - width / 3) ** 2 < (height / 3) ** 2).astype(int)
    planes = np.empty((4, height, width))
    planes[0] = 300 + 200 * truth + rng.normal(0, 40, truth.shape)  # 200..3,000-ish levels
    planes[1] = 5_000 + 40_000 * truth + rng.normal(0, 6_000, truth.shape)
    planes[2] = 1_000 + rng.normal(0, 100, truth.shape)
    planes[3] = 20_000 + rng.normal(0, 3_000, truth.shape)
    return np.clip(planes, 0, 65_535).astype(np.uint16), truth


def test_each_channel_is_scaled_by_its_own_percentile_range() -> None:
    planes, _ = two_marked_regions()
    image = Multichannel.of(planes)
    scaled = image.scaled()
    assert scaled.dtype == np.float32 and scaled.shape == planes.shape
    for k in range(4):
        low, high = np.percentile(planes[k].astype(np.float64), [LOW, HIGH])
        np.testing.assert_allclose(image.ranges()[k], [low, high])
        np.testing.assert_allclose(scaled[k], (planes[k] - low) / (high - low), rtol=1e-5)


def test_scaling_ignores_the_units_of_each_channel() -> None:
    """An affine change of a channel's units (gain, offset, dtype) changes nothing."""
    planes, _ = two_marked_regions()
    as_float = planes.astype(np.float64) * np.array([3.0, 0.01, 7.0, 1.0])[:, None, None] - 5.0
    np.testing.assert_allclose(
        Multichannel.of(planes).scaled(), Multichannel.of(as_float).scaled(), atol=1e-4
    )


def test_a_flat_channel_scales_to_a_constant_not_nan() -> None:
    image = Multichannel.of(np.full((2, 5, 5), 1234, dtype=np.uint16))
    assert np.all(image.scaled() == 0.0)


def test_the_percentiles_of_a_large_channel_come_from_a_regular_sample() -> None:
    rng = np.random.default_rng(3)
    plane = rng.gamma(2.0, 1_000.0, size=(1500, 1500)).astype(np.float32)
    low, high = Multichannel.of(plane).ranges()[0]
    exact = np.percentile(plane, [LOW, HIGH])
    assert abs(low - exact[0]) < 0.02 * exact[0] and abs(high - exact[1]) < 0.01 * exact[1]


def test_composite_colours_channels_and_adds_them() -> None:
    planes = np.zeros((2, 4, 4), dtype=np.uint16)
    planes[0, :, :2] = 1000  # left half bright in channel 1 (green)
    planes[1, :2, :] = 1000  # top half bright in channel 2 (magenta)
    rgb = Multichannel.of(planes).composite()
    assert rgb.dtype == np.uint8 and rgb.shape == (4, 4, 3)
    assert tuple(rgb[3, 0]) == (0, 255, 0)  # only green
    assert tuple(rgb[0, 3]) == (255, 0, 255)  # only magenta
    assert tuple(rgb[0, 0]) == (255, 255, 255)  # both
    assert tuple(rgb[3, 3]) == (0, 0, 0)
    grey = Multichannel.of(planes[:1]).composite()
    assert tuple(grey[0, 0]) == (255, 255, 255) and tuple(grey[0, 3]) == (0, 0, 0)


@pytest.mark.parametrize("n_channels", [1, 3, 4, 7])
def test_a_composite_made_in_strips_of_rows_is_each_pixels_own(
    n_channels: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(n_channels)
    planes = (rng.random((n_channels, 61, 23)) * 60_000).astype(np.uint16)
    ranges = np.sort(rng.uniform(0, 60_000, size=(n_channels, 2)), axis=1)
    monkeypatch.setattr(display, "RENDER_ROWS", 7)  # 61 rows: 8 strips, the last of 5
    strips = channels.composite(planes, ranges)
    pixel_by_pixel = np.concatenate(
        [
            channels.composite(planes[:, r : r + 1, c : c + 1], ranges)
            for r in range(61)
            for c in range(23)
        ]
    ).reshape(61, 23, 3)
    assert np.array_equal(strips, pixel_by_pixel)


@pytest.mark.parametrize(
    ("planes", "names", "words"),
    [
        (np.zeros((17, 4, 4)), None, "1 to 16 channels"),
        (np.zeros((1, 1, 4)), None, "at least 2 x 2"),
        (np.zeros((2, 4, 4), dtype=np.complex64), None, "real numbers"),
        (np.full((1, 4, 4), np.nan), None, "NaN"),
        (np.zeros((2, 4, 4)), ["a", "a"], "distinct"),
        (np.zeros((2, 4, 4)), ["a"], "need as many names"),
        (np.zeros((4, 4, 4, 4)), None, "C x H x W"),
    ],
)
def test_bad_channels_are_refused(planes: np.ndarray, names: list[str] | None, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        Multichannel.of(planes, names)


def test_raw_features_are_named_by_channel() -> None:
    planes, _ = two_marked_regions()
    image = Multichannel.of(planes, ["DAPI", "GFP", "RFP", "Cy5"])
    result = featurize(image, Recipe(sigmas=(1.0, 2.0)))
    assert result.raw_feature_names[0] == "DAPI intensity s=1"
    assert any(name.startswith("Cy5 hessian") for name in result.raw_feature_names)
    assert len(result.raw_feature_names) == 4 * 2 * 4  # channels x sigmas x maps per sigma


def test_featurization_does_not_depend_on_the_channels_units() -> None:
    planes, _ = two_marked_regions()
    rescaled = planes.astype(np.float32) * np.float32(0.5) + np.float32(100.0)
    a = featurize(Multichannel.of(planes))
    b = featurize(Multichannel.of(rescaled))
    # PCA signs may differ; the spans agree, so compare absolute correlations per component.
    for k in range(a.features.shape[1]):
        r = np.corrcoef(a.features[:, k], b.features[:, k])[0, 1]
        assert abs(r) > 0.999


def test_superpixels_follow_a_dim_channel_beside_a_bright_one() -> None:
    """SLIC rescales all channels together: a channel using 200 of 65,535 levels beside one
    using all of them would be flat to it, and the superpixels would ignore the disc it shows.
    Scaled channel by channel, they follow it."""
    planes, truth = two_marked_regions(80, 112)
    gradient = np.tile(np.linspace(0, 65_535, truth.shape[1]), (truth.shape[0], 1))
    image = Multichannel.of(np.stack([planes[0], gradient.astype(np.uint16)]))
    result = featurize(image, Recipe(superpixels="always", n_segments=60))
    assert purity(result.item_of_pixel, truth) > 0.98
    by_dtype_range = slic(
        np.moveaxis(image.planes / 65_535, 0, 2),
        n_segments=60,
        compactness=0.1,
        start_label=0,
        sigma=1.0,
        channel_axis=-1,
        convert2lab=False,
    )
    assert purity(by_dtype_range, truth) < 0.96


def purity(segments: np.ndarray, truth: np.ndarray) -> float:
    """The share of pixels in their segment's majority class."""
    n = int(segments.max()) + 1
    counts = np.bincount(segments.ravel() * 2 + truth.ravel(), minlength=2 * n)
    return float(counts.reshape(n, 2).max(axis=1).sum() / truth.size)


@pytest.mark.parametrize("superpixels", ["never", "always"])
def test_a_fitted_reduction_applies_to_an_image_with_the_same_channels(superpixels: str) -> None:
    recipe = Recipe(superpixels=superpixels, n_segments=60)
    planes, _ = two_marked_regions()
    fitted = featurize(Multichannel.of(planes), recipe).fitted
    other, _ = two_marked_regions(seed=5)
    applied = apply_featurization(Multichannel.of(other), recipe, fitted)
    assert applied.features.shape[1] == recipe.n_components
    with pytest.raises(ValueError, match="3 channel"):
        apply_featurization(Multichannel.of(other[:3]), recipe, fitted)


@pytest.mark.parametrize(("dtype", "reach"), [(np.float64, 1e308), (np.float32, 3e38)])
def test_values_at_the_end_of_the_float_range_scale_as_the_same_image_nearer_zero(
    dtype: type, reach: float
) -> None:
    """A channel reaching +-1e308 (or float32's +-3e38) is the same picture as the one divided
    by its reach: scaled, shown and featurized alike, with nothing infinite or NaN (its span
    overflowed float32 before, and the featurization's PCA failed)."""
    rng = np.random.default_rng(0)
    unit = rng.uniform(-1.0, 1.0, (1, 48, 48))
    unit[0, :24] = np.abs(unit[0, :24])
    huge = Multichannel.of((unit * reach).astype(dtype))
    near_zero = Multichannel.of((unit * reach).astype(dtype).astype(np.float64) / reach)
    with np.errstate(all="raise"):
        scaled = huge.scaled()
        shown = huge.composite()
    np.testing.assert_allclose(scaled, near_zero.scaled(), atol=1e-6)
    assert np.abs(shown.astype(int) - near_zero.composite().astype(int)).max() <= 1
    features = featurize(huge, Recipe(superpixels="never")).features
    assert np.isfinite(features).all()


def test_ordinary_values_are_not_rescaled() -> None:
    values = np.array([1.0, 5.0, 1e30])
    same, low, high = channels.within_float32(values, -1e30, 1e30)
    assert same is values and (low, high) == (-1e30, 1e30)
    scaled, low, high = channels.within_float32(values, -1e31, 1e31)
    assert 0.5 <= high < 1.0 and low == -high
    np.testing.assert_array_equal(scaled / values, np.full(3, high / 1e31))
