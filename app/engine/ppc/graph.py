"""PPC relations as a graph: hard-link contraction, components, and the E-step engine plan.

Conventions (specs/ppc.md Sec. 1.3): the API weight ``W`` of a pair is the paper's weight per
*ordered* pair, so the prior factor of an unordered pair is ``exp(2 W [z_i = z_j])``; internally
every edge stores the coupling ``J = 2 W``. ``W = +inf`` is a hard link, ``W = -inf`` a hard
do-not-link; both are handled structurally, never as numbers:

* hard links are contracted (union-find) into super-nodes ("chunklets") whose log-score is the
  sum of their members' (spec Sec. 3.3.3); a soft relation inside a chunklet is a constant and is
  dropped, soft relations between two chunklets add up;
* a hard do-not-link is an edge flag: its configurations with equal labels get probability 0.

Duplicate rows for the same unordered pair are summed (decision 7.2.11, natural in the
log-linear prior); a hard relation absorbs soft ones on the same pair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import NDArray
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from app.engine.arrays import BoolArray, FloatArray, IntArray
from app.engine.ppc.relations import Relations, chunklets

SINGLE = 0
TREE = 1
ENUM = 2
MEAN_FIELD = 3
GIBBS = 4
E_STEPS = ("auto", "exact", "mean_field", "gibbs")


@dataclass(frozen=True)
class ExactSet:
    """Components solved exactly: trees (sum-product) and small loopy ones (enumeration).

    Node ids index the rows of the log-score matrix the engine is called with.
    Tree ``t`` occupies positions ``tree_ptr[t]:tree_ptr[t+1]`` of ``tree_order`` in BFS order
    (root first); ``tree_parent[p]`` is the parent's position (-1 for the root) and
    ``tree_J`` / ``tree_hard`` describe the edge to the parent. Loopy component ``c`` has nodes
    ``enum_nodes[enum_ptr[c]:enum_ptr[c+1]]`` and edges ``enum_eptr[c]:enum_eptr[c+1]`` between
    local positions ``enum_u``, ``enum_v``.
    """

    tree_ptr: IntArray
    tree_order: IntArray
    tree_parent: IntArray
    tree_J: FloatArray
    tree_hard: BoolArray
    enum_ptr: IntArray
    enum_nodes: IntArray
    enum_eptr: IntArray
    enum_u: IntArray
    enum_v: IntArray
    enum_J: FloatArray
    enum_hard: BoolArray

    @property
    def n_trees(self) -> int:
        return int(self.tree_ptr.shape[0] - 1)

    @property
    def n_enum(self) -> int:
        return int(self.enum_ptr.shape[0] - 1)


@dataclass(frozen=True)
class OmegaModel:
    """The prior's normaliser log Omega(pi) as a sum over distinct component shapes.

    ``shapes`` is an ExactSet over representative nodes with chunklet sizes ``size``; shape s
    occurs ``tree_count`` / ``enum_count`` times. Unit singletons contribute log 1 = 0.
    ``exact`` is False when some component is too large for exact Omega (then pi stays fixed).
    """

    shapes: ExactSet
    size: FloatArray
    node_count: FloatArray  # how often the component of each representative node occurs
    tree_count: FloatArray
    enum_count: FloatArray
    exact: bool

    @property
    def trivial(self) -> bool:
        return self.shapes.n_trees == 0 and self.shapes.n_enum == 0


@dataclass(frozen=True)
class RelationGraph:
    """The contracted relation graph and the E-step plan for one fit."""

    super_of: IntArray  # sample -> super-node
    size: FloatArray  # members per super-node
    nbr_ptr: IntArray  # CSR adjacency of the super-node graph
    nbr_idx: IntArray
    nbr_J: FloatArray
    nbr_hard: BoolArray
    comp_of: IntArray  # super-node -> component
    comp_kind: IntArray  # SINGLE, TREE, ENUM, MEAN_FIELD or GIBBS
    comp_hard: BoolArray  # the component has a hard do-not-link
    exact: ExactSet
    single_nodes: IntArray
    mf_nodes: IntArray  # sorted by colour: mf_colours[c]:mf_colours[c+1] hold colour c
    mf_colours: IntArray
    gibbs_nodes: IntArray  # likewise
    gibbs_colours: IntArray
    omega: OmegaModel
    dnl_i: IntArray  # hard do-not-links (samples), for checks and messages
    dnl_j: IntArray
    labeled: IntArray  # samples with a known component (clamped), and that component
    label_of: IntArray

    @property
    def n_super(self) -> int:
        return int(self.size.shape[0])

    @property
    def has_edges(self) -> bool:
        return bool(self.nbr_idx.shape[0] > 0)


@numba.njit(nogil=True, cache=True)
def _greedy_colours(nodes: IntArray, nbr_ptr: IntArray, nbr_idx: IntArray) -> IntArray:
    """Colour ``nodes`` so that no two neighbours share a colour (smallest free colour, in the
    given order); on a row-major 4-neighbour grid this is the checkerboard."""
    n = nbr_ptr.shape[0] - 1
    colour = np.full(n, -1, dtype=np.int64)
    used = np.full(n + 1, -1, dtype=np.int64)  # used[c] == i: colour c is taken next to node i
    for i in nodes:
        for e in range(nbr_ptr[i], nbr_ptr[i + 1]):
            c = colour[nbr_idx[e]]
            if c >= 0:
                used[c] = i
        c = 0
        while used[c] == i:
            c += 1
        colour[i] = c
    out = np.empty(nodes.shape[0], dtype=np.int64)
    for p in range(nodes.shape[0]):
        out[p] = colour[nodes[p]]
    return out


def colour_classes(
    nodes: IntArray, nbr_ptr: IntArray, nbr_idx: IntArray
) -> tuple[IntArray, IntArray]:
    """``nodes`` grouped by a greedy colouring, and the offsets of each colour's group.

    Nodes of one colour share no edge, so a mean-field, Gibbs or ICM update of all of them at
    once is exactly a sequence of single-node updates in any order: the schedule stays a
    coordinate ascent (or a valid Gibbs scan), symmetric on a grid (the checkerboard)."""
    if nodes.shape[0] == 0:
        return nodes, np.zeros(1, dtype=np.int64)
    colour = _greedy_colours(nodes, nbr_ptr, nbr_idx)
    order = np.argsort(colour, kind="stable")
    ptr = np.zeros(int(colour.max()) + 2, dtype=np.int64)
    np.cumsum(np.bincount(colour, minlength=ptr.shape[0] - 1), out=ptr[1:])
    return nodes[order], ptr


@numba.njit(nogil=True, cache=True)
def _bfs_forest(
    nbr_ptr: IntArray,
    nbr_idx: IntArray,
    nbr_J: FloatArray,
    nbr_hard: BoolArray,
    roots: IntArray,
    order: IntArray,
    parent: IntArray,
    pJ: FloatArray,
    phard: BoolArray,
    ptr: IntArray,
) -> None:
    """BFS from every root; positions, parent positions and parent edges of each tree."""
    n = nbr_ptr.shape[0] - 1
    pos_of = np.full(n, -1, dtype=np.int64)
    p = 0
    for t in range(roots.shape[0]):
        ptr[t] = p
        head = p
        order[p] = roots[t]
        parent[p] = -1
        pJ[p] = 0.0
        phard[p] = False
        pos_of[roots[t]] = p
        p += 1
        while head < p:
            node = order[head]
            for e in range(nbr_ptr[node], nbr_ptr[node + 1]):
                nxt = nbr_idx[e]
                if pos_of[nxt] < 0:
                    order[p] = nxt
                    parent[p] = head
                    pJ[p] = nbr_J[e]
                    phard[p] = nbr_hard[e]
                    pos_of[nxt] = p
                    p += 1
            head += 1
    ptr[roots.shape[0]] = p


class ComponentNodes:
    """The nodes of each connected component, sliced on demand from one sorted order (a
    list of 100k one-node arrays cost more than the EM iterations after it)."""

    def __init__(self, comp_of: IntArray, comp_size: IntArray) -> None:
        self.order = np.argsort(comp_of, kind="stable")
        self.bounds = np.concatenate([[0], np.cumsum(comp_size)]).astype(np.int64)
        self.sizes = comp_size

    def __getitem__(self, c: int) -> IntArray:
        return self.order[self.bounds[c] : self.bounds[c + 1]]

    def __len__(self) -> int:
        return int(self.sizes.shape[0])

    def first(self) -> IntArray:
        """The first node of every component."""
        return self.order[self.bounds[:-1]]


def _exact_set(
    nodes_of: ComponentNodes | list[IntArray],
    kinds: list[int],
    nbr: tuple[IntArray, IntArray, FloatArray, BoolArray],
    edges: tuple[IntArray, IntArray, FloatArray, BoolArray],
    edge_comp: IntArray,
    comp_ids: list[int],
) -> ExactSet:
    """Pack the listed components (TREE or ENUM) into flat arrays."""
    tree_ids = [c for c, k in zip(comp_ids, kinds, strict=True) if k == TREE]
    enum_ids = [c for c, k in zip(comp_ids, kinds, strict=True) if k == ENUM]
    tptr, order, parent, pJ, phard = _tree_forest(nodes_of, tree_ids, nbr)
    return ExactSet(
        tptr, order, parent, pJ, phard, *_enum_components(nodes_of, enum_ids, edges, edge_comp)
    )


def _tree_forest(
    nodes_of: ComponentNodes | list[IntArray],
    tree_ids: list[int],
    nbr: tuple[IntArray, IntArray, FloatArray, BoolArray],
) -> tuple[IntArray, IntArray, IntArray, FloatArray, BoolArray]:
    """The tree components in BFS order from their first node: ExactSet's ``tree_*`` fields
    (``tree_ptr``, ``tree_order``, ``tree_parent``, ``tree_J``, ``tree_hard``)."""
    nbr_ptr, nbr_idx, nbr_J, nbr_hard = nbr
    tree_roots = [int(nodes_of[c][0]) for c in tree_ids]
    n_tree_nodes = sum(nodes_of[c].shape[0] for c in tree_ids)
    order = np.empty(n_tree_nodes, dtype=np.int64)
    parent = np.empty(n_tree_nodes, dtype=np.int64)
    pJ = np.empty(n_tree_nodes)
    phard = np.empty(n_tree_nodes, dtype=np.bool_)
    tptr = np.zeros(len(tree_roots) + 1, dtype=np.int64)
    _bfs_forest(
        nbr_ptr,
        nbr_idx,
        nbr_J,
        nbr_hard,
        np.asarray(tree_roots, dtype=np.int64),
        order,
        parent,
        pJ,
        phard,
        tptr,
    )
    return tptr, order, parent, pJ, phard


def _enum_components(
    nodes_of: ComponentNodes | list[IntArray],
    enum_ids: list[int],
    edges: tuple[IntArray, IntArray, FloatArray, BoolArray],
    edge_comp: IntArray,
) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray, FloatArray, BoolArray]:
    """The loopy components to enumerate, each with its edges between local positions:
    ExactSet's ``enum_*`` fields (``enum_ptr``, ``enum_nodes``, ``enum_eptr``, ``enum_u``,
    ``enum_v``, ``enum_J``, ``enum_hard``)."""
    eu, ev, eJ, ehard = edges
    eptr = [0]
    enodes: list[IntArray] = []
    edge_ptr = [0]
    us: list[IntArray] = []
    vs: list[IntArray] = []
    Js: list[FloatArray] = []
    hards: list[BoolArray] = []
    edge_order = np.argsort(edge_comp, kind="stable")
    edge_bounds = np.searchsorted(edge_comp[edge_order], np.arange(len(nodes_of) + 1))
    for c in enum_ids:
        nodes = nodes_of[c]
        local = {int(v): q for q, v in enumerate(nodes)}
        rows = edge_order[edge_bounds[c] : edge_bounds[c + 1]]
        enodes.append(nodes)
        eptr.append(eptr[-1] + nodes.shape[0])
        us.append(np.array([local[int(x)] for x in eu[rows]], dtype=np.int64))
        vs.append(np.array([local[int(x)] for x in ev[rows]], dtype=np.int64))
        Js.append(eJ[rows])
        hards.append(ehard[rows])
        edge_ptr.append(edge_ptr[-1] + rows.shape[0])
    return (
        np.asarray(eptr, dtype=np.int64),
        _cat(enodes, np.int64),
        np.asarray(edge_ptr, dtype=np.int64),
        _cat(us, np.int64),
        _cat(vs, np.int64),
        _cat(Js, np.float64),
        _cat(hards, np.bool_),
    )


def _cat(parts: list, dtype: type) -> NDArray:
    """``parts`` end to end as ``dtype`` (an empty array when there are none)."""
    return np.concatenate(parts).astype(dtype) if parts else np.empty(0, dtype=dtype)


def _csr(
    n: int, eu: IntArray, ev: IntArray, eJ: FloatArray, ehard: BoolArray
) -> tuple[IntArray, IntArray, FloatArray, BoolArray]:
    src = np.concatenate([eu, ev])
    dst = np.concatenate([ev, eu])
    order = np.lexsort((dst, src))
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=ptr[1:])
    return (
        ptr,
        dst[order].astype(np.int64),
        np.concatenate([eJ, eJ])[order],
        np.concatenate([ehard, ehard])[order],
    )


@dataclass(frozen=True)
class _Components:
    """The connected components of the contracted graph, and what each one holds."""

    comp_of: IntArray  # super-node -> component
    size: IntArray  # super-nodes per component
    n_edges: IntArray  # edges per component
    hard: BoolArray  # the component has a hard do-not-link
    edge_comp: IntArray  # edge -> component
    nodes_of: ComponentNodes


def build_graph(
    rel: Relations,
    n: int,
    n_components: int,
    e_step: str,
    max_exact_states: int,
    labels: IntArray | None = None,
) -> RelationGraph:
    """Contract hard links, find components, choose an engine per component (spec Sec. 3.1).

    ``labels`` (from ``check_labels``) clamp samples to a component: the E-step conditions on
    z_i = labels[i] wherever labels[i] >= 0.
    """
    super_of = chunklets(n, rel.link_i, rel.link_j)
    n_super = int(super_of.max()) + 1 if n else 0
    size = np.bincount(super_of, minlength=n_super).astype(np.float64)
    if n_components == 1 and rel.dnl_i.shape[0]:
        raise ValueError(
            f"pair ({int(rel.dnl_i[0])}, {int(rel.dnl_j[0])}) is a hard do-not-link, which "
            "cannot hold with n_components=1"
        )
    edges = _super_edges(rel, super_of, n_super)
    nbr = _csr(n_super, *edges)
    comps = _components(n_super, edges)
    omega_kind, kinds = _component_kinds(comps, n_components, e_step, max_exact_states)
    exact_ids = np.flatnonzero((kinds == TREE) | (kinds == ENUM)).tolist()
    exact = _exact_set(
        comps.nodes_of,
        [int(kinds[c]) for c in exact_ids],
        nbr,
        edges,
        comps.edge_comp,
        exact_ids,
    )
    omega = _omega_model(comps.nodes_of, omega_kind, size, nbr, edges, comps.edge_comp)
    by_kind = {k: np.flatnonzero(kinds[comps.comp_of] == k) for k in (SINGLE, MEAN_FIELD, GIBBS)}
    mf_nodes, mf_colours = colour_classes(by_kind[MEAN_FIELD], nbr[0], nbr[1])
    gibbs_nodes, gibbs_colours = colour_classes(by_kind[GIBBS], nbr[0], nbr[1])
    return RelationGraph(
        super_of,
        size,
        *nbr,
        comps.comp_of,
        kinds,
        comps.hard,
        exact,
        by_kind[SINGLE],
        mf_nodes,
        mf_colours,
        gibbs_nodes,
        gibbs_colours,
        omega,
        rel.dnl_i,
        rel.dnl_j,
        np.flatnonzero(labels >= 0) if labels is not None else np.empty(0, np.int64),
        labels[labels >= 0] if labels is not None else np.empty(0, np.int64),
    )


def _super_edges(
    rel: Relations, super_of: IntArray, n_super: int
) -> tuple[IntArray, IntArray, FloatArray, BoolArray]:
    """The relations between super-nodes, one edge per unordered pair ``eu < ev``: soft
    couplings on a pair summed, a hard do-not-link absorbing them (its ``eJ`` is 0)."""
    su = np.concatenate([super_of[rel.soft_i], super_of[rel.dnl_i]])
    sv = np.concatenate([super_of[rel.soft_j], super_of[rel.dnl_j]])
    J = np.concatenate([rel.soft_J, np.zeros(rel.dnl_i.shape[0])])
    hard = np.concatenate(
        [np.zeros(rel.soft_i.shape[0], dtype=np.bool_), np.ones(rel.dnl_i.shape[0], np.bool_)]
    )
    keep = su != sv  # a soft relation inside a chunklet is a constant
    a, b = np.minimum(su[keep], sv[keep]), np.maximum(su[keep], sv[keep])
    key = a * n_super + b
    uniq, inv = np.unique(key, return_inverse=True)
    eJ = np.bincount(inv, weights=J[keep], minlength=uniq.shape[0])
    ehard = np.bincount(inv, weights=hard[keep], minlength=uniq.shape[0]) > 0
    eJ[ehard] = 0.0
    live = ehard | (eJ != 0.0)
    return uniq[live] // n_super, uniq[live] % n_super, eJ[live], ehard[live]


def _components(
    n_super: int, edges: tuple[IntArray, IntArray, FloatArray, BoolArray]
) -> _Components:
    """The connected components of the super-node graph ``edges``."""
    eu, ev, _, ehard = edges
    graph = coo_matrix((np.ones(eu.shape[0]), (eu, ev)), shape=(n_super, n_super))
    n_comp, comp_of = connected_components(graph, directed=False)
    comp_of = comp_of.astype(np.int64)
    comp_size = np.bincount(comp_of, minlength=n_comp)
    edge_comp = comp_of[eu]
    comp_edges = np.bincount(edge_comp, minlength=n_comp)
    comp_hard = np.bincount(edge_comp, weights=ehard, minlength=n_comp) > 0
    nodes_of = ComponentNodes(comp_of, comp_size)
    return _Components(comp_of, comp_size, comp_edges, comp_hard, edge_comp, nodes_of)


def _component_kinds(
    comps: _Components, n_components: int, e_step: str, max_exact_states: int
) -> tuple[IntArray, IntArray]:
    """Per component, how its share of log Omega is computed (TREE, ENUM or MEAN_FIELD, i.e.
    not exactly) and which E-step engine runs on it (``_choose``)."""
    comp_size, comp_edges, comp_hard = comps.size, comps.n_edges, comps.hard
    # Per component, vectorised: most are single samples (100k items, a few labeled: 100k
    # components), and a Python loop over them cost more than an EM iteration.
    tree = comp_edges == comp_size - 1
    small = comp_size * math.log(n_components) <= math.log(max_exact_states)
    omega_kind = np.where(tree, TREE, np.where(small, ENUM, MEAN_FIELD)).astype(np.int64)
    kinds = np.full(comp_size.shape[0], SINGLE, dtype=np.int64)
    for c in np.flatnonzero(comp_size > 1).tolist():
        kinds[c] = _choose(
            int(comp_size[c]), bool(tree[c]), bool(small[c]), bool(comp_hard[c]), e_step,
            n_components,
        )  # fmt: skip
    return omega_kind, kinds


def _choose(t: int, tree: bool, small: bool, hard: bool, e_step: str, m: int) -> int:
    if t == 1:
        return SINGLE
    if e_step == "auto":
        if tree:
            return TREE
        if small:
            return ENUM
        return GIBBS if hard else MEAN_FIELD
    if e_step == "exact":
        if tree:
            return TREE
        if small:
            return ENUM
        raise ValueError(
            f"e_step='exact' cannot enumerate a loopy component of {t} (super-)nodes "
            f"({m}^{t} states); raise max_exact_states or use e_step='auto'"
        )
    if e_step == "mean_field":
        if hard:
            raise ValueError(
                "mean field cannot represent hard do-not-links (exp(-inf * Q) collapses); use "
                "e_step='auto', 'exact' or 'gibbs' for relations with weight -inf"
            )
        return MEAN_FIELD
    return GIBBS


def _omega_model(
    nodes_of: ComponentNodes,
    omega_kind: IntArray,
    size: FloatArray,
    nbr: tuple[IntArray, IntArray, FloatArray, BoolArray],
    edges: tuple[IntArray, IntArray, FloatArray, BoolArray],
    edge_comp: IntArray,
) -> OmegaModel:
    """One representative per distinct component shape (sizes and edges), with counts."""
    # A single sample's Omega is sum_k pi_k = 1; a mean-field component's is not exact.
    plain = (nodes_of.sizes == 1) & (size[nodes_of.first()] == 1.0)
    exact = not bool(np.any(omega_kind[~plain] == MEAN_FIELD))
    counted = np.flatnonzero(~plain & (omega_kind != MEAN_FIELD)).tolist()
    reps, counts = _distinct_shapes(nodes_of, omega_kind, size, edges, edge_comp, counted)
    kinds = [int(omega_kind[c]) for c in reps]
    new_nodes, shapes_set = _representatives(nodes_of, reps, kinds, edges, edge_comp)
    rep_size = np.concatenate([size[nodes_of[c]] for c in reps]) if reps else np.empty(0)
    node_count = np.empty(sum(ids.shape[0] for ids in new_nodes))
    for q, ids in enumerate(new_nodes):
        node_count[ids] = counts[q]
    tree_count = np.array([counts[q] for q in range(len(reps)) if kinds[q] == TREE], float)
    enum_count = np.array([counts[q] for q in range(len(reps)) if kinds[q] == ENUM], float)
    return OmegaModel(shapes_set, rep_size, node_count, tree_count, enum_count, exact)


def _distinct_shapes(
    nodes_of: ComponentNodes,
    omega_kind: IntArray,
    size: FloatArray,
    edges: tuple[IntArray, IntArray, FloatArray, BoolArray],
    edge_comp: IntArray,
    counted: list[int],
) -> tuple[list[int], list[int]]:
    """The first of the ``counted`` components of each distinct shape (kind, chunklet sizes
    and edges between local positions), and how many components have that shape."""
    eu, ev, eJ, ehard = edges
    edge_order = np.argsort(edge_comp, kind="stable")
    bounds = np.searchsorted(edge_comp[edge_order], np.arange(len(nodes_of) + 1))
    shapes: dict[tuple, int] = {}
    reps: list[int] = []
    counts: list[int] = []
    for c in counted:
        nodes = nodes_of[c]
        local = {int(v): q for q, v in enumerate(nodes)}
        rows = edge_order[bounds[c] : bounds[c + 1]]
        key = (
            int(omega_kind[c]),
            tuple(size[nodes].tolist()),
            tuple(
                sorted(
                    (local[int(eu[r])], local[int(ev[r])], float(eJ[r]), bool(ehard[r]))
                    for r in rows
                )
            ),
        )
        if key in shapes:
            counts[shapes[key]] += 1
        else:
            shapes[key] = len(reps)
            reps.append(c)
            counts.append(1)
    return reps, counts


def _representatives(
    nodes_of: ComponentNodes,
    reps: list[int],
    kinds: list[int],
    edges: tuple[IntArray, IntArray, FloatArray, BoolArray],
    edge_comp: IntArray,
) -> tuple[list[IntArray], ExactSet]:
    """Re-index the representatives' nodes 0..R-1 and build their own ExactSet; also each
    representative's new node ids."""
    eu, ev, eJ, ehard = edges
    rep_nodes = [nodes_of[c] for c in reps]
    new_id = {int(v): q for q, v in enumerate(np.concatenate(rep_nodes).tolist())} if reps else {}
    mask = np.isin(edge_comp, np.asarray(reps, dtype=np.int64))
    ru = np.array([new_id[int(x)] for x in eu[mask]], dtype=np.int64)
    rv = np.array([new_id[int(x)] for x in ev[mask]], dtype=np.int64)
    n_rep = len(new_id)
    rep_nbr = _csr(n_rep, ru, rv, eJ[mask], ehard[mask])
    rep_comp = np.empty(n_rep, dtype=np.int64)
    new_nodes: list[IntArray] = []
    for q, c in enumerate(reps):
        ids = np.array([new_id[int(v)] for v in nodes_of[c]], dtype=np.int64)
        rep_comp[ids] = q
        new_nodes.append(ids)
    shapes_set = _exact_set(
        new_nodes,
        kinds,
        rep_nbr,
        (ru, rv, eJ[mask], ehard[mask]),
        rep_comp[ru],
        list(range(len(reps))),
    )
    return new_nodes, shapes_set
