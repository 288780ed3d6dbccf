"""``fresh_starts='if_worse'`` (CEC-IB and PPC): with a warm start, the continued fit runs first,
and the fresh starts (under PPC's ``covariance='auto'`` also the other model) are drawn only when
it agrees with the side information less than the fit it continues did (``agreement_``, or the
share given to ``start_from``); drawn, they are those of ``'always'``. ``progress`` is called once
per sweep / EM iteration of every start, so with the continued start alone its calls are that
start's ``n_iter_``. CEC-IB's ``labeled_weight='auto'`` keeps its weight in that loop while the
labeled items grew by at most ``REUSE_GROWTH``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import StandardScaler

from app.engine import CECIB, PPC
from app.engine.cec.cec_ib import REUSE_GROWTH

Calls = list[tuple[int, float]]


def _recorder() -> tuple[Calls, Callable[[int, float], None]]:
    calls: Calls = []

    def progress(iteration: int, cost: float) -> None:
        calls.append((iteration, cost))

    return calls, progress


def _unknown_reference_is_always(
    refit: Callable[[str, float | None], tuple[Any, Calls]], score: str
) -> tuple[Any, Any, Any]:
    """``refit(fresh_starts, agreement)`` continued from a ``start_from`` without an agreement
    draws the fresh starts exactly as ``'always'`` (same calls, labels and ``score``); with a
    known one it runs the continued start alone. Returns the three fits (unknown, always,
    known)."""
    unknown, unknown_calls = refit("if_worse", None)
    always, always_calls = refit("always", None)
    assert len(unknown_calls) > unknown.n_iter_
    assert unknown_calls == always_calls
    np.testing.assert_array_equal(unknown.labels_, always.labels_)
    assert getattr(unknown, score) == getattr(always, score)
    known, known_calls = refit("if_worse", 0.0)
    assert len(known_calls) == known.n_iter_
    assert known.warm_started_ is True
    return unknown, always, known


# --- data ------------------------------------------------------------------------------------


def _blobs(per_blob: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """Three well separated blobs, rows 0..per_blob-1 the first, and so on."""
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [7.0, 0.0], [0.0, 7.0]])
    X = np.concatenate([c + rng.standard_normal((per_blob, 2)) for c in centres])
    return X, np.repeat(np.arange(3), per_blob)


def _shown(y: np.ndarray, rows: np.ndarray) -> np.ndarray:
    labels = np.full(y.shape, -1)
    labels[rows] = y[rows]
    return labels


def _corners(per_blob: int = 25) -> np.ndarray:
    """Four blobs on a wide rectangle: rows 0.. bottom-left, bottom-right, top-left, top-right."""
    rng = np.random.default_rng(2)
    corners = np.array([[-6.0, -2.0], [6.0, -2.0], [-6.0, 2.0], [6.0, 2.0]])
    return np.concatenate([c + 0.5 * rng.standard_normal((per_blob, 2)) for c in corners])


def _square(per_blob: int = 40) -> np.ndarray:
    """Four equal blobs on a square: rows 0.. bottom-left, top-left, bottom-right, top-right.
    With two components, left | right and bottom | top are equally good mixtures."""
    rng = np.random.default_rng(0)
    corners = np.array([[-4.0, -4.0], [-4.0, 4.0], [4.0, -4.0], [4.0, 4.0]])
    return np.concatenate([c + rng.standard_normal((per_blob, 2)) for c in corners])


def _square_relations(axis: int, offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Hard relations on ``_square`` saying the split is along ``axis`` (1: bottom | top, 0:
    left | right); ``offset`` picks other rows for the same statement."""
    BL, TL, BR, TR = 0, 40, 80, 120
    rows = range(offset, 40, 8)
    if axis == 1:
        links = [[BL + i, BR + i] for i in rows] + [[TL + i, TR + i] for i in rows]
        apart = [[BL + i, TL + i] for i in rows]
    else:
        links = [[BL + i, TL + i] for i in rows] + [[BR + i, TR + i] for i in rows]
        apart = [[BL + i, BR + i] for i in rows]
    pairs = np.array(links + apart)
    return pairs, np.array([np.inf] * len(links) + [-np.inf] * len(apart))


