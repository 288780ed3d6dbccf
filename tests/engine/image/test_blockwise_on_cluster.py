"""A featurization that runs as a task on a Dask cluster (the Dask executor's featurization job)
spreads its blocks over the cluster's workers when the cluster has more threads than the local
ones (``Blocks.map``), with the same result as blocks on local threads: pixel items and
superpixel items, on real ``LocalCluster``s of worker processes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from app.engine.image.blockwise import LOCAL_THREADS
from app.engine.image.featurize import Featurization, Recipe, featurize
from tests.engine._support.clusters import process_cluster
from tests.engine.image.test_blockwise import close, textured

distributed = pytest.importorskip("distributed")

BLOCK = 64


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    # More threads than any machine's local blocks at once (at most 4).
    with process_cluster(threads_per_worker=3) as (_, client):
        yield client


def _on_cluster(client: Any, photo: np.ndarray, recipe: Recipe) -> tuple[Featurization, set[str]]:
    """The featurization run as one task, and the workers its blocks ran on."""
    with distributed.get_task_stream(client) as stream:
        result = client.submit(featurize, photo, recipe, None, BLOCK, pure=False).result()
    workers = {task["worker"] for task in stream.data if task["key"].startswith("_block_")}
    return result, workers


def test_pixel_features_in_blocks_on_the_cluster(client: Any) -> None:
    photo = textured(200, 230)
    recipe = Recipe(sigmas=(1.0, 2.0), superpixels="never")
    local = featurize(photo, recipe, block_size=BLOCK)
    remote, workers = _on_cluster(client, photo, recipe)
    assert len(workers) == 2, workers
    close(remote.features, local.features)
    np.testing.assert_array_equal(remote.item_of_pixel, local.item_of_pixel)
    np.testing.assert_allclose(remote.fitted.scaler_mean, local.fitted.scaler_mean, rtol=1e-6)


def test_superpixels_in_blocks_on_the_cluster(client: Any) -> None:
    photo = textured(300, 260, seed=2)
    recipe = Recipe(sigmas=(1.0, 3.0), superpixels="always", n_segments=300)
    local = featurize(photo, recipe, block_size=BLOCK)
    remote, workers = _on_cluster(client, photo, recipe)
    assert len(workers) == 2, workers
    np.testing.assert_array_equal(remote.item_of_pixel, local.item_of_pixel)
    close(remote.features, local.features)


def test_outside_a_cluster_blocks_stay_on_local_threads(client: Any) -> None:
    """A featurization called in the client's process (not as a task) uses no worker."""
    photo = textured(120, 140, seed=3)
    with distributed.get_task_stream(client) as stream:
        featurize(photo, Recipe(sigmas=(1.0,), superpixels="never"), block_size=BLOCK)
    assert stream.data == []


def test_a_cluster_no_wider_than_this_machine_keeps_blocks_on_local_threads() -> None:
    """One worker with one thread: the job's blocks run on its own threads, no block task."""
    assert LOCAL_THREADS >= 1
    photo = textured(150, 160, seed=5)
    recipe = Recipe(sigmas=(1.0,), superpixels="never")
    with process_cluster(n_workers=1, memory_limit=None) as (_, client):
        remote, workers = _on_cluster(client, photo, recipe)
    assert workers == set()
    close(remote.features, featurize(photo, recipe, block_size=BLOCK).features)
