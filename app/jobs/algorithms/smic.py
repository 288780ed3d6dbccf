"""SMIC (specs/smic.md), with must-link/cannot-link as kernel edits (an extension)."""

from typing import Literal

from pydantic import Field

from app.engine import SMIC
from app.jobs.algorithms.base import (
    CANNOT_LINK,
    MUST_LINK,
    Algorithm,
    FitPlan,
    FloatArray,
    Params,
    Progress,
    hard_pairs,
)
from app.sideinfo import SideInformation


class SMICParams(Params):
    n_clusters: int = Field(3, ge=2, le=200, description="Number of clusters")
    n_neighbors: int | Literal["auto"] = Field(
        "auto", description="Nearest neighbours in the kernel, or 'auto' (chosen by LSMI)"
    )
    normalize: Literal["none", "symmetric"] = Field(
        "none",
        description="'symmetric' is the degree-normalised kernel: it reproduces all four of the "
        "paper's toy results, the literal kernel ('none') two",
    )
    random_state: int | None = Field(0, ge=0, description="Seed; empty for a random one")


def plan_smic(
    params: SMICParams, info: SideInformation, _x: FloatArray, progress: Progress
) -> FitPlan:
    if isinstance(params.n_neighbors, int) and not 1 <= params.n_neighbors <= 100:
        raise ValueError("n_neighbors must be between 1 and 100, or 'auto'")
    estimator = SMIC(
        n_clusters=params.n_clusters,
        n_neighbors=params.n_neighbors,
        normalize=params.normalize,
        random_state=params.random_state,
        progress=progress,
    )
    must = hard_pairs(info.must_link, info.must_link_confidence)
    cannot = hard_pairs(info.cannot_link, info.cannot_link_confidence)
    kwargs = {}
    if len(must):
        kwargs["must_link"] = must
    if len(cannot):
        kwargs["cannot_link"] = cannot
    return FitPlan(estimator, kwargs)


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