def _blob_relations(offset: int) -> tuple[np.ndarray, np.ndarray]:
    """Hard relations on ``_blobs`` consistent with its three blobs."""
    links = [[offset + i, offset + i + 1] for i in (0, 50, 100)]
    apart = [[offset + 2, offset + 52], [offset + 53, offset + 103]]
    return np.array(links + apart), np.array([np.inf] * 3 + [-np.inf] * 2)


# --- brute-force agreement ---------------------------------------------------------------------


def _cecib_agreement(partition: np.ndarray, y: np.ndarray) -> float:
    """Share of labeled items whose cluster's most frequent label is their own, by counting."""
    labeled = [i for i in range(len(y)) if y[i] >= 0]
    if not labeled:
        return 1.0
    agreeing = 0
    for cluster in set(partition.tolist()):
        counts: dict[int, int] = {}
        for i in labeled:
            if partition[i] == cluster:
                counts[int(y[i])] = counts.get(int(y[i]), 0) + 1
        agreeing += max(counts.values(), default=0)
    return agreeing / len(labeled)


def _ppc_agreement(
    plain: np.ndarray, pairs: np.ndarray, weights: np.ndarray, labels: np.ndarray | None
) -> float:
    """The weighted share of relations and labels ``plain`` respects: hard relations and labels
    count 1, a soft one of weight W counts |J| / (1 + |J|) with J = 2W (the pair's weight per
    ordered pair, counted both ways: relations.py)."""
    score = total = 0.0
    for (i, j), w in zip(pairs.tolist(), weights.tolist(), strict=True):
        if w == 0.0:
            continue
        strength = 1.0 if np.isinf(w) else abs(2 * w) / (1 + abs(2 * w))
        same = plain[i] == plain[j]
        total += strength
        score += strength * (same if w > 0 else not same)
    for i, c in enumerate([] if labels is None else labels.tolist()):
        if c >= 0:
            total += 1
            score += plain[i] == c
    return 1.0 if total == 0 else score / total


# --- CEC-IB: fresh starts ----------------------------------------------------------------------


@pytest.mark.parametrize("labeled_weight", [1, 3])
def test_cecib_consistent_labels_run_the_continued_start_alone(labeled_weight: int) -> None:
    X, y = _blobs()
    before = _shown(y, np.arange(0, 150, 10))
    after = _shown(y, np.arange(0, 150, 5))  # twice the labels, all agreeing with the blobs
    fits = {}
    for fresh in ("if_worse", "always"):
        calls, progress = _recorder()
        model = CECIB(
            3, n_init=3, labeled_weight=labeled_weight, random_state=0, polish=False,
            warm_start=True, fresh_starts=fresh, progress=progress,
        )  # fmt: skip
        model.fit(X, before)
        assert model.agreement_ == 1.0
        first = model.labels_.copy()
        calls.clear()
        model.fit(X, after)
        fits[fresh] = (model, list(calls), first)
    model, calls, first = fits["if_worse"]
    always, always_calls, _ = fits["always"]
    assert model.warm_started_ is True
    assert len(calls) == model.n_iter_  # only the continued start's sweeps
    assert len(always_calls) > always.n_iter_  # 'always' draws the fresh starts here
    assert calls == always_calls[: len(calls)]  # the same continued start, run first by both
    np.testing.assert_array_equal(model.labels_, first)  # the continued fit: it stays
    np.testing.assert_array_equal(model.labels_, always.labels_)
    assert model.energy_ == always.energy_
    assert model.agreement_ == 1.0


def test_cecib_a_tie_with_the_reference_is_enough() -> None:
    """A reference below 1 (contradictory labels): refitting the same labels continues at the
    same share, which ties and so spares the fresh starts."""
    X, y = _blobs()
    labels = _shown(y, np.arange(0, 150, 10))
    labels[[0, 10, 20]] = 2  # three first-blob items labeled as the third blob
    calls, progress = _recorder()
    model = CECIB(
        3, n_init=3, random_state=0, polish=False, warm_start=True, fresh_starts="if_worse",
        progress=progress,
    )  # fmt: skip
    model.fit(X, labels)
    reference = model.agreement_
    assert reference is not None and 0.0 < reference < 1.0
    calls.clear()
    model.fit(X, labels)
    assert model.warm_started_ is True
    assert len(calls) == model.n_iter_
    assert model.agreement_ == pytest.approx(reference, abs=1e-12)


