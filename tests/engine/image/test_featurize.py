"""Image featurization against oracles: scikit-image's filter bank, brute-force windows,
scikit-learn's StandardScaler + PCA on the raw maps, per-superpixel statistics by loops, the
stored reduction replayed by hand, and texture separation far above chance."""

from __future__ import annotations

import importlib
import json
import re

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import ndimage as ndi
from skimage import data, feature
from skimage.transform import rescale
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from app.engine.image import FittedReduction, Recipe, apply_featurization, featurize, mean_iou
from app.engine.image._filter_bank import (
    image_channels,
    in_colour_space,
    local_mean,
    map_groups,
    raw_feature_names,
)

Array = NDArray[np.float64]

# The package's ``featurize`` is the function; the module of the same name holds the constants.
featurize_module = importlib.import_module("app.engine.image.featurize")


def rgb_image(height: int = 24, width: int = 30, seed: int = 0) -> NDArray[np.uint8]:
    """Smooth colour blobs plus noise: every filter responds, nothing is constant."""
    rng = np.random.default_rng(seed)
    rows, cols = np.mgrid[:height, :width]
    planes = [
        128 + 100 * np.sin(rows / (3 + c) + cols / (4 + 2 * c)) + rng.normal(0, 10, rows.shape)
        for c in range(3)
    ]
    return np.clip(np.stack(planes, axis=2), 0, 255).astype(np.uint8)


def raw_maps(image: NDArray[np.generic], recipe: Recipe) -> Array:
    """(H * W, n_raw) raw maps of ``recipe`` for ``image`` (float64)."""
    channels = in_colour_space(image_channels(image), recipe.colour)
    groups = map_groups(
        channels, recipe.filters, recipe.sigmas, recipe.energy_window, recipe.window
    )
    return np.concatenate(list(groups), axis=0).T.astype(np.float64)


def same_up_to_sign(a: Array, b: Array, rtol: float) -> bool:
    signs = np.sign(np.sum(a * b, axis=0))
    return bool(np.allclose(a, b * signs, rtol=rtol, atol=rtol * np.abs(b).max()))


# --- the raw maps ------------------------------------------------------------------------------


def test_filter_maps_equal_multiscale_basic_features() -> None:
    image = rgb_image()
    recipe = Recipe(colour="rgb", sigmas=(1.0, 2.0, 4.0), energy_window=0.0)
    expected = feature.multiscale_basic_features(
        image, sigma_min=1, sigma_max=4, num_sigma=3, channel_axis=-1
    )
    got = raw_maps(image, recipe)
    assert got.shape == (24 * 30, 3 * 3 * 4)
    np.testing.assert_allclose(got, expected.reshape(-1, 36), rtol=1e-5, atol=1e-6)


def test_filter_subsets_keep_skimage_order() -> None:
    image = rgb_image()[:, :, 0]
    recipe = Recipe(filters=("texture", "intensity"), sigmas=(1.0, 2.0), energy_window=0.0)
    expected = feature.multiscale_basic_features(
        image, edges=False, sigma_min=1, sigma_max=2, num_sigma=2
    )
    np.testing.assert_allclose(raw_maps(image, recipe), expected.reshape(-1, 6), rtol=1e-5)


def test_window_maps_are_reflect_padded_neighbourhoods() -> None:
    image = rgb_image(5, 7)
    recipe = Recipe(colour="rgb", filters=(), window=5)
    got = raw_maps(image, recipe).reshape(5, 7, 3, 5, 5)
    planes = image.astype(np.float64) / 255

    def reflect(i: int, n: int) -> int:
        return -i if i < 0 else (2 * (n - 1) - i if i > n - 1 else i)

    for r in range(5):
        for c in range(7):
            for ch in range(3):
                for dy in range(-2, 3):
                    for dx in range(-2, 3):
                        want = planes[reflect(r + dy, 5), reflect(c + dx, 7), ch]
                        assert got[r, c, ch, dy + 2, dx + 2] == pytest.approx(want, rel=1e-6)


