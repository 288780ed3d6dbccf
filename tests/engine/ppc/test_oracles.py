"""PPC against the spec's oracles (specs/ppc.md Sec. 4): brute force on tiny problems, closed
forms, limits, and scikit-learn's GaussianMixture with no relations."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from numpy.typing import NDArray
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture

from app.engine import PPC, confidence_to_weight, grid_neighbour_pairs, neighbour_disagreement
from app.engine.core.families import FULL
from app.engine.ppc.colour_classes import cheaper_than_enumeration
from app.engine.ppc.fit import Options, _Chain, infer
from app.engine.ppc.graph import (
    ENUM,
    MEAN_FIELD,
    TREE,
    RelationGraph,
    build_graph,
)
from app.engine.ppc.meanfield import mean_field_bound, mean_field_sweeps
from app.engine.ppc.prior import (
    grid_log_omega,
    grid_pi,
    log_omega,
    optimize_pi,
    pi_objective,
    simplex_grid,
)
from app.engine.ppc.relations import check_relations

Array = NDArray[np.float64]


def brute_force(a: Array, pairs: NDArray[np.int64], w: Array) -> tuple[Array, float]:
    """Marginals and log Z of exp(sum_i a_{i z_i} + sum_rows 2 W [z_i = z_j]) by enumeration;
    W = +inf requires equal labels, -inf different ones."""
    n, m = a.shape
    configs = np.array(list(itertools.product(range(m), repeat=n)))
    score = a[np.arange(n), configs].sum(axis=1)
    for (i, j), wij in zip(pairs, w, strict=True):
        same = configs[:, i] == configs[:, j]
        if wij == np.inf:
            score = np.where(same, score, -np.inf)
        elif wij == -np.inf:
            score = np.where(same, -np.inf, score)
        else:
            score = score + 2.0 * wij * same
    top = score.max()
    p = np.exp(score - top)
    logz = top + math.log(p.sum())
    p /= p.sum()
    marg = np.zeros((n, m))
    for i in range(n):
        np.add.at(marg[i], configs[:, i], p)
    return marg, logz


def options(**kw: object) -> Options:
    base: dict[str, object] = dict(
        family=FULL,
        reg_covar=1e-6,
        max_iter=100,
        tol=1e-6,
        pi_update="optimize",
        mf_damping=1.0,
        mf_tol=1e-12,
        mf_max_iter=5000,
        gibbs_sweeps=200,
        gibbs_burn_in=50,
    )
    base.update(kw)
    return Options(**base)  # type: ignore[arg-type]


def graph_for(n: int, m: int, pairs: object, w: object, e_step: str = "auto") -> RelationGraph:
    return build_graph(check_relations(pairs, w, n), n, m, e_step, 2**20)


def random_relations(
    rng: np.random.Generator, n: int, n_rel: int, kinds: tuple[str, ...]
) -> tuple[NDArray[np.int64], Array]:
    """Random pairs with soft, hard-link and hard-do-not-link weights consistent with a random
    ground truth (so hard constraints are always satisfiable with M >= 2)."""
    truth = rng.integers(0, 2, size=n)
    pairs = np.array([rng.choice(n, 2, replace=False) for _ in range(n_rel)])
    w = np.empty(n_rel)
    for r, (i, j) in enumerate(pairs):
        kind = kinds[rng.integers(len(kinds))]
        same = truth[i] == truth[j]
        if kind == "soft":
            w[r] = rng.normal(scale=1.5)
        else:
            w[r] = np.inf if same else -np.inf
    return pairs, w


# -- O1: no relations is GaussianMixture ----------------------------------------------------


@pytest.mark.parametrize("covariance", ["full", "diagonal", "spherical"])
def test_no_relations_reproduces_gaussian_mixture(covariance: str) -> None:
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(c, 1.0, size=(60, 3)) for c in (-2.0, 0.0, 2.5)])
    m = 3
    means0 = X[[0, 70, 150]]
    weights0 = np.array([0.2, 0.3, 0.5])
    sk_type = {"diagonal": "diag"}.get(covariance, covariance)
    cov_full = np.cov(X, rowvar=False, bias=True) + 1e-6 * np.eye(3)
    if covariance == "full":
        cov0: Array = np.repeat(cov_full[None], m, axis=0)
        prec0: Array = np.linalg.inv(cov0)
    elif covariance == "diagonal":
        cov0 = np.repeat(np.diag(cov_full)[None], m, axis=0)
        prec0 = 1.0 / cov0
    else:
        cov0 = np.full(m, np.diag(cov_full).mean())
        prec0 = 1.0 / cov0
    for iters in (1, 5, 30):
        # Both fits start from the same weights and means and run the same EM steps.
        same = {"max_iter": iters, "tol": 0.0, "weights_init": weights0, "means_init": means0}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ours = PPC(m, covariance=covariance, covariances_init=cov0, **same).fit(X)
            ref = GaussianMixture(
                m, covariance_type=sk_type, precisions_init=prec0, reg_covar=1e-6, **same
            ).fit(X)
        np.testing.assert_allclose(ours.weights_, ref.weights_, atol=1e-6, rtol=0)
        np.testing.assert_allclose(ours.means_, ref.means_, atol=1e-6, rtol=0)
        np.testing.assert_allclose(ours.covariances_, ref.covariances_, atol=1e-6, rtol=0)
        np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-6)
        assert ours.n_iter_ == ref.n_iter_ == iters


# -- O2 / O7: exact engines = brute force ---------------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_exact_e_step_equals_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 8))
    m = int(rng.integers(2, 4))
    kinds = [("soft",), ("soft", "hard"), ("hard",)][seed % 3]
    pairs, w = random_relations(rng, n, int(rng.integers(1, n + 3)), kinds)
    a = rng.normal(scale=2.0, size=(n, m))
    graph = graph_for(n, m, pairs, w, "exact")
    est = infer(a, graph, options(), _Chain(), np.random.RandomState(0))
    marg, logz = brute_force(a, pairs, w)
    np.testing.assert_allclose(est.resp, marg, atol=1e-10)
    assert est.bound == pytest.approx(logz, abs=1e-10)


@pytest.mark.parametrize("seed", range(12))
def test_colour_class_sums_equal_brute_force_where_they_replace_enumeration(seed: int) -> None:
    """Many labels and a loopy component: the exact engine sums over colour classes
    (colour_classes.py) instead of M^|T| labellings; marginals, log Z and, with hard
    do-not-links, the joint MAP labels (the best admissible score) equal brute force."""
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(4, 6))
    m = int(rng.integers(5, 8))
    # A cycle through every sample plus random chords: one loopy component of n samples.
    # Soft relations and hard do-not-links (a hard must-link would contract the cycle).
    cycle = [[i, (i + 1) % n] for i in range(n)]
    chords = [list(rng.choice(n, 2, replace=False)) for _ in range(int(rng.integers(0, n)))]
    pairs = np.array(cycle + chords, dtype=np.int64)
    hard = rng.random(len(pairs)) < [0.0, 0.5, 1.0][seed % 3]
    w = np.where(hard, -np.inf, rng.normal(scale=1.5, size=len(pairs)))
    graph = graph_for(n, m, pairs, w, "exact")
    assert graph.comp_kind[graph.comp_of[0]] == ENUM
    assert cheaper_than_enumeration(m, n)
    a = rng.normal(scale=2.0, size=(n, m))
    est = infer(a, graph, options(), _Chain(), np.random.RandomState(0))
    marg, logz = brute_force(a, pairs, w)
    np.testing.assert_allclose(est.resp, marg, atol=1e-10)
    assert est.bound == pytest.approx(logz, abs=1e-10)
    labels = est.labels
    if not hard.any():  # without hard relations the labels are the marginals' argmax
        np.testing.assert_array_equal(labels, marg.argmax(axis=1))
        return
    score = a[np.arange(n), labels].sum()
    for (i, j), wij in zip(pairs, w, strict=True):
        if labels[i] == labels[j]:
            assert wij != -np.inf
            score += 2.0 * wij
    configs = np.array(list(itertools.product(range(m), repeat=n)))
    best = a[np.arange(n), configs].sum(axis=1)
    for (i, j), wij in zip(pairs, w, strict=True):
        same = configs[:, i] == configs[:, j]
        best = np.where(same, -np.inf, best) if wij == -np.inf else best + 2.0 * wij * same
    assert score == pytest.approx(best.max(), abs=1e-9)


def test_engines_cover_trees_and_loops() -> None:
    pairs = np.array([[0, 1], [1, 2], [3, 4], [4, 5], [5, 3], [6, 7]])
    w = np.array([0.7, -0.4, 0.3, 0.2, -1.1, -np.inf])
    graph = graph_for(9, 3, pairs, w)
    kinds = graph.comp_kind[graph.comp_of[[0, 3, 6, 8]]]
    assert kinds.tolist() == [TREE, ENUM, TREE, 0]
    a = np.random.default_rng(1).normal(size=(9, 3))
    est = infer(a, graph, options(), _Chain(), np.random.RandomState(0))
    marg, logz = brute_force(a, pairs, w)
    np.testing.assert_allclose(est.resp, marg, atol=1e-12)
    assert est.bound == pytest.approx(logz, abs=1e-10)


def test_star_with_hard_do_not_links_is_exact_and_stable() -> None:
    """Sec. 3.3.4: a star of 6 leaves with hard do-not-links; extreme scores that make the
    printed U - u form cancel are exact in the log domain."""
    rng = np.random.default_rng(3)
    pairs = np.array([[0, leaf] for leaf in range(1, 7)])
    w = np.full(6, -np.inf)
    a = rng.normal(scale=40.0, size=(7, 3))
    graph = graph_for(7, 3, pairs, w)
    assert graph.comp_kind.tolist() == [TREE]
    est = infer(a, graph, options(), _Chain(), np.random.RandomState(0))
    marg, logz = brute_force(a, pairs, w)
    np.testing.assert_allclose(est.resp, marg, atol=1e-12)
    assert est.bound == pytest.approx(logz, rel=1e-14)
    assert np.all(est.labels[1:] != est.labels[0])


def test_hard_link_chunklet_is_one_sample_with_prior_pi_to_the_size() -> None:
    """O7: a chunklet's posterior is softmax(|T| log pi_k + sum_j log N(x_j | k))."""
    rng = np.random.default_rng(4)
    log_pi = np.log(np.array([0.5, 0.3, 0.2]))
    log_dens = rng.normal(size=(4, 3))
    pairs = np.array([[0, 1], [1, 2], [2, 3]])
    graph = graph_for(4, 3, pairs, np.full(3, np.inf))
    est = infer(log_dens + log_pi, graph, options(), _Chain(), np.random.RandomState(0))
    score = 4 * log_pi + log_dens.sum(axis=0)
    expected = np.exp(score - score.max()) / np.exp(score - score.max()).sum()
    np.testing.assert_allclose(est.resp, np.tile(expected, (4, 1)), atol=1e-12)


