"""The default superpixel count: one per 64 pixels up to 65,536, never fewer than one per 256."""

import pytest

from app.engine.image.superpixel_count import (
    COARSE_PIXELS,
    FINE_PIXELS,
    MOST_FINE,
    default_superpixels,
)


@pytest.mark.parametrize(
    ("pixels", "expected"),
    [
        (1, 1),
        (100, 2),
        (1024 * 1024, 16_384),  # bench_collection's images: ~64 pixels each
        (2048 * 2048, 65_536),  # the last size with 64 pixels each
        (3000 * 3000, 65_536),  # between: the count stays, the superpixels grow
        (4096 * 4096, 65_536),  # 256 pixels each: where the coarse rule takes over
        (20_000 * 20_000, 1_562_500),  # a whole slide: one per 256 pixels, as before
    ],
)
def test_counts(pixels: int, expected: int) -> None:
    assert default_superpixels(pixels) == expected


def test_the_count_never_falls_as_the_image_grows() -> None:
    sizes = range(1, 40_000_000, 99_991)
    counts = [default_superpixels(p) for p in sizes]
    assert counts == sorted(counts)
    for pixels, count in zip(sizes, counts, strict=True):
        assert count <= max(round(pixels / FINE_PIXELS), 1)
        assert count >= round(pixels / COARSE_PIXELS)
        assert count <= max(MOST_FINE, round(pixels / COARSE_PIXELS))


def test_an_empty_image_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one pixel"):
        default_superpixels(0)


@pytest.mark.parametrize("block_size", [0, 48])
def test_featurize_asks_slic_for_the_default_count(block_size: int) -> None:
    """A recipe without ``n_segments`` segments as one asking for ``default_superpixels``
    (144 on 96 x 96, one per 64 pixels), whole or in blocks; not as the old one per 256."""
    import numpy as np

    from app.engine.image.featurize import Recipe, featurize

    rng = np.random.default_rng(0)
    image = (rng.random((96, 96, 3)) * 255).astype(np.uint8)

    def items(n_segments: int | None) -> np.ndarray:
        recipe = Recipe(superpixels="always", sigmas=(1.0,), n_segments=n_segments)
        return featurize(image, recipe, block_size=block_size).item_of_pixel

    assert default_superpixels(96 * 96) == 144
    default = items(None)
    np.testing.assert_array_equal(default, items(144))
    assert not np.array_equal(default, items(36))
