"""``CECIB``: semi-supervised CEC with an information-bottleneck term (Smieja & Geiger 2017).

Minimises eq. (10) of specs/cec-ib.md with partial labels ``y`` (-1 = unlabeled):

    E_beta = H(Y) + sum_i p_i * ( H(N(m_i, S_i)) + beta * H(Z | Y_i cap X_l) )

A cluster without labeled points has label term 0. beta = 0 is plain CEC.

``labeled_weight`` w counts every labeled point w times in the energy (its p_i, means and
covariances), as if it were repeated w times. On a scribbled image the scribbles are about 2 %
of the pixels; counted once, the other 98 % decide which split of a textured picture two
Gaussians settle on (bench_image's brick-and-grass mosaic, draw 1: 0.42 mIoU at w = 1, 0.65 at
w = 10). The job layer uses 10 on images (PPC's EM-lambda of 0.1 is the same weighting) and
``'auto'`` on tables: the weight among 1, 3 and 10 that best predicts held-out labels
(``labeled_weight_cv.py``).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.utils import check_random_state

from app.engine.cec.chunked.chunked_cec import fit_chunked
from app.engine.cec.estimator import LABELED_INITS, _CECBase
from app.engine.cec.labeled_weight_cv import choose_labeled_weight
from app.engine.core.cec_fit import ASK_ONLY, agreement_share
from app.engine.core.cec_shell import check_cec_settings
from app.engine.core.chunked_input import is_dask_array
from app.engine.core.errstate import engine_errstate
from app.engine.core.fresh_starts import FRESH_STARTS, check_agreement
from app.engine.core.validation import check_choice, check_int, check_partial_labels, check_real
from app.engine.progress import Progress

AUTO = "auto"
# The weight search fits at most this many items (a uniform sample of larger data): it compares
# weights, and the live workspace re-runs CEC-IB after every act (10,000 points: act -> result
# 1.0 s at weight 1, 1.9-3.6 s with the search on every item).
CV_MAX_ITEMS = 2_000
# In the expert's loop (a warm start with fresh_starts='if_worse') the weight chosen before is
# kept while the labeled items have grown by less than this share since it was searched: a few
# more labels rarely change it, and the search costs a third of a continued re-run at 100k.
REUSE_GROWTH = 0.2


class _SearchStopped(Exception):
    """The run's progress said stop during the labeled-weight search."""


