"""benchmarks/bench_collection.py: its images and its peer (the server side is the API's,
tested in tests/api/test_apply_collections.py)."""

import numpy as np

from benchmarks.bench_collection import CLASSES, cells, peer
from benchmarks.image_tasks import scribbles


def test_cells_are_16_bit_three_channels_with_nuclei_dim_in_dapi() -> None:
    planes, truth = cells(3, 256)
    assert planes.shape == (3, 256, 256) and planes.dtype == np.uint16
    assert set(np.unique(truth)) == {0, 1} and 0.02 < truth.mean() < 0.5
    dapi = planes[0].astype(float)
    assert 200 < dapi[truth == 1].mean() - dapi[truth == 0].mean() < 500  # of 65,535 levels
    same, _ = cells(3, 256)
    np.testing.assert_array_equal(planes, same)


def test_the_forest_peer_segments_the_images_it_was_not_fitted_on() -> None:
    first, truth = cells(0, 128)
    _, seeds = scribbles(truth, len(CLASSES), 0)
    fit_s, apply_s, miou = peer(first, seeds, [cells(1, 128), cells(2, 128)])
    assert fit_s > 0 and apply_s > 0
    assert miou > 0.8
