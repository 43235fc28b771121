"""Checking and canonicalising the solver's inputs (private).

``flow_piece`` and ``piece_link`` become nonnegative CSR without explicit zeros
(:func:`_as_csr`, never mutating the caller's matrix), per-flow arrays are checked
for shape, finiteness and sign (:func:`_per_flow`, :func:`_multiplicity`),
:func:`_prepare` checks the shapes against each other and the capacities, and
:func:`_check_routable` refuses flows that cross no capacity-limited link.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

def _as_csr(x, name: str) -> sp.csr_array:
    """Canonical nonnegative CSR without explicit zeros; never mutates the caller's matrix."""
    if sp.issparse(x):
        m = x.tocsr()
    else:
        arr = np.asarray(x, dtype=np.float64)
        if arr.ndim != 2:
            raise ValueError(f"{name} must be a 2-D sparse matrix; got shape {arr.shape}")
        m = sp.csr_array(arr)
    m = sp.csr_array(m, dtype=np.float64)
    if m.data.size == 0:
        return m
    # min and max see NaN and inf without a temporary the size of the matrix.
    lo, hi = m.data.min(), m.data.max()
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"{name} has {int(np.sum(~np.isfinite(m.data)))} non-finite entries")
    if lo < 0:
        bad = int(np.sum(m.data < 0))
        raise ValueError(f"{name} has {bad} negative entries (min {lo:g}); splits are >= 0")
    if not m.has_canonical_format:
        m = m.copy()
        m.sum_duplicates()
        lo = m.data.min() if m.data.size else 1.0
    if lo == 0:
        # Stored zeros would make a flow "cross" a link it puts nothing on.
        m = m.copy()
        m.eliminate_zeros()
    return m


def _per_flow(x, n: int, name: str, *, positive: bool) -> np.ndarray:
    if x is None:
        return np.ones(n)
    # contiguous and writeable, as the compiled kernels take them (a read-only or strided
    # array would compile another specialization of each kernel); a copy only then
    a = np.require(x, np.float64, ["C", "W"])
    if a.ndim == 0:
        a = np.full(n, float(a))             # one value for every row
    if a.shape != (n,):
        raise ValueError(f"{name} must be a number or have shape ({n},) (one per flow row); got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} has {int(np.sum(~np.isfinite(a)))} non-finite values")
    bad = a <= 0 if positive else a < 0
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        need = "> 0" if positive else ">= 0"
        raise ValueError(f"{name}[{i}] = {a[i]:g}; every value must be {need} "
                         f"({int(bad.sum())} are not)")
    return a


def _multiplicity(x, n: int) -> np.ndarray:
    """Per-row multiplicities; all ones by default, as a read-only view (no row-sized array)."""
    if x is None:
        return np.broadcast_to(np.float64(1.0), (n,))
    return _per_flow(x, n, "multiplicity", positive=True)


def _prepare(flow_piece, piece_link, capacity_Bps):
    P = _as_csr(flow_piece, "flow_piece")
    Q = _as_csr(piece_link, "piece_link")
    if P.shape[1] != Q.shape[0]:
        raise ValueError(f"flow_piece has {P.shape[1]} pieces (columns) but piece_link has "
                         f"{Q.shape[0]} (rows)")
    cap = np.asarray(capacity_Bps, dtype=np.float64)
    if cap.shape != (Q.shape[1],):
        raise ValueError(f"capacity_Bps must have shape ({Q.shape[1]},) (one per link of "
                         f"piece_link); got {cap.shape}")
    bad = np.isnan(cap) | (cap < 0)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"capacity_Bps[{i}] = {cap[i]:g}; capacities must be >= 0 "
                         f"(inf for an unlimited link)")
    return P, Q, cap


def _check_routable(P: sp.csr_array, Q: sp.csr_array, cap: np.ndarray) -> None:
    """Every flow must cross a finite-capacity link, or filling would never stop."""
    # entries are > 0 (_as_csr): a piece reaches a limited link when one of its entries does
    limited = Q @ np.isfinite(cap).astype(np.float64)
    if np.all(limited > 0):   # every piece does: a flow needs one entry
        lost = np.flatnonzero(P.indptr[1:] == P.indptr[:-1])
    else:
        lost = np.flatnonzero(P @ limited <= 0)
    if lost.size:
        raise ValueError(
            f"{lost.size} of {P.shape[0]} flows cross no capacity-limited link (e.g. flow "
            f"{int(lost[0])}: an all-zero row of flow_piece @ piece_link); remove unroutable "
            f"flows before solving")


def _unit(P: sp.csr_array) -> bool:
    """Every stored value of ``P`` is 1 (whole rows on their pieces: the common case)."""
    return bool(P.nnz == 0 or (P.data.min() == 1.0 and P.data.max() == 1.0))


def _weight(w: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Per row ``m * w``: ``w`` itself when every multiplicity is 1 (one array fewer)."""
    return m * w if np.any(m != 1.0) else w
