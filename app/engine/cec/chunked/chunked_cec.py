"""``CEC.fit`` and ``CECIB.fit`` on a ``dask.array.Array``: the data-parallel path.

The start is the estimator itself fitted on one machine on a sample of the rows (``n_init``
starts, ``init``, ``labeled_weight='auto'`` and the projection of degenerate features all
decided there, labeled rows sampled apart so they seed it); then passes over every chunk on the
current Dask scheduler (``passes.py``). The fitted estimator is an ordinary one: weights,
means and covariances in memory; ``labels_`` is a lazy dask array that replays the kept pass
chunk by chunk, and ``execution_`` says how the fit ran.
"""

from __future__ import annotations

import dataclasses
import warnings
from types import SimpleNamespace
from typing import Any

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from app.engine.arrays import FloatArray, IntArray
from app.engine.cec.chunked.chunk_tasks import categories_of, predict_chunk
from app.engine.cec.chunked.cluster_totals import Frozen, freeze
from app.engine.cec.chunked.passes import ChunkedFit, PassSettings, fit_passes, fitted_labels
from app.engine.core.cec_fit import min_cluster_size
from app.engine.core.cec_shell import (
    AUTO_FRACTION,
    auto_min_cluster_fraction,
    warn_unless_converged,
)
from app.engine.core.chunked_input import ChunkedInput, scan
from app.engine.core.families import (
    DENSITY_FAMILIES,
    DIAGONAL,
    FAMILIES,
    FULL,
    family_covariances,
)
from app.engine.core.validation import check_choice, check_int, check_real
from app.engine.fit_warnings import reset_fit_warnings, warn_fit


def _check_params(estimator: Any) -> tuple[int, float | None]:
    """The shared parameters' errors before any chunk is read: the family and the fraction
    (None: 'auto')."""
    check_int("n_clusters", estimator.n_clusters, 1)
    family = FAMILIES[check_choice("covariance", estimator.covariance, list(FAMILIES))]
    fraction = estimator.min_cluster_fraction
    value = (
        None
        if isinstance(fraction, str) and fraction == AUTO_FRACTION
        else check_real("min_cluster_fraction", fraction, 0.0, 1.0, high_open=True)
    )
    check_int("n_init", estimator.n_init, 1)
    check_int("max_iter", estimator.max_iter, 1)
    if estimator.progress is not None and not callable(estimator.progress):
        raise ValueError(f"progress must be a callable or None, got {estimator.progress!r}")
    return family, value


def full_covariances(family: int, covariances: FloatArray, d: int) -> FloatArray:
    """The (k, d, d) matrices of a fit's ``covariances_`` in the family's shapes."""
    if family == FULL:
        return np.asarray(covariances, dtype=np.float64)
    if family == DIAGONAL:
        return np.stack([np.diag(v) for v in covariances])
    return np.stack([v * np.eye(d) for v in np.atleast_1d(covariances)])


def _start_frozen(
    start: Any, data: ChunkedInput, family: int, beta: float, weight: float, n_total: float
) -> Frozen:
    """The sample fit's clusters as the first pass's parameters; its labeled members counted
    in the whole data's proportion (labeled rows were sampled apart, so they are over-
    represented in the sample)."""
    means = np.asarray(start.means_, dtype=np.float64)
    k, d = means.shape
    covariances = full_covariances(family, start.covariances_, d)
    label_counts = np.zeros((k, max(data.classes.shape[0], 1)))
    if data.sample_y is not None:
        categories = categories_of(data.sample_y, data.classes)
        labeled = categories >= 0
        np.add.at(label_counts, (start.labels_[labeled], categories[labeled]), 1.0)
        if labeled.any():
            label_counts *= weight * data.n_labeled / labeled.sum()
    weights = np.asarray(start.weights_, dtype=np.float64)
    return freeze(
        weights,
        means,
        covariances,
        np.ones(k, dtype=np.bool_),
        label_counts,
        weights * n_total,
        family,
        beta,
    )


def fit_chunked(estimator: Any, X: Any, y: Any, *, beta: float) -> None:
    """Fit ``estimator`` (a ``CEC`` or ``CECIB``) data-parallel on the dask array ``X`` (and
    partial labels ``y``, a dask or NumPy array chunked like X's rows, or None)."""
    family, fraction = _check_params(estimator)
    reset_fit_warnings(estimator)
    rng = check_random_state(estimator.random_state)
    data = scan(X, y, estimator.n_clusters, rng)
    start = _mixture_start(estimator, data, family)
    warm = start is not None
    if start is None:
        start = _fit_sample(estimator, data, rng)
    for message in getattr(start, "fit_warnings_", []):  # e.g. the projection: the fit's too
        warn_fit(estimator, message, UserWarning, stacklevel=3)
    settings, fraction_used = _pass_settings(estimator, start, data, family, fraction, beta)
    if warm:  # the fit it continues made its polishing trial: a pass over every chunk spared
        settings = dataclasses.replace(settings, polish=False)
    weight, n_total = settings.labeled_weight, settings.n_total
    fit = fit_passes(
        data, _start_frozen(start, data, family, beta, weight, n_total), settings,
        estimator.progress,
    )  # fmt: skip
    labels, slots = fitted_labels(data, fit)
    _store_clusters(estimator, fit, labels, slots, settings)
    estimator.n_features_in_ = int(X.shape[1])
    estimator.projection_ = start.projection_
    estimator.min_cluster_fraction_ = fraction_used
    estimator.execution_ = {
        "execution": "data-parallel",
        "chunks": len(data.blocks),
        "passes": fit.n_iter,
        "polished": fit.polished,
        "start_sample_rows": int(data.sample.shape[0]),
        "start": "continued" if warm else "sample fit",
    }
    if hasattr(start, "labeled_weight_"):  # CEC-IB
        _store_labeled(estimator, fit, slots, weight)
        estimator.warm_started_ = warm
    warn_unless_converged(
        estimator, converged=fit.converged, cancelled=fit.cancelled,
        max_iter=settings.max_iter, depth=2,
    )  # fmt: skip


