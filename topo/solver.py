"""Flow-level solver: weighted max-min fair rates and event-driven completion times.

Flows ``f = 0..F-1`` move bytes over directed links ``l = 0..L-1`` of capacity
``capacity_Bps[l]`` (bytes/s).  Routes are *fixed splits* (ECMP hashing): flow
``f`` puts the share ``A[f, l]`` of its rate on link ``l``.  ``A`` is never formed;
it is given factored as ``A = flow_piece @ piece_link``, where a *piece* is a
shared route segment (a chip's fan-out to its switches, a rack's spread over the
spines, a torus ring arc).  The 2,048-chip all-to-all has 4.19 M flows of about
four pieces each; its explicit ``A`` would hold ~570 M non-zeros.

Public functions
----------------
maxmin_rates
    Weighted max-min fair rates by progressive filling.
simulate
    Completion times: solve rates, retire the earliest finishers, re-solve.
link_load_bound
    Busiest link's bytes / capacity: a lower bound on the completion time.
check_maxmin
    The capacity and max-min certificate invariants, as readable findings.
estimate_memory_bytes, guard_memory
    Refuse problems that would not fit in memory (:class:`TooLarge`).

Notes
-----
Per-flow ``weights`` (default 1) scale a flow's share: at fill level ``t`` every
unfrozen flow runs at ``weights[f] * t``.  ``multiplicity[f]`` (default 1) makes
one row stand for that many identical flows: its load counts ``m`` times, its
rate is per single flow.

Progressive filling keeps, per link, the *active weight*
``aw[l] = sum over unfrozen f of m[f] w[f] A[f, l]`` (computed factored) and the
load ``used[l]`` of the frozen flows, so a link saturates at level
``(capacity - used) / aw``; these levels are cached.  When links saturate, every
flow of a piece touching one of them crosses it (all entries are nonnegative),
so the solver freezes whole pieces, each exactly once, and subtracts the frozen
flows' weight from ``aw`` through their rows of ``flow_piece`` and the pieces'
rows of ``piece_link``.

Many-level problems (heterogeneous capacities: thousands of distinct levels)
are filled in *passes*, not one round at a time: freezing only raises the
levels of the links it touches, so the lowest-level links, taken in order, are
the next rounds up to the first one whose links an earlier round's flows touch
(a link they empty instead is skipped).  Those rounds are the ones the
one-at-a-time filling takes, and are frozen in one set of vector operations.
The lowest-level links come from a window kept between passes (one O(L)
partition per window, not per round).  In :func:`simulate`, an event that
reopens no flow (its flows froze last) is retired without a rollback, and runs
of such events are taken together.

With numba installed (the optional extra ``fast``), a filling of many rows, or
one that has run many rounds, goes through a compiled loop
(``topo/_solver_kernels.py``) that takes the same rounds one at a time at a cost
of the entries they freeze plus a small window of the lowest levels; without
numba the numpy passes do it all.  Such a filling of many rows gets them grouped
by the piece likely to freeze them (:func:`_row_order`), so a round finds its rows
nearly in sequence; results are mapped back to the caller's rows.

Two exact reductions run first.  Links whose columns of ``piece_link`` are
proportional carry loads in that proportion, so they are one constraint of
capacity ``min cap / share`` (:func:`_group_links`; per-link results are mapped
back).  In :func:`simulate`, when every event left after a filling reopens no
flow (equal sizes and weights: the fastest flows froze last), they are formed
from one sort and the phase ends (:func:`_quiet_tail`), as the loop would.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .errors import TooLarge

__all__ = [
    "Rates",
    "FlowResult",
    "Bound",
    "maxmin_rates",
    "simulate",
    "link_load_bound",
    "check_maxmin",
    "estimate_memory_bytes",
    "guard_memory",
]

# Smallest active weight used as a divisor: a link that still carries unfrozen
# flows has a positive weight; this only shields the division from roundoff.
_TINY = np.finfo(np.float64).tiny
_GIB = 1024.0**3
# A round freezing at least this share of all flow-piece entries uses
# whole-matrix products instead of gathers: fewer, smaller temporaries.  At most
# 1/share rounds can be that large, so the total stays O(nnz).
_MATVEC_SHARE = 1.0 / 16
# simulate's incremental rollbacks recompute the per-link sums exactly once
# their work since the last recomputation reaches this share of all entries:
# roundoff cannot pile up over many events, at O(1) amortised cost.
_RESYNC_SHARE = 1.0
# Candidate links one filling pass considers at most (it adapts below this).
_MAX_BATCH = 4096
# Flow entries a pass may gather at least (see _Fill._pass; adapts, at most the
# big-round size).
_MIN_BUDGET = 4096
# simulate takes events that reopen no flow together (one sort) after this
# many in a row; a sort of the flows costs more than a few single events.
_QUIET_STREAK = 8
# simulate tries to take every remaining event at once (_quiet_tail) after a fill
# that re-solved at least a quarter of this many rows or more.
_TAIL_MIN_ROWS = 4096
# Links with proportional columns of piece_link are solved as one constraint
# (_group_links); False solves every link on its own (tests compare both).
_GROUP_LINKS = True
# Findings listed one by one before check_maxmin summarises the rest.
_MAX_FINDINGS = 10
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
            from . import _solver_kernels as kernels
        except ImportError:  # numba missing: the numpy passes do everything
            kernels = False
        _kernels = kernels
    return _kernels or None


def _warm_up() -> bool:
    """Load the compiled filling now (compile it, the first time on a machine).

    Benchmarks call it to time the one-off cost apart from the solve; returns
    whether the kernel is available.
    """
    kernels = _kernel_module()
    if kernels is not None:
        for idx in (np.int32, np.int64):   # scipy's two index types: one specialization each
            one = sp.csr_array((np.ones(1), np.zeros(1, idx), np.arange(2, dtype=idx)), shape=(1, 1))
            # what a filling of many rows runs: _row_order, _columns, the filling, unpermute
            _, _, _, _, ptr = _row_order(one, one, np.ones(1), True, np.ones(1), force=True)
            fill = _Fill(one, one, one.tocsc(), np.ones(1), np.ones(1), np.ones(1), 1e-9)
            for known in (None, ptr):
                fill.Pc = _columns(one, fill.mw, True, ptr=known, force=True)
            fill._run_kernel(kernels, 0.0)
            kernels.unpermute(np.zeros(1, idx), fill.rate, fill.bottleneck, np.zeros(1, np.int64),
                              np.empty(1), np.empty(1, np.int64))
    return kernels is not None


@dataclass(frozen=True)
class Rates:
    """Max-min fair rates (see :func:`maxmin_rates`).

    Attributes
    ----------
    rate_Bps : ndarray, shape (F,)
        Rate of one flow of each row, bytes/s.
    bottleneck_link : ndarray of int64, shape (F,)
        A saturated link on which the flow was frozen.
    n_levels : int
        Progressive-filling rounds (distinct bottleneck levels, up to ``rel_tol``).
    """

    rate_Bps: np.ndarray
    bottleneck_link: np.ndarray
    n_levels: int


@dataclass(frozen=True)
class FlowResult:
    """Completion times of a phase of flows (see :func:`simulate`).

    Attributes
    ----------
    time_s : float
        Time the last flow finishes.
    finish_s : ndarray, shape (F,)
        Finish time of each flow row.
    events : int
        Retirement events (rate solves).
    n_levels : int
        Filling rounds computed over all events (rounds redone after a
        retirement count again).
    link_bytes : ndarray, shape (L,)
        Bytes carried by each link over the phase.
    link_busy_s : ndarray, shape (L,)
        Time during which each link carried traffic (until the last flow
        crossing it finished).
    peak_utilization : ndarray, shape (L,)
        Maximum over events of load / capacity (0 for unlimited links).
    utilization : ndarray, shape (L,)
        Average utilization over the phase, ``link_bytes / (capacity * time_s)``.
    first_rates_Bps : ndarray, shape (F,)
        Rates of the first event (all flows present).
    bound_s : float
        The link-load lower bound (:func:`link_load_bound`); ``time_s >= bound_s``.
    """

    time_s: float
    finish_s: np.ndarray
    events: int
    n_levels: int
    link_bytes: np.ndarray
    link_busy_s: np.ndarray
    peak_utilization: np.ndarray
    utilization: np.ndarray
    first_rates_Bps: np.ndarray
    bound_s: float


@dataclass(frozen=True)
class Bound:
    """Link-load lower bound (see :func:`link_load_bound`).

    Attributes
    ----------
    time_s : float
        Max over links of bytes / capacity.
    link_bytes : ndarray, shape (L,)
        Bytes each link must carry.
    busiest_link : int
        The link attaining ``time_s`` (0 when nothing moves).
    """

    time_s: float
    link_bytes: np.ndarray
    busiest_link: int


# --------------------------------------------------------------------------- inputs


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


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


# --------------------------------------------------------------------------- parallel links


@dataclass(frozen=True)
class _LinkGroups:
    """Links whose columns of ``piece_link`` are proportional, solved as one (private).

    A link ``l`` of group ``g`` has column ``Q[:, l] = scale[l] * Qg[:, g]``: it carries
    exactly the pieces of its group, in the same proportions, so its load is always
    ``scale[l]`` times the group's and it saturates when the group's load reaches
    ``cap[l] / scale[l]``.  The group is one constraint of capacity ``min_l cap[l] /
    scale[l]``, reached first by ``rep[g]`` (lowest id on ties); its other links then
    carry only frozen flows and never saturate.  ECMP fan-outs (a chip's links to its
    switches) and links that carry one piece each are such groups.
    """

    Q: sp.csr_array          # (K, G) each group's column, divided by its first entry
    cap: np.ndarray          # (G,) bytes/s
    group: np.ndarray        # (L,) each link's group, -1 where no piece crosses it
    scale: np.ndarray        # (L,) the link's column over its group's (0 where no group)
    rep: np.ndarray          # (G,) the group's link of least cap / scale

    def per_link(self, per_group: np.ndarray) -> np.ndarray:
        """A per-group value on each of the group's links (0 on links of no group)."""
        out = np.zeros(self.group.size)
        on = self.group >= 0
        out[on] = per_group[self.group[on]]
        return out


