"""PPC's relations on a dask array: the related rows, grouped so that no relation crosses a group.

A relation couples the E-steps of its two rows, so both must be solved in one task. The rows
that take part in some relation are taken out of their chunks, and their connected components
(of the relation graph, hard links included) are packed whole into groups of about
``GROUP_ROWS`` rows; each group is one task of every pass, solved by PPC's own E-step engines
(sum-product, enumeration, mean field, Gibbs) on the group's relation graph. All the other rows
are independent given the mixture: their chunks' tasks need no graph at all (a labeled row is
conditioned on its component in its own chunk).

Expert annotations relate thousands of rows, not millions, so the groups are gathered once and
kept beside the fit (on the workers, when a distributed client is current). A component larger
than a group (an image grid's neighbour links) is one group of its own: relations never split.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from app.engine.arrays import FloatArray, IntArray
from app.engine.ppc.graph import RelationGraph, build_graph
from app.engine.ppc.relations import Relations

# Rows per group task: as a store chunk's task, so a group's E-step weighs like a chunk's.
GROUP_ROWS = 262_144


@dataclass(frozen=True)
class RelationGroup:
    rows: IntArray  # positions in X, sorted
    graph: RelationGraph  # over the group's rows 0..len(rows)-1
    labels: IntArray  # the group's rows' labels (-1 unlabeled)


@dataclass(frozen=True)
class RelatedRows:
    rows: IntArray  # every row in some relation, sorted
    graph: RelationGraph  # over ``rows``' positions: Omega, the E-step plan, feasibility
    groups: list[RelationGroup]


def local_relations(rel: Relations, rows: IntArray) -> Relations:
    """``rel`` with sample indices replaced by their positions in ``rows``."""

    def at(ids: IntArray) -> IntArray:
        return np.searchsorted(rows, ids).astype(np.int64)

    return Relations(
        at(rel.soft_i), at(rel.soft_j), rel.soft_J,
        at(rel.link_i), at(rel.link_j), at(rel.dnl_i), at(rel.dnl_j),
    )  # fmt: skip


def _within(rel: Relations, members: IntArray, positions: IntArray) -> Relations:
    """The relations among ``members`` (positions in the related rows, sorted), re-indexed to
    0..len(members)-1; ``positions`` maps a related row to its index in ``members`` (-1 if out)."""

    def pick(i: IntArray, j: IntArray, *extra: FloatArray) -> list[Any]:
        inside = positions[i] >= 0
        return [positions[i[inside]], positions[j[inside]], *(e[inside] for e in extra)]

    soft_i, soft_j, soft_J = pick(rel.soft_i, rel.soft_j, rel.soft_J)
    link_i, link_j = pick(rel.link_i, rel.link_j)
    dnl_i, dnl_j = pick(rel.dnl_i, rel.dnl_j)
    return Relations(soft_i, soft_j, soft_J, link_i, link_j, dnl_i, dnl_j)


def _packed(component: IntArray, limit: int) -> list[IntArray]:
    """Whole components in groups of at most ``limit`` rows (one component may exceed it), in
    the order of their first row: a greedy first fit that keeps nearby rows together."""
    n_comp = int(component.max()) + 1 if component.shape[0] else 0
    order = np.argsort(component, kind="stable")
    bounds = np.searchsorted(component[order], np.arange(n_comp + 1))
    first = np.full(n_comp, component.shape[0])
    np.minimum.at(first, component, np.arange(component.shape[0]))
    groups: list[list[IntArray]] = []
    sizes: list[int] = []
    for c in np.argsort(first, kind="stable").tolist():
        members = order[bounds[c] : bounds[c + 1]]
        if sizes and sizes[-1] + members.shape[0] <= limit:
            groups[-1].append(members)
            sizes[-1] += members.shape[0]
        else:
            groups.append([members])
            sizes.append(members.shape[0])
    return [np.sort(np.concatenate(parts)) for parts in groups]


def related_rows(
    rel: Relations,
    labels: IntArray | None,
    n_components: int,
    e_step: str,
    max_exact_states: int,
) -> RelatedRows:
    """The rows in some relation, their graph, and their groups (``labels`` over all rows, or
    None: none labeled)."""
    ends = [rel.soft_i, rel.soft_j, rel.link_i, rel.link_j, rel.dnl_i, rel.dnl_j]
    rows = np.unique(np.concatenate(ends)).astype(np.int64)
    local = local_relations(rel, rows)
    own = (
        labels[rows].astype(np.int64)
        if labels is not None
        else np.full(rows.shape[0], -1, dtype=np.int64)
    )
    graph = build_graph(local, rows.shape[0], n_components, e_step, max_exact_states, own)
    i = np.concatenate([local.soft_i, local.link_i, local.dnl_i])
    j = np.concatenate([local.soft_j, local.link_j, local.dnl_j])
    adjacency = coo_matrix((np.ones(i.shape[0]), (i, j)), shape=(rows.shape[0],) * 2)
    component = connected_components(adjacency, directed=False)[1].astype(np.int64)
    groups = []
    for members in _packed(component, GROUP_ROWS):
        positions = np.full(rows.shape[0], -1, dtype=np.int64)
        positions[members] = np.arange(members.shape[0])
        inner = _within(local, members, positions)
        group_graph = build_graph(
            inner, members.shape[0], n_components, e_step, max_exact_states, own[members]
        )
        groups.append(RelationGroup(rows[members], group_graph, own[members]))
    return RelatedRows(rows, graph, groups)


def excluded_per_chunk(related: IntArray, chunk_rows: list[int]) -> list[IntArray]:
    """For every chunk, the positions inside it of the related rows it holds."""
    bounds = np.cumsum([0, *chunk_rows])
    return [
        related[np.searchsorted(related, a) : np.searchsorted(related, b)] - a
        for a, b in itertools.pairwise(bounds)
    ]