def test_local_mean_has_the_requested_spread() -> None:
    impulse = np.zeros((1, 301), dtype=np.float32)
    impulse[0, 150] = 1.0
    for scale in (1.0, 3.0, 12.0):
        response = local_mean(impulse, scale)[0].astype(np.float64)
        offsets = np.arange(301) - 150
        assert response.sum() == pytest.approx(1.0, rel=1e-5)
        # Three boxes of odd width n: variance 3 (n^2 - 1) / 12.
        n = 2 * round(scale) + 1
        assert np.sum(response * offsets**2) == pytest.approx((n * n - 1) / 4, rel=1e-4)


def test_energy_maps_are_local_means_of_magnitudes() -> None:
    image = rgb_image()[:, :, 1]
    plain = raw_maps(image, Recipe(sigmas=(2.0,), energy_window=0.0))
    energy = raw_maps(image, Recipe(sigmas=(2.0,), energy_window=1.5))
    np.testing.assert_array_equal(energy[:, 0], plain[:, 0])  # intensity untouched
    for column in (1, 2, 3):
        source = np.abs(plain[:, column]).reshape(24, 30).astype(np.float32)
        np.testing.assert_allclose(energy[:, column], local_mean(source, 3.0).ravel(), rtol=1e-5)


def test_alpha_and_singleton_channels_are_dropped() -> None:
    rgb = rgb_image()
    rgba = np.dstack([rgb, np.full(rgb.shape[:2], 7, dtype=np.uint8)])
    recipe = Recipe(sigmas=(1.0, 2.0))
    np.testing.assert_array_equal(featurize(rgba, recipe).features, featurize(rgb, recipe).features)
    grey = rgb[:, :, 0]
    grey_alpha = np.dstack([grey, np.zeros_like(grey)])
    expected = featurize(grey, recipe).features
    np.testing.assert_array_equal(featurize(grey_alpha, recipe).features, expected)
    np.testing.assert_array_equal(featurize(grey[:, :, None], recipe).features, expected)


