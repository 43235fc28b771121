"""Parallel links: links with proportional columns of ``piece_link`` solved as one constraint (private).

:func:`_group_links` finds them exactly (a hash narrows the candidates, an entry-by-entry
comparison decides) and :func:`_constraints` gives the filling its constraints, grouped
when ``_GROUP_LINKS``; per-link results are mapped back with :class:`_LinkGroups`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .segments import _row_positions

# Links with proportional columns of piece_link are solved as one constraint
# (_group_links); False solves every link on its own (tests compare both).
_GROUP_LINKS = True


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


def _constraints(Q: sp.csr_array, cap: np.ndarray):
    """The filling's constraints: (link groups or None, their piece_link as CSR and CSC,
    their capacities); proportional links as one when ``_GROUP_LINKS`` (see :func:`_group_links`)."""
    lg, Qc = _group_links(Q, cap) if _GROUP_LINKS else (None, Q.tocsc())
    return (lg, Q, Qc, cap) if lg is None else (lg, lg.Q, lg.Q.tocsc(), lg.cap)
