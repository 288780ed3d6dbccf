"""C4S's ``covariance='auto'``: fit full Gaussians and spherical ones that share one variance
(``tied_spherical``), keep the one whose fitted *model* agrees with more of the constraints (as
PPC's ``auto``, app/engine/ppc/select.py).

Every constraint holds in ``labels_`` whatever the family, so the partition cannot choose; what
differs is whether the fitted Gaussians, without the constraints (``predict``), put must-linked
points in one group and cannot-linked points in two: the constraints act as a validation set.
On standardised breast cancer (PCA to 10 dimensions) full covariances split the data into a
tight core and a broad halo that the constraints contradict, while the tied spherical model
(the peers' k-means model) follows the classes. bench_constraints' draws (10 per row, C4S
in-process) for full / spherical / tied spherical, and auto over (full, spherical) / (full,
tied) / all three:

    breast cancer 50:  0.33 / 0.59 / 0.70;  auto 0.59 / 0.70 / 0.65
    breast cancer 200: 0.66 / 0.62 / 0.80;  auto 0.73 / 0.80 / 0.80
    digits 50:         0.53 / 0.49 / 0.48;  auto 0.53 / 0.52 / 0.53
    digits 200:        0.53 / 0.47 / 0.49;  auto 0.52 / 0.53 / 0.52

and on iris and wine every auto is within 0.002 of full. Spherical with a radius per cluster is
left out: tied beat it on 6 of the 8 rows, and as a third candidate it wins some breast cancer
draws on one or two constraints of noise. Ties keep full, the spec's model.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

AUTO_FAMILIES = ("full", "tied_spherical")


def constraint_agreement(
    groups: NDArray[np.int64], must_link: NDArray[np.int64], cannot_link: NDArray[np.int64]
) -> int:
    """How many must-links join one group and cannot-links part two, under ``groups``."""
    together = int(np.count_nonzero(groups[must_link[:, 0]] == groups[must_link[:, 1]]))
    apart = int(np.count_nonzero(groups[cannot_link[:, 0]] != groups[cannot_link[:, 1]]))
    return together + apart