def test_integer_depths_scale_alike() -> None:
    image = rgb_image()
    recipe = Recipe(sigmas=(1.0, 2.0), colour="rgb")
    eight = featurize(image, recipe).features
    sixteen = featurize(image.astype(np.uint16) * 257, recipe).features
    floats = featurize(image / 255.0, recipe).features
    np.testing.assert_allclose(sixteen, eight, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(floats, eight, rtol=1e-4, atol=1e-4)


def test_raw_feature_names_follow_the_maps() -> None:
    names = raw_feature_names(3, "lab", ("intensity", "texture"), (1.0, 2.0), 3.0, 3)
    assert len(names) == 3 * (2 * 3 + 9)
    assert names[:4] == [
        "L intensity s=1",
        "L hessian max energy w=3 s=1",
        "L hessian min energy w=3 s=1",
        "L intensity s=2",
    ]
    assert names[-1] == "b window dy=1 dx=1"


# --- items and the reduction --------------------------------------------------------------------


def family_weighted(rows: Array, names: tuple[str, ...], balance: float) -> Array:
    """StandardScaler, then every map of the edge and texture family divided by
    (its count / the intensities' count) ** (balance / 2), written out for these recipes (one
    intensity and three edge and texture maps per channel and sigma)."""
    z = StandardScaler().fit_transform(rows)
    intensity = np.array([" intensity " in name for name in names])
    assert 4 * intensity.sum() == len(names)  # structure maps are 3x the intensities
    return np.where(intensity, z, z / 3.0 ** (balance / 2))


@pytest.mark.parametrize("balance", [0.0, 1.0, 2.0])
def test_pixel_features_equal_standard_scaler_then_pca(balance: float) -> None:
    image = rgb_image()
    recipe = Recipe(sigmas=(1.0, 2.0, 4.0), n_components=5, family_balance=balance)
    result = featurize(image, recipe)
    raw = raw_maps(image, recipe)
    weighted = family_weighted(raw, result.raw_feature_names, balance)
    pca = PCA(5, svd_solver="full").fit(weighted)
    assert not result.superpixels
    assert result.features.dtype == np.float32 and result.features.shape == (720, 5)
    np.testing.assert_array_equal(result.item_of_pixel, np.arange(720).reshape(24, 30))
    assert same_up_to_sign(result.features.astype(np.float64), pca.transform(weighted), 1e-4)
    np.testing.assert_allclose(result.fitted.explained_variance, pca.explained_variance_, rtol=1e-6)


def test_superpixel_features_are_pca_of_per_item_means_and_stds() -> None:
    image = rgb_image(40, 48)
    recipe = Recipe(superpixels="always", n_segments=30, sigmas=(1.0, 2.0), n_components=4)
    result = featurize(image, recipe)
    items = result.item_of_pixel.ravel()
    assert result.superpixels and result.item_of_pixel.dtype == np.int32
    assert set(np.unique(items)) == set(range(result.n_items))
    raw = raw_maps(image, recipe)
    stats = np.array(
        [
            np.concatenate([raw[items == k].mean(0), raw[items == k].std(0)])
            for k in range(result.n_items)
        ]
    )
    # Means and standard deviations are families of their own, each 1:3 as for pixels.
    weighted = family_weighted(stats, result.raw_feature_names, recipe.family_balance)
    expected = PCA(4, svd_solver="full").fit_transform(weighted)
    assert same_up_to_sign(result.features.astype(np.float64), expected, rtol=1e-4)
    assert len(result.raw_feature_names) == stats.shape[1]


def test_superpixels_without_std_use_means_only() -> None:
    image = rgb_image(40, 48)
    recipe = Recipe(superpixels="always", n_segments=30, superpixel_std=False, sigmas=(1.0,))
    assert featurize(image, recipe).fitted.n_raw == 3 * 4


def test_auto_superpixels_above_512_squared_pixels() -> None:
    recipe = Recipe()
    assert not recipe.uses_superpixels(512, 512)
    assert recipe.uses_superpixels(513, 512)
    assert not Recipe(superpixels="never").uses_superpixels(2000, 2000)
    assert Recipe(superpixels="always").uses_superpixels(4, 4)


@pytest.mark.parametrize("superpixels", ["never", "always"])
def test_apply_on_the_same_image_reproduces_the_features(superpixels: str) -> None:
    image = rgb_image(32, 36)
    recipe = Recipe(superpixels=superpixels, n_segments=20, sigmas=(1.0, 4.0), window=3)
    first = featurize(image, recipe)
    again = apply_featurization(image, recipe, first.fitted)
    np.testing.assert_array_equal(again.features, first.features)
    np.testing.assert_array_equal(again.item_of_pixel, first.item_of_pixel)
    stored = FittedReduction.from_npz(first.fitted.to_npz())
    np.testing.assert_array_equal(
        apply_featurization(image, recipe, stored).features, first.features
    )


def test_apply_replays_the_stored_reduction_without_refitting() -> None:
    recipe = Recipe(sigmas=(1.0, 2.0), n_components=3)
    fitted = featurize(rgb_image(seed=0), recipe).fitted
    other = rgb_image(seed=1)[::-1]
    applied = apply_featurization(other, recipe, fitted)
    raw = raw_maps(other, recipe)
    by_hand = (
        (raw - fitted.scaler_mean) / fitted.scaler_scale - fitted.pca_mean
    ) @ fitted.components.T
    np.testing.assert_allclose(applied.features, by_hand, rtol=1e-4, atol=1e-4)
    assert applied.fitted is fitted
    refitted = featurize(other, recipe).features
    assert not np.allclose(refitted, applied.features, atol=1e-2)


def test_large_pixel_images_fit_pca_on_a_sample_but_scale_on_every_pixel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(featurize_module, "PCA_SAMPLE", 100)
    image = rgb_image()
    recipe = Recipe(sigmas=(1.0, 2.0), n_components=3, family_balance=0.0)
    result = featurize(image, recipe)
    raw = raw_maps(image, recipe)
    np.testing.assert_allclose(result.fitted.scaler_mean, raw.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(result.fitted.scaler_scale, raw.std(0), rtol=1e-4)
    assert np.abs(result.fitted.pca_mean).max() > 1e-3  # the sample's mean, not zero
    np.testing.assert_array_equal(
        apply_featurization(image, recipe, result.fitted).features, result.features
    )
    np.testing.assert_array_equal(featurize(image, recipe).features, result.features)


def test_constant_image_gives_zero_features() -> None:
    result = featurize(
        np.full((8, 9, 3), 77, dtype=np.uint8),
        Recipe(sigmas=(1.0,), n_components=2, family_balance=0.0),
    )
    np.testing.assert_array_equal(result.features, 0)
    np.testing.assert_array_equal(result.fitted.scaler_scale, 1)


@pytest.mark.parametrize("superpixels", ["never", "always"])
def test_progress_rises_to_one(superpixels: str) -> None:
    seen: list[float] = []
    recipe = Recipe(superpixels=superpixels, n_segments=10, sigmas=(1.0, 2.0))
    result = featurize(rgb_image(), recipe, progress=seen.append)
    assert len(seen) >= 6 and seen[-1] == 1.0
    assert all(0 < f <= 1 for f in seen) and np.all(np.diff(seen) >= 0)
    seen.clear()
    apply_featurization(rgb_image(seed=3), recipe, result.fitted, progress=seen.append)
    assert seen[-1] == 1.0 and np.all(np.diff(seen) >= 0)


def test_progress_can_abort() -> None:
    def stop(fraction: float) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        featurize(rgb_image(), Recipe(sigmas=(1.0,)), progress=stop)


# --- textures ----------------------------------------------------------------------------------

TEXTURES = {"brick": data.brick, "grass": data.grass, "gravel": data.gravel}


@pytest.mark.parametrize(
    ("left", "right"), [("brick", "grass"), ("grass", "gravel"), ("brick", "gravel")]
)
def test_energy_features_separate_two_textures(left: str, right: str) -> None:
    side = 64
    halves = [
        rescale(TEXTURES[name]() / 255.0, 0.5, anti_aliasing=True)[:side, :side]
        for name in (left, right)
    ]
    image = np.concatenate(halves, axis=1)
    truth = np.repeat([0, 1], side)[None, :].repeat(side, axis=0).ravel()
    # Plain standardisation: the texture maps' share is not lowered as in the default recipe
    # (family_balance 1, every family the same total variance).
    energy = featurize(image, Recipe(family_balance=0.0)).features
    labels = KMeans(2, n_init=4, random_state=0).fit_predict(energy)
    accuracy = max(np.mean(labels == truth), np.mean(labels != truth))
    assert accuracy > 0.93  # chance is 0.5; raw per-pixel responses (energy_window=0) get ~0.6-0.8
    raw = featurize(image, Recipe(energy_window=0.0, family_balance=0.0)).features
    raw_labels = KMeans(2, n_init=4, random_state=0).fit_predict(raw)
    assert accuracy > max(np.mean(raw_labels == truth), np.mean(raw_labels != truth))


# --- recipes and their errors ------------------------------------------------------------------


def test_recipe_round_trips_through_json() -> None:
    recipe = Recipe(
        colour="rgb",
        filters=["edges", "intensity"],  # type: ignore[arg-type]
        sigmas=(0.5, 3),
        window=5,
        n_components=6,
        superpixels="always",
        n_segments=100,
        compactness=20,
        superpixel_std=False,
        family_balance=0.5,
    )
    assert recipe.filters == ("intensity", "edges")  # canonical order
    assert recipe.sigmas == (0.5, 3.0)
    again = Recipe.from_dict(json.loads(json.dumps(recipe.to_dict())))
    assert again == recipe and hash(again) == hash(recipe)
    assert Recipe.from_dict({}) == Recipe()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"colour": "hsv"}, "Recipe.colour must be one of ['lab', 'rgb', 'grey'], got 'hsv'"),
        ({"superpixels": "sometimes"}, "Recipe.superpixels must be one of"),
        ({"filters": "edges"}, "Recipe.filters must be a list of filter names"),
        ({"filters": ("blur",)}, "each of Recipe.filters must be one of"),
        ({"filters": ("edges", "edges")}, "Recipe.filters repeats a filter"),
        ({"sigmas": ()}, "Recipe.sigmas must not be empty when filters are used"),
        ({"sigmas": (1.0, 0.0)}, "Recipe.sigmas must be positive"),
        ({"sigmas": (1.0, float("nan"))}, "each of Recipe.sigmas must be finite"),
        ({"sigmas": (2, 2.0)}, "Recipe.sigmas repeats a value"),
        ({"sigmas": 2.0}, "Recipe.sigmas must be a list of positive numbers"),
        ({"energy_window": -1}, "Recipe.energy_window must be finite and in [0.0, 16.0]"),
        ({"window": 4}, "Recipe.window must be 0 (off) or odd, got 4"),
        ({"window": 33}, "Recipe.window must be between 0 and 31"),
        ({"window": 2.5}, "Recipe.window must be an integer"),
        ({"filters": (), "window": 0}, "Recipe needs at least one filter or a window"),
        ({"n_components": 0}, "Recipe.n_components must be between 1 and"),
        ({"n_components": True}, "Recipe.n_components must be an integer"),
        (
            {
                "filters": ("intensity",),
                "sigmas": (1.0,),
                "n_components": 4,
                "superpixels": "never",
            },
            "Recipe.n_components must be between 1 and 3",
        ),
        ({"n_segments": 0}, "Recipe.n_segments must be >= 1"),
        ({"compactness": 0}, "Recipe.compactness must be positive"),
        ({"compactness": float("inf")}, "Recipe.compactness must be finite"),
        ({"superpixel_std": "yes"}, "Recipe.superpixel_std must be true or false"),
        ({"family_balance": 4.5}, "Recipe.family_balance must be finite and in [0.0, 4.0]"),
    ],
)
def test_recipe_errors_say_what_is_wrong(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        Recipe.from_dict(fields)


def test_recipe_from_dict_rejects_unknown_fields_and_non_mappings() -> None:
    with pytest.raises(ValueError, match=re.escape("unknown recipe fields ['sigma']")):
        Recipe.from_dict({"sigma": 2})
    with pytest.raises(ValueError, match="a recipe must be a mapping of fields, got list"):
        Recipe.from_dict([("window", 3)])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("image", "message"),
    [
        (np.zeros((4, 4, 4, 1)), "image must be H x W (grey) or H x W x C"),
        (np.zeros((4, 4, 5)), "got shape (4, 4, 5)"),
        (np.zeros((4, 4), dtype=np.int16), "got dtype int16"),
        (np.zeros((4, 4), dtype=np.complex64), "got dtype complex64"),
        (np.zeros((1, 5)), "image must be at least 2 x 2 pixels, got 5 x 1"),
        (np.array([[0.0, np.nan], [0.0, 0.0]]), "image contains NaN or infinite values"),
    ],
)
def test_image_errors_say_what_is_wrong(image: NDArray[np.generic], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        featurize(image, Recipe(sigmas=(1.0,), n_components=1))


def test_too_many_components_for_a_grey_image() -> None:
    recipe = Recipe(filters=("intensity",), sigmas=(1.0, 2.0), n_components=3)
    with pytest.raises(ValueError, match=re.escape("n_components=3 is more than the 2 raw")):
        featurize(rgb_image()[:, :, 0], recipe)


def test_apply_refuses_a_reduction_of_another_shape() -> None:
    recipe = Recipe(sigmas=(1.0,))
    fitted = featurize(rgb_image(), recipe).fitted
    with pytest.raises(
        ValueError, match=re.escape("expects 12 raw features but this recipe gives 4")
    ):
        apply_featurization(rgb_image()[:, :, 0], recipe, fitted)
    with pytest.raises(ValueError, match="fitted must be a FittedReduction, got dict"):
        apply_featurization(rgb_image(), recipe, fitted.to_dict())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="recipe must be a Recipe, got dict"):
        apply_featurization(rgb_image(), {}, fitted)  # type: ignore[arg-type]