class CECIB(_CECBase):
    """CEC-IB clustering with partition-level side information.

    Parameters are those of ``CEC`` plus ``beta >= 0``, the weight of the label-consistency
    term: 1 for trusted labels ("CEC-IB_1"), ``BETA0`` = 0.26978 for noisy ones ("CEC-IB_0").
    ``energy_`` is the cost of eq. (10) in nats. ``init='k-means++'`` (the default) is the
    paper's method: unsupervised k-means++ starts, the lowest energy kept. ``init='labels'``
    (the workbench's choice on tables and images, where it predicts the labels better; docs/
    cec-ib.md) starts from the labels (beta > 0): at the categories' labeled means; with one
    cluster per category the first start is those means, the second the same after Lloyd
    refinement, and the others refined means of bootstrap resamples of the labeled items; the
    restart kept is then the one whose clusters agree with more labeled items, energy breaking
    ties. ``labeled_weight``
    (an integer >= 1, default 1) counts each labeled point that many times (module docstring);
    ``'auto'`` chooses it among 1, 3 and 10 by 3-fold cross-validation on the labels (9 more
    fits of one start each, on at most 2,000 items; ``labeled_weight_cv.py``). ``labels_`` are
    still one per row of ``X``; ``labeled_weight_`` is the weight used, and with ``'auto'``
    ``choice_`` gives every candidate's share of held-out labels predicted.

    ``warm_start``: when True and this estimator was fitted before on as many rows, the next
    ``fit`` also starts from that fit's partition (``labels_``, or one given to
    ``start_from``) as one more start under the usual rule (agreement with the labels, then
    the energy; exact ties keep it; ``fit_cec``). A re-run after a few more labels then
    moves the clusters less often. ``warm_started_`` says whether the kept fit continued.
    ``fresh_starts``: with a warm start, draw the ``n_init`` fresh starts ``'always'`` (the
    default), or ``'if_worse'``: only when the continued fit agrees with the labels less than
    the fit it continues did (``agreement_``, or the share given to ``start_from``), the
    expert's loop, where they cost most of a re-fit (``core/fresh_starts.py``).
    In that loop ``'auto'`` also keeps the weight it chose while the labeled items grew by
    less than ``REUSE_GROWTH`` since its search (``weight_searched_with_`` labeled items).
    ``agreement_`` is the share of labeled items whose cluster's majority label is their own.
    """

    labels_: NDArray[np.int64]
    agreement_: float | None  # None: continued from a fit whose agreement is unknown
    inits = LABELED_INITS

    def __init__(
        self,
        n_clusters: int = 10,
        *,
        beta: float = 1.0,
        labeled_weight: int | str = 1,
        covariance: str = "full",
        min_cluster_fraction: float | str = "auto",
        n_init: int = 10,
        max_iter: int = 100,
        init: str = "k-means++",
        random_state: Any = None,
        progress: Progress | None = None,
        warm_start: bool = False,
        polish: bool | str = True,
        fresh_starts: str = "always",
    ) -> None:
        self.n_clusters = n_clusters
        self.beta = beta
        self.labeled_weight = labeled_weight
        self.covariance = covariance
        self.min_cluster_fraction = min_cluster_fraction
        self.n_init = n_init
        self.max_iter = max_iter
        self.init = init
        self.random_state = random_state
        self.progress = progress
        self.polish = polish
        self.warm_start = warm_start
        self.fresh_starts = fresh_starts

    @engine_errstate
    def fit(self, X: ArrayLike, y: ArrayLike | None = None) -> CECIB:
        """Cluster ``X`` using labels ``y`` (integers, -1 = unlabeled; None = all unlabeled).

        On a ``dask.array.Array`` the fit runs data-parallel over its chunks on the current
        Dask scheduler (``y`` chunked like X's rows; ``app/engine/cec/chunked``), from a start
        fitted on a sample, or from the mixture ``start_from_mixture`` gave (``warm_start``
        and ``start_from`` apply to in-memory fits)."""
        beta = check_real("beta", self.beta, 0.0)
        auto = isinstance(self.labeled_weight, str)
        if auto and self.labeled_weight != AUTO:
            raise ValueError(
                f"labeled_weight must be an integer >= 1 or 'auto', got {self.labeled_weight!r}"
            )
        weight = 1 if auto else check_int("labeled_weight", self.labeled_weight, 1)
        fresh = check_choice("fresh_starts", self.fresh_starts, FRESH_STARTS)
        if is_dask_array(X):
            fit_chunked(self, X, y, beta=beta)
            return self
        self.__dict__.pop("choice_", None)
        data = check_cec_settings(self, X).data  # X's errors first, as without a weight
        warm = self._previous_partition(data.shape[0])
        enough = getattr(self, "agreement_", None) if fresh == "if_worse" else None
        self.warm_started_ = False
        labels, n_categories = check_partial_labels(y, data.shape[0])
        if y is None:
            self.labeled_weight_ = weight
            self._fit(data, y, beta=beta, warm=warm, warm_enough=enough)
        else:
            searched = getattr(self, "weight_searched_with_", None)
            n_labeled = int(np.count_nonzero(labels >= 0))
            if (
                auto
                and warm is not None
                and fresh == "if_worse"
                and searched is not None
                and (n_labeled <= searched * (1 + REUSE_GROWTH))
            ):
                weight = self.labeled_weight_  # kept from the fit this one continues
            elif auto:
                weight = self._cross_validated_weight(data, labels, beta)
                self.weight_searched_with_ = n_labeled
            self.labeled_weight_ = weight
            self._fit_weighted(data, labels, weight, beta, warm, enough)
        self.agreement_ = agreement_share(self.labels_, labels, self.n_clusters_, n_categories)
        return self

    def start_from(
        self,
        labels: ArrayLike,
        agreement: float | None = None,
        weight_search: tuple[int, int] | None = None,
    ) -> CECIB:
        """Make the next ``fit`` continue this partition (one cluster id >= 0 per row of the
        next ``X``; only which rows share a cluster counts), as if this estimator had fitted it
        (``warm_start`` on): for a partition kept from an earlier fit, e.g. a stored run's
        labels, and ``agreement`` that fit's ``agreement_`` (None: unknown, so ``fresh_starts=
        'if_worse'`` draws them); ``weight_search``: that fit's (``labeled_weight_``,
        ``weight_searched_with_``), for ``'auto'`` to keep while the labels barely grew. A
        partition with more clusters than ``n_clusters`` is not continued."""
        partition = np.asarray(labels)
        if partition.ndim != 1 or not np.issubdtype(partition.dtype, np.integer):
            raise ValueError(f"labels must be one integer per row, got shape {partition.shape}")
        if partition.size and partition.min() < 0:
            raise ValueError("labels of a partition to continue must be >= 0")
        check_agreement(agreement)
        self.labels_ = np.unique(partition, return_inverse=True)[1].astype(np.int64)
        self.agreement_ = agreement
        if weight_search is None:
            self.__dict__.pop("weight_searched_with_", None)
        else:
            self.labeled_weight_, self.weight_searched_with_ = (
                check_int("labeled_weight", weight_search[0], 1),
                check_int("weight_searched_with", weight_search[1], 0),
            )
        self.warm_start = True
        return self

    def start_from_mixture(
        self,
        weights: ArrayLike,
        means: ArrayLike,
        covariances: ArrayLike,
        labeled_weight: int | None = None,
    ) -> CECIB:
        """Make the next data-parallel ``fit`` (on a dask array) continue this mixture instead
        of fitting a start on a sample: an earlier fit's ``weights_``, ``means_`` and
        ``covariances_`` (in this estimator's covariance family) and, for ``labeled_weight=
        'auto'``, its ``labeled_weight_``. The passes then start where it ended, which on
        data that barely changed takes a pass or two. A mixture that does not fit the next X
        (another width or family, more clusters than ``n_clusters``) is not continued: the fit
        starts afresh. ``warm_started_`` says which it did."""
        self.start_mixture_ = (
            np.asarray(weights, dtype=np.float64),
            np.asarray(means, dtype=np.float64),
            np.asarray(covariances, dtype=np.float64),
            None if labeled_weight is None else check_int("labeled_weight", labeled_weight, 1),
        )
        return self

    def _previous_partition(self, n: int) -> NDArray[np.int64] | None:
        """The last fit's partition when ``warm_start`` may continue it: as many rows, and no
        more clusters than ``n_clusters`` (a partition with fewer continues as it is: CEC only
        removes clusters)."""
        previous = getattr(self, "labels_", None)
        if not self.warm_start or previous is None or previous.shape != (n,):
            return None
        if not n or previous.max() >= self.n_clusters:
            return None
        return np.asarray(previous, dtype=np.int64)

    def _fit_weighted(
        self,
        data: NDArray[Any],
        labels: NDArray[np.int64],
        weight: int,
        beta: float,
        warm: NDArray[np.int64] | None = None,
        warm_enough: float | None = None,
    ) -> None:
        if weight == 1:
            self._fit(data, labels, beta=beta, depth=3, warm=warm, warm_enough=warm_enough)
            return
        n = data.shape[0]
        labeled = np.flatnonzero(labels >= 0)
        repeats = np.concatenate([np.arange(n), np.repeat(labeled, weight - 1)])
        repeated = None if warm is None else warm[repeats]
        # Every labeled item counts `weight` times, so the repeated labels' agreement share is
        # the labels' own.
        self._fit(
            data[repeats], labels[repeats], beta=beta, depth=3, warm=repeated,
            warm_enough=warm_enough,
        )  # fmt: skip
        self.labels_ = self.labels_[:n]

    def _cross_validated_weight(
        self, data: NDArray[Any], labels: NDArray[np.int64], beta: float
    ) -> int:
        rng = np.random.default_rng(check_random_state(self.random_state).randint(2**31 - 1))
        if data.shape[0] > CV_MAX_ITEMS:  # a uniform sample keeps the labeled share
            rows = np.sort(rng.choice(data.shape[0], CV_MAX_ITEMS, replace=False))
            data, labels = data[rows], labels[rows]
        # One start per held-out fit (the categories' labeled means): the search only compares
        # weights, and 9 fits at the full n_init cost 9 times a fit (the live workspace waits).
        # Its sweeps are not the run's progress (the cost history is the final fit's), but each
        # asks whether to go on: a cancelled run (a superseded Live re-run) leaves the search
        # within a sweep, and the final fit stops at its first.
        progress = self.progress

        def ask(_iteration: int, _cost: float) -> bool:
            if progress is not None and not progress(ASK_ONLY, math.nan):
                raise _SearchStopped
            return True

        settings = {**self.get_params(deep=False), "progress": ask, "n_init": 1}

        def fit_labels(weight: int, given: NDArray[np.int64]) -> NDArray[np.int64]:
            model = CECIB(**{**settings, "labeled_weight": weight})
            with warnings.catch_warnings():  # a held-out fit's warnings are not the run's
                warnings.simplefilter("ignore")
                model._fit_weighted(data, given, weight, beta)
            return model.labels_

        try:
            weight, scores = choose_labeled_weight(fit_labels, labels, rng)
        except _SearchStopped:
            return 1
        if scores:  # (none: too few labels to hold any out)
            self.choice_ = {
                "chosen": f"labeled_weight {weight}",
                "held_out_labels_predicted": {str(w): score for w, score in scores.items()},
            }
        return weight

    def fit_predict(
        self, X: ArrayLike, y: ArrayLike | None = None, **kwargs: Any
    ) -> NDArray[np.int64]:
        """``fit(X, y).labels_``."""
        return self.fit(X, y).labels_