def test_cecib_labels_contradicting_the_continued_partition_draw_the_fresh_starts() -> None:
    """Continued from left | right (which the first labels said), then labeled top | bottom: the
    continued fit agrees with half the labels, below the reference 1, so the fresh starts run,
    exactly as under 'always', and one of them (the labels' split) wins."""
    X = _corners()
    top = (X[:, 1] > 0).astype(np.int64)
    right = (X[:, 0] > 0).astype(np.int64)
    rows = np.arange(0, 100, 10)
    fits = {}
    for fresh in ("if_worse", "always"):
        calls, progress = _recorder()
        model = CECIB(
            2, n_init=3, init="labels", random_state=0, polish=False, warm_start=True,
            fresh_starts=fresh, progress=progress,
        )  # fmt: skip
        model.fit(X, _shown(right, rows))
        assert model.agreement_ == 1.0
        assert adjusted_rand_score(right, model.labels_) == 1.0
        calls.clear()
        model.fit(X, _shown(top, rows))
        fits[fresh] = (model, list(calls))
    model, calls = fits["if_worse"]
    always, always_calls = fits["always"]
    assert len(calls) > model.n_iter_  # more than one start ran
    assert calls == always_calls  # the very same starts, in the same order
    np.testing.assert_array_equal(model.labels_, always.labels_)
    assert model.energy_ == always.energy_
    assert model.warm_started_ is False
    assert adjusted_rand_score(top, model.labels_) == 1.0
    assert model.agreement_ == 1.0


def test_cecib_start_from_without_agreement_draws_the_fresh_starts() -> None:
    """start_from without agreement: the reference is unknown, so 'if_worse' is 'always' even
    though the continued partition agrees with every label; with agreement=0 it is not."""
    X, y = _blobs()
    labels = _shown(y, np.arange(0, 150, 5))

    def refit(fresh: str, agreement: float | None) -> tuple[CECIB, Calls]:
        calls, progress = _recorder()
        model = CECIB(
            3, n_init=3, random_state=1, polish=False, fresh_starts=fresh, progress=progress
        )
        model.start_from(y, agreement=agreement)
        assert model.agreement_ == agreement
        return model.fit(X, labels), calls

    unknown, always, known = _unknown_reference_is_always(refit, "energy_")
    assert unknown.warm_started_ == always.warm_started_
    assert adjusted_rand_score(y, known.labels_) == 1.0


# --- CEC-IB: agreement_ ------------------------------------------------------------------------


@pytest.mark.parametrize("labeled_weight", [1, 3])
def test_cecib_agreement_counts_labeled_items_in_a_cluster_of_their_majority(
    labeled_weight: int,
) -> None:
    X, y = _blobs(per_blob=30)
    codes = np.array([4, 7, 9])[y]  # not 0..k-1: only which items share a label counts
    labels = _shown(codes, np.arange(0, 90, 6))
    labels[[0, 6]] = 9  # two first-blob items labeled as the third blob
    labels[[31, 33]] = 4  # and a second-blob one as the first (31 was unlabeled)
    model = CECIB(3, n_init=2, labeled_weight=labeled_weight, random_state=0, polish=False)
    model.fit(X, labels)
    expected = _cecib_agreement(model.labels_, labels)
    assert 0.0 < expected < 1.0
    assert model.agreement_ == pytest.approx(expected, abs=1e-12)
    # and after a warm refit on other labels, on those labels
    other = _shown(codes, np.arange(1, 90, 4))
    other[[1, 5]] = 7
    model.set_params(warm_start=True, fresh_starts="if_worse").fit(X, other)
    expected = _cecib_agreement(model.labels_, other)
    assert 0.0 < expected < 1.0
    assert model.agreement_ == pytest.approx(expected, abs=1e-12)


