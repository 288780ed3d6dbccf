"""What a run's result says about its cluster count: where the number came from (set, one per
group the expert told apart, or a guess) and, for CEC-family fits, how many clusters were
removed on the way and why."""

from typing import Any

from pydantic import BaseModel

from app.sideinfo import SideInformation
from app.sideinfo.groups import count_groups

# The parameter that holds a method's cluster count, by the name its params use.
COUNT_FIELDS = ("n_clusters", "n_components")


def count_metrics(params: BaseModel, info: SideInformation, estimator: Any) -> dict[str, Any]:
    """``metrics["cluster_count"]``: the parameter, the value asked for (None: left empty),
    the count the fit started with, the count it kept, and ``how`` in words. Empty for a
    method without a count."""
    name = next((f for f in COUNT_FIELDS if f in type(params).model_fields), None)
    if name is None:
        return {}
    asked = getattr(params, name)
    started = getattr(estimator, name, asked)
    kept = getattr(estimator, f"{name}_", started)
    if asked is not None:
        how = f"{name} {asked}, as set"
    else:
        groups = count_groups(info)
        how = (
            f"one per group told apart: {groups.explained()}"
            if groups.total >= 2 and groups.total == started
            else f"a guess of {started}: no two groups are told apart yet"
        )
    return {"parameter": name, "asked": asked, "started": started, "kept": kept, "how": how}


def removal_warning(estimator: Any) -> str | None:
    """The warning of a CEC-family fit that removed clusters: started with more than it kept.
    (CEC removes a cluster smaller than ``min_cluster_fraction`` of the items, or singular.)"""
    fraction = getattr(estimator, "min_cluster_fraction_", None)
    started, kept = getattr(estimator, "n_clusters", None), getattr(estimator, "n_clusters_", None)
    if fraction is None or started is None or kept is None or kept >= started:
        return None
    removed = started - kept
    return (
        f"{removed} of the {started} clusters asked for {'was' if removed == 1 else 'were'} "
        f"removed while fitting (each fell under min_cluster_fraction {fraction:.3g} of the "
        "items, or its covariance became singular); if the data hold more groups, lower "
        "min_cluster_fraction or label items of the missing groups"
    )
