"""CEC-IB's `labeled_weight='auto'`: folds, held-out agreement and the choice checked by hand on
small inputs; on breast cancer with 10 % labels (where the unlabeled items prefer another split)
it counts the labels up and segments better, on iris it keeps weight 1."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.decomposition import PCA
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import StandardScaler

from app.engine import CECIB
from app.engine.cec.cec_ib import CV_MAX_ITEMS
from app.engine.cec.labeled_weight_cv import (
    choose_labeled_weight,
    held_out_agreement,
    stratified_folds,
)
from app.engine.core.cec_fit import ASK_ONLY


def test_folds_deal_every_labeled_item_once_and_split_each_category_evenly() -> None:
    labels = np.array([0] * 7 + [1] * 5 + [-1] * 4 + [2] * 2)
    folds = stratified_folds(labels, 3, np.random.default_rng(0))
    dealt = np.concatenate(folds)
    assert sorted(dealt.tolist()) == np.flatnonzero(labels >= 0).tolist()
    for category in (0, 1, 2):
        sizes = [int(np.count_nonzero(labels[fold] == category)) for fold in folds]
        assert max(sizes) - min(sizes) <= 1 and sum(sizes) == np.count_nonzero(labels == category)


def test_held_out_agreement_reads_each_cluster_by_its_majority_given_label() -> None:
    clusters = np.array([0, 0, 0, 1, 1, 1, 2])
    given = np.array([0, 0, 1, 1, -1, -1, -1])  # cluster 0 reads 0, 1 reads 1, 2 has no label
    truth = np.array([0, 0, 1, 1, 1, 0, 1])
    hidden = np.array([4, 5, 6])
    # item 4 (cluster 1 -> 1, truth 1) counts; 5 (cluster 1 -> 1, truth 0) and 6 (no label) don't
    assert held_out_agreement(clusters, given, hidden, truth) == 1


def test_a_heavier_weight_must_predict_two_more_hidden_labels() -> None:
    labels = np.repeat([0, 1, -1], [6, 6, 2])
    truth_clusters = np.repeat([0, 1, 0], [6, 6, 2])

    def misplacing(count: int) -> np.ndarray:
        """Clusters that put the last `count` items of category 1 with category 0."""
        clusters = truth_clusters.copy()
        clusters[12 - count : 12] = 0
        return clusters

    seen: list[int] = []

    def fit(weight: int, given: np.ndarray) -> np.ndarray:
        seen.append(weight)
        return misplacing(2) if weight == 1 else truth_clusters

    weight, scores = choose_labeled_weight(fit, labels, np.random.default_rng(1))
    assert weight == 3 and scores == {1: 10 / 12, 3: 1.0, 10: 1.0}  # 10 ties with 3: 3 kept
    assert seen == [1] * 3 + [3] * 3 + [10] * 3  # three folds per candidate

    def one_label_more(weight: int, given: np.ndarray) -> np.ndarray:
        return misplacing(1) if weight == 1 else truth_clusters

    weight, scores = choose_labeled_weight(one_label_more, labels, np.random.default_rng(1))
    assert weight == 1 and scores[3] - scores[1] == pytest.approx(1 / 12)


def test_too_few_labels_or_one_category_search_nothing() -> None:
    def never(weight: int, given: np.ndarray) -> np.ndarray:
        raise AssertionError("no fit expected")

    for labels in ([0, 1, -1, -1, -1], [0, 0, 0, 0, -1]):
        weight, scores = choose_labeled_weight(never, np.array(labels), np.random.default_rng(0))
        assert weight == 1 and scores == {}


def standardised(loader, dims: int | None = None) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    x, y = loader(return_X_y=True)
    z = StandardScaler().fit_transform(x)
    return (PCA(dims, random_state=0).fit_transform(z) if dims else z), y


def ten_percent(y: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    labels = np.full(y.shape[0], -1)
    for c in np.unique(y):
        members = np.flatnonzero(y == c)
        chosen = rng.choice(members, round(0.1 * members.size), replace=False)
        labels[chosen] = c
    return labels


def test_breast_cancer_counts_its_labels_up_and_iris_keeps_them_at_one() -> None:
    x, y = standardised(load_breast_cancer, 10)
    labels = ten_percent(y, 0)
    auto = CECIB(2, labeled_weight="auto", n_init=2, random_state=0).fit(x, labels)
    plain = CECIB(2, n_init=2, random_state=0).fit(x, labels)
    assert auto.labeled_weight_ == 10
    assert set(auto.choice_["held_out_labels_predicted"]) == {"1", "3", "10"}
    assert adjusted_rand_score(y, auto.labels_) > adjusted_rand_score(y, plain.labels_) + 0.1
    x, y = standardised(load_iris)
    iris = CECIB(3, labeled_weight="auto", n_init=2, random_state=0).fit(x, ten_percent(y, 0))
    assert iris.labeled_weight_ == 1 and iris.choice_["chosen"] == "labeled_weight 1"


def test_auto_is_the_fit_at_the_chosen_weight_and_other_strings_are_refused() -> None:
    x, y = standardised(load_iris)
    labels = ten_percent(y, 1)
    auto = CECIB(3, labeled_weight="auto", n_init=2, random_state=0).fit(x, labels)
    fixed = CECIB(3, labeled_weight=auto.labeled_weight_, n_init=2, random_state=0).fit(x, labels)
    np.testing.assert_array_equal(auto.labels_, fixed.labels_)
    assert not hasattr(fixed, "choice_")
    with pytest.raises(ValueError, match="labeled_weight must be an integer >= 1 or 'auto'"):
        CECIB(3, labeled_weight="best").fit(x, labels)


def test_a_cancelled_run_leaves_the_search_within_a_sweep() -> None:
    """The held-out fits report no sweep (the run's cost history is the final fit's) but ask
    whether to go on (ASK_ONLY) after each of theirs: a run cancelled during the search stops
    at the first question, and the final fit at its first sweep."""
    x, y = standardised(load_iris)
    calls: list[int] = []

    def progress(iteration: int, energy: float) -> bool:
        calls.append(iteration)
        return False  # stop at once

    model = CECIB(3, labeled_weight="auto", n_init=2, random_state=0, progress=progress)
    model.fit(x, ten_percent(y, 0))
    assert calls == [ASK_ONLY, 1] and model.n_iter_ == 1
    assert model.labeled_weight_ == 1 and not hasattr(model, "choice_")


def test_a_search_that_goes_on_asks_after_every_sweep_and_reports_none() -> None:
    x, y = standardised(load_iris)
    calls: list[int] = []

    def progress(iteration: int, energy: float) -> bool:
        calls.append(iteration)
        return True

    watched = CECIB(3, labeled_weight="auto", n_init=2, random_state=0, progress=progress)
    watched.fit(x, ten_percent(y, 0))
    asked = calls.count(ASK_ONLY)
    assert asked >= 9  # 3 weights x 3 folds, a sweep or more each
    assert calls[:asked] == [ASK_ONLY] * asked and ASK_ONLY not in calls[asked:]
    quiet = CECIB(3, labeled_weight="auto", n_init=2, random_state=0).fit(x, ten_percent(y, 0))
    np.testing.assert_array_equal(watched.labels_, quiet.labels_)
    assert watched.choice_ == quiet.choice_


def test_large_data_searches_on_a_sample_and_repeats_itself() -> None:
    """Above CV_MAX_ITEMS items the search fits a uniform sample (fast enough for the live
    workspace); the same random_state gives the same choice and labels."""
    rng = np.random.default_rng(0)
    n = CV_MAX_ITEMS + 700
    truth = rng.integers(0, 2, n)
    x = truth[:, None] * np.array([3.0, 0.0]) + rng.normal(size=(n, 2))
    labels = np.where(rng.random(n) < 0.1, truth, -1)
    first = CECIB(2, labeled_weight="auto", n_init=1, random_state=3).fit(x, labels)
    again = CECIB(2, labeled_weight="auto", n_init=1, random_state=3).fit(x, labels)
    assert first.choice_ == again.choice_ and first.labels_.shape == (n,)
    np.testing.assert_array_equal(first.labels_, again.labels_)
    assert adjusted_rand_score(truth, first.labels_) > 0.7  # the Bayes rule reaches about 0.75