def test_cecib_agreement_is_one_without_labels() -> None:
    X, _ = _blobs(per_blob=30)
    for labels in (None, np.full(90, -1)):
        model = CECIB(3, n_init=1, random_state=0).fit(X, labels)
        assert model.agreement_ == 1.0


# --- CEC-IB: labeled_weight='auto' reuse -------------------------------------------------------


@pytest.fixture
def weight_searches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The labeled counts CECIB._cross_validated_weight was called with (it still runs)."""
    seen: list[int] = []
    original = CECIB._cross_validated_weight

    def spy(self: CECIB, data: np.ndarray, labels: np.ndarray, beta: float) -> int:
        seen.append(int(np.count_nonzero(labels >= 0)))
        return original(self, data, labels, beta)

    monkeypatch.setattr(CECIB, "_cross_validated_weight", spy)
    return seen


def _labeled(y: np.ndarray, count: int) -> np.ndarray:
    """The first ``count`` items of a fixed order labeled (nested as ``count`` grows)."""
    order = np.random.default_rng(5).permutation(y.shape[0])
    return _shown(y, order[:count])


def test_cecib_auto_weight_is_kept_while_the_labels_grew_little(
    weight_searches: list[int],
) -> None:
    assert REUSE_GROWTH == 0.2  # so 36 labeled items are within the bound of 30, 37 not
    X, y = _blobs(per_blob=40)
    model = CECIB(
        3, n_init=2, labeled_weight="auto", random_state=0, polish=False, warm_start=True,
        fresh_starts="if_worse",
    )  # fmt: skip
    model.fit(X, _labeled(y, 30))
    assert weight_searches == [30]
    assert model.weight_searched_with_ == 30
    chosen = model.labeled_weight_
    for count in (33, 36):  # 10 % and 20 % more (36 = 30 * 1.2, the bound itself): kept
        model.fit(X, _labeled(y, count))
        assert weight_searches == [30]
        assert model.labeled_weight_ == chosen
        assert model.weight_searched_with_ == 30
    model.fit(X, _labeled(y, 37))  # more than 20 % over the 30 it was searched with
    assert weight_searches == [30, 37]
    assert model.weight_searched_with_ == 37
    model.fit(X, _labeled(y, 44))  # within 20 % of 37 again
    assert weight_searches == [30, 37]
    assert model.weight_searched_with_ == 37


@pytest.mark.parametrize(
    ("fresh", "warm_start"), [("always", True), ("if_worse", False)], ids=["always", "cold"]
)
def test_cecib_auto_weight_is_searched_on_every_fit_outside_the_loop(
    weight_searches: list[int], fresh: str, warm_start: bool
) -> None:
    X, y = _blobs(per_blob=40)
    model = CECIB(
        3, n_init=2, labeled_weight="auto", random_state=0, polish=False,
        warm_start=warm_start, fresh_starts=fresh,
    )  # fmt: skip
    for count in (30, 31, 33):
        model.fit(X, _labeled(y, count))
    assert weight_searches == [30, 31, 33]
    assert model.weight_searched_with_ == 33


def test_cecib_start_from_carries_the_weight_search(weight_searches: list[int]) -> None:
    X, y = _blobs(per_blob=40)
    labels = _labeled(y, 33)

    def model() -> CECIB:
        return CECIB(
            3, n_init=2, labeled_weight="auto", random_state=0, polish=False,
            fresh_starts="if_worse",
        )  # fmt: skip

    # 10 was searched with 30 labeled items: kept for 33, though the search may choose another
    kept = model().start_from(y, agreement=1.0, weight_search=(10, 30)).fit(X, labels)
    assert weight_searches == []
    assert kept.labeled_weight_ == 10
    assert kept.weight_searched_with_ == 30
    # without it, or with too few labeled items then, the search runs
    model().start_from(y, agreement=1.0).fit(X, labels)
    assert weight_searches == [33]
    searched = model().start_from(y, agreement=1.0, weight_search=(10, 20)).fit(X, labels)
    assert weight_searches == [33, 33]
    assert searched.weight_searched_with_ == 33


# --- PPC: fresh starts -------------------------------------------------------------------------


def _warm_ppc_fitted(
    n_components: int,
    covariance: str,
    fresh: str,
    X: np.ndarray,
    pairs: np.ndarray,
    weights: np.ndarray,
) -> tuple[PPC, Calls]:
    """A warm-started PPC (three starts, seed 0) with ``fresh_starts=fresh``, fitted once to
    relations it agrees with wholly; it and the progress calls it records."""
    calls, progress = _recorder()
    model = PPC(
        n_components, covariance=covariance, n_init=3, random_state=0, warm_start=True,
        fresh_starts=fresh, progress=progress,
    )  # fmt: skip
    model.fit(X, pairs=pairs, weights=weights)
    assert model.agreement_ == 1.0
    return model, calls


@pytest.mark.parametrize("covariance", ["full", "auto"])
def test_ppc_consistent_relations_run_the_continued_start_alone(covariance: str) -> None:
    """Relations that agree with the mixture: the continued EM runs alone (under 'auto' the
    other model is not fitted either) and is kept, as 'always' keeps it on a tie."""
    X, _ = _blobs()
    pairs, weights = _blob_relations(0)
    more = np.concatenate([pairs, _blob_relations(10)[0]])
    more_weights = np.concatenate([weights, weights])
    fits = {}
    for fresh in ("if_worse", "always"):
        model, calls = _warm_ppc_fitted(3, covariance, fresh, X, pairs, weights)
        first = model.covariance_
        labels = _shown(model.predict(X), np.array([20, 70, 120]))  # in the fit's numbering
        calls.clear()
        model.fit(X, pairs=more, weights=more_weights, labels=labels)
        fits[fresh] = (model, list(calls), first)
    model, calls, first = fits["if_worse"]
    always, always_calls, _ = fits["always"]
    assert model.warm_started_ is True
    assert model.covariance_ == first
    assert len(calls) == model.n_iter_  # no fresh start and no other model
    assert len(always_calls) > always.n_iter_
    assert always.warm_started_ is True
    np.testing.assert_array_equal(model.labels_, always.labels_)
    assert model.lower_bound_ == always.lower_bound_
    np.testing.assert_array_equal(model.means_, always.means_)
    assert model.agreement_ == 1.0


@pytest.mark.parametrize("covariance", ["full", "auto"])
def test_ppc_relations_contradicting_the_continued_mixture_draw_the_fresh_starts(
    covariance: str,
) -> None:
    """Continued from bottom | top (which the first relations said), then told left | right:
    the continued mixture agrees with less than the reference 1, so everything runs as under
    'always' and a fresh start (the relations' split) wins."""
    X = _square()
    right = (X[:, 0] > 0).astype(np.int64)
    top = (X[:, 1] > 0).astype(np.int64)
    first_pairs, first_weights = _square_relations(1)
    fits = {}
    for fresh in ("if_worse", "always"):
        model, calls = _warm_ppc_fitted(2, covariance, fresh, X, first_pairs, first_weights)
        assert model.covariance_ == "full"  # first in both orders of 'auto''s models
        assert adjusted_rand_score(top, model.predict(X)) > 0.95
        calls.clear()
        pairs, weights = _square_relations(0, offset=3)
        model.fit(X, pairs=pairs, weights=weights)
        fits[fresh] = (model, list(calls))
    model, calls = fits["if_worse"]
    always, always_calls = fits["always"]
    assert len(calls) > model.n_iter_  # more than the continued start ran
    assert calls == always_calls
    np.testing.assert_array_equal(model.labels_, always.labels_)
    assert model.lower_bound_ == always.lower_bound_
    np.testing.assert_array_equal(model.means_, always.means_)
    assert model.covariance_ == always.covariance_
    assert model.warm_started_ is False
    assert adjusted_rand_score(right, model.predict(X)) > 0.95


def test_ppc_start_from_without_agreement_draws_the_fresh_starts() -> None:
    X, _ = _blobs()
    pairs, weights = _blob_relations(0)
    fitted = PPC(3, covariance="full", random_state=0).fit(X, pairs=pairs, weights=weights)
    kept = (fitted.weights_, fitted.means_, fitted.covariances_, fitted.covariance_)
    more = np.concatenate([pairs, _blob_relations(10)[0]])
    more_weights = np.concatenate([weights, weights])

    def refit(fresh: str, agreement: float | None) -> tuple[PPC, Calls]:
        calls, progress = _recorder()
        model = PPC(
            3, covariance="auto", n_init=3, random_state=4, fresh_starts=fresh,
            progress=progress,
        )  # fmt: skip
        model.start_from(*kept, agreement=agreement)
        assert model.agreement_ == agreement
        return model.fit(X, pairs=more, weights=more_weights), calls

    unknown, always, known = _unknown_reference_is_always(refit, "lower_bound_")
    assert unknown.covariance_ == always.covariance_
    assert known.covariance_ == "full"


def test_ppc_auto_continuing_its_second_model_fits_that_one_alone() -> None:
    """'tied' comes second in 'auto''s models; continued with a reference it agrees with, it
    is the only model fitted (the continued EM alone)."""
    X, _ = _blobs()
    pairs, weights = _blob_relations(0)
    tied = PPC(3, covariance="tied", random_state=0).fit(X, pairs=pairs, weights=weights)
    assert tied.agreement_ == 1.0
    kept = (tied.weights_, tied.means_, tied.covariances_, "tied")
    calls, progress = _recorder()
    model = PPC(3, n_init=2, random_state=0, fresh_starts="if_worse", progress=progress)
    model.start_from(*kept, agreement=1.0)
    model.fit(X, pairs=np.concatenate([pairs, _blob_relations(10)[0]]), weights=[*weights] * 2)
    assert model.covariance_ == "tied"
    assert model.warm_started_ is True
    assert len(calls) == model.n_iter_
    assert model.agreement_ == 1.0


def test_ppc_auto_continuing_the_second_model_draws_the_fresh_starts_too() -> None:
    """Iris, seed 7: the first fit chooses 'tied' (second of 'auto''s models); forty true
    relations later the continued fit agrees with less, so the fresh starts are drawn. The
    continued model is fitted first, so the random starts go to the models in another order
    than 'always''s (documented): here the same partition and bound all the same."""
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)

    def relations(seed: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        pairs = np.random.default_rng(seed).choice(150, (count, 2))
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        return pairs, np.where(y[pairs[:, 0]] == y[pairs[:, 1]], np.inf, -np.inf)

    fits = {}
    for fresh in ("if_worse", "always"):
        calls, progress = _recorder()
        model = PPC(3, random_state=7, warm_start=True, fresh_starts=fresh, progress=progress)
        first_pairs, first_weights = relations(7, 6)
        model.fit(X, pairs=first_pairs, weights=first_weights)
        assert (model.covariance_, model.agreement_) == ("tied", 1.0)
        calls.clear()
        pairs, weights = relations(107, 40)
        model.fit(X, pairs=pairs, weights=weights)
        fits[fresh] = (model, list(calls))
    model, calls = fits["if_worse"]
    always, _ = fits["always"]
    assert len(calls) > model.n_iter_  # the fresh starts were drawn
    assert adjusted_rand_score(model.labels_, always.labels_) == 1.0
    assert model.lower_bound_ == pytest.approx(always.lower_bound_, rel=1e-6)
    assert model.agreement_ == always.agreement_


# --- PPC: agreement_ ---------------------------------------------------------------------------


def _mixed_side_information() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Relations and labels on ``_blobs`` of every kind, some of which a mixture of the blobs
    breaks (rows 0..49, 50..99, 100..149 are the blobs)."""
    pairs = np.array(
        [
            [0, 1],  # hard link within a blob
            [2, 52],  # hard link across blobs
            [3, 103],  # hard do-not-link across
            [104, 105],  # hard do-not-link within
            [55, 56],  # soft link within, W = 0.8
            [6, 106],  # soft link across, W = 0.3
            [60, 110],  # soft do-not-link across, W = -1.2
            [111, 112],  # soft do-not-link within, W = -0.5
        ]
    )
    weights = np.array([np.inf, np.inf, -np.inf, -np.inf, 0.8, 0.3, -1.2, -0.5])
    labels = np.full(150, -1)
    labels[[10, 70, 120]] = [0, 1, 2]
    labels[20] = 2  # a first-blob item given the third blob's component
    return pairs, weights, labels


@pytest.mark.parametrize("covariance", ["full", "tied", "auto"])
def test_ppc_agreement_is_the_weighted_share_its_mixture_respects(covariance: str) -> None:
    X, _ = _blobs()
    pairs, weights, labels = _mixed_side_information()
    model = PPC(3, covariance=covariance, random_state=0)
    model.fit(X, pairs=pairs, weights=weights, labels=labels)
    expected = _ppc_agreement(model.predict(X), pairs, weights, labels)
    assert 0.3 < expected < 0.9  # several of each kind broken: not a trivial share
    assert model.agreement_ == pytest.approx(expected, abs=1e-12)
    # after a warm refit (the continued start judged) on a part of them, of that part
    model.set_params(warm_start=True, fresh_starts="if_worse")
    model.fit(X, pairs=pairs[2:], weights=weights[2:], labels=None)
    expected = _ppc_agreement(model.predict(X), pairs[2:], weights[2:], None)
    assert 0.0 < expected < 1.0
    assert model.agreement_ == pytest.approx(expected, abs=1e-12)


def test_ppc_agreement_weighs_a_soft_relation_by_its_strength() -> None:
    """Two broken relations, one hard and one soft of W = 0.25 (J = 0.5, counting 1/3), among
    three kept hard ones: (3 + 0) / (4 + 1/3)."""
    X, _ = _blobs()
    pairs = np.array([[0, 1], [50, 51], [100, 101], [0, 50], [1, 51]])
    weights = np.array([np.inf, np.inf, np.inf, np.inf, 0.25])
    model = PPC(3, covariance="full", random_state=0).fit(X, pairs=pairs, weights=weights)
    plain = model.predict(X)
    assert adjusted_rand_score(np.repeat(np.arange(3), 50), plain) == 1.0  # the blobs
    assert model.agreement_ == pytest.approx(3 / (4 + 1 / 3), abs=1e-12)


def test_ppc_agreement_is_one_without_relations_or_labels() -> None:
    X, _ = _blobs()
    for side in ({}, {"pairs": [[0, 60]], "weights": [0.0]}, {"labels": np.full(150, -1)}):
        model = PPC(3, random_state=0).fit(X, **side)
        assert model.agreement_ == 1.0


# --- invalid values ----------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["never", "sometimes", None, True])
def test_an_unknown_fresh_starts_is_refused(value: object) -> None:
    X, y = _blobs(per_blob=20)
    with pytest.raises(ValueError, match="fresh_starts"):
        CECIB(3, fresh_starts=value).fit(X, y)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fresh_starts"):
        PPC(3, fresh_starts=value).fit(X)  # type: ignore[arg-type]


@pytest.mark.parametrize("agreement", [-0.1, 1.0000001, 2.0, float("nan"), float("inf")])
def test_start_from_refuses_an_agreement_that_is_no_share(agreement: float) -> None:
    cecib = CECIB(3)
    with pytest.raises(ValueError, match="agreement"):
        cecib.start_from(np.zeros(10, dtype=np.int64), agreement=agreement)
    assert not hasattr(cecib, "labels_")  # nothing half-set
    ppc = PPC(2)
    with pytest.raises(ValueError, match="agreement"):
        ppc.start_from(
            [0.5, 0.5], np.zeros((2, 2)), np.stack([np.eye(2)] * 2), "full", agreement=agreement
        )
    assert not hasattr(ppc, "means_")


@pytest.mark.parametrize("agreement", [0.0, 0.5, 1.0])
def test_start_from_takes_the_ends_of_a_share(agreement: float) -> None:
    assert CECIB(3).start_from(np.zeros(10, dtype=np.int64), agreement=agreement).agreement_ == (
        agreement
    )
    ppc = PPC(2).start_from(
        [0.5, 0.5], np.zeros((2, 2)), np.stack([np.eye(2)] * 2), "full", agreement=agreement
    )
    assert ppc.agreement_ == agreement
