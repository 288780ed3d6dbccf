"""SMIC (specs/smic.md), with must-link/cannot-link as kernel edits (an extension)."""

from typing import Annotated, Literal

from pydantic import Field

from app.engine import SMIC
from app.jobs.algorithms.base import (
    AUTO_CLUSTERS,
    CANNOT_LINK,
    GUESSED_CLUSTERS,
    MUST_LINK,
    Algorithm,
    FitPlan,
    FloatArray,
    Params,
    Progress,
    Seed,
    at_most_items,
    clusters_for,
    guessed_count,
    hard_links,
    link_kwargs,
)
from app.sideinfo import SideInformation


class SMICParams(Params):
    n_clusters: int | None = Field(
        None,
        ge=2,
        le=200,
        description=f"Number of clusters; {AUTO_CLUSTERS}, else {GUESSED_CLUSTERS} "
        "(the result then says it was a guess)",
    )
    n_neighbors: Annotated[int, Field(ge=1, le=100)] | Literal["auto"] = Field(
        "auto",
        description="Nearest neighbours in the kernel (1 to 100), or 'auto' (chosen by LSMI)",
    )
    normalize: Literal["auto", "none", "symmetric"] = Field(
        "auto",
        description="'auto' tries the paper's kernel ('none') and the degree-normalised one "
        "('symmetric') for every t and lets LSMI choose (docs/smic.md)",
    )
    random_state: Seed = 0

    def data_problems(self, n_items: int, n_features: int) -> list[str]:
        problems = at_most_items("n_clusters", self.n_clusters, n_items)
        if isinstance(self.n_neighbors, int) and self.n_neighbors > n_items - 1:
            problems.append(
                f"n_neighbors: {self.n_neighbors} needs at least {self.n_neighbors + 1} items; "
                f"the dataset has {n_items} (or use 'auto')"
            )
        return problems


def plan_smic(
    params: SMICParams, info: SideInformation, _x: FloatArray, progress: Progress
) -> FitPlan:
    estimator = SMIC(
        n_clusters=clusters_for(params.n_clusters, info, GUESSED_CLUSTERS),
        n_neighbors=params.n_neighbors,
        normalize=params.normalize,
        random_state=params.random_state,
        progress=progress,
    )
    notes = guessed_count("n_clusters", params.n_clusters, info)
    return FitPlan(estimator, link_kwargs(*hard_links(info)), notes)


SMIC_ALGORITHM = Algorithm(
    id="smic",
    name="SMIC",
    summary="Squared-loss mutual information clustering on a sparse nearest-neighbour kernel, "
    "with the neighbourhood size chosen by LSMI.",
    uses=(MUST_LINK, CANNOT_LINK),
    side_information_mapping="Hard must-links and cannot-links edit the kernel (an extension "
    "of the paper, which is unsupervised). Labels and boundaries are not used.",
    params_model=SMICParams,
    plan=plan_smic,
)
