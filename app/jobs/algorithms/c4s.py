"""C4s (specs/c4s.md): CEC with must-link chunklets and cannot-links that always hold."""

from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from app.engine import C4S
from app.jobs.algorithms.base import (
    CANNOT_LINK,
    LABELS,
    MUST_LINK,
    Algorithm,
    FitPlan,
    FloatArray,
    ItemStructure,
    Progress,
    hard_links,
    link_kwargs,
)
from app.jobs.algorithms.cec import CECParams, cec_fit_plan, cec_kwargs
from app.sideinfo import SideInformation
from app.sideinfo.label_links import label_links


class C4SParams(CECParams):
    # one family more than CEC's: a wider field, which pydantic validates as declared here
    covariance: Literal["auto", "full", "diagonal", "spherical", "tied_spherical"] = Field(  # type: ignore[assignment]
        "auto",
        description="Gaussian family of each cluster; tied_spherical: spherical clusters that "
        "share one variance (as k-means). auto: on tables with constraints, full and "
        "tied_spherical are fitted and the one whose Gaussians agree with more constraints is "
        "kept (docs/c4s-c3l.md); on images as CEC's auto",
    )
    n_chunklet_clusters: int = Field(
        4, ge=1, le=100, description="Most CEC clusters a single chunklet is split into"
    )
    min_cluster_fraction: float | None = Field(
        None,
        ge=0.0,
        lt=1.0,
        description="Remove clusters smaller than this fraction of items; empty: 0.01",
    )
    TABLE_MIN_CLUSTER_FRACTION: ClassVar[float] = 0.01
    max_iter: int = Field(50, ge=1, le=10_000, description="Most sweeps per restart")


def plan_c4s(
    params: C4SParams,
    info: SideInformation,
    _x: FloatArray,
    progress: Progress,
    structure: ItemStructure | None = None,
) -> FitPlan:
    label_must, label_cannot = label_links(info.labels, np.random.default_rng(params.random_state))
    must, cannot = hard_links(info)
    must, cannot = np.concatenate([must, label_must]), np.concatenate([cannot, label_cannot])
    shared = cec_kwargs(params, info, progress)
    return cec_fit_plan(
        lambda covariance: C4S(
            n_chunklet_clusters=params.n_chunklet_clusters, covariance=covariance, **shared
        ),
        params,
        structure,
        link_kwargs(must, cannot),
        table_auto="auto",
    )


C4S_ALGORITHM = Algorithm(
    id="c4s",
    name="C4s",
    summary="Cross-entropy clustering with must-link and cannot-link constraints that always "
    "hold, for clusters of complex shape.",
    uses=(LABELS, MUST_LINK, CANNOT_LINK),
    side_information_mapping="Hard must-links and cannot-links are used as they are (soft ones "
    "are ignored). Labels become must-links within a class (chained) and cannot-links between "
    "classes (sampled).",
    params_model=C4SParams,
    plan=plan_c4s,
    uses_structure=True,
    pools_covariance_on_apply=True,
)
