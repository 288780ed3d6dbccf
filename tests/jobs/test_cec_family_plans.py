"""The CEC family's `covariance: auto`: full on a table; on an image both full and diagonal
are fitted and the more spatially coherent segmentation is kept; a named family is used as
it is. Checked for every CEC-family algorithm, and end to end on a tiny image."""

from typing import Any

import numpy as np
import pytest

from app.engine.image import grid_links
from app.engine.image.coherent_choice import MostCoherentFit
from app.jobs.algorithms.base import Algorithm, ItemStructure
from app.jobs.algorithms.registry import get_algorithm
from app.sideinfo import SideInformation

CEC_FAMILY = ["cec", "cec-ib", "c3l", "c4s"]


def two_halves(height: int = 6, width: int = 8) -> tuple[np.ndarray, SideInformation]:
    """Pixels of a left and a right half with different means; a few pixels of each labeled."""
    rng = np.random.default_rng(0)
    half = np.repeat([[0] * (width // 2) + [1] * (width // 2)], height, axis=0).ravel()
    x = rng.normal(size=(half.size, 2)) * 0.3 + np.column_stack([half * 4.0, half * -2.0])
    labels = np.full(half.size, -1, dtype=np.int32)
    labels[[0, 1, width, width - 1, width - 2, 2 * width - 1]] = [0, 0, 0, 1, 1, 1]
    return x, SideInformation(n_items=half.size, revision=1, labels=labels, label_names=["a", "b"])


def structure(height: int = 6, width: int = 8) -> ItemStructure:
    pairs, weights = grid_links(height, width, 1.0)
    return ItemStructure(pairs.astype(np.int64), weights.astype(np.float64))


def cec_algorithm(algorithm_id: str) -> Algorithm:
    algorithm = get_algorithm(algorithm_id)
    assert algorithm is not None
    return algorithm


def plan(algorithm_id: str, params: dict[str, object], with_structure: bool) -> Any:
    algorithm = cec_algorithm(algorithm_id)
    x, info = two_halves()
    kwargs = {"structure": structure()} if with_structure else {}
    parsed = algorithm.params_model.model_validate({"n_init": 1, **params})
    return algorithm.plan(parsed, info, x, lambda i, c: True, **kwargs).estimator


@pytest.mark.parametrize("algorithm_id", CEC_FAMILY)
def test_auto_is_full_on_a_table(algorithm_id: str) -> None:
    """But C4S, whose own 'auto' fits full and tied spherical and chooses by the constraints."""
    estimator = plan(algorithm_id, {}, with_structure=False)
    assert estimator.covariance == ("auto" if algorithm_id == "c4s" else "full")


@pytest.mark.parametrize("algorithm_id", CEC_FAMILY)
def test_auto_on_an_image_fits_full_and_diagonal_and_keeps_the_more_coherent(
    algorithm_id: str,
) -> None:
    chooser = plan(algorithm_id, {}, with_structure=True)
    assert isinstance(chooser, MostCoherentFit)
    assert chooser.names == ["full", "diagonal"]
    assert [c.covariance for c in chooser.candidates] == ["full", "diagonal"]


@pytest.mark.parametrize("algorithm_id", CEC_FAMILY)
def test_a_named_family_is_used_as_it_is_on_an_image(algorithm_id: str) -> None:
    estimator = plan(algorithm_id, {"covariance": "spherical"}, with_structure=True)
    assert estimator.covariance == "spherical"


def test_the_chooser_fits_and_keeps_a_candidate_that_segments_the_halves() -> None:
    algorithm = cec_algorithm("cec-ib")
    x, info = two_halves()
    params = algorithm.params_model.model_validate({"n_init": 1})
    fit_plan = algorithm.plan(params, info, x, lambda i, c: True, structure=structure())
    chooser = fit_plan.estimator.fit(x, **fit_plan.fit_kwargs)
    assert chooser.best_estimator_ in chooser.candidates
    half = np.repeat([[0] * 4 + [1] * 4], 6, axis=0).ravel()
    labels = chooser.labels_
    assert len(set(labels[half == 0])) == 1 and len(set(labels[half == 1])) == 1
    assert labels[0] != labels[-1]
    assert set(chooser.choice_["stray_fraction"]) == {"full", "diagonal"}
