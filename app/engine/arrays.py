"""The array types the engine's signatures speak in (NumPy's typing, named once)."""

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
IndexArray = NDArray[np.intp]  # positions, as NumPy's own index functions return them
BoolArray = NDArray[np.bool_]
