"""The model-selection loop of SMIC: candidates (kernel, t), each scored by LSMI.

One neighbour table, one LSMI design (centres, folds, sample) and one ARPACK start vector serve
every candidate (common random numbers, spec A9). Candidates t are visited in increasing order;
for each t every kernel in `kernels` is tried. Two shortcuts keep the search cheap without
changing what it can choose:

* a t whose graph has more than c connected components is skipped when some t has at most c:
  such a graph leaves whole components without an eigenvector, i.e. unclaimed (spec A12);
* the search stops once LSMI has clearly peaked (`selection.clearly_past_peak`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from app.engine.arrays import FloatArray, IndexArray
from app.engine.progress import Progress, asks_to_stop
from app.engine.smic.constraints import Constraints, count_violations, edit_kernel
from app.engine.smic.kernel import local_scaling_kernel, normalize_symmetric
from app.engine.smic.lsmi import LSMIDesign, LSMIResult, lsmi_cv
from app.engine.smic.selection import Scored, Selection, clearly_past_peak, select
from app.engine.smic.spectral import Assignment, Crowding, assign, top_eigenpairs


@dataclass(frozen=True)
class Candidate:
    """Everything SMIC produced for one kernel and one kernel parameter t."""

    normalize: str
    t: int
    eigenvalues: FloatArray
    eigenvectors: FloatArray
    result: Assignment
    lsmi: LSMIResult
    violations: int

    @property
    def smi(self) -> float:
        return self.lsmi.value


@dataclass(frozen=True)
class Problem:
    """The fixed inputs of every candidate."""

    idx: IndexArray
    dist: FloatArray
    constraints: Constraints
    prior: FloatArray
    v0: FloatArray
    design: LSMIDesign
    gammas: FloatArray
    deltas: FloatArray
    solver: str


def graph(problem: Problem, t: int) -> sp.csr_matrix:
    """Eq. 7 for this t with the side-information edits (before any normalisation)."""
    return edit_kernel(local_scaling_kernel(problem.idx, problem.dist, t), problem.constraints)


def few_components(problem: Problem, candidates: Sequence[int], c: int) -> list[int]:
    """The candidates whose graph has at most c components, or all if none has."""
    kept = [t for t in candidates if connected_components(graph(problem, t))[0] <= c]
    return kept or list(candidates)


def evaluate(
    problem: Problem,
    base: sp.csr_matrix,
    t: int,
    normalize: str,
    c: int,
    scores: dict[bytes, LSMIResult],
    crowding: Crowding,
) -> Candidate:
    normalized = normalize == "symmetric"
    K = normalize_symmetric(base) if normalized else base
    # One extra eigenvalue shows whether lambda_c is tied with lambda_{c+1} (A5).
    k = min(c + 1, K.shape[0])
    vals, vecs = top_eigenpairs(K, k, problem.solver, problem.v0, normalized, crowding)
    result = assign(vecs[:, :c], problem.prior)
    key = result.labels.tobytes()
    if key not in scores:  # neighbouring t and the two kernels often give identical labels
        scores[key] = lsmi_cv(problem.design, result.labels, problem.gammas, problem.deltas)
    violations = count_violations(result.labels, problem.constraints)
    return Candidate(normalize, t, vals, vecs, result, scores[key], violations)


def search(
    problem: Problem,
    candidates: Sequence[int],
    kernels: Sequence[str],
    c: int,
    progress: Progress | None,
) -> tuple[list[Candidate], Selection]:
    """Evaluate (kernel, t) candidates, then choose one with `selection.select`."""
    if len(candidates) > 1:
        candidates = few_components(problem, candidates, c)
    done: list[Candidate] = []
    curve: list[float] = []  # best LSMI per evaluated t, for the early stop
    scores: dict[bytes, LSMIResult] = {}
    crowding = Crowding()  # the normalised kernels of this fit share what their solves found
    step = 0
    stop = False
    for t in candidates:
        base = graph(problem, t)
        for normalize in kernels:
            cand = evaluate(problem, base, t, normalize, c, scores, crowding)
            done.append(cand)
            step += 1
            if asks_to_stop(progress, step, -cand.smi):
                stop = True
                break
        if stop:
            break
        # Constraint violations rank before LSMI, so only stop early without them.
        curve.append(max(d.smi for d in done if d.t == t))
        if all(d.violations == 0 for d in done) and clearly_past_peak(curve, c):
            break
    scored = [
        Scored(kernels.index(d.normalize), d.t, d.result.labels, d.smi, d.violations) for d in done
    ]
    return done, select(scored, c)
