"""Active questions: posteriors against scipy, knowledge against brute force, and the rule's
promises (nothing implied is asked, anchors first, most uncertain first, deterministic)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from app.engine.active import cluster_posteriors, knowledge, suggest_items, suggest_pairs


def _blobs(seed: int = 0, n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])
    y = np.repeat(np.arange(3), n)
    return centres[y] + rng.standard_normal((3 * n, 2)), y


def test_posteriors_follow_the_documented_gaussians() -> None:
    X, y = _blobs()
    model = cluster_posteriors(X, y)
    d = X.shape[1]
    resid = np.concatenate([X[y == c] - X[y == c].mean(0) for c in range(3)])
    pooled = (resid**2).sum(0) / (len(X) - 3)
    logs = []
    for c in range(3):
        members = X[y == c]
        shrink = d / (len(members) + d)
        cov = (1 - shrink) * np.cov(members, rowvar=False, bias=True) + shrink * np.diag(pooled)
        logs.append(
            np.log(len(members) / len(X)) + multivariate_normal(members.mean(0), cov).logpdf(X)
        )
    expected = np.exp(np.array(logs).T - np.max(logs, axis=0)[:, None])
    expected /= expected.sum(1, keepdims=True)
    np.testing.assert_allclose(model.posteriors, expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.posteriors.sum(1), 1.0)


def test_tied_posteriors_share_one_shrunk_covariance_and_equal_weights() -> None:
    """The model of the expert's named groups: one covariance (the pooled within-group
    scatter, shrunk toward its diagonal by d / (degrees + d)), equal weights; items outside
    every group (-1) get posteriors but shape nothing. Against scipy's Gaussians, and it is
    LDA's rule: the log-odds of two groups are linear in x."""
    X, y = _blobs(seed=2, n=6)
    partition = y.copy()
    partition[::4] = -1  # unnamed items
    model = cluster_posteriors(X, partition, tied=True, equal_weights=True)
    d = X.shape[1]
    named = partition >= 0
    resid = np.concatenate([X[partition == c] - X[partition == c].mean(0) for c in range(3)])
    degrees = named.sum() - 3
    scatter = resid.T @ resid / degrees
    shrink = d / (degrees + d)
    shared = (1 - shrink) * scatter + shrink * np.diag(np.diag(scatter))
    logs = np.array(
        [multivariate_normal(X[partition == c].mean(0), shared).logpdf(X) for c in range(3)]
    ).T
    expected = np.exp(logs - logs.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    np.testing.assert_allclose(model.posteriors, expected, rtol=1e-9, atol=1e-12)
    log_odds = np.log(model.posteriors[:, 0] / model.posteriors[:, 1])
    design = np.column_stack([X, np.ones(len(X))])
    fitted, *_ = np.linalg.lstsq(design, log_odds, rcond=None)
    np.testing.assert_allclose(design @ fitted, log_odds, atol=1e-8)


def test_tied_posteriors_of_singleton_groups_use_the_fallback_variances() -> None:
    X, _ = _blobs(n=5)
    partition = np.full(len(X), -1)
    partition[[0, 5, 10]] = [0, 1, 2]  # one named item per group: no degrees of freedom
    fallback = np.array([2.0, 0.5])
    model = cluster_posteriors(X, partition, fallback, tied=True, equal_weights=True)
    logs = np.array([multivariate_normal(X[i], np.diag(fallback)).logpdf(X) for i in (0, 5, 10)]).T
    expected = np.exp(logs - logs.max(1, keepdims=True))
    np.testing.assert_allclose(model.posteriors, expected / expected.sum(1, keepdims=True))


def test_posteriors_survive_singular_clusters_in_many_dimensions() -> None:
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 12))
    X[:, 5] = 3.0  # a constant feature
    partition = np.repeat([0, 1, 2], 10)  # 10 points in 12 dimensions per cluster
    model = cluster_posteriors(X, partition)
    assert np.isfinite(model.posteriors).all()


def test_knowledge_matches_brute_force_components() -> None:
    labels = np.array([0, -1, 0, 1, -1, -1, 1])
    must = np.array([[1, 4]])
    cannot = np.array([[4, 5], [0, 5]])
    facts = knowledge(7, labels=labels, must_link=must, cannot_link=cannot)
    same = {
        (i, j)
        for i, j in itertools.combinations(range(7), 2)
        if facts.component[i] == facts.component[j]
    }
    assert same == {(0, 2), (1, 4), (3, 6)}
    assert facts.labeled[facts.component[[0, 3]]].all() and not facts.labeled[facts.component[1]]
    assert facts.related(4, 5) and facts.related(2, 5)  # cannot-links reach whole components
    assert facts.related(0, 3) and facts.related(2, 6)  # different labels differ
    assert facts.related(1, 5)  # 1 is must-linked to 4, which cannot go with 5
    assert not facts.related(1, 3) and not facts.related(0, 1)


