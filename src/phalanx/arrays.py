"""The numpy array types every layer shares (node masks, per-node counts and scores), named once so that a mask
means the same type in the node table, the plugins and the simulator."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["BoolArray", "FloatArray", "IndexArray", "IntArray"]

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
IndexArray = npt.NDArray[np.intp]
