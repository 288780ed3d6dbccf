"""C3L (specs/c3l.md): CEC clusters that leak at most ε across a decision boundary."""

import numpy as np
from pydantic import Field
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from app.engine import C3L
from app.jobs.algorithms.base import (
    BOUNDARY,
    LABELS,
    Algorithm,
    FitPlan,
    FloatArray,
    ItemStructure,
    Progress,
)
from app.jobs.algorithms.cec import CECParams, cec_fit_plan, cec_kwargs
from app.sideinfo import SideInformation


class C3LParams(CECParams):
    leakage: float = Field(
        0.05, gt=0.0, le=0.5, description="Largest share of a cluster allowed across the boundary"
    )


def requirement(info: SideInformation) -> str | None:
    if info.side_scores is not None or len(info.label_names) == 2:
        return None
    return (
        "C3L needs a drawn boundary, or labels of exactly two categories to learn one from "
        f"(the dataset has {len(info.label_names)} label categories and no boundary)"
    )


def side_scores(info: SideInformation, features: FloatArray) -> np.ndarray:
    """The boundary's scores; without a boundary, a linear classifier trained on the two label
    categories scores every item (>= 0: the first category)."""
    if info.side_scores is not None:
        return info.side_scores
    labeled = info.labels >= 0
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    model.fit(features[labeled], info.labels[labeled] == 0)
    return np.asarray(model.decision_function(features), dtype=np.float64)


def plan_c3l(
    params: C3LParams,
    info: SideInformation,
    features: FloatArray,
    progress: Progress,
    structure: ItemStructure | None = None,
) -> FitPlan:
    shared = cec_kwargs(params, info, progress)
    return cec_fit_plan(
        lambda covariance: C3L(leakage=params.leakage, covariance=covariance, **shared),
        params,
        structure,
        {"side_scores": side_scores(info, features)},
    )


C3L_ALGORITHM = Algorithm(
    id="c3l",
    name="C3L",
    summary="Cross-entropy clustering whose clusters leak at most ε across a decision boundary.",
    uses=(BOUNDARY, LABELS),
    side_information_mapping="The newest drawn boundary gives each item a signed side score "
    "(>= 0: its first category). Without a boundary, labels of exactly two categories train a "
    "linear classifier whose decision function gives the scores.",
    params_model=C3LParams,
    plan=plan_c3l,
    uses_structure=True,
    pools_covariance_on_apply=True,
    requirement=requirement,
)