def test_fresh_result_asks_the_anchor_skeleton_first() -> None:
    X, y = _blobs()
    questions = suggest_pairs(X, y, 3)
    assert [q.kind for q in questions] == ["pair"] * 3
    clusters = {tuple(sorted(q.clusters)) for q in questions}
    assert clusters == {(0, 1), (0, 2), (1, 2)}
    for q in questions:  # each anchor is typical: inside its own cluster
        assert y[q.items[0]] != y[q.items[1]]


def test_no_question_has_an_implied_answer() -> None:
    X, y = _blobs(seed=2, n=12)
    rng = np.random.default_rng(3)
    for _ in range(20):
        labels = np.where(rng.random(len(y)) < 0.2, y, -1)
        pairs = rng.choice(len(y), size=(6, 2))
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        same = pairs[y[pairs[:, 0]] == y[pairs[:, 1]]]
        different = pairs[y[pairs[:, 0]] != y[pairs[:, 1]]]
        facts = knowledge(len(y), labels=labels, must_link=same, cannot_link=different)
        for q in suggest_pairs(X, y, 10, facts):
            assert not facts.related(*q.items), q
        for q in suggest_items(X, y, 10, facts):
            assert not facts.labeled[facts.component[q.items[0]]]


def test_boundary_items_come_most_uncertain_first() -> None:
    X, y = _blobs()
    X = np.vstack([X, [[2.0, 0.0]]])  # halfway between clusters 0 and 1
    partition = np.r_[y, 0]
    uncertainty = cluster_posteriors(X, partition).margin_uncertainty()
    items = suggest_items(X, partition, 5)
    assert items[0].items == (int(np.argmax(uncertainty)),)
    assert (120,) in [q.items for q in items] and all(set(q.clusters) <= {0, 1, 2} for q in items)
    # Once the skeleton is known, pair questions ask about uncertain items against anchors.
    facts = knowledge(len(partition), labels=np.r_[y, -1])
    pairs = suggest_pairs(X, partition, 1, facts)
    first = pairs[0].items[0]
    assert uncertainty[first] == uncertainty[facts.labeled[facts.component] == 0].max()
    assert y[pairs[0].items[1]] in pairs[0].clusters  # the anchor is a labeled item of a cluster


def test_deterministic_and_bounded() -> None:
    X, y = _blobs(seed=4)
    assert suggest_pairs(X, y, 7) == suggest_pairs(X, y, 7)
    assert len(suggest_items(X, y, 5)) == 5
    with pytest.raises(ValueError, match="n must be at least 1"):
        suggest_pairs(X, y, 0)
    with pytest.raises(ValueError, match="the partition has no cluster"):
        suggest_items(X, np.full(len(y), -1), 3)
    with pytest.raises(ValueError, match="must_link names an item outside"):
        knowledge(3, must_link=[[0, 3]])


def test_a_cluster_told_apart_only_by_its_anchor_is_a_group_too() -> None:
    """Two clusters have must-linked items, the third only its anchor, told apart from the
    others. Its items are no boundary of the named groups: asking each of them against every
    other group (the answer is always "different") wasted 70 of 100 answers on iris."""
    X, y = _blobs()
    skeleton = suggest_pairs(X, y, 3)
    anchors = {int(y[i]): i for q in skeleton for i in q.items}
    cannot = np.array([q.items for q in skeleton])
    must = np.array([[anchors[c], i] for c in (0, 1) for i in np.flatnonzero(y == c)[:3]])
    must = must[must[:, 0] != must[:, 1]]
    facts = knowledge(len(y), must_link=must, cannot_link=cannot)
    typical = cluster_posteriors(X, y).posteriors[:, 2] > 0.99
    for q in suggest_pairs(X, y, 10, facts):
        assert not facts.related(*q.items)
        deep_in_2 = [i for i in q.items if typical[i] and i != anchors[2]]
        assert not deep_in_2 or anchors[2] in q.items, q