def test_non_factorisation() -> None:
    """O19: with a relation the pair posterior is not the product of the marginals."""
    a = np.random.default_rng(5).normal(size=(2, 2))
    marg, logz = brute_force(a, np.array([[0, 1]]), np.array([0.8]))
    joint = np.exp(a[0][:, None] + a[1][None, :] + 1.6 * np.eye(2) - logz)
    assert not np.allclose(joint, np.outer(marg[0], marg[1]), atol=1e-3)


# -- O3: Omega closed forms -----------------------------------------------------------------


def brute_omega(pi: Array, n: int, pairs: NDArray[np.int64], w: Array) -> float:
    return brute_force(np.tile(np.log(pi), (n, 1)), pairs, w)[1]


def test_omega_closed_forms() -> None:
    rng = np.random.default_rng(6)
    pi = np.array([0.5, 0.3, 0.2])
    s = float((pi**2).sum())
    # non-overlapping soft pairs: prod (1 + expm1(2W) s)
    w = rng.normal(size=4)
    pairs = np.arange(8).reshape(4, 2)
    graph = graph_for(8, 3, pairs, w)
    expected = float(np.log1p(np.expm1(2 * w) * s).sum())
    assert log_omega(graph.omega, pi) == pytest.approx(expected, abs=1e-12)
    # non-overlapping hard: s^{N_L} (1 - s)^{N_N}  (the paper prints the exponents swapped)
    w_hard = np.array([np.inf, np.inf, -np.inf, np.inf])
    graph = graph_for(8, 3, pairs, w_hard)
    assert log_omega(graph.omega, pi) == pytest.approx(3 * math.log(s) + math.log(1 - s))
    # chunklet of 4: sum_k pi_k^4
    graph = graph_for(4, 3, np.array([[0, 1], [1, 2], [2, 3]]), np.full(3, np.inf))
    assert log_omega(graph.omega, pi) == pytest.approx(math.log((pi**4).sum()))
    # star with L soft/hard leaves: sum_k pi_k prod_l (1 + c_l pi_k)
    star_w = np.array([0.4, -0.9, -np.inf, 1.2, -np.inf])
    star = np.array([[0, leaf] for leaf in range(1, 6)])
    c = np.where(np.isinf(star_w), -1.0, np.expm1(2 * np.where(np.isinf(star_w), 0, star_w)))
    graph = graph_for(6, 3, star, star_w)
    expected = math.log(float((pi * np.prod(1 + np.outer(pi, c), axis=1)).sum()))
    assert log_omega(graph.omega, pi) == pytest.approx(expected, abs=1e-12)
    # general graph, factorised over components: brute force
    pairs, w = random_relations(rng, 7, 9, ("soft", "hard"))
    graph = graph_for(7, 3, pairs, w)
    assert log_omega(graph.omega, pi) == pytest.approx(brute_omega(pi, 7, pairs, w), abs=1e-10)


