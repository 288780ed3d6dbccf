"""When a warm start needs fresh starts beside it (``fresh_starts``, CEC-IB and PPC).

An expert's loop re-fits after every few annotations, each time from the last fit. Fresh starts
compete with the continued one so that a fit the new annotations contradict can be left for a
better one; but when the continued fit agrees with the annotations at least as well as the fit it
continues did, the fresh starts can only redraw the picture at the same agreement, and they cost
most of the re-fit (100k x 10, 8 blobs: CEC-IB 1.7 s with ten fresh starts, 0.2 s without;
PPC 1.5 s and 0.2 s; benchmarks/bench_loop.py). ``'if_worse'`` draws them only then.

Agreement is a share in [0, 1] of the side information the fit's own clusters respect (1 with
none): CEC-IB's labeled items in a cluster whose majority category is their own, PPC's weighted
relations and labels its mixture respects (``ppc/select.py``).
"""

from __future__ import annotations

FRESH_STARTS = ("always", "if_worse")

# Shares are ratios of counts; a tie must read as a tie.
TIE = 1e-12


def continued_is_enough(agreement: float, reference: float | None) -> bool:
    """Whether a continued fit of ``agreement`` may skip the fresh starts: it agrees at least as
    well as the fit it continued (``reference``; None: that fit's agreement is unknown, so the
    fresh starts are drawn)."""
    return reference is not None and agreement >= reference - TIE


def check_agreement(agreement: float | None) -> float | None:
    """A stored agreement given to ``start_from``: None or a share in [0, 1], else ValueError."""
    if agreement is not None and not 0.0 <= agreement <= 1.0:
        raise ValueError(f"agreement must be a share in [0, 1], got {agreement!r}")
    return agreement
