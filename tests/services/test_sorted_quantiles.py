"""An upload's quantiles from its sample's sorted columns equal np.quantile's to the bit
(`app/services/ingest/appended_rows.sorted_quantiles`)."""

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from app.services.ingest.appended_rows import LEVELS, sorted_quantiles

finite = st.floats(-1e12, 1e12, allow_nan=False, allow_subnormal=False)


@given(
    arrays(np.float64, st.tuples(st.integers(1, 60), st.integers(1, 4)), elements=finite),
    st.lists(st.floats(0, 1), min_size=1, max_size=8),
)
@example(np.array([[1.0], [2.0]]), [0.0, 0.5, 1.0])
@example(np.zeros((3, 2)), [0.25, 0.5, 0.75])
def test_the_same_values_as_numpy(sample: np.ndarray, levels: list[float]) -> None:
    ordered = np.sort(sample, axis=0)
    np.testing.assert_array_equal(
        sorted_quantiles(ordered, levels), np.quantile(sample, levels, axis=0)
    )


@pytest.mark.parametrize("n", [1, 2, 255, 131_072])
def test_an_upload_s_levels_on_ties_and_on_noise(n: int) -> None:
    rng = np.random.default_rng(n)
    for sample in (rng.normal(size=(n, 5)), rng.integers(0, 3, size=(n, 5)).astype(float)):
        ordered = np.sort(sample, axis=0)
        for levels in (LEVELS, [0.25, 0.5, 0.75]):
            np.testing.assert_array_equal(
                sorted_quantiles(ordered, levels), np.quantile(sample, levels, axis=0)
            )
