"""PPC's covariance choice: ``covariance='auto'`` (the default) picks full or tied by the side
information itself (docs/ppc.md, "Choosing the covariance").

The likelihood cannot choose: on standardised breast cancer a full-covariance mixture splits the
data by spread (a tight and a broad component, ARI 0.13) and has the better likelihood and BIC,
while the class split is a tied-covariance one (ARI 0.65). Hard relations fix the constrained
samples' labels either way, so ``labels_`` agree with them whatever the model; what differs is
whether the fitted *mixture* (its plain posterior, ``predict``) agrees with them. ``auto`` fits
both models from max(n_init, ``AUTO_STARTS``) starts each and keeps the fit whose mixture agrees
with more relations and labels (the side information acts as a validation set), the higher
objective on a tie. Without side information it is ``full``, the spec's model; so is it with
mean-field components (image grids).
"""

from __future__ import annotations

import numpy as np

from app.engine.arrays import IntArray
from app.engine.core.families import FAMILIES, FULL
from app.engine.ppc.relations import Relations

COVARIANCES = (*FAMILIES, "tied", "auto")
AUTO_CANDIDATES = ("full", "tied")
# Least starts per model when choosing by the side information. 3 measured no better overall
# (digits-50 0.547 -> 0.514, digits-200 0.538 -> 0.543; docs/ppc.md): with few must-links the
# agreement barely separates starts, and the objective then picks worse ones.
AUTO_STARTS = 1


def family_of(covariance: str) -> tuple[int, bool]:
    """(core family, tied) for a resolved covariance name (not ``auto``)."""
    return (FULL, True) if covariance == "tied" else (FAMILIES[covariance], False)


def candidates(
    covariance: str, relations: Relations, known: IntArray, mean_field: bool = False
) -> tuple[str, ...]:
    """The covariance models to fit: both of ``AUTO_CANDIDATES`` for ``auto`` when there is side
    information to choose with, else the one asked for (``auto`` alone is ``full``). With
    mean-field components (image grids: every item linked, a fit costs seconds) ``auto`` is
    ``full``: a second model would double the cost, and links between neighbours are no
    validation set for the mixture."""
    if covariance != "auto":
        return (covariance,)
    if mean_field:
        return ("full",)
    has_pairs = relations.soft_i.shape[0] + relations.link_i.shape[0] + relations.dnl_i.shape[0]
    return AUTO_CANDIDATES if has_pairs or bool((known >= 0).any()) else ("full",)


def agreement(plain: IntArray, relations: Relations, known: IntArray) -> float:
    """How many relations and labels the mixture's own labels ``plain`` respect: every hard
    relation and label counts 1, a soft relation |J| / (1 + |J|) (a weak one counts little)."""
    score = float(np.sum(plain[relations.link_i] == plain[relations.link_j]))
    score += float(np.sum(plain[relations.dnl_i] != plain[relations.dnl_j]))
    same = plain[relations.soft_i] == plain[relations.soft_j]
    kept = np.where(relations.soft_J > 0, same, ~same)
    strength = np.abs(relations.soft_J) / (1.0 + np.abs(relations.soft_J))
    score += float(np.sum(strength[kept]))
    labeled = known >= 0
    return score + float(np.sum(plain[labeled] == known[labeled]))


def agreement_share(score: float, relations: Relations, known: IntArray) -> float:
    """An ``agreement`` score as a share of the most it can be (every relation and label
    respected); 1 without relations or labels."""
    strength = np.abs(relations.soft_J) / (1.0 + np.abs(relations.soft_J))
    total = relations.link_i.shape[0] + relations.dnl_i.shape[0] + float(np.sum(strength))
    total += float(np.count_nonzero(known >= 0))
    return 1.0 if total == 0 else score / total
