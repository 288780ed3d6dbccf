"""How the jobs layer hands annotations to PPC: labels as clamped components (not chains of
hard relations), links with their confidence as weights."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine import PPC
from app.engine.image.scribble_drift import ScribbleFaithfulFit
from app.jobs.algorithms.base import ItemStructure
from app.jobs.algorithms.ppc import IMAGE_UNLABELED_WEIGHT, PPCParams, component_labels, plan_ppc
from app.sideinfo import SideInformation


def side_information(labels: list[int]) -> SideInformation:
    return SideInformation(
        n_items=len(labels),
        revision=1,
        labels=np.asarray(labels, dtype=np.int32),
        label_names=["a", "b", "c"],
        must_link=np.array([[0, 1]]),
        must_link_confidence=np.array([0.9]),
        cannot_link=np.array([[2, 3]]),
        cannot_link_confidence=np.array([1.0]),
    )


def test_labels_become_components_in_order() -> None:
    info = side_information([2, -1, 0, 2, -1, -1])
    np.testing.assert_array_equal(component_labels(info, 3), [1, -1, 0, 1, -1, -1])
    assert component_labels(side_information([-1] * 6), 3) is None
    with pytest.raises(ValueError, match="2 categories but n_components is 1"):
        component_labels(info, 1)


def test_plan_passes_labels_and_only_the_annotated_links() -> None:
    info = side_information([2, -1, 0, 2, -1, -1])
    plan = plan_ppc(PPCParams(n_components=2), info, np.zeros((6, 2)), lambda i, c: True)
    kwargs = plan.fit_kwargs
    np.testing.assert_array_equal(kwargs["pairs"], [[0, 1], [2, 3]])
    assert kwargs["weights"][1] == -np.inf and 0 < kwargs["weights"][0] < np.inf
    np.testing.assert_array_equal(kwargs["labels"], [1, -1, 0, 1, -1, -1])
    X = np.random.default_rng(0).normal(size=(6, 2))
    labels = plan.estimator.fit(X, **kwargs).labels_
    assert labels[0] == labels[3] == 1 and labels[2] == 0 and labels[2] != labels[3]


def test_an_image_run_with_the_weight_left_empty_guards_its_scribbles() -> None:
    """Images: 0.1, refitted lower when a component leaves its scribbles (ScribbleFaithfulFit);
    an explicit weight is used as it is; tables: plain EM (1)."""
    info = side_information([1, -1, 0, 1, -1, -1])
    x = np.random.default_rng(0).normal(size=(6, 2))
    structure = ItemStructure(np.array([[0, 1], [1, 2]]), np.ones(2))
    image = plan_ppc(PPCParams(n_components=2), info, x, lambda i, c: True, structure)
    assert isinstance(image.estimator, ScribbleFaithfulFit)
    assert image.estimator.unlabeled_weight == IMAGE_UNLABELED_WEIGHT == 0.1
    fitted = image.estimator.fit(x, **image.fit_kwargs)
    assert "0.1" in fitted.choice_["scribble_drift"]  # the first fit was measured
    explicit = plan_ppc(
        PPCParams(n_components=2, unlabeled_weight=0.5), info, x, lambda i, c: True, structure
    )
    assert isinstance(explicit.estimator, PPC) and explicit.estimator.unlabeled_weight == 0.5
    table = plan_ppc(PPCParams(n_components=2), info, x, lambda i, c: True)
    assert isinstance(table.estimator, PPC) and table.estimator.unlabeled_weight == 1.0
