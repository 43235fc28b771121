"""The Pareto front: the designs no other design beats on every objective.

A design *dominates* another when it is no worse on every objective and better on at
least one; the front is every design nothing dominates (designs with equal objective
vectors are all kept).  Exact, vectorised in blocks: ``O(n^2 k)`` comparisons for ``n``
designs and ``k`` objectives (5,000 designs x 3 objectives in well under a second).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["pareto_mask", "dominates"]


def _as_min(values, senses: Sequence[str]) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    if v.ndim != 2 or v.shape[1] != len(senses):
        raise ValueError(f"values of shape {v.shape} for {len(senses)} objectives")
    sign = np.array([1.0 if s == "minimize" else -1.0 for s in senses])
    return v * sign


def dominates(a, b, senses: Sequence[str]) -> bool:
    """Whether objective vector ``a`` dominates ``b`` (``senses``: "minimize"/"maximize" per objective)."""
    x = _as_min([a, b], senses)
    return bool(np.all(x[0] <= x[1]) and np.any(x[0] < x[1]))


def pareto_mask(values, senses: Sequence[str], *, block: int = 1024) -> np.ndarray:
    """A boolean mask of the non-dominated rows of ``values`` (n designs x k objectives).

    Examples
    --------
    >>> pareto_mask([[1, 5], [2, 2], [3, 3], [1, 5]], ["minimize", "minimize"]).tolist()
    [True, True, False, True]
    >>> pareto_mask([[1, 5], [2, 2]], ["minimize", "maximize"]).tolist()
    [True, False]
    """
    x = _as_min(values, senses)
    if np.isnan(x).any():
        raise ValueError("an objective value is NaN; price or refuse that design first")
    n = len(x)
    keep = np.ones(n, dtype=bool)
    for lo in range(0, n, block):
        b = x[lo:lo + block]                                   # the rows tested here
        le = np.all(x[None, :, :] <= b[:, None, :], axis=2)    # [i, j]: x_j <= b_i everywhere
        lt = np.any(x[None, :, :] < b[:, None, :], axis=2)     #          x_j <  b_i somewhere
        keep[lo:lo + block] = ~np.any(le & lt, axis=1)
    return keep