def _pass_settings(
    estimator: Any,
    start: Any,
    data: ChunkedInput,
    family: int,
    fraction: float | None,
    beta: float,
) -> tuple[PassSettings, float]:
    """The passes' settings, from the estimator's parameters and the sample fit (its labeled
    weight and width), and the minimum cluster fraction used (``fraction``, or 'auto's)."""
    weight = float(getattr(start, "labeled_weight_", 1))
    n_total = data.n_rows - data.n_labeled + weight * data.n_labeled
    d = np.asarray(start.means_).shape[1]
    fraction_used = (
        auto_min_cluster_fraction(estimator.n_clusters) if fraction is None else fraction
    )
    settings = PassSettings(
        family=family,
        beta=beta,
        labeled_weight=weight,
        n_total=n_total,
        min_size=min_cluster_size(int(n_total), d, family, fraction_used),
        max_iter=check_int("max_iter", estimator.max_iter, 1),
        polish=bool(estimator.polish),
        projection=start.projection_,
    )
    return settings, fraction_used


def _store_clusters(
    estimator: Any, fit: ChunkedFit, labels: Any, slots: IntArray, settings: PassSettings
) -> None:
    """The kept pass's clusters (those in ``slots``) and partition on the estimator, as an
    in-memory fit stores them."""
    means, cov = fit.totals.moments()
    estimator.labels_ = labels
    estimator.n_clusters_ = int(slots.shape[0])
    estimator.energy_ = fit.energy
    estimator.weights_ = fit.totals.count[slots] / settings.n_total
    estimator.means_ = means[slots]
    estimator.covariances_ = family_covariances(settings.family, cov[slots])
    estimator.n_iter_ = fit.n_iter
    estimator.converged_ = fit.converged
    estimator.energy_history_ = fit.history


def _store_labeled(estimator: Any, fit: ChunkedFit, slots: IntArray, weight: float) -> None:
    """CEC-IB's own attributes: the labeled weight the sample fit chose, and the share of the
    labeled rows whose cluster's majority class is theirs."""
    estimator.labeled_weight_ = int(weight)
    estimator.warm_started_ = False
    counts = fit.totals.label_counts[slots]
    labeled = counts.sum()
    estimator.agreement_ = float(counts.max(axis=1).sum() / labeled) if labeled else 1.0


def _mixture_start(estimator: Any, data: ChunkedInput, family: int) -> Any | None:
    """The mixture ``start_from_mixture`` gave (taken: a later fit starts afresh), as the start
    of the passes, with the sample's rows assigned by it; None when there is none or it does
    not fit this data (another width, family or more clusters than ``n_clusters``)."""
    mixture = estimator.__dict__.pop("start_mixture_", None)
    if mixture is None:
        return None
    weights, means, covariances, labeled_weight = mixture
    d = data.sample.shape[1]
    k = means.shape[0] if means.ndim == 2 else 0
    shapes = {FULL: (k, d, d), DIAGONAL: (k, d)}
    if (
        k < 1
        or k > estimator.n_clusters
        or means.shape != (k, d)
        or weights.shape != (k,)
        or covariances.shape != shapes.get(family, (k,))
        or not (np.all(np.isfinite(means)) and np.all(np.isfinite(covariances)))
    ):
        return None
    start = SimpleNamespace(
        weights_=weights / weights.sum(),
        means_=means,
        covariances_=covariances,
        projection_=None,
        fit_warnings_=[],
    )
    density = DENSITY_FAMILIES[estimator.covariance]
    start.labels_ = predict_chunk(data.sample, start.weights_, means, covariances, density)
    if hasattr(estimator, "labeled_weight"):  # CEC-IB: the weight continued with 'auto'
        chosen = estimator.labeled_weight
        start.labeled_weight_ = (labeled_weight or 1) if isinstance(chosen, str) else chosen
    return start


def _fit_sample(estimator: Any, data: ChunkedInput, rng: np.random.RandomState) -> Any:
    """The estimator's own fit on the sample: the start of the passes."""
    params = {**estimator.get_params(deep=False), "progress": None}
    params["random_state"] = rng.randint(np.iinfo(np.int32).max)
    if "warm_start" in params:
        params["warm_start"] = False
    start = type(estimator)(**params)
    with warnings.catch_warnings():  # re-raised as the fit's, but the sample's convergence
        warnings.simplefilter("ignore")
        if data.sample_y is None:
            start.fit(data.sample)
        else:
            start.fit(data.sample, data.sample_y)
    start.fit_warnings_ = [
        message for message in getattr(start, "fit_warnings_", []) if "converge" not in message
    ]
    return start


def predict_chunked(estimator: Any, X: Any) -> Any:
    """The CEC rule on a dask array, chunk by chunk: a lazy dask array of cluster ids."""
    check_is_fitted(estimator)
    if X.ndim != 2 or X.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {X.shape[-1]} features, but {type(estimator).__name__} is expecting "
            f"{estimator.n_features_in_} features as input"
        )
    X = X.rechunk({1: -1}) if len(X.chunks[1]) > 1 else X
    family = DENSITY_FAMILIES[getattr(estimator, "covariance_", estimator.covariance)]
    return X.map_blocks(
        predict_chunk,
        estimator.weights_,
        estimator.means_,
        estimator.covariances_,
        family,
        getattr(estimator, "projection_", None),
        drop_axis=1,
        dtype=np.int64,
    )
