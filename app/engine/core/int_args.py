"""Integer constants to pass between jitted functions.

numba compiles a callee once per argument type, and a literal argument (``f(x, -1)``, also
through a local or global variable) is typed as ``Literal[int](-1)``: one more compiled
specialisation beside the ``int64`` one, with the whole call tree below it compiled again
(point_move_deltas was compiled 4 times, label_entropy_after 6). These return plain int64.
"""

import numba
import numpy as np


@numba.njit(nogil=True, cache=True)
def minus_one() -> int:
    """-1 as an int64 value (no cluster, no category, a removal)."""
    return int(np.int64(-1))


@numba.njit(nogil=True, cache=True)
def plus_one() -> int:
    """+1 as an int64 value (an addition)."""
    return int(np.int64(1))
