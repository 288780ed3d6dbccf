"""How many groups the expert has already told apart: the cluster count a run can take when
the user leaves it empty, and the words that say how it was counted."""

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from app.sideinfo.model import SideInformation

# A greedy clique is cheap on what experts draw; beyond this many linked components it stops.
MAX_COMPONENTS = 5_000


@dataclass(frozen=True)
class GroupCount:
    """Groups told apart: ``total``, of which ``categories`` label categories in use and
    ``new_sets`` unlabeled must-linked sets counted as groups of their own."""

    total: int
    categories: int
    new_sets: int

    def explained(self) -> str:
        """How the count came about, in the words the run's result shows."""
        if self.total < 2:
            return "no two groups told apart"
        parts = []
        if self.categories:
            parts.append(f"{self.categories} label categor{'y' if self.categories == 1 else 'ies'}")
        if self.new_sets:
            parts.append(
                f"{self.new_sets} must-linked set{'s' if self.new_sets > 1 else ''} kept apart "
                "from the labels by cannot-links and joined to none"
            )
        if self.total > self.categories + self.new_sets:
            return f"{self.total} groups kept pairwise apart by cannot-links"
        return " and ".join(parts)


def distinct_groups(info: SideInformation) -> int:
    """``count_groups(info).total``."""
    return count_groups(info).total


def count_groups(info: SideInformation) -> GroupCount:
    """Groups the side information tells apart, the larger of two lower bounds:

    - a set of groups pairwise apart (found greedily, most cannot-linked first): label
      categories are apart from each other, and hard cannot-links keep must-link components
      (or categories) apart;
    - the label categories plus the unlabeled must-linked sets (two or more items) that a hard
      cannot-link keeps from some category and no must-link joins to one: the expert said
      "these belong together, and they are not that", and has labeled no group they might
      be; several such sets count as one unless cannot-links keep them apart too.
    """
    labels = info.labels
    categories = int(np.unique(labels[labels >= 0]).shape[0])
    hard = info.cannot_link[info.cannot_link_confidence >= 1.0]
    if hard.shape[0] == 0:
        return GroupCount(categories, categories, 0)
    node = _group_nodes(info)
    ends = np.sort(node[hard], axis=1)
    ends = np.unique(ends[ends[:, 0] != ends[:, 1]], axis=0)
    if np.unique(ends).shape[0] > MAX_COMPONENTS:
        return GroupCount(max(categories, 2), categories, 0)
    neighbours: dict[int, set[int]] = {}
    for a, b in ends.tolist():
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    # Categories are nodes 0..C-1 (codes need not be dense: map them) and apart pairwise.
    codes = np.unique(labels[labels >= 0])
    category_nodes = {int(c) for c in codes}
    for a in category_nodes:
        neighbours.setdefault(a, set()).update(category_nodes - {a})
    apart = _greedy_clique(neighbours)
    sizes = np.bincount(node)
    new_sets = [
        v
        for v in neighbours
        if v not in category_nodes
        and sizes[v] >= 2
        and any(other in category_nodes for other in neighbours[v])
    ]
    extra = len(_greedy_clique({v: neighbours[v] & set(new_sets) for v in new_sets}))
    if categories + extra >= len(apart):
        return GroupCount(categories + extra, categories, extra)
    return GroupCount(len(apart), categories, 0)


def _group_nodes(info: SideInformation) -> NDArray[np.int64]:
    """One node per item: its label category's code when labeled, else its must-link
    component (offset past the codes). Every item of a component with a labeled item takes
    that label (the must-links join them)."""
    n = info.n_items
    chunklets = info.components()
    component = chunklets if chunklets.size else np.arange(n)
    labels = info.labels.astype(np.int64)
    offset = int(labels.max()) + 1 if (labels >= 0).any() else 0
    node = component.astype(np.int64) + offset
    labeled = labels >= 0
    # A component's label: any labeled member's (a component with two is a conflict, reported
    # elsewhere; either category will do for counting).
    component_label = np.full(int(component.max()) + 1 if n else 0, -1, dtype=np.int64)
    component_label[component[labeled]] = labels[labeled]
    joined = component_label[component]
    node[joined >= 0] = joined[joined >= 0]
    node[labeled] = labels[labeled]
    return node


def _greedy_clique(neighbours: dict[int, set[int]]) -> list[int]:
    """Nodes pairwise adjacent, picked most-connected first (a lower bound on the largest)."""
    apart: list[int] = []
    for v in sorted(neighbours, key=lambda c: (-len(neighbours[c]), c)):
        if all(other in neighbours[v] for other in apart):
            apart.append(v)
    return apart
