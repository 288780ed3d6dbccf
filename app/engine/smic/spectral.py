"""SMIC's analytic solution: top eigenvectors of K, then the clipped arg-max (spec Sec. 2.4-2.5)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from pyamg import smoothed_aggregation_solver
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import ArpackNoConvergence, eigsh, lobpcg

from app.engine.arrays import BoolArray, FloatArray, IndexArray

# A5: relative gaps below this make the eigenbasis, and so the labels, solver-dependent.
TIE_RTOL = 1e-10
# Graphs with more components than this are solved as a whole: they leave points unclaimed
# whatever the basis, and a loop over thousands of tiny components (t = 1) would dominate.
MAX_SPLIT_COMPONENTS = 64
# Components up to this size go to the dense solver (cheaper than ARPACK's setup).
DENSE_COMPONENT = 400
ARPACK_TOL = 1e-10
# eigen_solver="auto": ARPACK, but on the degree-normalised kernel of a graph (or component) of
# at least AMG_MIN_POINTS points only for ARPACK_AUTO_RESTARTS restarts; if it has not converged
# by then, LOBPCG preconditioned with algebraic multigrid on I - K (SpectralClustering's "amg")
# solves it, and every later normalised kernel of the same fit goes there directly. Large
# mesh-like graphs crowd the top eigenvalues just below 1 (the coffee demo's 240,000 pixels,
# t = 5: 1, 0.999994, 0.999993, 0.999990): ARPACK took 470 s at t = 4 (tol 1e-10) and 164 s at
# t = 5 even at tol 1e-6; AMG-LOBPCG took 13 s at 1e-8 (labels agree with ARPACK's 1e-6 to ARI
# 0.99). On make_blobs (50,000 points, d = 10) ARPACK converged within 30 restarts, and AMG-LOBPCG
# was 6x slower there, so it is not the first choice. The unnormalised kernel keeps ARPACK (its
# top eigenvalues are spread: 5.94, 5.91, 5.87 on the same picture).
AMG_MIN_POINTS = 20_000
ARPACK_AUTO_RESTARTS = 40
# I - K is singular (K's top eigenvalue is exactly 1); the multigrid hierarchy is built on
# I - K + AMG_SHIFT * I, as scikit-learn does. The eigenproblem itself is unshifted.
AMG_SHIFT = 1e-5
LOBPCG_TOL = 1e-8
LOBPCG_MAXITER = 1000


@dataclass
class Crowding:
    """Whether ARPACK already ran out of its restarts on a normalised kernel of this fit."""

    seen: bool = False


def top_eigenpairs(
    K: sp.csr_matrix,
    k: int,
    solver: str,
    v0: FloatArray,
    normalized: bool = False,
    crowding: Crowding | None = None,
) -> tuple[FloatArray, FloatArray]:
    """The k largest *algebraic* eigenvalues of symmetric K, descending, with eigenvectors (A3).

    `normalized` says K is degree-normalised (spectrum in [-1, 1], top eigenvalue 1 per
    component): with solver "auto" a large one may go to AMG-LOBPCG (AMG_MIN_POINTS), and
    `crowding`, shared by the solves of one fit, remembers that it did.

    On a graph with a few connected components every component is solved on its own, so each
    eigenvector lives on one component. The spectrum is the same (K is block-diagonal), but
    where eigenvalues of different components tie (the degree-normalised kernel has the
    eigenvalue 1 once per component) the basis is no longer an arbitrary rotation chosen by
    the solver: a rotation mixes components, and clipping it does not separate them (A5).
    Ties between components are ordered by component (lowest point index first).
    """
    crowding = Crowding() if crowding is None else crowding
    n_comp, comp = connected_components(K, directed=False)
    if 1 < n_comp <= MAX_SPLIT_COMPONENTS:
        comp = comp.astype(np.intp)
        return _per_component(K, k, solver, v0, comp, n_comp, normalized, crowding)
    return _whole(K, k, solver, v0, normalized, crowding)


def _per_component(
    K: sp.csr_matrix,
    k: int,
    solver: str,
    v0: FloatArray,
    comp: IndexArray,
    n_comp: int,
    normalized: bool,
    crowding: Crowding,
) -> tuple[FloatArray, FloatArray]:
    n = K.shape[0]
    values: list[float] = []
    order_keys: list[tuple[float, int, int]] = []
    columns: list[tuple[IndexArray, FloatArray]] = []
    # connected_components numbers components by their lowest point index.
    for cid in range(n_comp):
        members = np.flatnonzero(comp == cid).astype(np.intp)
        sub = sp.csr_matrix(K[members][:, members])
        kk = min(k, members.size)
        sub_solver = "dense" if members.size <= DENSE_COMPONENT else solver
        vals, vecs = _whole(sub, kk, sub_solver, v0[members], normalized, crowding)
        for j in range(kk):
            order_keys.append((-float(vals[j]), cid, j))
            values.append(float(vals[j]))
            columns.append((members, vecs[:, j]))
    top = sorted(range(len(values)), key=lambda i: order_keys[i])[:k]
    out_vecs = np.zeros((n, len(top)))
    for col, i in enumerate(top):
        members, vec = columns[i]
        out_vecs[members, col] = vec
    return np.array([values[i] for i in top]), out_vecs


def _whole(
    K: sp.csr_matrix, k: int, solver: str, v0: FloatArray, normalized: bool, crowding: Crowding
) -> tuple[FloatArray, FloatArray]:
    """K is not PSD, so 'LA' (not MATLAB's default 'LM') is the right selection. ARPACK needs
    k < n; smaller problems go to the dense solver."""
    n = K.shape[0]
    multigrid = solver == "auto" and normalized and n >= AMG_MIN_POINTS
    if solver == "dense" or k >= n - 1:
        dense = K.toarray()
        vals, vecs = scipy.linalg.eigh(dense, subset_by_index=[n - k, n - 1])
    elif multigrid and crowding.seen:
        vals, vecs = _amg_lobpcg(K, k, v0)
    else:
        try:
            vals, vecs = _arpack(K, k, v0, ARPACK_AUTO_RESTARTS if multigrid else None)
        except ArpackNoConvergence:
            if multigrid:
                crowding.seen = True
                vals, vecs = _amg_lobpcg(K, k, v0)
            else:
                vals, vecs = _arpack_wide(K, k, v0)
    order = np.argsort(-vals, kind="stable")
    return np.asarray(vals[order], dtype=np.float64), np.asarray(vecs[:, order], dtype=np.float64)


def _arpack(
    K: sp.csr_matrix, k: int, v0: FloatArray, restarts: int | None
) -> tuple[FloatArray, FloatArray]:
    """A wider Krylov space than ARPACK's default: kNN kernels have crowded top spectra, and
    with ncv = 2k + 1 ARPACK needed minutes at n = 50,000. The reorthogonalisation against ncv
    vectors dominates, so ncv = 30 beats the former 60 (0.3-0.7 s per t against 0.9-1.9 s at
    n = 50,000, identical labels). The tolerance stays tight: at 1e-8 ARPACK missed the second
    copy of a double eigenvalue of a ring (tested). `restarts` None: ARPACK's default (10 n)."""
    n = K.shape[0]
    ncv = min(n, max(2 * k + 8, 30))
    return eigsh(K, k=k, which="LA", v0=v0, ncv=ncv, tol=ARPACK_TOL, maxiter=restarts)


def _arpack_wide(K: sp.csr_matrix, k: int, v0: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The second try after ARPACK did not converge: 4x the Krylov space, 50 n restarts."""
    n = K.shape[0]
    ncv = min(n, 4 * max(2 * k + 8, 30))
    try:
        return eigsh(K, k=k, which="LA", v0=v0, ncv=ncv, maxiter=50 * n)
    except ArpackNoConvergence as exc:
        raise ValueError(
            f"ARPACK did not converge for the top {k} eigenvectors of the {n} x {n} "
            "kernel; use eigen_solver='dense' (O(n^3)) or another n_neighbors"
        ) from exc


def _amg_lobpcg(K: sp.csr_matrix, k: int, v0: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Top k eigenpairs of a degree-normalised K as the k smallest of I - K (AMG_MIN_POINTS).

    The start block is the fit's ARPACK start vector beside k - 1 columns of a fixed seed, so
    the result depends on K and the fit's random_state only (A9).
    """
    n = K.shape[0]
    laplacian = sp.csr_matrix(sp.identity(n, format="csr") - K)
    shifted = sp.csr_matrix(laplacian + AMG_SHIFT * sp.identity(n, format="csr"))
    preconditioner = smoothed_aggregation_solver(shifted).aspreconditioner()
    start = np.random.RandomState(0).standard_normal((n, k))
    start[:, 0] = v0
    try:
        values, vectors = lobpcg(
            laplacian,
            start,
            M=preconditioner,
            tol=LOBPCG_TOL,
            maxiter=LOBPCG_MAXITER,
            largest=False,
        )
    except np.linalg.LinAlgError as exc:
        raise ValueError(
            f"LOBPCG failed on the {n} x {n} degree-normalised kernel ({exc}); use "
            "eigen_solver='arpack' or normalize='none'"
        ) from exc
    return 1.0 - np.asarray(values), np.asarray(vectors)


def near_ties(eigenvalues: FloatArray, eigenvectors: FloatArray | None = None) -> IndexArray:
    """Indices y with lambda_y and lambda_{y+1} equal to relative tolerance TIE_RTOL (A5).

    With eigenvectors given, a tie between vectors on disjoint supports (different graph
    components, see top_eigenpairs) is not reported: that basis is not solver-dependent.
    """
    vals = np.asarray(eigenvalues, dtype=np.float64)
    gaps = np.abs(np.diff(vals))
    scale = np.maximum(np.abs(vals[:-1]), np.abs(vals[1:]))
    tied = np.flatnonzero(gaps <= TIE_RTOL * np.maximum(scale, np.finfo(float).tiny))
    if eigenvectors is not None and tied.size:
        support = eigenvectors != 0.0
        tied = tied[[bool(np.any(support[:, y] & support[:, y + 1])) for y in tied]]
    return tied.astype(np.intp)


@dataclass(frozen=True)
class Assignment:
    """Hard labels, raw posteriors n*p(y|x_i) (column means = pi_y) and unclaimed points."""

    labels: IndexArray
    posterior: FloatArray
    unclaimed: BoolArray


def assign(eigenvectors: FloatArray, prior: FloatArray) -> Assignment:
    """Sign fix (sign(0) := +1, A4), clip at 0, scale each column to mean pi_y, arg-max (A6).

    eigenvectors[:, y] belongs to the y-th largest eigenvalue and is paired with prior[y], the
    y-th smallest prior (Sec. 2.4). Ties, including all-zero rows, go to the lowest index.
    """
    n = eigenvectors.shape[0]
    signs = np.where(eigenvectors.sum(axis=0) >= 0.0, 1.0, -1.0)
    clipped = np.maximum(eigenvectors * signs, 0.0)
    # A unit vector with a non-negative sum has a positive part, so no column sum is 0.
    posterior = n * prior * clipped / clipped.sum(axis=0)
    labels = np.argmax(posterior, axis=1).astype(np.intp)
    unclaimed = ~np.any(posterior > 0.0, axis=1)
    return Assignment(labels=labels, posterior=posterior, unclaimed=unclaimed)
