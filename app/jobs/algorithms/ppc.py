"""PPC (specs/ppc.md): a Gaussian mixture with a pairwise prior from soft and hard relations."""

from typing import Literal

import numpy as np
from pydantic import Field

from app.engine import PPC, confidence_to_weight
from app.engine.image.scribble_drift import ScribbleFaithfulFit
from app.jobs.algorithms.base import (
    AUTO_CLUSTERS,
    CANNOT_LINK,
    GUESSED_CLUSTERS,
    LABELS,
    MUST_LINK,
    Algorithm,
    FitPlan,
    FloatArray,
    ItemStructure,
    Params,
    Progress,
    Seed,
    at_most_items,
    clusters_for,
    guessed_count,
)
from app.jobs.results.continuation import Previous
from app.sideinfo import SideInformation

# PPC's M-step weight of an unscribbled item on an image when the run leaves it empty (tables:
# 1, plain EM). Scribbles cover about 2 % of the pixels; with plain EM the other 98 % pull a
# misspecified mixture (a bimodal texture, one Gaussian) away from the scribbled classes. At 0.1
# the scribbles carry about a sixth of the M-step's mass. bench_image, in-process, 5 tasks x 3
# draws: mean mIoU 0.710 -> 0.759 (0.05 and 0.2: 0.758 and 0.742), no task worse on average.
# Refitted with less when a component leaves its scribbles (ScribbleFaithfulFit).
IMAGE_UNLABELED_WEIGHT = 0.1


class PPCParams(Params):
    n_components: int | None = Field(
        None,
        ge=1,
        le=200,
        description=f"Number of mixture components; {AUTO_CLUSTERS}, else {GUESSED_CLUSTERS} "
        "(the result then says it was a guess)",
    )
    covariance: Literal["auto", "full", "tied", "diagonal", "spherical"] = Field(
        "auto",
        description="auto: with links or labels, a full and a tied model, the one that agrees "
        "more with them (docs/ppc.md); without any, full. On images auto is tied",
    )
    e_step: Literal["auto", "exact", "mean_field", "gibbs"] = Field(
        "auto", description="Posterior under the pairwise prior, chosen per linked component"
    )
    max_iter: int = Field(200, ge=1, le=10_000, description="Most EM iterations")
    tol: float = Field(1e-6, gt=0, le=1, description="Stop when the bound improves less")
    n_init: int = Field(1, ge=1, le=50, description="Restarts; the best bound is kept")
    random_state: Seed = 0
    unlabeled_weight: float | None = Field(
        None,
        gt=0,
        le=1,
        description="M-step weight of an unlabeled item against 1 for a labeled one (EM-lambda); "
        "empty: 1 on tables (plain EM); on images 0.1 (scribbles steer the components), "
        "refitted with the unscribbled items together at 1 % of the scribbled ones when a "
        "component's mean moves more than 2.5 standard deviations off its scribbles",
    )
    warm_start: bool = Field(
        False,
        description="Continue the mixture of the latest finished PPC run on this dataset (same "
        "number of components) instead of a fresh start, so a re-run after a few more "
        "annotations moves its clusters rather than redrawing them; live re-runs do this. A "
        "fresh start (and under covariance auto the other model) is drawn only when the "
        "continued mixture agrees with the annotations less than that run's did, and is kept "
        "only if it agrees with more of them",
    )
    continuity: float = Field(
        1.0,
        ge=0,
        le=20,
        description="Images: weight of the links between neighbouring pixels (or touching "
        "superpixels); 0 turns continuity off",
    )

    def data_problems(self, n_items: int, n_features: int) -> list[str]:
        return at_most_items("n_components", self.n_components, n_items)


def relations(info: SideInformation) -> tuple[np.ndarray, np.ndarray]:
    """Pairs and weights: links and do-not-links from annotations (confidence -> weight,
    confidence 1 -> +-inf)."""
    pairs = np.concatenate([info.must_link, info.cannot_link])
    weights = np.concatenate(
        [
            confidence_to_weight(info.must_link_confidence, True),
            confidence_to_weight(info.cannot_link_confidence, False),
        ]
    )
    return pairs.astype(np.int64), weights


