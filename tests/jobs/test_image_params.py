"""Image runs take fewer CEC restarts, keep smaller clusters and (CEC-IB) count scribbles more
when the run leaves `n_init`, `min_cluster_fraction` and `labeled_weight` empty; what a run sets
(even the table's value), and algorithms with fewer restarts by default, are kept."""

import numpy as np
import pytest

from app.jobs.algorithms.c4s import C4SParams
from app.jobs.algorithms.cec import CECIBParams, CECParams, plan_cec_ib
from app.jobs.algorithms.ppc import PPCParams
from app.jobs.run.image_runs import (
    IMAGE_CEC_IB_LABELED_WEIGHT,
    IMAGE_CEC_IB_N_INIT,
    IMAGE_MIN_CLUSTER_FRACTION,
    IMAGE_N_INIT,
    image_params,
)
from app.sideinfo import SideInformation


def info_with_labels() -> SideInformation:
    return SideInformation(6, 0, np.array([0, 0, 1, 1, -1, -1], dtype=np.int32), ["a", "b"])


def test_empty_n_init_becomes_the_image_default() -> None:
    params = CECIBParams.model_validate({"beta": 0.5})
    assert params.n_init is None
    adjusted = image_params(params)
    assert isinstance(adjusted, CECIBParams)
    assert adjusted.n_init == IMAGE_CEC_IB_N_INIT == 1  # its starts come from the scribbles
    assert adjusted.beta == 0.5
    assert params.n_init is None  # the run's own parameters are not changed
    assert image_params(CECParams.model_validate({})).n_init == IMAGE_N_INIT == 2


def test_empty_labeled_weight_is_ten_on_images_and_cross_validated_on_tables() -> None:
    params = CECIBParams.model_validate({})
    assert params.labeled_weight is None
    adjusted = image_params(params)
    assert isinstance(adjusted, CECIBParams)
    assert adjusted.labeled_weight == IMAGE_CEC_IB_LABELED_WEIGHT == 10
    assert image_params(CECIBParams.model_validate({"labeled_weight": 1})).labeled_weight == 1
    plan = plan_cec_ib(adjusted, info_with_labels(), np.zeros((6, 2)), lambda i, c: True)
    assert plan.estimator.labeled_weight == 10
    table = plan_cec_ib(CECIBParams(), info_with_labels(), np.zeros((6, 2)), lambda i, c: True)
    assert table.estimator.labeled_weight == "auto"


@pytest.mark.parametrize("n_init", [5, 10])
def test_an_explicit_n_init_is_kept(n_init: int) -> None:
    """10 is the table's value; asking for it on an image gets it (it used to read as empty)."""
    params = CECIBParams.model_validate({"n_init": n_init})
    assert image_params(params).n_init == n_init


def test_an_empty_n_init_is_the_table_default_on_a_table() -> None:
    plan = plan_cec_ib(CECIBParams(), info_with_labels(), np.zeros((6, 2)), lambda i, c: True)
    assert plan.estimator.n_init == 10
    assert plan.estimator.min_cluster_fraction == 0.05


def test_ppc_keeps_its_single_restart_and_shares_one_covariance() -> None:
    params = PPCParams.model_validate({})
    adjusted = image_params(params)
    assert adjusted.n_init == 1
    assert isinstance(adjusted, PPCParams) and adjusted.covariance == "tied"
    assert params.covariance == PPCParams.model_fields["covariance"].default  # tables keep theirs


def test_an_explicit_ppc_covariance_is_kept() -> None:
    params = PPCParams.model_validate({"covariance": "diagonal"})
    adjusted = image_params(params)
    assert isinstance(adjusted, PPCParams) and adjusted.covariance == "diagonal"


def test_stored_parameters_with_every_default_filled_in_get_the_image_defaults() -> None:
    stored = CECIBParams.model_validate(CECIBParams().model_dump(mode="json"))
    assert image_params(stored).n_init == IMAGE_CEC_IB_N_INIT
    assert image_params(stored).min_cluster_fraction == IMAGE_MIN_CLUSTER_FRACTION
    stored_ppc = PPCParams.model_validate(PPCParams().model_dump(mode="json"))
    adjusted = image_params(stored_ppc)
    assert isinstance(adjusted, PPCParams) and adjusted.covariance == "tied"


def test_empty_min_cluster_fraction_becomes_the_image_default() -> None:
    params = CECIBParams.model_validate({})
    assert params.min_cluster_fraction is None
    assert image_params(params).min_cluster_fraction == IMAGE_MIN_CLUSTER_FRACTION == 0.01
    explicit = CECIBParams.model_validate({"min_cluster_fraction": 0.2})
    assert image_params(explicit).min_cluster_fraction == 0.2
    table_value = CECIBParams.model_validate({"min_cluster_fraction": 0.05})
    assert image_params(table_value).min_cluster_fraction == 0.05
    # C4s already defaults to 0.01 on tables; a smaller explicit value is kept too.
    assert image_params(C4SParams.model_validate({})).min_cluster_fraction == 0.01
    assert C4SParams.TABLE_MIN_CLUSTER_FRACTION == 0.01
    tiny = C4SParams.model_validate({"min_cluster_fraction": 0.001})
    assert image_params(tiny).min_cluster_fraction == 0.001