# --- the stored reduction ----------------------------------------------------------------------


def small_reduction() -> dict[str, Array]:
    return {
        "scaler_mean": np.zeros(3),
        "scaler_scale": np.ones(3),
        "pca_mean": np.zeros(3),
        "components": np.eye(3)[:2],
        "explained_variance": np.ones(2),
    }


def test_fitted_reduction_round_trips_and_is_read_only() -> None:
    fitted = FittedReduction.from_dict(small_reduction())
    again = FittedReduction.from_npz(fitted.to_npz())
    for name, array in fitted.to_dict().items():
        np.testing.assert_array_equal(getattr(again, name), array)
    assert (fitted.n_components, fitted.n_raw) == (2, 3)
    with pytest.raises(ValueError, match="read-only"):
        fitted.components[0, 0] = 5.0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"components": np.zeros(3)}, "components must be an (n_components, n_raw) array"),
        ({"pca_mean": np.zeros(4)}, "pca_mean must have shape (3,) to match components"),
        ({"explained_variance": np.ones(3)}, "explained_variance must have shape (2,)"),
        ({"scaler_mean": np.array([0.0, np.inf, 0.0])}, "scaler_mean contains NaN or infinite"),
        ({"scaler_scale": np.array([1.0, 0.0, 1.0])}, "scaler_scale must be positive"),
        ({"extra": np.ones(1)}, "unknown arrays in a fitted reduction: ['extra']"),
    ],
)
def test_fitted_reduction_errors(change: dict[str, Array], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        FittedReduction.from_dict(small_reduction() | change)


def test_fitted_reduction_needs_every_array_and_a_real_archive() -> None:
    arrays = small_reduction()
    del arrays["pca_mean"]
    with pytest.raises(ValueError, match=re.escape("needs the arrays ['pca_mean']")):
        FittedReduction.from_dict(arrays)
    with pytest.raises(ValueError, match="not a readable NPZ archive of a fitted reduction"):
        FittedReduction.from_npz(b"not an archive")


# --- the demo picture --------------------------------------------------------------------------


def coffee_regions() -> NDArray[np.int64]:
    """A hand-drawn 4-region truth for ``skimage.data.coffee()`` from ellipses: 0 table,
    1 red ceramic (saucer and cup), 2 white rim, 3 coffee; -1 (void) within 4 pixels of a
    boundary and on the spoon."""
    rows, cols = np.mgrid[:400, :600].astype(np.float64)

    def ellipse(cx: float, cy: float, ax: float, ay: float) -> NDArray[np.bool_]:
        return ((cols - cx) / ax) ** 2 + ((rows - cy) / ay) ** 2 <= 1

    regions = np.zeros((400, 600), dtype=np.int64)
    regions[ellipse(278, 232, 200, 157)] = 1
    regions[ellipse(291, 113, 118, 95)] = 2
    regions[ellipse(287, 144, 84, 49)] = 3
    truth = np.full((400, 600), -1)
    for k in range(4):
        truth[ndi.binary_erosion(regions == k, iterations=4)] = k
    start, direction = np.array([415.0, 68.0]), np.array([-80.0, 194.0])
    t = np.clip(((cols - start[0]) * direction[0] + (rows - start[1]) * direction[1]) / 44036, 0, 1)
    handle = (cols - start[0] - t * direction[0]) ** 2 + (rows - start[1] - t * direction[1]) ** 2
    spoon = ellipse(365, 292, 46, 42) | (handle <= 14**2)
    truth[spoon & (regions != 0)] = -1
    return truth


@pytest.mark.slow
@pytest.mark.parametrize(("superpixels", "least"), [("never", 0.8), ("always", 0.75)])
def test_coffee_regions_are_linearly_separable(superpixels: str, least: float) -> None:
    truth = coffee_regions()
    result = featurize(data.coffee(), Recipe(superpixels=superpixels))
    per_pixel = result.features[result.item_of_pixel.ravel()]
    labeled = np.flatnonzero(truth.ravel() >= 0)
    train = np.random.default_rng(0).choice(labeled, 2000, replace=False)
    model = LogisticRegression(max_iter=3000).fit(per_pixel[train], truth.ravel()[train])
    predicted = model.predict(per_pixel).reshape(truth.shape)
    assert mean_iou(truth, predicted) >= least
