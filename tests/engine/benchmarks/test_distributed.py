"""benchmarks/bench_distributed.py end to end on a small cluster: its generated blobs are the
same chunk by chunk however often they are read, and every method it measures finds them."""

import numpy as np

from benchmarks.bench_distributed import Blobs, main


def test_the_generated_blobs_are_reproducible_and_labelled_in_share() -> None:
    blobs = Blobs(rows=10_500, features=3, clusters=4, chunk_rows=4_000)
    assert blobs.chunk_sizes() == [4_000, 4_000, 2_500]
    points = blobs.dask("points")
    assert points.shape == (10_500, 3) and points.dtype == np.float32
    np.testing.assert_array_equal(points.compute(), points.compute())
    truth = blobs.dask("truth").compute()
    labels = blobs.dask("labels").compute()
    shown = labels >= 0
    np.testing.assert_array_equal(labels[shown], truth[shown])
    assert 0.07 < shown.mean() < 0.13  # LABELED_SHARE = 0.1


def test_the_benchmark_measures_ours_and_the_peer_on_a_local_cluster() -> None:
    results = main(
        ["--rows", "30000", "--features", "3", "--clusters", "4", "--chunk-rows", "10000",
         "--n-init", "1", "--worker-memory", "1GiB", "--skip-scaling"]
    )  # fmt: skip
    by_method = {r["method"]: r for r in results}
    assert set(by_method) == {"CEC", "CEC-IB", "PPC", "dask-ml KMeans"}
    for result in results:
        assert result["ari"] > 0.95
        assert result["passes"] >= 1
    assert by_method["CEC"]["single_machine_ari"] > 0.95
