"""How a fit reports progress and is stopped, and how long work reports its share done."""

from collections.abc import Callable
from typing import Protocol


class Progress(Protocol):
    """``progress(iteration, cost)``: called at least once per sweep with the sweep's number
    (counted across restarts) and the cost after it. A falsy answer other than None (False)
    stops the fit at its next consistent point; None or True goes on. A negative iteration
    only asks whether to go on, from work with no sweep to show."""

    def __call__(self, iteration: int, cost: float, /) -> object: ...


# ``share_done(fraction)``: long work without sweeps (featurizing a picture) saying how far it
# is, from 0 to 1.
ShareDone = Callable[[float], None]


def asks_to_stop(progress: Progress | None, iteration: int, cost: float) -> bool:
    """Report a sweep to ``progress`` (if any); whether its answer stops the fit."""
    if progress is None:
        return False
    answer = progress(iteration, cost)
    return answer is not None and not answer