def test_appendix_b_certainty_weights_give_the_noisy_relation_prior() -> None:
    """O5: P_s(Z) prod gamma^H (1 - gamma)^(1 - H), normalised, is the PPC prior of eq. 2.15."""
    rng = np.random.default_rng(7)
    pi = np.array([0.6, 0.4])
    pairs = np.array([[0, 1], [1, 2], [0, 3]])
    gamma = np.array([0.9, 0.7, 0.8])
    link = np.array([True, False, True])
    configs = np.array(list(itertools.product(range(2), repeat=4)))
    base = np.prod(pi[configs], axis=1)
    consistent = [
        np.where((configs[:, i] == configs[:, j]) == lk, g, 1 - g)
        for (i, j), g, lk in zip(pairs, gamma, link, strict=True)
    ]
    p_a = base * np.prod(consistent, axis=0)
    w = confidence_to_weight(gamma, link)
    score = np.log(base) + sum(
        2 * wij * (configs[:, i] == configs[:, j]) for (i, j), wij in zip(pairs, w, strict=True)
    )
    p_ppc = np.exp(score)
    np.testing.assert_allclose(p_a / p_a.sum(), p_ppc / p_ppc.sum(), atol=1e-12)
    assert rng is not None


def test_confidence_to_weight() -> None:
    """O6: values of eq. 5.1, flip symmetry, gamma = 0.5 and gamma = 1."""
    assert confidence_to_weight(0.85) == pytest.approx(0.867301, abs=1e-6)
    assert confidence_to_weight(0.70) == pytest.approx(0.423649, abs=1e-6)
    assert confidence_to_weight(0.5) == 0.0
    assert confidence_to_weight(1.0) == np.inf
    assert confidence_to_weight(1.0, link=False) == -np.inf
    g = np.array([0.1, 0.3, 0.6, 0.95])
    np.testing.assert_allclose(
        confidence_to_weight(g, link=True), confidence_to_weight(1 - g, link=False)
    )
    with pytest.raises(ValueError, match="confidence"):
        confidence_to_weight(1.5)


