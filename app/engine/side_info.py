"""How the estimators take side information, and what scikit-learn can route of it.

Side information is keyword-only in ``fit`` (``y`` is never read as side information; CEC-IB's
partial labels are the one exception, in ``y`` by the semi-supervised convention, -1 for
unlabeled). With ``sklearn.set_config(enable_metadata_routing=True)`` and
``estimator.set_fit_request(pairs=True, ...)``, Pipeline and GridSearchCV pass it to ``fit``:

* per-row side information (PPC ``labels``, C3L ``side_scores``, CEC-IB ``y``) has one entry per
  row of X, so a cross-validation splitter subsets it with the rows: it can be routed anywhere;
* pairs (PPC ``pairs``/``weights``, C4S and SMIC ``must_link``/``cannot_link``) name rows of the
  X given to ``fit`` by position. A splitter that subsets rows cannot renumber them, so they work
  in a Pipeline on all rows, but not in GridSearchCV or cross_validate: a pair index beyond the
  fold's rows raises the error below (pairs that happen to fall inside the fold cannot be told
  apart from intended ones, so tune on per-row side information or with a fixed split).
"""

from __future__ import annotations

PAIRS_NAME_ROWS = (
    "; pairs name rows of the X passed to fit by position, so they cannot be routed through a "
    "cross-validation splitter that subsets rows (GridSearchCV, cross_validate): fit on all "
    "rows (a Pipeline is fine) or tune with per-row side information"
)
