"""When and how the compiled filling is used (private).

The compiled kernels (``topo/_solver_kernels.py``, numba: the optional extra ``fast``)
are loaded once, on the first filling big or long enough to pay for them
(:func:`_kernel_module`).  A filling of many rows gets them grouped by the piece
likely to freeze them (:func:`_row_order`, :func:`_regrouped`) and its column
structure counted with each piece's weight (:func:`_columns`).  Without numba,
or with ``_USE_KERNEL = False``, every function here gives the numpy path's answer.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .segments import _Cols

# The compiled filling (topo/_solver_kernels.py, numba: the optional extra
# ``fast``) fills any filling of at least _KERNEL_ROWS flow rows from its first
# round, and takes over any other after _KERNEL_ROUNDS_ANY rounds: its import
# and cache load (0.25-0.4 s once per process, measured) pay only when the
# numpy passes would take longer (they do 1,128 levels of 5,000 flows in 0.02 s,
# but each pass over millions of rows costs O(rows) bookkeeping: the first 64
# rounds of the 10.8 M-row degraded Ironwood solve took 4.8 s in numpy passes,
# all 7,673 rounds 3.7 s compiled).  _USE_KERNEL = False forces the numpy passes
# (tests compare both).
_USE_KERNEL = True
_KERNEL_ROWS = 65_536
_KERNEL_ROUNDS_ANY = 4096
# Links in the compiled filling's window of lowest levels (refilled when dry).
_KERNEL_WINDOW = 1024
# Rows already in runs of this many rows of one likely-freezing piece (on average) are
# not regrouped (see _row_order): the copy would buy little locality.
_MIN_RUN = 4
_kernels = None  # the kernel module once imported, False when numba is missing


def _kernel_module():
    """The compiled kernels, or None when numba is not importable (or disabled)."""
    global _kernels
    if not _USE_KERNEL:
        return None
    if _kernels is None:
        try:
            from .. import _solver_kernels as kernels
        except ImportError:  # numba missing: the numpy passes do everything
            kernels = False
        _kernels = kernels
    return _kernels or None


def _kernels_for(P: sp.csr_array, force: bool = False):
    """The kernel module for a filling of ``P``'s rows: when loaded, and the rows many."""
    return _kernel_module() if force or P.shape[0] >= _KERNEL_ROWS else None


def _columns(P: sp.csr_array, mw: np.ndarray, unit: bool, *, ptr: np.ndarray | None = None,
             force: bool = False) -> _Cols:
    """Flows of each piece, rows increasing: a counting sort that also sums each piece's
    weight when the kernels are loaded and the rows many (32-bit rows where they
    fit; ``ptr``: the column pointers when known), else scipy's CSC copy."""
    kernels = _kernels_for(P, force)
    if kernels is None:
        Pc = P.tocsc()
        return _Cols(Pc.indptr, Pc.indices, Pc.nnz)
    out = np.empty(P.nnz, np.int32 if P.shape[0] < 2**31 else np.int64)
    piece_w = np.zeros(P.shape[1])
    counted = ptr is not None
    if not counted:
        ptr = np.empty(P.shape[1] + 1, np.int64)
    kernels.columns(P.indptr, P.indices, P.data, mw, unit, counted, ptr, out, piece_w)
    return _Cols(ptr, out, P.nnz, piece_w)


def _row_order(P: sp.csr_array, Q: sp.csr_array, cap: np.ndarray, unit: bool, w: np.ndarray, *,
               force: bool = False):
    """Rows grouped by the piece likely to freeze them, for the compiled filling.

    Returns ``(order, at, P[order], w[order], col_ptr)`` (``order``: new row -> row,
    ``at``: row -> new row, ``col_ptr``: the column pointers of ``P``, for
    :func:`_columns`), or None when the kernels are not in use, the rows are few, or
    they come grouped already (see ``_solver_kernels.row_order``).  Each round of the
    filling then reads and writes the rows it freezes nearly in sequence: on 1 M
    random flows the compiled filling takes about half the time.  The order changes
    only the order in which a piece's flows are summed (the last bits of the rates),
    not the rounds or the bottlenecks.
    """
    kernels = _kernels_for(P, force)
    if kernels is None:
        return None
    (F, K), nnz = P.shape, P.nnz
    idx = np.int32 if max(F, K, nnz) < 2**31 else np.int64
    order, at, rows_ptr = np.empty(F, idx), np.empty(F, idx), np.empty(F + 1, idx)
    # every value 1: the given values serve the new rows as well (one array fewer)
    rows_idx, rows_val = np.empty(nnz, idx), (P.data if unit else np.empty(nnz))
    w_new, col_ptr = np.empty(F), np.empty(K + 1, np.int64)
    if not kernels.row_order(P.indptr, P.indices, P.data, unit, Q.indptr, Q.indices, Q.data, cap,
                             _MIN_RUN, w, order, at, rows_ptr, rows_idx, rows_val, w_new, col_ptr):
        return None
    P2 = sp.csr_array((rows_val, rows_idx, rows_ptr), shape=P.shape)
    P2.has_sorted_indices = True   # each row as given: canonical (see _as_csr)
    P2.has_canonical_format = True
    return order, at, P2, w_new, col_ptr


def _regrouped(P: sp.csr_array, Q: sp.csr_array, cap: np.ndarray, unit: bool, w: np.ndarray,
               *per_row: np.ndarray):
    """``(order, at, P, col_ptr, (w, *per_row))`` in :func:`_row_order`'s order, or with
    ``order``, ``at`` and ``col_ptr`` None when the rows stay as given; a broadcast
    default (all ones) stays as is."""
    grouped = _row_order(P, Q, cap, unit, w)
    if grouped is None:
        return None, None, P, None, (w, *per_row)
    order, at, P2, w2, col_ptr = grouped
    return order, at, P2, col_ptr, (w2, *(a if a.strides == (0,) else a[order] for a in per_row))