# -- O4: hard limit -------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_soft_posteriors_tend_to_hard_ones(seed: int) -> None:
    rng = np.random.default_rng(10 + seed)
    n, m = 6, 3
    pairs, w_hard = random_relations(rng, n, 6, ("hard",))
    a = rng.normal(scale=1.5, size=(n, m))
    hard = infer(a, graph_for(n, m, pairs, w_hard), options(), _Chain(), np.random.RandomState(0))
    marg_hard, _ = brute_force(a, pairs, w_hard)
    np.testing.assert_allclose(hard.resp, marg_hard, atol=1e-12)
    errors = {}
    for w in (10.0, 15.0):
        soft_w = np.sign(w_hard) * w
        est = infer(
            a, graph_for(n, m, pairs, soft_w), options(), _Chain(), np.random.RandomState(0)
        )
        errors[w] = float(np.abs(est.resp - hard.resp).max())
    # the error decays like e^{-2w}: a factor e^{10} from w = 10 to 15
    assert errors[15.0] < 1e-6 or 0.5 < errors[10.0] / errors[15.0] / math.exp(10) < 2.0
    assert errors[15.0] < errors[10.0] or errors[15.0] < 1e-12


# -- O9: mean field -------------------------------------------------------------------------


def loopy_graph(rng: np.random.Generator) -> tuple[RelationGraph, Array, NDArray[np.int64], Array]:
    pairs = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [0, 2], [4, 5], [5, 6], [6, 4], [3, 4]])
    w = rng.normal(scale=0.8, size=pairs.shape[0])
    a = rng.normal(scale=1.5, size=(7, 3))
    return graph_for(7, 3, pairs, w, "mean_field"), a, pairs, w