def _runs(keys: tuple) -> tuple[np.ndarray, np.ndarray]:
    """A stable order of equal-length key arrays, and whether each sorted entry equals the last."""
    order = np.lexsort(keys[::-1])
    dup = np.ones(order.size - 1, bool)
    for k in keys:
        ks = k[order]
        dup &= ks[1:] == ks[:-1]
    return order, dup


def _group_links(Q: sp.csr_array, cap: np.ndarray) -> tuple[_LinkGroups | None, sp.csc_array]:
    """Group links with proportional columns of ``Q`` (see :class:`_LinkGroups`).

    Columns are compared exactly (indices, and values divided by the column's first),
    after their length, first and last piece (O(links)) and a 64-bit hash of every
    entry narrow the candidates.  Returns the groups (None when no two links group)
    and ``Q`` as CSC with sorted indices, for the filling to reuse.
    """
    K, L = Q.shape
    Qc = sp.csc_array(Q)
    Qc.sort_indices()
    ln = np.diff(Qc.indptr).astype(np.int64)
    used = np.flatnonzero(ln > 0)
    if used.size < 2:
        return None, Qc
    # links that can group share their column's length, first and last piece
    sig = (ln[used], Qc.indices[Qc.indptr[used]], Qc.indices[Qc.indptr[used + 1] - 1])
    if not _runs(sig)[1].any():
        return None, Qc
    first = Qc.data[Qc.indptr[used]]
    col = np.repeat(np.arange(L), ln)
    scale = np.zeros(L)
    scale[used] = first
    norm = Qc.data / scale[col]
    # hash of (indices, normalised values) per column, wrapping uint64 arithmetic
    with np.errstate(over="ignore"):
        mix = ((Qc.indices.astype(np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)) ^ \
              (norm.view(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F))
        mix ^= mix >> np.uint64(29)
        h = np.add.reduceat(mix, Qc.indptr[used].astype(np.int64))
    order, dup = _runs((ln[used], h))
    # each used link's candidate leader: the first (lowest id) of its run of equal keys
    run_start = np.maximum.accumulate(np.where(np.r_[True, ~dup], np.arange(used.size), 0))
    lead = np.empty(used.size, np.int64)
    lead[order] = used[order[run_start]]
    # exact check against the leader, entry by entry
    n = ln[used]
    pos = _row_positions(Qc.indptr, used)[0]
    off = pos - np.repeat(Qc.indptr[used].astype(np.int64), n)
    lpos = np.repeat(Qc.indptr[lead].astype(np.int64), n) + off
    same = (Qc.indices[pos] == Qc.indices[lpos]) & (norm[pos] == norm[lpos])
    ok = np.logical_and.reduceat(same, np.r_[0, np.cumsum(n)[:-1]])
    # a mismatch (a hash collision) stays a group of its own
    lead = np.where(ok, lead, used)
    gid = np.full(L, -1, np.int64)
    uniq, g_of_used = np.unique(lead, return_inverse=True)
    G = uniq.size
    if G == used.size:
        return None, Qc
    gid[used] = g_of_used
    # each group's column: its leader's, normalised
    lp, lc = _row_positions(Qc.indptr, uniq)
    # the input's index dtype (int32 as a rule): the compiled filling keeps one specialization
    indptr = np.r_[0, np.cumsum(lc)].astype(Qc.indptr.dtype)
    Qg = sp.csc_array((norm[lp], Qc.indices[lp], indptr), shape=(K, G)).tocsr()
    ratio = np.full(L, np.inf)
    with np.errstate(divide="ignore"):
        ratio[used] = cap[used] / scale[used]
    # each group's link of least cap / scale, the lowest id on ties (a lexsort on the
    # float key costs several times this)
    order = np.argsort(gid[used], kind="stable")    # by group, ids increasing within
    gs, rs = gid[used][order], ratio[used][order]
    starts = np.r_[0, np.flatnonzero(np.diff(gs)) + 1]
    hit = np.flatnonzero(rs == np.repeat(np.minimum.reduceat(rs, starts), np.diff(np.r_[starts, rs.size])))
    rep = used[order[hit[np.r_[True, gs[hit[1:]] != gs[hit[:-1]]]]]]
    return _LinkGroups(Qg, ratio[rep], gid, scale, rep), Qc


# --------------------------------------------------------------------------- kernels


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


def _kernels_for(P: sp.csr_array, force: bool = False):
    """The kernel module for a filling of ``P``'s rows: when loaded, and the rows many."""
    return _kernel_module() if force or P.shape[0] >= _KERNEL_ROWS else None


def _unit(P: sp.csr_array) -> bool:
    """Every stored value of ``P`` is 1 (whole rows on their pieces: the common case)."""
    return bool(P.nnz == 0 or (P.data.min() == 1.0 and P.data.max() == 1.0))


def _weight(w: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Per row ``m * w``: ``w`` itself when every multiplicity is 1 (one array fewer)."""
    return m * w if np.any(m != 1.0) else w


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


def _constraints(Q: sp.csr_array, cap: np.ndarray):
    """The filling's constraints: (link groups or None, their piece_link as CSR and CSC,
    their capacities); proportional links as one when ``_GROUP_LINKS`` (see :func:`_group_links`)."""
    lg, Qc = _group_links(Q, cap) if _GROUP_LINKS else (None, Q.tocsc())
    return (lg, Q, Qc, cap) if lg is None else (lg, lg.Q, lg.Q.tocsc(), lg.cap)


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


def _count_alive(Pc: _Cols, alive: np.ndarray) -> np.ndarray:
    """Per piece, the stored entries of flows still in ``alive`` (exact integers)."""
    # Differences of a running count at the column boundaries: cheaper than
    # add.reduceat over thousands of long runs.
    acc = np.int32 if Pc.nnz < np.iinfo(np.int32).max else np.int64
    running = np.zeros(Pc.nnz + 1, dtype=acc)
    np.cumsum(alive[Pc.indices], dtype=acc, out=running[1:])
    return (running[Pc.indptr[1:]] - running[Pc.indptr[:-1]]).astype(np.int64)


class _Fill:
    """Progressive-filling state that survives retirements (private).

    Rows of ``P`` are flows.  :meth:`run` fills until every remaining flow is
    frozen.  :meth:`retire` removes finished flows and rolls the filling back to
    the first round any of them froze in: earlier rounds never saw them
    saturate a link, so they replay unchanged (see :func:`simulate`).

    Per link it keeps the *active weight* ``aw`` (sum over unfrozen flows of
    ``m w A``) and the load ``used`` of the frozen ones, so a link saturates at
    level ``(capacity - used) / aw``.  Exact integer counts of unfrozen entries
    per piece and of live pieces per link decide when a link has no unfrozen
    flow left, so floating residue in ``aw`` never creates a spurious level.
    """

    def __init__(self, P, Q, Qc, cap, w, m, rel_tol, *, unit=None, col_ptr=None, gone=None,
                 bottlenecks=True, peak_load=False):
        F = P.shape[0]
        # whole rows on their pieces (the common case): the kernel skips reading them
        # (``unit``: known already; stays true for any subset of the rows)
        self.unit_rows = _unit(P) if unit is None else unit
        # simulate() reports no bottlenecks; skipping them saves a pass over all
        # entries in every big round.
        self.bottlenecks = bottlenecks
        self.Q, self.Qc, self.cap, self.rel_tol = Q, Qc, cap, rel_tol
        self.K, self.L = Q.shape
        self.q_len = np.diff(Q.indptr)
        self.limited = np.isfinite(cap)
        # Highest load / capacity any run has left on each link: loads only grow
        # while filling, so updating it where a freeze adds load is enough.
        # (``peak_load``: the highest load itself, for links that stand for a group)
        self.inv_cap = np.zeros(self.L)
        np.divide(1.0, cap, out=self.inv_cap, where=self.limited & (cap > 0))
        if peak_load:
            self.inv_cap[:] = 1.0
        self.peak = np.zeros(self.L)
        # Time each link's last present flow finished (set by retire's caller clock).
        self.busy_until = np.zeros(self.L)
        self._set_rows(P, w, m, col_ptr)
        self.gone = np.zeros(F, dtype=bool) if gone is None else gone.copy()
        self.frozen = self.gone.copy()  # retired rows count as frozen with rate 0
        self.freeze_round = np.full(F, -1, dtype=np.int32)  # rounds < 2**31: one per link at most
        self.rate = np.zeros(F)
        self.bottleneck = np.full(F, -1, dtype=np.int64)
        self.levels: list[float] = []
        self.rounds = 0  # rounds computed, including ones redone after a rollback
        self.changed: list[np.ndarray] = []  # rows frozen since take_changed()
        self.n_left = int(F - self.gone.sum())
        self.batch = 16  # candidate links per filling pass (see run); adapts
        self.budget = float(_MIN_BUDGET)  # and flow entries it may look at
        self.window, self.window_k, self.window_out = None, 512, np.inf
        self._touch = np.full(self.L, 1 << 62, dtype=np.int64)  # scratch, reset after use
        self._plink = np.full(self.K, self.L, dtype=np.int64)
        self._pmax = np.full(self.K, -1, dtype=np.int64)
        self._pcnt = np.zeros(self.K, dtype=np.int64)
        self._scratch, self._stamp = None, 0  # the compiled filling's (see _run_kernel)
        self.kernel_stats = np.zeros(6, dtype=np.int64)  # its window refills, entries scanned
        self._resync()

    # ----------------------------------------------------------------- state

    def _set_rows(self, P, w, m, col_ptr=None):
        """Take rows ``P`` (``col_ptr``: their column pointers, when known)."""
        self.P, self.w, self.m, self.mw = P, w, m, _weight(w, m)
        self.Pc = _columns(P, self.mw, self.unit_rows, ptr=col_ptr)
        self.big = max(P.nnz * _MATVEC_SHARE, 1.0)
        # An exact recomputation costs O(nnz + pieces + links): rollbacks weigh against that.
        self.resync_cost = P.nnz + self.Q.nnz + self.K + self.L
        self.big_rollback = max(self.resync_cost * _MATVEC_SHARE, 1.0)

    def _entries(self, rows: np.ndarray) -> int:
        """Stored entries of ``rows`` (an index array)."""
        indptr = self.P.indptr
        return int(np.sum(indptr[rows + 1] - indptr[rows]))

    def _resync(self):
        """Recompute counts, weights and loads exactly from the flow states (O(nnz))."""
        P, Q, L = self.P, self.Q, self.L
        is_open = ~self.frozen
        if is_open.all():
            self.piece_cnt = np.diff(self.Pc.indptr).astype(np.int64)
            self.aw = Q.T @ (P.T @ self.mw if self.Pc.piece_w is None else self.Pc.piece_w)
        else:
            self.piece_cnt = _count_alive(self.Pc, is_open)
            self.aw = Q.T @ (P.T @ np.where(is_open, self.mw, 0.0))
        self.link_cnt = self._link_count(self.piece_cnt)
        self.aw[self.link_cnt == 0] = 0.0
        # Same for every row still present, frozen or not: a link whose count
        # drops to 0 carries nothing, whatever roundoff ``used`` holds.
        if self.gone.any():
            self.alive_piece_cnt = _count_alive(self.Pc, ~self.gone)
            self.alive_link_cnt = self._link_count(self.alive_piece_cnt)
        else:
            self.alive_piece_cnt = np.diff(self.Pc.indptr).astype(np.int64)
            self.alive_link_cnt = self.link_cnt.copy() if is_open.all() else \
                self._link_count(self.alive_piece_cnt)
        if self.frozen.any():
            self.used = Q.T @ (P.T @ (self.m * self.rate))  # rate is 0 unless frozen and present
        else:
            self.used = np.zeros(L)
        self.sat_at = np.full(L, np.inf)
        self._refresh(np.arange(L))
        self.window = None  # levels may have dropped
        self.work = 0  # incremental entries since this exact recomputation

    def _link_count(self, piece_cnt):
        return np.bincount(self.Q.indices[np.repeat(piece_cnt > 0, self.q_len)],
                           minlength=self.L).astype(np.int64)

    def _refresh(self, links):
        ok = (self.link_cnt[links] > 0) & self.limited[links]
        head = np.maximum(self.cap[links] - self.used[links], 0.0)
        with np.errstate(over="ignore"):  # retired links divide by _TINY; masked just below
            self.sat_at[links] = np.where(ok, head / np.maximum(self.aw[links], _TINY), np.inf)

    def _per_piece(self, flows, per_flow):
        """Distinct pieces of ``flows``, the sum of ``per_flow * P`` and the entry count."""
        pos, cnt = _row_positions(self.P.indptr, flows)
        self.work += pos.size
        vals = None if per_flow is None else self.P.data[pos] * np.repeat(per_flow, cnt)
        return _group_sum(self.P.indices[pos], vals, self.K)

    def _to_links(self, pieces, per_piece):
        pos, cnt = _row_positions(self.Q.indptr, pieces)
        vals = None if per_piece is None else self.Q.data[pos] * np.repeat(per_piece, cnt)
        return _group_sum(self.Q.indices[pos], vals, self.L)

    def _pieces_changed(self, pieces, cnt, old_cnt, link_cnt, sign):
        """Update ``link_cnt`` for pieces whose count crossed zero; return touched links."""
        flipped = pieces[(cnt[pieces] > 0) != (old_cnt > 0)]
        if flipped.size == 0:
            return np.zeros(0, dtype=np.int64)
        if flipped.size * 64 < self.L:
            # Few pieces: count into the links directly (integer counts, any order).
            pos, _ = _row_positions(self.Q.indptr, flipped)
            links = self.Q.indices[pos]
            np.add.at(link_cnt, links, sign)
            return links
        links, _, n = self._to_links(flipped, None)
        link_cnt[links] += sign * n
        return links

    # ----------------------------------------------------------------- filling

    def run(self) -> None:
        """Fill until every present flow is frozen.

        Each pass takes the ``batch`` links of lowest saturation level, groups
        them into rounds (links within ``rel_tol`` of a round's lowest level
        saturate together) and freezes, in one set of vector operations, the
        longest run of rounds that do not depend on each other: a round depends
        on an earlier one when a flow frozen by the earlier one crosses one of
        its links.  Freezing only raises the saturation levels of the links it
        touches, so every round of that run is exactly the round the one-at-a-
        time filling would take next.
        """
        level = self.levels[-1] if self.levels else 0.0
        while self.n_left:
            if self.rounds >= _KERNEL_ROUNDS_ANY or self.P.shape[0] >= _KERNEL_ROWS:
                kernels = _kernel_module()
                if kernels is not None:
                    self._run_kernel(kernels, level)
                    return
            level = self._pass(level)

    def _run_kernel(self, kernels, level: float) -> None:
        """The rest of the filling through the compiled loop (same rounds as :meth:`_pass`)."""
        K, L = self.K, self.L
        if self._scratch is None:
            self._scratch = (np.zeros(K, np.int64), np.zeros(K, np.int64), np.zeros(K),
                             np.zeros(K, np.int64), np.zeros(K, np.int64),
                             np.zeros(L, np.int64), np.zeros(L),
                             np.zeros(L, np.int64), np.zeros(L, np.int64), np.zeros(L, np.int64))
        n, stamp0 = self.n_left, self._stamp
        levels_out = np.empty(n)
        new_out = np.empty(n, dtype=np.int32 if self.P.shape[0] < 2**31 else np.int64)
        P, Pc, Q, Qc = self.P, self.Pc, self.Q, self.Qc
        n_rounds, n_new, work, self._stamp, status = kernels.fill(
            P.indptr, P.indices, P.data, Pc.indptr, Pc.indices,
            Q.indptr, Q.indices, Q.data, Qc.indptr, Qc.indices,
            self.cap, self.w, self.mw,
            self.frozen, self.freeze_round, self.rate, self.bottleneck, self.piece_cnt,
            self.link_cnt, self.aw, self.used, self.sat_at,
            float(self.rel_tol), float(level), len(self.levels), n, _KERNEL_WINDOW,
            self.bottlenecks, self.unit_rows, *self._scratch, self._stamp, levels_out, new_out,
            self.kernel_stats)
        # Loads only grew: the peak over the rounds is the final load on the links
        # the rounds touched (stamped after stamp0), as the numpy path has it.
        hit = np.flatnonzero(self._scratch[5] > stamp0)
        self.peak[hit] = np.maximum(self.peak[hit], self.used[hit] * self.inv_cap[hit])
        self.levels.extend(levels_out[:n_rounds].tolist())
        self.rounds += n_rounds
        self.n_left -= n_new
        self.work += work
        self.changed.append(new_out[:n_new])
        self.window = None  # the numpy passes' window no longer matches
        if status:  # pragma: no cover - _check_routable rules this out
            raise RuntimeError(f"{self.n_left} flows left with no capacity-limited link")

    def _candidates(self):
        """Window links sorted by (level, id), and a level no link outside reaches.

        The window holds the lowest-level links when built (one O(L) partition);
        freezing only raises levels, so until a retirement lowers some, a link
        outside it stays at or above ``out`` and the window is reused, shrinking
        as its links saturate or rise past ``out``.
        """
        fresh = self.window is None
        if fresh:
            L = self.L
            k = max(self.window_k, 2 * self.batch)
            if k >= L:
                idx, out = np.arange(L), np.inf
            else:
                part = np.argpartition(self.sat_at, k)
                idx, out = part[:k], float(self.sat_at[part[k]])
            # Roundoff may leave a refreshed level a few ulps under its old value.
            self.window, self.window_out = idx, out * (1.0 - 8 * np.finfo(np.float64).eps)
        out = self.window_out
        vals = self.sat_at[self.window]
        keep = vals < out
        idx, vals = self.window[keep], vals[keep]
        if fresh:
            order = np.lexsort((idx, vals))
        else:
            # Kept in order since built; only the links a pass touched moved (up):
            # a stable sort of nearly sorted values is about linear.
            order = np.argsort(vals, kind="stable")
        idx, vals = idx[order], vals[order]
        self.window = idx
        return idx, vals, out, fresh

    def _pass(self, level: float) -> float:
        """One batch of rounds (see :meth:`run`); returns the last round's level."""
        K, L = self.K, self.L
        while True:
            links, vals, out, fresh = self._candidates()
            b = self.batch
            if links.size < b and not fresh and out < np.inf:
                self.window = None  # running low: a fresh window holds more
                continue
            if links.size > b:
                links, vals, out = links[:b], vals[:b], float(vals[b])
            if links.size and vals[0] * (1.0 + self.rel_tol) < out:
                break
            # Not one complete round: widen the batch, rebuild the window (wider
            # when a fresh one was too narrow: more tied links than it holds).
            if links.size >= b:
                self.batch = min(L, 4 * b)
            elif not fresh:
                self.window = None
            elif self.window_k < L:
                self.window, self.window_k = None, min(L, 4 * max(self.window_k, b))
            else:  # pragma: no cover - _check_routable rules this out
                raise RuntimeError(f"{self.n_left} flows left with no capacity-limited link")
        n = links.size
        # Live pieces on the candidate links, in candidate order, and the first
        # candidate each piece appears on: its flows freeze in that one's round.
        pos, cnt = _row_positions(self.Qc.indptr, links)
        pieces = self.Qc.indices[pos].astype(np.int64)
        ppos = np.repeat(np.arange(n), cnt)
        keep = self.piece_cnt[pieces] > 0
        pieces, ppos = pieces[keep], ppos[keep]
        upieces, first = np.unique(pieces, return_index=True)
        upos = ppos[first]
        up_len = self.Pc.indptr[upieces + 1] - self.Pc.indptr[upieces]
        ent = np.bincount(upos, weights=up_len, minlength=n)
        cum = np.cumsum(ent)
        r0 = int(np.searchsorted(vals, vals[0] * (1.0 + self.rel_tol), side="right"))
        if cum[r0 - 1] >= min(self.big, max(self.budget, self.big / 8)):
            # A first round over the look-ahead budget goes alone (a big one through
            # whole-matrix products): no look-ahead gathers for it.
            return self._one_round(links[:r0], max(level, float(vals[0])))
        # Bound the work spent looking ahead: candidates up to ``budget`` flow
        # entries (round 0 whole), so big rounds do not drag in thousands.
        if n > 1 and cum[-1] > self.budget:
            n_keep = max(int(np.searchsorted(cum, self.budget, side="right")), r0, 1)
            if n_keep < n:
                out = float(vals[n_keep])
                n, links, vals, ent = n_keep, links[:n_keep], vals[:n_keep], ent[:n_keep]
                sel = ppos < n
                pieces, ppos = pieces[sel], ppos[sel]
                sel = upos < n
                upieces, upos, up_len = upieces[sel], upos[sel], up_len[sel]
        # Unfrozen flows of each piece, at the earliest candidate they come under.
        fpos_, fcnt = _row_positions(self.Pc.indptr, upieces)
        flows = self.Pc.indices[fpos_]
        fq = np.repeat(upos, fcnt)
        fpiece = np.repeat(np.arange(upieces.size), fcnt)
        keep = ~self.frozen[flows]
        flows, fq, fpiece = flows[keep], fq[keep], fpiece[keep]
        order = np.argsort(fq, kind="stable")
        dflows, dfirst = np.unique(flows[order], return_index=True)
        dq = fq[order][dfirst]
        # Per link, the earliest candidate whose flows touch it; per piece, the
        # candidate after which none of its flows is left unfrozen (if any).
        tpos, tcnt = _row_positions(self.P.indptr, dflows)
        tp = self.P.indices[tpos]
        tq_p = np.repeat(dq, tcnt)
        tpos2, tcnt2 = _row_positions(self.Q.indptr, tp)
        tl = self.Q.indices[tpos2]
        touch, pmax, pcnt = self._touch, self._pmax, self._pcnt
        np.minimum.at(touch, tl, np.repeat(tq_p, tcnt2))
        tq = touch[links].tolist()
        touch[tl] = 1 << 62  # reset the scratch arrays
        np.maximum.at(pmax, tp, tq_p)
        np.add.at(pcnt, tp, 1)
        dies = np.where(pcnt[pieces] == self.piece_cnt[pieces], pmax[pieces], 1 << 62)
        pmax[tp] = -1
        pcnt[tp] = 0
        # A candidate dies (its count drops to 0) after the candidate where its last
        # live piece empties: from then on it is skipped, not a dependency.
        kill = np.full(n, -1, dtype=np.int64)
        np.maximum.at(kill, ppos, dies)
        # Walk the candidates in order: rounds exactly as the one-at-a-time filling.
        lab = [-1] * n
        kill, ent, vl = kill.tolist(), ent.tolist(), vals.tolist()
        tol1, big = 1.0 + self.rel_tol, self.big
        lv: list[float] = []
        r, start, thr, r_ent, q = -1, 0, -np.inf, 0.0, 0
        for q in range(n):
            v = vl[q]
            if r >= 0 and v <= thr:  # within the current round
                if tq[q] < start:
                    if kill[q] < start:
                        continue  # dead by then
                    r -= 1  # touched and alive: its level moved; drop this round
                    lv.pop()
                    break
                lab[q] = r
                r_ent += ent[q]
                continue
            if r >= 0 and r_ent >= big:  # a big round goes alone, through matvecs
                if r >= 1:
                    r -= 1
                    lv.pop()
                break
            if tq[q] < q:
                if kill[q] < q:
                    continue
                break
            thr = v * tol1
            if thr >= out:
                break
            r, start, r_ent = r + 1, q, ent[q]
            level = max(level, v)  # roundoff must not let the fill level go backwards
            lv.append(level)
            lab[q] = r
        else:
            if r >= 1 and r_ent >= big:
                r -= 1
                lv.pop()
        n_rounds = r + 1
        lab = np.asarray(lab, dtype=np.int64)
        lab[lab >= n_rounds] = -1
        acc = lab >= 0
        # Each piece's bottleneck: the lowest-id accepted link of its round it lies on
        # (the one-at-a-time filling takes a round's links in id order).
        e_ok = acc[ppos]
        plink = self._plink
        np.minimum.at(plink, pieces[e_ok], links[ppos[e_ok]])
        up_link = plink[upieces]
        plink[pieces] = L
        rnd = len(self.levels)
        if n_rounds == 1:
            sel = lab[upos] == 0
            self.levels.append(lv[0])
            self.rounds += 1
            self.sat_at[links[acc]] = np.inf
            if int(up_len[sel].sum()) >= big:
                self._freeze_whole(upieces[sel], up_link[sel], rnd, lv[0])
            else:
                self._freeze_gather(upieces[sel], up_link[sel], rnd, lv[0])
        else:
            flab = lab[fq]
            sel = flab >= 0
            self._freeze_rounds(lv, rnd, links[acc], flows[sel], flab[sel],
                                up_link[fpiece[sel]])
        # Next batch: about twice the candidates and entries this pass used, more
        # if it used all.
        used_q = int(np.flatnonzero(acc)[-1]) + 1
        used_all = used_q >= n - 1
        self.batch = int(min(L, _MAX_BATCH, max(16, 4 * n if used_all else 2 * used_q)))
        used_ent = float(cum[min(used_q, cum.size) - 1])
        self.budget = min(max(self.big, _MIN_BUDGET),
                          max(_MIN_BUDGET, 4 * (self.budget if used_all else used_ent)))
        return lv[-1]

    def _one_round(self, sat: np.ndarray, level: float) -> float:
        """Saturate links ``sat`` (one round) and freeze their pieces' flows."""
        rnd = len(self.levels)
        self.levels.append(level)
        self.rounds += 1
        sat = np.sort(sat)
        self.sat_at[sat] = np.inf
        # Pieces touching a saturated link that still carry unfrozen flows: all
        # their flows cross that link and freeze now, so each is spent once.
        pos, cnt = _row_positions(self.Qc.indptr, sat)
        pieces = self.Qc.indices[pos].astype(np.int64)
        plinks = np.repeat(sat, cnt)
        keep = self.piece_cnt[pieces] > 0
        pieces, plinks = pieces[keep], plinks[keep]
        if pieces.size > 1:
            pieces, first = np.unique(pieces, return_index=True)
            plinks = plinks[first]
        n_entries = int(np.sum(self.Pc.indptr[pieces + 1] - self.Pc.indptr[pieces]))
        if n_entries >= self.big:
            self._freeze_whole(pieces, plinks, rnd, level)
        else:
            self._freeze_gather(pieces, plinks, rnd, level)
        return level

    def _freeze_rounds(self, lv, rnd, sat, flows, flab, fblink):
        """Freeze several independent rounds at once (see :meth:`_pass`).

        ``flows`` (possibly repeated) are the unfrozen flows of each round,
        ``flab`` their round, ``fblink`` a saturated link of it they cross.
        """
        K, L = self.K, self.L
        n_ok = len(lv)
        self.levels.extend(lv)
        self.rounds += n_ok
        self.sat_at[sat] = np.inf
        lv = np.asarray(lv)
        if self.bottlenecks:
            self.bottleneck[flows] = fblink  # a repeated flow may take any of its links
        new, first = np.unique(flows, return_index=True)
        nlab = flab[first]
        self.frozen[new] = True
        self.freeze_round[new] = rnd + nlab
        self.rate[new] = self.w[new] * lv[nlab]
        self.changed.append(new)
        self.n_left -= new.size
        # Per (round, piece): weight and entry count of the newly frozen flows.
        pos, cnt = _row_positions(self.P.indptr, new)
        self.work += pos.size
        key, dp, dc = _group_sum(np.repeat(nlab, cnt) * K + self.P.indices[pos],
                                 self.P.data[pos] * np.repeat(self.mw[new], cnt), n_ok * K)
        pieces, plab = key % K, key // K
        touched = _unique(pieces, K)
        old = self.piece_cnt[touched]
        np.subtract.at(self.piece_cnt, pieces, dc)
        # Per (round, link): weight moved from active to frozen, applied round by round.
        pos, cnt = _row_positions(self.Q.indptr, pieces)
        lkey, dl, _ = _group_sum(np.repeat(plab, cnt) * L + self.Q.indices[pos],
                                 self.Q.data[pos] * np.repeat(dp, cnt), n_ok * L)
        links, llab = lkey % L, lkey // L
        np.subtract.at(self.aw, links, dl)
        np.add.at(self.used, links, lv[llab] * dl)
        links = _unique(links, L)
        self.peak[links] = np.maximum(self.peak[links], self.used[links] * self.inv_cap[links])
        self._pieces_changed(touched, self.piece_cnt, old, self.link_cnt, -1)
        self.aw[links[self.link_cnt[links] == 0]] = 0.0
        self._refresh(links)

    def _freeze_gather(self, pieces, plinks, rnd, level):
        """Freeze the flows of ``pieces`` through their rows only."""
        pos, cnt = _row_positions(self.Pc.indptr, pieces)
        flows = self.Pc.indices[pos]
        keep = ~self.frozen[flows]
        flows = flows[keep]
        if self.bottlenecks:
            # A flow under several spent pieces may take any of their links.
            self.bottleneck[flows] = np.repeat(plinks, cnt)[keep]
        new = _unique(flows, self.P.shape[0])
        self.frozen[new] = True
        self.freeze_round[new] = rnd
        self.rate[new] = self.w[new] * level
        self.changed.append(new)
        self.n_left -= new.size
        touched, dp, dc = self._per_piece(new, self.mw[new])
        old = self.piece_cnt[touched]
        self.piece_cnt[touched] -= dc
        links, dl, _ = self._to_links(touched, dp)
        self.aw[links] -= dl
        self.used[links] += level * dl
        self.peak[links] = np.maximum(self.peak[links], self.used[links] * self.inv_cap[links])
        self._pieces_changed(touched, self.piece_cnt, old, self.link_cnt, -1)
        self.aw[links[self.link_cnt[links] == 0]] = 0.0
        self._refresh(links)  # the dead pieces' links are among them

    def _freeze_whole(self, pieces, plinks, rnd, level):
        """Freeze the flows of ``pieces`` with whole-matrix products (a big round)."""
        P, Q, K, L = self.P, self.Q, self.K, self.L
        hit = np.zeros(K)
        hit[pieces] = 1.0
        new_mask = (P @ hit > 0) & ~self.frozen
        new = np.flatnonzero(new_mask)
        if self.bottlenecks:
            link_of = np.full(K, L, dtype=np.int32 if L < 2**31 - 1 else np.int64)
            link_of[pieces] = plinks
            first_link = _segment_reduce(np.minimum, P.indptr, link_of[P.indices], L,
                                         nonempty=True)
            self.bottleneck[new] = first_link[new]
        self.frozen |= new_mask
        self.freeze_round[new] = rnd
        self.rate[new] = self.w[new] * level
        self.changed.append(new)
        self.n_left -= new.size
        d_link = Q.T @ (P.T @ np.where(new_mask, self.mw, 0.0))
        self.used += level * d_link
        np.maximum(self.peak, self.used * self.inv_cap, out=self.peak)
        if self.n_left == 0:  # everything frozen: the counts are known without a pass
            self.piece_cnt[:] = 0
            self.link_cnt[:] = 0
            self.aw[:] = 0.0
            self.sat_at[:] = np.inf
            return
        if self.n_left * 4 < self.P.shape[0]:
            # Few flows left: count their entries rather than scan every piece.
            pos, _ = _row_positions(P.indptr, np.flatnonzero(~self.frozen))
            self.piece_cnt = np.bincount(P.indices[pos], minlength=K).astype(np.int64)
        else:
            self.piece_cnt = _count_alive(self.Pc, ~self.frozen)
        self.link_cnt = self._link_count(self.piece_cnt)
        self.aw -= d_link
        self.aw[self.link_cnt == 0] = 0.0
        self._refresh(np.arange(L))

    # ----------------------------------------------------------------- events

    def take_changed(self) -> np.ndarray:
        """Rows frozen (given a rate) since the last call."""
        out = np.concatenate(self.changed) if self.changed else np.zeros(0, dtype=np.int64)
        self.changed = []
        return out

    def retire(self, done: np.ndarray, now: float) -> tuple[np.ndarray, np.ndarray]:
        """Remove rows ``done`` (finished at ``now``) and roll back the rounds they took part in.

        Returns the reopened rows and the rates they had until now.
        """
        r_star = int(self.freeze_round[done].min())
        self.gone[done] = True
        self.freeze_round[done] = -1
        reopen = np.flatnonzero(self.freeze_round >= r_star)
        old_rate = self.rate[reopen]
        n_entries = self._entries(done) + self._entries(reopen)
        if n_entries >= self.big_rollback or self.work + n_entries >= self.resync_cost * _RESYNC_SHARE:
            # A large rollback, or enough incremental updates to owe an exact
            # recomputation: both cost O(nnz).
            carried = self.alive_link_cnt > 0
            self._forget(done, reopen)
            self._resync()
            self.busy_until[carried & (self.alive_link_cnt == 0)] = now
        else:
            # Retired and reopened rows both drop their frozen load; reopened ones
            # grow again, so their weight and counts come back.
            both = np.concatenate([done, reopen])
            pieces, dload, _ = self._per_piece(both, self.m[both] * self.rate[both])
            links_load, dl, _ = self._to_links(pieces, dload)
            self.used[links_load] -= dl
            pieces_d, _, dc = self._per_piece(done, None)
            old = self.alive_piece_cnt[pieces_d]
            self.alive_piece_cnt[pieces_d] -= dc
            self._pieces_changed(pieces_d, self.alive_piece_cnt, old, self.alive_link_cnt, -1)
            # Links whose last present flow just left: idle from now on, load exactly 0.
            idle = links_load[self.alive_link_cnt[links_load] == 0]
            self.used[idle] = 0.0
            self.busy_until[idle] = now
            links_open = np.zeros(0, dtype=np.int64)
            if reopen.size:
                pieces_r, dw, dc = self._per_piece(reopen, self.mw[reopen])
                old = self.piece_cnt[pieces_r]
                self.piece_cnt[pieces_r] += dc
                self._pieces_changed(pieces_r, self.piece_cnt, old, self.link_cnt, +1)
                links_open, dl, _ = self._to_links(pieces_r, dw)
                self.aw[links_open] += dl
            self._forget(done, reopen)
            self._refresh(_unique(np.concatenate([links_load, links_open]), self.L))
            self.window = None  # levels may have dropped
        del self.levels[r_star:]
        self.n_left = int(reopen.size)
        return reopen, old_rate

    def reopens(self, done: np.ndarray) -> bool:
        """Whether retiring rows ``done`` reopens any other row (see :meth:`retire`)."""
        r_star = int(self.freeze_round[done].min())
        return int(np.count_nonzero(self.freeze_round >= r_star)) > done.size

    def drop(self, done: np.ndarray, at: np.ndarray) -> None:
        """Retire rows ``done`` (finishing at times ``at``) that reopen no other row.

        The same bookkeeping as :meth:`retire` without a rollback: their load
        leaves their links, and a link whose last present flow leaves is idle
        from that flow's finish time on.
        """
        r_star = int(self.freeze_round[done].min())
        n_entries = self._entries(done)
        if n_entries >= self.big_rollback and at.size and at.min() == at.max():
            # Most of the matrix at one time: recompute exactly (matvecs) rather
            # than gather every entry, as retire does for a large rollback.
            carried = self.alive_link_cnt > 0
            self.gone[done] = True
            self._forget(done, done[:0])
            self._resync()
            self.busy_until[carried & (self.alive_link_cnt == 0)] = at[0]
            del self.levels[r_star:]
            self.n_left = 0
            return
        self.gone[done] = True
        pieces, dload, dc = self._per_piece(done, self.m[done] * self.rate[done])
        links, dl, _ = self._to_links(pieces, dload)
        self.used[links] -= dl
        old = self.alive_piece_cnt[pieces]
        self.alive_piece_cnt[pieces] -= dc
        self._pieces_changed(pieces, self.alive_piece_cnt, old, self.alive_link_cnt, -1)
        idle = links[self.alive_link_cnt[links] == 0]
        if idle.size and at.min() == at.max():
            self.used[idle] = 0.0
            self.busy_until[idle] = at[0]
        elif idle.size:
            self.used[idle] = 0.0
            # Each link's last finish: per piece first, then per link (a piece's
            # links are not expanded once per flow).
            pos, cnt = _row_positions(self.P.indptr, done)
            piece_last = np.zeros(self.K)
            np.maximum.at(piece_last, self.P.indices[pos], np.repeat(at, cnt))
            pos2, cnt2 = _row_positions(self.Q.indptr, pieces)
            last = np.zeros(self.L)
            np.maximum.at(last, self.Q.indices[pos2], np.repeat(piece_last[pieces], cnt2))
            self.busy_until[idle] = last[idle]
        self._forget(done, done[:0])
        del self.levels[r_star:]
        self.n_left = 0
        if self.work >= self.resync_cost * _RESYNC_SHARE:
            self._resync()
        else:
            self._refresh(links)
            self.window = None

    def finish_all(self, done: np.ndarray, at: np.ndarray) -> None:
        """Retire every present row at once, ``done`` finishing at times ``at``.

        What :meth:`drop` leaves after a run of quiet events that ends the phase:
        each link that carried one of them is busy until the last of them finishes.
        """
        row_at = np.zeros(self.P.shape[0])
        row_at[done] = at
        piece_last = _segment_reduce(np.maximum, self.Pc.indptr, row_at[self.Pc.indices], 0.0)
        last = _segment_reduce(np.maximum, self.Qc.indptr, piece_last[self.Qc.indices], 0.0)
        carried = self.alive_link_cnt > 0
        self.busy_until[carried] = last[carried]
        self.alive_link_cnt[:] = 0
        self.alive_piece_cnt[:] = 0
        self.gone[done] = True   # the filling is over: rates stay as they were
        self.n_left = 0

    def _forget(self, done, reopen):
        for rows in (done, reopen):
            self.rate[rows] = 0.0
            self.freeze_round[rows] = -1
            self.bottleneck[rows] = -1
        self.frozen[reopen] = False

    def compact(self) -> np.ndarray:
        """Drop retired rows (once they are the majority); return the kept row ids."""
        if self.changed:
            raise RuntimeError("compact() before take_changed() would lose row ids")
        keep = np.flatnonzero(~self.gone)
        self._set_rows(self.P[keep], self.w[keep], self.m[keep])
        for name in ("gone", "frozen", "freeze_round", "rate", "bottleneck"):
            setattr(self, name, getattr(self, name)[keep])
        return keep



# --------------------------------------------------------------------------- public API


def maxmin_rates(flow_piece, piece_link, capacity_Bps, *, weights=None, multiplicity=None,
                 rel_tol: float = 1e-9) -> Rates:
    """Weighted max-min fair rates of fixed-split flows, by progressive filling.

    Parameters
    ----------
    flow_piece : sparse matrix, shape (F, K)
        Share of each flow's rate on each piece (nonnegative; CSR preferred).
    piece_link : sparse matrix, shape (K, L)
        Share of each piece on each link (nonnegative; CSR preferred).
    capacity_Bps : array_like, shape (L,)
        Link capacities, bytes/s; ``inf`` marks an unlimited link.
    weights : array_like, shape (F,), optional
        Positive per-flow weights (default 1).
    multiplicity : array_like, shape (F,), optional
        Positive number of identical flows each row stands for (default 1).
    rel_tol : float, optional
        Links whose saturation levels are within this relative distance of the
        lowest saturate in the same round.

    Returns
    -------
    Rates
        Per-flow rate (bytes/s, for one flow of the row), a bottleneck link per
        flow, and the number of filling rounds.

    Raises
    ------
    ValueError
        On mismatched shapes, negative entries, or flows that cross no
        capacity-limited link (remove unroutable flows first).

    Notes
    -----
    All unfrozen flows grow at ``weights[f] * t``; when a link's capacity is
    used up, every unfrozen flow crossing it (``A[f, l] > 0``) freezes at that
    level.  Independent rounds are frozen together (see the module notes);
    ``A = flow_piece @ piece_link`` is never formed.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> one_link = sp.csr_array(np.ones((1, 1)))
    >>> r = maxmin_rates(sp.csr_array(np.ones((3, 1))), one_link, [90.0])
    >>> r.rate_Bps.tolist(), r.n_levels
    ([30.0, 30.0, 30.0], 1)
    """
    P, Q, cap = _prepare(flow_piece, piece_link, capacity_Bps)
    F = P.shape[0]
    w = _per_flow(weights, F, "weights", positive=True)
    m = _multiplicity(multiplicity, F)
    if not (np.isfinite(rel_tol) and rel_tol >= 0):
        raise ValueError(f"rel_tol={rel_tol!r} must be a finite number >= 0")
    _check_routable(P, Q, cap)
    lg, Qf, Qfc, capf = _constraints(Q, cap)
    # the filling's rows, regrouped for the compiled filling (see _row_order)
    unit = _unit(P)
    order, _, P, col_ptr, (w, m) = _regrouped(P, Qf, capf, unit, w, m)
    fill = _Fill(P, Qf, Qfc, capf, w, m, rel_tol, unit=unit, col_ptr=col_ptr)
    fill.run()
    rate, bottleneck = fill.rate, fill.bottleneck
    if order is not None:   # back to the caller's rows, and links (one compiled pass)
        rate, bottleneck = np.empty(F), np.empty(F, np.int64)
        _kernel_module().unpermute(order, fill.rate, fill.bottleneck,
                                   lg.rep if lg is not None else np.zeros(0, np.int64), rate, bottleneck)
    elif lg is not None and bottleneck.size and bottleneck.min() >= 0:
        np.take(lg.rep, bottleneck, out=bottleneck, mode="clip")  # in place: ids are < G
    elif lg is not None:
        bottleneck = np.where(bottleneck >= 0, lg.rep[np.maximum(bottleneck, 0)], -1)
    return Rates(rate_Bps=_readonly(rate), bottleneck_link=_readonly(bottleneck),
                 n_levels=len(fill.levels))


def link_load_bound(flow_piece, piece_link, capacity_Bps, size_bytes, *,
                    multiplicity=None) -> Bound:
    """Busiest link's bytes / capacity: a lower bound on any schedule's time.

    Parameters
    ----------
    flow_piece, piece_link, capacity_Bps
        As in :func:`maxmin_rates`.
    size_bytes : array_like, shape (F,)
        Bytes of one flow of each row.
    multiplicity : array_like, shape (F,), optional
        Identical flows per row (default 1).

    Returns
    -------
    Bound
        ``time_s`` (inf when a zero-capacity link must carry bytes), bytes per
        link, and the busiest link.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> b = link_load_bound(sp.csr_array(np.ones((2, 1))), sp.csr_array(np.ones((1, 1))),
    ...                     [10.0], [5.0, 15.0])
    >>> b.time_s, b.busiest_link
    (2.0, 0)
    """
    P, Q, cap = _prepare(flow_piece, piece_link, capacity_Bps)
    F = P.shape[0]
    size = _per_flow(size_bytes, F, "size_bytes", positive=False)
    m = _per_flow(multiplicity, F, "multiplicity", positive=True)
    return _bound(P, Q, cap, m * size)


def _bound(P, Q, cap, bytes_per_row) -> Bound:
    link_bytes = Q.T @ (P.T @ bytes_per_row)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(link_bytes > 0, link_bytes / cap, 0.0)
    busiest = int(np.argmax(t)) if t.size else 0
    time_s = float(t[busiest]) if t.size else 0.0
    return Bound(time_s=time_s, link_bytes=_readonly(link_bytes), busiest_link=busiest)


def simulate(flow_piece, piece_link, capacity_Bps, size_bytes, *, weights=None,
             multiplicity=None, rel_tol: float = 1e-9) -> FlowResult:
    """Event-driven completion of a phase of flows under max-min fair sharing.

    Parameters
    ----------
    flow_piece, piece_link, capacity_Bps, weights, multiplicity, rel_tol
        As in :func:`maxmin_rates`.
    size_bytes : array_like, shape (F,)
        Bytes of one flow of each row (>= 0; empty flows finish at 0).

    Returns
    -------
    FlowResult
        Finish times, per-link bytes and utilization, the first event's rates
        and the link-load bound.

    Raises
    ------
    ValueError
        As :func:`maxmin_rates`, or when a flow with bytes gets rate 0 (a
        zero-capacity bottleneck) and would never finish.

    Notes
    -----
    Rates are solved, time advances to the earliest finish, flows finishing
    within relative ``rel_tol`` of it retire together, and the survivors keep
    their remaining bytes and are re-solved on their own.

    The re-solve is not done from scratch.  A retired flow froze in some
    filling round r and crossed no link that saturated earlier, so rounds
    before the earliest such r replay identically without the retired flows:
    only the flows frozen from that round on are reopened and filled again.
    When flows of equal size and weight finish, they are the fastest, frozen
    last, and reopen nothing: the other finish times stand, no rollback is
    needed, and after a run of such events the following ones are taken
    together from one sort of the earliest finish times.  With mixed sizes an
    event may redo many rounds (``n_levels`` counts them).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> r = simulate(sp.csr_array(np.ones((2, 1))), sp.csr_array(np.ones((1, 1))),
    ...              [1.0], [1.0, 2.0])
    >>> r.finish_s.tolist(), r.events
    ([2.0, 3.0], 2)
    """
    P, Q, cap = _prepare(flow_piece, piece_link, capacity_Bps)
    F, L = P.shape[0], Q.shape[1]
    size = _per_flow(size_bytes, F, "size_bytes", positive=False)
    w = _per_flow(weights, F, "weights", positive=True)
    m = _multiplicity(multiplicity, F)
    if not (np.isfinite(rel_tol) and rel_tol >= 0):
        raise ValueError(f"rel_tol={rel_tol!r} must be a finite number >= 0")
    _check_routable(P, Q, cap)
    bound = _bound(P, Q, cap, m * size)
    lg, Qf, Qfc, capf = _constraints(Q, cap)

    finish = np.zeros(F)
    first_rates = np.zeros(F)
    # rows: current row -> original flow (regrouped for the compiled filling, see
    # _row_order, or after dropping rows); None while rows are the flows
    unit = _unit(P)
    rows, _, Pf, col_ptr, (w, m, size_r) = _regrouped(P, Qf, capf, unit, w, m, size)
    # Empty flows finish at time 0 and never take part.
    fill = _Fill(Pf, Qf, Qfc, capf, w, m, rel_tol, unit=unit, col_ptr=col_ptr, gone=size_r <= 0,
                 bottlenecks=False, peak_load=lg is not None)
    # Per current row: bytes left at time ``since`` and the projected finish
    # time; only rows whose rate changes are touched, so an event costs
    # O(rows) numpy work plus the rounds it re-solves.
    left_bytes, since = size_r.copy(), np.zeros(F)
    finish_at = np.full(F, np.inf)
    n_alive = int(np.sum(size > 0))
    now = 0.0
    events = 0
    quiet_k = 1024  # flows _quiet_events sorts at a time; adapts
    streak = 0  # consecutive events that reopened nothing
    while n_alive:
        if n_alive * 2 < finish_at.size:
            # Compacting costs O(nnz) but halves the rows, so O(nnz) overall.
            keep = fill.compact()
            rows = keep if rows is None else rows[keep]
            left_bytes, since, finish_at = left_bytes[keep], since[keep], finish_at[keep]
        fill.run()
        changed = fill.take_changed()
        rate = fill.rate[changed]
        if np.any(rate <= 0):
            flow = int(changed[np.flatnonzero(rate <= 0)[0]])
            flow = flow if rows is None else int(rows[flow])
            pieces = P.indices[P.indptr[flow]:P.indptr[flow + 1]]
            pos, _ = _row_positions(Q.indptr, pieces)
            links = np.unique(Q.indices[pos])
            zero = links[cap[links] == 0]
            where = f"zero-capacity link {int(zero[0])}" if zero.size else "a saturated link"
            raise ValueError(f"{int(np.sum(rate <= 0))} flows get rate 0 (e.g. flow {flow}, "
                             f"which crosses {where}) and would never finish")
        if events == 0:
            first_rates[slice(None) if rows is None else rows] = fill.rate
        since[changed] = now
        finish_at[changed] = now + left_bytes[changed] / rate
        if changed.size * 4 >= n_alive and n_alive >= _TAIL_MIN_ROWS:
            # The fill re-solved much of what is left: when every coming event
            # reopens nothing, take them all from one sort (the filter costs
            # O(rows), as the fill did).
            tail = _quiet_tail(finish_at, fill.freeze_round, now, rel_tol)
            if tail is not None:
                rows_q, at, n_ev = tail
                events += n_ev
                finish[rows_q if rows is None else rows[rows_q]] = at
                fill.finish_all(rows_q, at)
                now = float(at[-1])
                n_alive = 0
                break
        t_next = float(finish_at.min())
        done = np.flatnonzero(finish_at <= now + (t_next - now) * (1.0 + rel_tol))
        quiet = n_alive > done.size and not fill.reopens(done)
        if quiet and streak >= _QUIET_STREAK:
            # Retiring them changes no other rate, so the next finish times stand:
            # after a run of such events, take every following one at once.
            rows_q, at, n_ev, quiet_k = _quiet_events(finish_at, fill.freeze_round, now,
                                                      rel_tol, quiet_k)
            if n_ev:
                now = float(at[-1])
                events += n_ev
                finish[rows_q if rows is None else rows[rows_q]] = at
                finish_at[rows_q] = np.inf
                n_alive -= rows_q.size
                fill.drop(rows_q, at)
                streak = streak if n_ev >= _QUIET_STREAK else 0
                continue
        streak = streak + 1 if quiet else 0
        now = t_next
        events += 1
        finish[done if rows is None else rows[done]] = now
        finish_at[done] = np.inf
        n_alive -= done.size
        if quiet:
            fill.drop(done, np.full(done.size, now))  # no rollback needed
        elif n_alive:
            reopen, old_rate = fill.retire(done, now)
            left_bytes[reopen] -= old_rate * (now - since[reopen])
            finish_at[reopen] = np.inf
    n_levels = fill.rounds
    peak = fill.peak
    # Every present flow has a positive rate, so a link is busy until the last
    # flow crossing it finishes; links still carrying flows ran to the end.
    busy = fill.busy_until
    busy[fill.alive_link_cnt > 0] = now
    limited = np.isfinite(cap) & (cap > 0)
    if lg is not None:
        # a group's load, scaled to each of its links (peak: the group's highest load)
        busy = lg.per_link(busy)
        peak = np.zeros(L)
        np.divide(lg.scale * lg.per_link(fill.peak), cap, out=peak, where=limited)

    time_s = float(finish.max()) if F else 0.0
    utilization = np.zeros(L)
    if time_s > 0:
        utilization[limited] = bound.link_bytes[limited] / (cap[limited] * time_s)
    return FlowResult(time_s=time_s, finish_s=_readonly(finish), events=events,
                      n_levels=int(n_levels), link_bytes=bound.link_bytes,
                      link_busy_s=_readonly(busy), peak_utilization=_readonly(peak),
                      utilization=_readonly(utilization), first_rates_Bps=_readonly(first_rates),
                      bound_s=bound.time_s)


def _quiet_tail(finish_at, freeze_round, now, rel_tol):
    """Every coming event at once, when none of them reopens a flow; else None.

    The events are the ones :func:`simulate`'s loop would take one by one (groups
    finishing within ``rel_tol`` of the earliest, each retired when its earliest
    freeze round lies above every later flow's, see :func:`_quiet_events`).  A
    necessary condition is checked first in O(rows): a flow frozen in a later
    round must not finish after one of an earlier round by more than a group's
    tolerance.  Returns the rows in finish order, their finish times and the
    number of events.
    """
    alive = np.flatnonzero(finish_at < np.inf)
    if alive.size == 0:
        return None
    fr = freeze_round[alive]
    ft = finish_at[alive]
    # rounds are small integers: a stable sort of uint16 is a radix sort
    by_round = np.argsort(fr.astype(np.uint16) if fr.max() < 1 << 16 else fr, kind="stable")
    fr_sorted = fr[by_round]
    starts = np.flatnonzero(np.r_[True, fr_sorted[1:] != fr_sorted[:-1]])
    ft_round = ft[by_round]
    lo = np.minimum.reduceat(ft_round, starts)
    hi = np.maximum.reduceat(ft_round, starts)
    later_hi = np.append(np.maximum.accumulate(hi[::-1])[::-1][1:], -np.inf)
    # members of one group lie within (t - now) * rel_tol of its earliest time t
    if np.any(later_hi > lo + (lo - now) * rel_tol):
        return None
    if np.array_equal(lo, hi):
        # one finish time per round (equal sizes and weights): group the rounds
        cnt = np.diff(np.append(starts, fr.size))
        order = np.argsort(lo, kind="stable")
        ft_u, fr_u, cnt_u = lo[order], fr_sorted[starts][order].astype(np.int64), cnt[order]
        rows = alive[by_round]
        seg = np.repeat(np.argsort(order), cnt)  # each row's position in the sorted rounds
    else:
        order = np.argsort(ft)
        ft_u, fr_u, cnt_u = ft[order], fr[order].astype(np.int64), None
        rows, seg = alive[order], None
    suf = np.append(np.maximum.accumulate(fr_u[::-1])[::-1], -1)
    n, i, ends = ft_u.size, 0, []
    while i < n:
        t = float(ft_u[i])
        thr = now + (t - now) * (1.0 + rel_tol)
        j = int(np.searchsorted(ft_u, thr, "right"))
        if j < n and int(fr_u[i:j].min()) <= suf[j]:
            return None  # this group reopens flows: the loop re-solves
        ends.append(j)
        now, i = t, j
    first = np.array([0] + ends[:-1])
    at = np.repeat(ft_u[first], np.diff(np.append(first, n)))   # per sorted entry
    return rows, (at if seg is None else at[seg]), len(ends)


def _quiet_events(finish_at, freeze_round, now, rel_tol, k):
    """The coming events, in order, whose retirement reopens no other flow.

    Flows frozen in round r only see links that no earlier round saturated, so
    retiring a group whose earliest round lies above every remaining flow's
    leaves every remaining rate as it is: the finish times already projected
    stand, and the next group is found by the same rule, without a re-solve.
    Groups are formed as :func:`simulate` forms them (finishing within
    ``rel_tol`` of the earliest).  Only the ``k`` earliest flows are sorted.

    Returns the rows retired (in finish order), their finish times, the number
    of events, and the ``k`` to use next time.
    """
    alive = np.flatnonzero(finish_at < np.inf)
    n = alive.size
    if k < n:
        part = np.argpartition(finish_at[alive], k)
        cand = alive[part[:k]]
        t_out = float(finish_at[alive[part[k]]])
        fr_out = int(freeze_round[alive[part[k:]]].max())
    else:
        cand, t_out, fr_out = alive, np.inf, -1
    cand = cand[np.argsort(finish_at[cand], kind="stable")]
    ft = finish_at[cand]
    fr = freeze_round[cand].astype(np.int64)
    # Highest round among the flows from position j on (those outside included).
    suf = np.append(np.maximum.accumulate(fr[::-1])[::-1], -1)
    np.maximum(suf, fr_out, out=suf)
    ft_list = ft.tolist()
    i, nc, ends, short = 0, cand.size, [], False
    while i < nc:
        t = ft_list[i]
        thr = now + (t - now) * (1.0 + rel_tol)
        if thr >= t_out:
            short = True  # the group may reach past the sorted flows
            break
        j = bisect.bisect_right(ft_list, thr, i)
        if int(fr[i:j].min()) <= suf[j]:
            break  # this one reopens flows: a re-solve
        ends.append(j)
        now, i = t, j
    # Sort more flows next time when these ran out (or nearly): large groups late
    # in a phase would otherwise leave a few events per sort.
    next_k = min(4 * k, 1 << 24) if (short or i >= nc - 1) and k < n else k
    if not ends:
        return cand[:0], ft[:0], 0, next_k
    starts = np.array([0] + ends[:-1])
    at = np.repeat(ft[starts], np.diff(np.append(starts, i)))
    return cand[:i], at, len(ends), next_k


def check_maxmin(flow_piece, piece_link, capacity_Bps, rate_Bps, *, weights=None,
                 multiplicity=None, rtol: float = 1e-7) -> list[str]:
    """Check rates against capacity and the max-min certificate.

    Parameters
    ----------
    flow_piece, piece_link, capacity_Bps, weights, multiplicity
        As in :func:`maxmin_rates`.
    rate_Bps : array_like, shape (F,)
        Rates to check (per single flow of each row).
    rtol : float, optional
        Relative tolerance of every comparison.

    Returns
    -------
    list of str
        One finding per violating link or flow (the first few of each kind, then
        a count of the rest); empty when the rates are max-min fair.

    Notes
    -----
    Rates are weighted max-min fair exactly when no link is over capacity and
    every flow crosses a saturated link on which its ``rate / weight`` is the
    largest among the flows crossing it.  The per-link maximum is computed
    factored: per piece over its flows, then per link over its pieces.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> P, Q = sp.csr_array(np.ones((2, 1))), sp.csr_array(np.ones((1, 1)))
    >>> check_maxmin(P, Q, [10.0], [5.0, 5.0])
    []
    >>> check_maxmin(P, Q, [10.0], [4.0, 6.0])
    ['flow 0 (4 B/s) has no saturated link on which its rate/weight is the largest']
    """
    P, Q, cap = _prepare(flow_piece, piece_link, capacity_Bps)
    F = P.shape[0]
    w = _per_flow(weights, F, "weights", positive=True)
    m = _per_flow(multiplicity, F, "multiplicity", positive=True)
    rate = _per_flow(rate_Bps, F, "rate_Bps", positive=False)
    findings: list[str] = []

    load = Q.T @ (P.T @ (m * rate))
    finite = np.isfinite(cap)
    over = np.flatnonzero(finite & (load > cap * (1.0 + rtol)))
    for l in over[:_MAX_FINDINGS]:
        findings.append(f"link {int(l)} carries {load[l]:.6g} B/s, over its capacity "
                        f"{cap[l]:.6g} B/s")
    if over.size > _MAX_FINDINGS:
        findings.append(f"... and {over.size - _MAX_FINDINGS} more links over capacity")

    level = rate / w
    Pc, Qc = P.tocsc(), Q.tocsc()
    piece_max = _segment_reduce(np.maximum, Pc.indptr, level[Pc.indices], -np.inf)
    link_max = _segment_reduce(np.maximum, Qc.indptr, piece_max[Qc.indices], -np.inf)
    saturated = finite & (load >= cap * (1.0 - rtol))
    # Smallest per-link maximum among the saturated links each flow crosses:
    # the flow is certified when its own level reaches it.
    cert = np.where(saturated, link_max, np.inf)
    piece_cert = _segment_reduce(np.minimum, Q.indptr, cert[Q.indices], np.inf)
    flow_cert = _segment_reduce(np.minimum, P.indptr, piece_cert[P.indices], np.inf)
    bad = np.flatnonzero(~(flow_cert <= level * (1.0 + rtol)))
    for f in bad[:_MAX_FINDINGS]:
        findings.append(f"flow {int(f)} ({rate[f]:.6g} B/s) has no saturated link on which "
                        f"its rate/weight is the largest")
    if bad.size > _MAX_FINDINGS:
        findings.append(f"... and {bad.size - _MAX_FINDINGS} more flows without a bottleneck")
    return findings


# --------------------------------------------------------------------------- memory


def estimate_memory_bytes(*, n_flows: int, nnz_flow_piece: int, n_pieces: int,
                          nnz_piece_link: int, n_links: int) -> int:
    """Conservative peak memory of :func:`simulate` on a problem of this size.

    Parameters
    ----------
    n_flows, nnz_flow_piece, n_pieces, nnz_piece_link, n_links : int
        Rows and stored entries of ``flow_piece`` and ``piece_link``, and links.

    Returns
    -------
    int
        Bytes.

    Notes
    -----
    Per stored flow-piece entry (78 bytes): the caller's CSR and its rows
    regrouped for the compiled filling (12 bytes each: float64 value, int32
    index), the solver's column structure (4), the compacted survivors' rows in
    :func:`simulate` (at most half of that again), and the temporaries of a round
    that freezes most flows at once (~36 bytes: gathered link keys, masks,
    running counts, int64 gather positions).  Per flow 28 float64-sized vectors
    (rates, sizes, finish times, weights and their regrouped copies, masks, row
    lengths, the row order and matrix-vector results); per piece and per link 16.
    Measured peak RSS of the benchmark cases (inputs included) is 54-70 % of the
    estimate before the regrouped copy was added (72 bytes, 24 vectors).

    Examples
    --------
    >>> estimate_memory_bytes(n_flows=10, nnz_flow_piece=20, n_pieces=5,
    ...                       nnz_piece_link=10, n_links=4) > 0
    True
    """
    for name, v in (("n_flows", n_flows), ("nnz_flow_piece", nnz_flow_piece),
                    ("n_pieces", n_pieces), ("nnz_piece_link", nnz_piece_link),
                    ("n_links", n_links)):
        if int(v) != v or v < 0:
            raise ValueError(f"{name}={v!r} must be a nonnegative integer")
    per_entry = 2 * 12 + 4 + 14 + 36
    total = ((int(nnz_flow_piece) + int(nnz_piece_link)) * per_entry
             + int(n_flows) * 28 * 8
             + (int(n_pieces) + int(n_links)) * 16 * 8
             + (1 << 20))
    return int(total)


def _available_bytes() -> float:
    """MemAvailable from /proc/meminfo, or 8 GiB when it cannot be read."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024.0
    except OSError:
        pass
    return 8.0 * _GIB


def guard_memory(estimate_bytes: int, *, limit_bytes: int | None = None,
                 n_flows: int | None = None) -> None:
    """Raise :class:`TooLarge` when a flow-level problem would not fit in memory.

    Parameters
    ----------
    estimate_bytes : int
        From :func:`estimate_memory_bytes`.
    limit_bytes : int, optional
        Budget; default 60 % of ``MemAvailable`` (8 GiB when unreadable), so
        the machine keeps room for everything else.
    n_flows : int, optional
        Named in the message when given.

    Raises
    ------
    TooLarge
        Naming the estimate, the budget and the cheaper link-load bound.

    Examples
    --------
    >>> guard_memory(1000, limit_bytes=10_000)
    """
    if limit_bytes is None:
        limit_bytes = 0.6 * _available_bytes()
    if estimate_bytes > limit_bytes:
        flows = f" ({n_flows:,} flows)" if n_flows is not None else ""
        raise TooLarge(
            f"the flow-level problem needs ~{estimate_bytes / _GIB:.1f} GiB{flows} and only "
            f"{limit_bytes / _GIB:.1f} GiB is available; use the link-load bound "
            f"(--bound-only) instead")
