"""CEC and CEC-IB (specs/cec-ib.md)."""

from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from app.engine import BETA0, CEC, CECIB
from app.engine.core.cec_shell import auto_min_cluster_fraction
from app.engine.image.coherent_choice import MostCoherentFit
from app.jobs.algorithms.base import (
    AUTO_CLUSTERS,
    LABELS,
    Algorithm,
    FitPlan,
    FloatArray,
    ItemStructure,
    Params,
    Progress,
    Seed,
    at_most_items,
    clusters_for,
)
from app.jobs.results.continuation import Previous
from app.sideinfo import SideInformation


class CECParams(Params):
    n_clusters: int | None = Field(
        None,
        ge=1,
        le=500,
        description=f"Initial (maximal) number of clusters; {AUTO_CLUSTERS}, else 10",
    )
    covariance: Literal["auto", "full", "diagonal", "spherical"] = Field(
        "auto",
        description="Gaussian family of each cluster. auto: full on tables; on images full "
        "and diagonal are both fitted and the segmentation with fewer stray pixels (labeled "
        "unlike most of their neighbours) is kept (docs/api.md, Image segmentation sessions)",
    )
    min_cluster_fraction: float | None = Field(
        None,
        ge=0.0,
        lt=1.0,
        description="Remove clusters smaller than this fraction of items; empty: 0.05 on tables "
        "but at most 0.25 / n_clusters (so every true cluster survives at large counts), 0.01 "
        "on images",
    )
    n_init: int | None = Field(
        None,
        ge=1,
        le=100,
        description="Restarts; empty: 10 on tables, 2 on images (CEC-IB: 1). The lowest energy "
        "is kept "
        "(CEC-IB with one cluster per label category: the one whose clusters agree with more "
        "labeled items, then energy)",
    )
    max_iter: int = Field(100, ge=1, le=10_000, description="Most Hartigan sweeps per restart")
    random_state: Seed = 0

    # What an empty `n_init` / `min_cluster_fraction` means on a table (images: image_runs.py).
    TABLE_N_INIT: ClassVar[int] = 10
    TABLE_MIN_CLUSTER_FRACTION: ClassVar[float] = 0.05

    def data_problems(self, n_items: int, n_features: int) -> list[str]:
        problems = at_most_items("n_clusters", self.n_clusters, n_items)
        if self.covariance in ("auto", "full") and n_features >= n_items:
            problems.append(
                f"covariance: 'full' (which 'auto' is on a table) needs more items than "
                f"features (the dataset has {n_items} items and {n_features} features); use "
                "'diagonal' or 'spherical'"
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
    labeled_weight: Annotated[int, Field(ge=1, le=100)] | Literal["auto"] | None = Field(
        None,
        description="How many times each labeled item counts in the fit; auto: 1, 3 or 10, "
        "whichever best predicts held-out labels (3-fold cross-validation, 9 more fits); "
        "empty: auto on tables, 10 on images (scribbles cover a few percent of the pixels)",
    )
    warm_start: bool = Field(
        False,
        description="Continue the partition of the latest finished CEC-IB run on this dataset, "
        "so a re-run after a few more labels keeps the clusters it need not change instead of "
        "redrawing them; live re-runs do this. Fresh starts are drawn only when the continued "
        "fit agrees with the labels less than that run did, and then compete under the usual "
        "rule (agreement with the labels, then the lowest cost)",
    )


DEFAULT_CLUSTERS = 10


# The Gaussian families `covariance: auto` fits on an image, in order (a tie keeps the first).
IMAGE_COVARIANCES = ("full", "diagonal")


def cec_kwargs(params: CECParams, info: SideInformation, progress: Progress) -> dict[str, Any]:
    """The constructor arguments every CEC-family estimator shares (CEC, CEC-IB, C3L, C4s),
    but the covariance family: `cec_fit_plan` resolves that."""
    n_clusters = clusters_for(params.n_clusters, info, DEFAULT_CLUSTERS)
    return {
        "n_clusters": n_clusters,
        "min_cluster_fraction": (
            min(params.TABLE_MIN_CLUSTER_FRACTION, auto_min_cluster_fraction(n_clusters))
            if params.min_cluster_fraction is None
            else params.min_cluster_fraction
        ),
        "n_init": params.TABLE_N_INIT if params.n_init is None else params.n_init,
        "max_iter": params.max_iter,
        "random_state": params.random_state,
        "progress": progress,
    }


def cec_fit_plan(
    make: Callable[[str], Any],
    params: CECParams,
    structure: ItemStructure | None,
    fit_kwargs: dict[str, Any] | None = None,
    table_auto: str = "full",
) -> FitPlan:
    """The plan of a CEC-family run; `make(covariance)` builds its estimator. `auto` is
    `table_auto` on tables (C4S: its own 'auto', which chooses by the constraints); on an
    image (where `structure` links neighbouring items) it fits each of IMAGE_COVARIANCES and
    keeps the most spatially coherent segmentation."""
    kwargs = fit_kwargs or {}
    if params.covariance != "auto":
        return FitPlan(make(params.covariance), kwargs)
    if structure is None:
        return FitPlan(make(table_auto), kwargs)
    candidates = [make(covariance) for covariance in IMAGE_COVARIANCES]
    chooser = MostCoherentFit(candidates, IMAGE_COVARIANCES, structure.pairs, structure.weights)
    return FitPlan(chooser, kwargs)


def plan_cec(
    params: CECParams,
    info: SideInformation,
    _x: FloatArray,
    progress: Progress,
    structure: ItemStructure | None = None,
) -> FitPlan:
    # Removals only: they merge a blob Hartigan left split in two; splits would add small,
    # nearly singular clusters (docs/cec-ib.md, "Paper protocol").
    shared = {**cec_kwargs(params, info, progress), "polish": "remove"}
    return cec_fit_plan(lambda covariance: CEC(covariance=covariance, **shared), params, structure)


def plan_cec_ib(
    params: CECIBParams,
    info: SideInformation,
    _x: FloatArray,
    progress: Progress,
    structure: ItemStructure | None = None,
    previous: Previous | None = None,
) -> FitPlan:
    shared = cec_kwargs(params, info, progress)
    # The labels choose the starts here (the engine's default is the paper's unsupervised
    # k-means++): on tables with 10% labeled and on scribbled images the label-seeded starts
    # predict the labels better (docs/cec-ib.md, "Starting from the labels").
    shared["init"] = "labels"
    # Removals only (the engine's default also splits): splits find lower energies by keeping
    # small clusters of nearly singular covariance, which cost the expert the groups (wine,
    # k = 6, 20% labeled: NMI 0.85 with 3.3 clusters -> 0.63 with 5.5; docs/cec-ib.md).
    shared["polish"] = "remove"
    # A partition over the same items continues (a re-featurized image has other items).
    warm = None
    if params.warm_start and previous is not None and previous.labels.shape == (len(_x),):
        warm = previous.labels
    # A data-parallel fit reads no earlier labels (20M of them would weigh on the run's
    # worker): it continues the earlier mixture instead, from its first pass.
    mixture = None
    if params.warm_start and previous is not None and previous.labels.size == 0:
        mixture = previous.mixture

    def make(covariance: str) -> CECIB:
        estimator = CECIB(
            beta=params.beta,
            labeled_weight="auto" if params.labeled_weight is None else params.labeled_weight,
            covariance=covariance,
            fresh_starts="if_worse",  # only warm fits use it: the expert's loop
            **shared,
        )
        if mixture is not None:
            return estimator.start_from_mixture(*mixture)
        if warm is None:
            return estimator
        assert previous is not None
        return estimator.start_from(warm, previous.agreement, previous.weight_search)

    return cec_fit_plan(make, params, structure, {"y": info.labels})


CEC_ALGORITHM = Algorithm(
    id="cec",
    name="CEC",
    summary="Cross-entropy clustering: Gaussian clusters, unneeded clusters removed on the way.",
    uses=(),
    side_information_mapping="Uses no side information.",
    params_model=CECParams,
    plan=plan_cec,
    uses_structure=True,
    pools_covariance_on_apply=True,
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
    uses_structure=True,
    continues=True,
    pools_covariance_on_apply=True,
)