def test_mean_field_is_exact_without_relations() -> None:
    a = np.random.default_rng(8).normal(size=(5, 3))
    graph = graph_for(5, 3, None, None, "mean_field")
    est = infer(a, graph, options(), _Chain(), np.random.RandomState(0))
    np.testing.assert_allclose(est.resp, np.exp(a) / np.exp(a).sum(axis=1, keepdims=True))


@pytest.mark.parametrize("damping", [1.0, 0.5])
def test_mean_field_fixed_point_monotone_bound(damping: float) -> None:
    rng = np.random.default_rng(9)
    graph, a, pairs, w = loopy_graph(rng)
    assert set(graph.comp_kind.tolist()) == {MEAN_FIELD}
    nodes = graph.mf_nodes
    nbr = (graph.nbr_ptr, graph.nbr_idx, graph.nbr_J)
    Q = np.full((7, 3), 1.0 / 3.0)
    bounds = [mean_field_bound(a, nodes, *nbr, Q)]
    for _ in range(300):
        _, residual = mean_field_sweeps(a, nodes, graph.mf_colours, *nbr, Q, damping, 1e-13, 1)
        bounds.append(mean_field_bound(a, nodes, *nbr, Q))
        if residual < 1e-13:
            break
    assert residual < 1e-13
    assert np.all(np.diff(bounds) >= -1e-12)  # coordinate ascent never lowers the ELBO
    # stationarity: log Q_ik - a_ik - 2 sum_j W_ij Q_jk is constant over k
    field = a.copy()
    for (i, j), wij in zip(pairs, w, strict=True):
        field[i] += 2 * wij * Q[j]
        field[j] += 2 * wij * Q[i]
    gap = np.log(Q) - field
    np.testing.assert_allclose(gap - gap[:, :1], 0.0, atol=1e-10)
    _, logz = brute_force(a, pairs, w)
    assert bounds[-1] <= logz + 1e-12


def test_mean_field_engine_in_infer_matches_its_fixed_point() -> None:
    rng = np.random.default_rng(11)
    graph, a, pairs, w = loopy_graph(rng)
    est = infer(a, graph, options(mf_damping=0.5), _Chain(), np.random.RandomState(0))
    _, logz = brute_force(a, pairs, w)
    assert est.bound <= logz + 1e-12
    field = a.copy()
    for (i, j), wij in zip(pairs, w, strict=True):
        field[i] += 2 * wij * est.resp[j]
        field[j] += 2 * wij * est.resp[i]
    gap = np.log(est.resp) - field
    np.testing.assert_allclose(gap - gap[:, :1], 0.0, atol=1e-8)


# -- O8: Gibbs ------------------------------------------------------------------------------


def test_gibbs_marginals_converge_to_exact() -> None:
    rng = np.random.default_rng(12)
    pairs = np.array([[0, 1], [1, 2], [2, 0], [3, 4], [4, 5], [2, 3]])
    w = np.array([0.6, -0.5, 0.4, -np.inf, 0.7, 0.3])
    a = rng.normal(size=(6, 3))
    graph = graph_for(6, 3, pairs, w, "gibbs")
    est = infer(
        a,
        graph,
        options(gibbs_sweeps=20000, gibbs_burn_in=100),
        _Chain(),
        np.random.RandomState(0),
    )
    marg, _ = brute_force(a, pairs, w)
    np.testing.assert_allclose(est.resp, marg, atol=0.02)
    assert est.labels[3] != est.labels[4]


# -- O12: the pi M-step ---------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(2))
def test_pi_update_direction_and_grid(seed: int) -> None:
    rng = np.random.default_rng(20 + seed)
    m = 3
    nk = rng.dirichlet(np.ones(m) * 3) * 40
    pairs = np.arange(24).reshape(12, 2)
    for sign in (1.0, -1.0):
        w = sign * rng.uniform(0.2, 2.0, size=12)
        w[:3] = sign * np.inf
        graph = graph_for(40, m, pairs, w)
        pi = optimize_pi(nk, graph.omega, np.full(m, 1 / m))
        s_opt, s_emp = (pi**2).sum(), ((nk / nk.sum()) ** 2).sum()
        assert (s_opt <= s_emp + 1e-12) if sign > 0 else (s_opt >= s_emp - 1e-12)
        grid = simplex_grid(m)
        best = grid_pi(nk, grid, grid_log_omega(graph.omega, grid))
        assert pi_objective(nk, graph.omega, pi) >= pi_objective(nk, graph.omega, best) - 1e-9
        if pi.min() >= 0.02:
            assert np.abs(pi - best).max() <= 0.01 + 1e-9


