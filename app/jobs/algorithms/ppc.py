"""PPC (specs/ppc.md): a Gaussian mixture with a pairwise prior from soft and hard relations."""

from typing import Literal

import numpy as np
from pydantic import Field

from app.engine import PPC, confidence_to_weight
from app.jobs.algorithms.base import (
    CANNOT_LINK,
    LABELS,
    MUST_LINK,
    Algorithm,
    FitPlan,
    FloatArray,
    Params,
    Progress,
    Seed,
    at_most_items,
)
from app.sideinfo import SideInformation
from app.sideinfo.label_links import label_links


class PPCParams(Params):
    n_components: int = Field(3, ge=1, le=200, description="Number of mixture components")
    covariance: Literal["full", "diagonal", "spherical"] = "full"
    e_step: Literal["auto", "exact", "mean_field", "gibbs"] = Field(
        "auto", description="Posterior under the pairwise prior, chosen per linked component"
    )
    max_iter: int = Field(200, ge=1, le=10_000, description="Most EM iterations")
    tol: float = Field(1e-6, gt=0, le=1, description="Stop when the bound improves less")
    n_init: int = Field(1, ge=1, le=50, description="Restarts; the best bound is kept")
    random_state: Seed = 0

    def data_problems(self, n_items: int, n_features: int) -> list[str]:
        return at_most_items("n_components", self.n_components, n_items)


def relations(info: SideInformation, seed: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Pairs and weights: links and do-not-links from annotations (confidence -> weight,
    confidence 1 -> +-inf), plus hard relations implied by labels."""
    label_must, label_cannot = label_links(info.labels, np.random.default_rng(seed))
    pairs = np.concatenate([info.must_link, info.cannot_link, label_must, label_cannot])
    weights = np.concatenate(
        [
            confidence_to_weight(info.must_link_confidence, True),
            confidence_to_weight(info.cannot_link_confidence, False),
            np.full(len(label_must), np.inf),
            np.full(len(label_cannot), -np.inf),
        ]
    )
    return pairs.astype(np.int64), weights


def plan_ppc(
    params: PPCParams, info: SideInformation, _x: FloatArray, progress: Progress
) -> FitPlan:
    estimator = PPC(
        n_components=params.n_components,
        covariance=params.covariance,
        e_step=params.e_step,
        max_iter=params.max_iter,
        tol=params.tol,
        n_init=params.n_init,
        random_state=params.random_state,
        progress=progress,
    )
    pairs, weights = relations(info, params.random_state)
    if len(pairs) == 0:
        return FitPlan(estimator)
    return FitPlan(estimator, {"pairs": pairs, "weights": weights})


PPC_ALGORITHM = Algorithm(
    id="ppc",
    name="PPC",
    summary="Penalized probabilistic clustering: a Gaussian mixture whose prior rewards links "
    "and penalizes do-not-links, soft or hard.",
    uses=(LABELS, MUST_LINK, CANNOT_LINK),
    side_information_mapping="Must-links and cannot-links become links and do-not-links with "
    "weight ±½·log(gamma / (1 - gamma)) from their confidence gamma (gamma = 1: hard, ±inf). "
    "Labels become hard links within a class (chained) and hard do-not-links between classes "
    "(sampled).",
    params_model=PPCParams,
    plan=plan_ppc,
)
