"""How many groups the expert has already told apart: the cluster count a run can take when
the user leaves it empty."""

import numpy as np

from app.sideinfo.model import SideInformation

# A greedy clique is cheap on what experts draw; beyond this many linked components it stops.
MAX_COMPONENTS = 5_000


def distinct_groups(info: SideInformation) -> int:
    """At least the number of label categories in use, and at least the size of a set of
    must-link components that hard cannot-links keep pairwise apart (found greedily, most
    cannot-linked component first: a lower bound on the largest such set)."""
    categories = int(np.unique(info.labels[info.labels >= 0]).shape[0])
    hard = info.cannot_link[info.cannot_link_confidence >= 1.0]
    if hard.shape[0] == 0:
        return categories
    component = info.chunklets if info.chunklets.size else np.arange(info.n_items)
    ends = np.sort(component[hard], axis=1)
    ends = np.unique(ends[ends[:, 0] != ends[:, 1]], axis=0)
    neighbours: dict[int, set[int]] = {}
    for a, b in ends.tolist():
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    if len(neighbours) > MAX_COMPONENTS:
        return max(categories, 2)
    apart: list[int] = []
    for node in sorted(neighbours, key=lambda c: (-len(neighbours[c]), c)):
        if all(other in neighbours[node] for other in apart):
            apart.append(node)
    return max(categories, len(apart))