def test_pi_optimum_matches_expected_counts() -> None:
    """At the optimum the prior's expected counts equal n (the gradient vanishes)."""
    rng = np.random.default_rng(30)
    nk = np.array([10.0, 6.0, 4.0])
    pairs, w = random_relations(rng, 20, 8, ("soft", "hard"))
    graph = graph_for(20, 3, pairs, w)
    pi = optimize_pi(nk, graph.omega, np.full(3, 1 / 3))
    prior = infer(
        np.tile(np.log(pi), (20, 1)), graph, options(), _Chain(), np.random.RandomState(0)
    )
    np.testing.assert_allclose(prior.resp.sum(axis=0), nk, atol=1e-6)


def test_no_relations_pi_update_is_the_empirical_fraction() -> None:
    graph = graph_for(10, 3, None, None)
    nk = np.array([5.0, 3.0, 2.0])
    np.testing.assert_allclose(optimize_pi(nk, graph.omega, np.full(3, 1 / 3)), nk / 10)


# -- O10: EM monotonicity with an exact E-step ----------------------------------------------


def test_exact_em_objective_never_decreases() -> None:
    rng = np.random.default_rng(40)
    X = np.concatenate([rng.normal(c, 1.0, size=(40, 2)) for c in (-2.0, 2.0, 6.0)])
    pairs = rng.permutation(120)[:60].reshape(30, 2)
    w = rng.choice([0.8, -0.8, np.inf, -np.inf], size=30)
    truth = np.repeat(np.arange(3), 40)
    w = np.where(truth[pairs[:, 0]] == truth[pairs[:, 1]], np.abs(w), -np.abs(w))
    model = PPC(3, max_iter=50, tol=0.0, reg_covar=0.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, pairs=pairs, weights=w)
    assert np.all(np.diff(model.lower_bound_history_) >= -1e-10)


# -- O16, O17, O18 --------------------------------------------------------------------------


def test_predict_proba_is_the_plain_mixture_posterior() -> None:
    rng = np.random.default_rng(41)
    X = rng.normal(size=(50, 2))
    model = PPC(2, random_state=0).fit(
        X, pairs=np.array([[0, 1], [2, 3]]), weights=np.array([1.0, -np.inf])
    )
    X_new = rng.normal(size=(7, 2))
    dens = np.stack(
        [
            model.weights_[k]
            * np.exp(
                -0.5
                * np.sum(
                    (X_new - model.means_[k])
                    @ np.linalg.inv(model.covariances_[k])
                    * (X_new - model.means_[k]),
                    axis=1,
                )
            )
            / np.sqrt(np.linalg.det(2 * np.pi * model.covariances_[k]))
            for k in range(2)
        ],
        axis=1,
    )
    np.testing.assert_allclose(
        model.predict_proba(X_new), dens / dens.sum(1, keepdims=True), rtol=1e-7, atol=1e-12
    )
    np.testing.assert_array_equal(model.predict(X_new), dens.argmax(axis=1))


def test_components_are_the_transitive_closure() -> None:
    """O17: links (1,2),(2,3), do-not-link (4,5), 6 alone -> {1,2,3}, {4,5}, {6} (0-based)."""
    graph = graph_for(6, 2, np.array([[0, 1], [1, 2], [3, 4]]), np.array([0.5, 0.5, -0.5]))
    comp = graph.comp_of
    assert comp[0] == comp[1] == comp[2] != comp[3] == comp[4] != comp[5] != comp[0]


@pytest.mark.parametrize("blocks", [4, 6, 10])
def test_quadrant_mosaic_neighbour_disagreement(blocks: int) -> None:
    """O18: a 2 x 2 quadrant mosaic of G x G blocks has q = 1 / (G - 1)."""
    half = blocks // 2
    labels = np.block(
        [
            [np.zeros((half, half)), np.ones((half, half))],
            [2 * np.ones((half, half)), 3 * np.ones((half, half))],
        ]
    )
    assert neighbour_disagreement(labels) == pytest.approx(1 / (blocks - 1))
    assert grid_neighbour_pairs(blocks, blocks).shape[0] == 2 * blocks * (blocks - 1)
