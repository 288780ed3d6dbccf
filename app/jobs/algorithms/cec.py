"""CEC and CEC-IB (specs/cec-ib.md)."""

from typing import Any, Literal

from pydantic import Field

from app.engine import BETA0, CEC, CECIB
from app.jobs.algorithms.base import (
    AUTO_CLUSTERS,
    LABELS,
    Algorithm,
    FitPlan,
    FloatArray,
    Params,
    Progress,
    Seed,
    at_most_items,
    clusters_for,
)
from app.sideinfo import SideInformation


class CECParams(Params):
    n_clusters: int | None = Field(
        None,
        ge=1,
        le=500,
        description=f"Initial (maximal) number of clusters; {AUTO_CLUSTERS}, else 10",
    )
    covariance: Literal["full", "diagonal", "spherical"] = Field(
        "full", description="Gaussian family of each cluster"
    )
    min_cluster_fraction: float = Field(
        0.05, ge=0.0, lt=1.0, description="Remove clusters smaller than this fraction of items"
    )
    n_init: int = Field(
        10,
        ge=1,
        le=100,
        description="Restarts; the lowest energy is kept (CEC-IB with one cluster per label "
        "category: the one whose clusters agree with more labeled items, then energy)",
    )
    max_iter: int = Field(100, ge=1, le=10_000, description="Most Hartigan sweeps per restart")
    random_state: Seed = 0

    def data_problems(self, n_items: int, n_features: int) -> list[str]:
        problems = at_most_items("n_clusters", self.n_clusters, n_items)
        if self.covariance == "full" and n_features >= n_items:
            problems.append(
                f"covariance: 'full' needs more items than features (the dataset has {n_items} "
                f"items and {n_features} features); use 'diagonal' or 'spherical'"
            )
        return problems


class CECIBParams(CECParams):
    beta: float = Field(
        1.0,
        ge=0.0,
        le=100.0,
        description=f"Weight of label consistency: 1 trusts the labels, {BETA0:.5f} (beta0) "
        "tolerates noisy ones, 0 ignores them",
    )


DEFAULT_CLUSTERS = 10


def cec_kwargs(params: CECParams, info: SideInformation, progress: Progress) -> dict[str, Any]:
    """The constructor arguments every CEC-family estimator shares (CEC, CEC-IB, C3L, C4s)."""
    return {
        "n_clusters": clusters_for(params.n_clusters, info, DEFAULT_CLUSTERS),
        "covariance": params.covariance,
        "min_cluster_fraction": params.min_cluster_fraction,
        "n_init": params.n_init,
        "max_iter": params.max_iter,
        "random_state": params.random_state,
        "progress": progress,
    }


def plan_cec(
    params: CECParams, info: SideInformation, _x: FloatArray, progress: Progress
) -> FitPlan:
    return FitPlan(CEC(**cec_kwargs(params, info, progress)))


def plan_cec_ib(
    params: CECIBParams, info: SideInformation, _x: FloatArray, progress: Progress
) -> FitPlan:
    estimator = CECIB(beta=params.beta, **cec_kwargs(params, info, progress))
    return FitPlan(estimator, {"y": info.labels})


CEC_ALGORITHM = Algorithm(
    id="cec",
    name="CEC",
    summary="Cross-entropy clustering: Gaussian clusters, unneeded clusters removed on the way.",
    uses=(),
    side_information_mapping="Uses no side information.",
    params_model=CECParams,
    plan=plan_cec,
)

CEC_IB_ALGORITHM = Algorithm(
    id="cec-ib",
    name="CEC-IB",
    summary="Semi-supervised CEC with an information-bottleneck term for partial labels; a "
    "category may span several clusters, and unlabeled clusters may appear.",
    uses=(LABELS,),
    side_information_mapping="Labels become the partial labeling y (unlabeled items are -1). "
    "Links and boundaries are not used.",
    params_model=CECIBParams,
    plan=plan_cec_ib,
)