def _farthest_from(X: np.ndarray, named: list[int]) -> int:
    """By brute force: the item farthest from its nearest named item (standardised features)."""
    scaled = X / X.std(axis=0)
    distance = np.min(
        np.linalg.norm(scaled[:, None, :] - scaled[named][None, :, :], axis=2), axis=1
    )
    distance[named] = -1.0
    return int(np.argmax(distance))


def test_with_a_few_named_items_questions_explore_farthest_first() -> None:
    """One labeled item per cluster names three groups of one item: no degree of freedom for
    the groups' covariance, so uncertainty counts for nothing (trust 0) and the first boundary
    question asks about the item farthest from every named item (standardised features)."""
    X, y = _blobs()
    # The clusters' anchors, labeled: the anchor questions are answered.
    anchors = sorted({i for q in suggest_pairs(X, y, 3) for i in q.items})
    labels = np.full(len(y), -1)
    labels[anchors] = y[anchors]
    facts = knowledge(len(y), labels=labels)
    question = suggest_pairs(X, y, 1, facts)[0]
    assert question.items[0] == _farthest_from(X, anchors)
    assert question.items[1] in anchors


def test_anchors_told_apart_name_groups_from_the_first_answer() -> None:
    """A run that split the data the wrong way (a tight core against a broad halo of the same
    blob, beside a second blob it merged with the halo): once the expert says the two anchors
    differ, the next question asks about the item farthest from both (explore), not about the
    run's core-halo boundary, which no answer there would fix."""
    rng = np.random.default_rng(5)
    blob = rng.standard_normal((150, 2))
    X = np.vstack([blob, rng.standard_normal((60, 2)) * 0.6 + [5.0, 0.0]])
    radius = np.linalg.norm(X, axis=1)
    partition = np.where(radius < 1.0, 0, 1)  # core against everything else
    skeleton = suggest_pairs(X, partition, 1)[0]
    anchors = list(skeleton.items)
    facts = knowledge(len(X), cannot_link=[anchors])
    question = suggest_pairs(X, partition, 1, facts)[0]
    assert question.items[0] == _farthest_from(X, anchors)
    # it is asked first about the group whose anchor shares its cluster in the run (a "same"
    # answer grows a group), although the core's anchor is nearer to it
    own = [a for a in anchors if partition[a] == partition[question.items[0]]]
    assert question.items[1] == own[0]
    nearer = min(anchors, key=lambda a: float(np.linalg.norm(X[a] - X[question.items[0]])))
    assert nearer != own[0]
    # the run's own boundary item, what the rule asked before
    boundary = int(np.argmax(cluster_posteriors(X, partition).margin_uncertainty()))
    assert question.items[0] != boundary


def test_trust_in_the_groups_grows_with_their_degrees_of_freedom() -> None:
    from app.engine.active.questions import EXPLORE_DEGREES, _trust

    X = np.zeros((50, 4))
    groups = np.full(50, -1)
    groups[:3] = [0, 1, 2]
    assert _trust(groups, X) == 0.0
    groups[3:15] = np.repeat([0, 1, 2], 4)  # 15 named items in 3 groups: 12 degrees
    assert _trust(groups, X) == pytest.approx(12 / (12 + EXPLORE_DEGREES * 4))
    groups[:] = np.arange(50) % 2
    assert 0.5 < _trust(groups, X) < 1.0


def test_an_anchor_asked_about_stays_its_clusters_anchor_when_the_run_moves() -> None:
    """The skeleton's anchors, once told apart, anchor their clusters in the next run too,
    though its partition (and so its most typical items) moved: no anchor question is asked
    again. Fresh anchors per run kept digits' 10 clusters on anchor questions for 100 answers."""
    X, y = _blobs()
    skeleton = suggest_pairs(X, y, 3)
    assert all(q.reason.startswith("are clusters") for q in skeleton)
    facts = knowledge(len(y), cannot_link=np.array([q.items for q in skeleton]))
    asked = {i for q in skeleton for i in q.items}
    moved = y.copy()
    rng = np.random.default_rng(5)
    for c in range(3):  # the next run hands a few other items of each cluster to the next one
        members = np.setdiff1d(np.flatnonzero(y == c), list(asked))
        moved[rng.choice(members, 8, replace=False)] = (c + 1) % 3
    questions = suggest_pairs(X, moved, 6, facts)
    assert questions and not any(q.reason.startswith("are clusters") for q in questions)
    assert all(q.items[1] in asked for q in questions)  # boundary items against the anchors
