"""Index arithmetic on CSR/CSC runs, shared by the reductions, the filling and the checks (private).

A CSR row (or CSC column) is a run of ``indices``/``data`` between two ``indptr``
entries; these helpers gather runs (:func:`_row_positions`), reduce them
(:func:`_segment_reduce`, :func:`_count_alive`) and group keys (:func:`_unique`,
:func:`_group_sum`) without a Python loop.  :class:`_Cols` is a flow_piece
matrix's column structure (the flows of each piece).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

def _row_positions(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions in ``indices``/``data`` of the given CSR rows, and each row's length."""
    if rows.size == 1:  # the common small round: skip the vectorised bookkeeping
        start, stop = int(indptr[rows[0]]), int(indptr[rows[0] + 1])
        return np.arange(start, stop, dtype=np.int64), np.array([stop - start], dtype=np.int64)
    starts = indptr[rows].astype(np.int64, copy=False)
    counts = indptr[rows + 1].astype(np.int64, copy=False) - starts
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64), counts
    # Each row's run is start + 0..len-1: shift a global arange by (start - offset).
    offsets = np.cumsum(counts) - counts
    pos = np.repeat(starts - offsets, counts)
    pos += np.arange(total, dtype=np.int64)
    return pos, counts


def _unique(ids: np.ndarray, n: int) -> np.ndarray:
    """Sorted unique ids in ``range(n)``: a mark array when dense, a sort when sparse."""
    if ids.size < 2:
        return ids
    if ids.size * 32 >= n:
        mark = np.zeros(n, dtype=bool)
        mark[ids] = True
        return np.flatnonzero(mark)
    ids = np.sort(ids)
    if ids.size:
        ids = ids[np.concatenate(([True], ids[1:] != ids[:-1]))]
    return ids


def _group_sum(keys: np.ndarray, weights: np.ndarray | None, n: int):
    """Distinct keys in ``range(n)`` (sorted), the sum of ``weights`` (or None) and the count.

    Dense key sets use bincount (O(n)), sparse ones a stable sort, so a small
    round never pays for all ``n`` keys; both add in the same order every run.
    """
    if keys.size < 2 or (keys.size < 64 and np.all(keys[1:] > keys[:-1])):
        # Already distinct and sorted (one CSR row): nothing to group.
        return keys, weights, np.ones(keys.size, dtype=np.int64)
    if keys.size * 8 >= n:
        count = np.bincount(keys, minlength=n)
        uniq = np.flatnonzero(count)
        total = None if weights is None else np.bincount(keys, weights=weights, minlength=n)[uniq]
        return uniq, total, count[uniq]
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    first = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    total = None if weights is None else np.add.reduceat(weights[order], first)
    return keys[first], total, np.diff(np.append(first, keys.size))


def _segment_reduce(ufunc, indptr: np.ndarray, values: np.ndarray, fill, *,
                    nonempty: bool = False) -> np.ndarray:
    """``ufunc.reduce`` over each CSR row's run of ``values``; ``fill`` for empty rows.

    ``nonempty=True`` promises no row is empty (routable flows), skipping the mask.
    """
    n = indptr.size - 1
    if nonempty and n:
        return ufunc.reduceat(values, indptr[:-1])
    out = np.full(n, fill, dtype=values.dtype)
    nonempty = np.flatnonzero(np.diff(indptr) > 0)
    if nonempty.size:
        out[nonempty] = ufunc.reduceat(values, indptr[nonempty])
    return out


@dataclass(frozen=True)
class _Cols:
    """The column structure of a flow_piece matrix: the flows of each piece (private)."""

    indptr: np.ndarray
    indices: np.ndarray
    nnz: int
    piece_w: np.ndarray | None = None   # P.T @ (m * w), when the kernel built it


def _count_alive(Pc: _Cols, alive: np.ndarray) -> np.ndarray:
    """Per piece, the stored entries of flows still in ``alive`` (exact integers)."""
    # Differences of a running count at the column boundaries: cheaper than
    # add.reduceat over thousands of long runs.
    acc = np.int32 if Pc.nnz < np.iinfo(np.int32).max else np.int64
    running = np.zeros(Pc.nnz + 1, dtype=acc)
    np.cumsum(alive[Pc.indices], dtype=acc, out=running[1:])
    return (running[Pc.indptr[1:]] - running[Pc.indptr[:-1]]).astype(np.int64)