def component_labels(info: SideInformation, n_components: int) -> np.ndarray | None:
    """Labels as components: the categories in use, in order, become components 0, 1, ...;
    -1 stays unlabeled. None when nothing is labeled."""
    used = np.unique(info.labels[info.labels >= 0])
    if used.shape[0] == 0:
        return None
    if used.shape[0] > n_components:
        raise ValueError(
            f"the labels use {used.shape[0]} categories but n_components is {n_components}; "
            "every category needs its own component"
        )
    if np.array_equal(used, np.arange(used.shape[0])):
        return info.labels  # already 0, 1, ... in order: no copy (80 MB at 20M items)
    out = np.full(info.labels.shape[0], -1, dtype=np.int32)
    known = info.labels >= 0
    out[known] = np.searchsorted(used, info.labels[known])
    return out


def continue_mixture(estimator: PPC, previous: Previous, n_features: int) -> None:
    """Start ``estimator`` from ``previous``'s mixture when it is one it can continue: the same
    number of components on features of the same width (otherwise it starts afresh, and the
    run's ``metrics.warm_start.continued`` says so)."""
    kept = previous.cluster_params
    if not all(name in kept for name in ("weights", "means", "covariances", "covariance")):
        return  # kept before runs stored covariances, or too large to keep
    means = np.asarray(kept["means"], dtype=np.float64)
    if means.shape != (estimator.n_components, n_features):
        return
    try:
        estimator.start_from(
            kept["weights"], means, kept["covariances"], kept["covariance"], previous.agreement
        )
    except ValueError:
        return  # not a mixture PPC can start from (another model's parameters)


def plan_ppc(
    params: PPCParams,
    info: SideInformation,
    _x: FloatArray,
    progress: Progress,
    structure: ItemStructure | None = None,
    previous: Previous | None = None,
) -> FitPlan:
    n_components = clusters_for(params.n_components, info, GUESSED_CLUSTERS)

    def make(unlabeled_weight: float) -> PPC:
        estimator = PPC(
            n_components=n_components,
            covariance=params.covariance,
            e_step=params.e_step,
            max_iter=params.max_iter,
            tol=params.tol,
            n_init=params.n_init,
            random_state=params.random_state,
            progress=progress,
            unlabeled_weight=unlabeled_weight,
            fresh_starts="if_worse",  # only warm fits use it: the expert's loop
        )
        if params.warm_start and previous is not None:
            continue_mixture(estimator, previous, _x.shape[1])
        return estimator

    pairs, weights = relations(info)
    if structure is not None and params.continuity > 0:
        # Continuity links are soft; an annotation on the same pair keeps its own weight too.
        pairs = np.concatenate([pairs, structure.pairs])
        weights = np.concatenate([weights, params.continuity * structure.weights])
    kwargs: dict[str, object] = {}
    if len(pairs):
        kwargs.update(pairs=pairs, weights=weights)
    labels = component_labels(info, n_components)
    if labels is not None:
        kwargs["labels"] = labels
    notes = guessed_count("n_components", params.n_components, info)
    if params.unlabeled_weight is not None:
        return FitPlan(make(params.unlabeled_weight), kwargs, notes)
    if structure is None:
        return FitPlan(make(1.0), kwargs, notes)  # a table: plain EM
    # An image, the weight left empty: the scribbles steer, unless the unscribbled items pull
    # a component off its own scribbles (app/engine/image/scribble_drift.py).
    return FitPlan(ScribbleFaithfulFit(make, IMAGE_UNLABELED_WEIGHT), kwargs, notes)


PPC_ALGORITHM = Algorithm(
    id="ppc",
    name="PPC",
    summary="Penalized probabilistic clustering: a Gaussian mixture whose prior rewards links "
    "and penalizes do-not-links, soft or hard.",
    uses=(LABELS, MUST_LINK, CANNOT_LINK),
    side_information_mapping="Must-links and cannot-links become links and do-not-links with "
    "weight ±½·log(gamma / (1 - gamma)) from their confidence gamma (gamma = 1: hard, ±inf). "
    "Labels fix their items to a component (one component per label category, in order): "
    "the E-step conditions on them, which is what hard links within a class and hard "
    "do-not-links between classes would say, without building those relations. On images, "
    "neighbouring pixels (or touching superpixels) are linked with weight `continuity`.",
    params_model=PPCParams,
    plan=plan_ppc,
    uses_structure=True,
    continues=True,
)
