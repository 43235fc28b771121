"""Per-hop ECMP pair by pair, inside each pair's shortest-path cone.

The *cone* of a pair ``(s, d)`` is the set of nodes on its shortest paths, the ``x``
with ``dist(s, x) + dist(x, d) = dist(s, d)``.  Per-hop ECMP splits a flow at every
node over its next hops toward ``d``; each next hop of a cone node lies in the cone
again, so a pair's route is found by walking its cone alone.  :func:`route_pairs`
does that for many pairs at once (vectorized over the pairs, one step per hop), one
piece per distinct pair whose ``piece_link`` row is the route itself.  It models the
same routes as :func:`.ecmp._generic_shared` (shares, hop counts, slowest-path
latencies), at a cost of O(the pair's route) instead of O(links) per destination: the
way to route a few pairs per destination on a big graph, like the pairs a torus
reroutes around a failed link.

Distances come from one breadth-first search per distinct node of one end, the end
with fewer distinct nodes:

* from the destinations (:func:`_walk_from_dest`): a unit of demand is pushed from
  the source, hop by hop, over the links one hop closer to the destination;
* from the sources (unweighted graphs, :func:`_walk_from_source`): a sweep back from
  the destination over the links one hop further from the source collects the cone
  and the slowest latency to the destination, then the unit of demand is pushed
  forward over the links it found.

Paths relay only through forwarding nodes (a non-forwarding source starts a path, a
non-forwarding destination ends it) and count each link's ``hops``.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .core import _CHUNK_CELLS, _compact, _Dags, _distinct, _empty_part, _hop_levels, _Net, _Part, _ranges

# Pairs walked together: their (pair, node) scratch holds at most this many cells.
_WALK_CELLS = 2_000_000


class _Adjacency:
    """Links by one of their ends: a padded (node x degree) table when degrees are alike, else CSR runs.

    ``links(x, other, ok)`` returns, for nodes ``x`` (one entry each), the entry index,
    link position and other end of the links at each node that ``ok`` keeps; the
    table's padding is a dummy link ``pad`` whose ends are the dummy node ``n``, which
    ``ok`` must refuse.
    """

    def __init__(self, end: np.ndarray, n: int):
        self.order = np.argsort(end, kind="stable")
        self.start = np.searchsorted(end[self.order], np.arange(n + 1))
        self.deg = np.diff(self.start)
        self.pad = len(end)
        width = int(self.deg.max(initial=0))
        self.table = None
        if width * n <= 2 * len(end) + n:
            self.table = np.full((n + 1, width), self.pad, np.int32 if self.pad < 2**31 - 1 else np.int64)
            rank = np.arange(len(end)) - self.start[end[self.order]]
            self.table[end[self.order], rank] = self.order
            self.width = width

    def links(self, x: np.ndarray, other: np.ndarray, ok):
        """The links at nodes ``x`` whose other end passes ``ok``: (entry index, link position, other end).

        ``ok(entries, links, ends)`` gets the entry of ``x``, the link position and the
        other end of each link (as broadcastable arrays) and returns where the link is kept.
        """
        if self.table is not None:
            kk = self.table[x]                              # (entries, width): no per-link entry array
            ends = other[kk]
            sel = np.flatnonzero(ok(np.arange(len(x))[:, None], kk, ends))
            return sel // self.width, kk.ravel()[sel], ends.ravel()[sel]
        cnt = self.deg[x]
        e = np.repeat(np.arange(len(x)), cnt)
        k = self.order[_ranges(self.start[x], cnt)]
        ends = other[k]
        sel = np.flatnonzero(ok(e, k, ends))
        return e[sel], k[sel], ends[sel]


def _dedupe(scratch: np.ndarray, key: np.ndarray):
    """``(first, inv)`` of integer ``key`` (values < len(scratch)); ``None`` when all are distinct.

    ``first`` marks one occurrence of each distinct key, ``inv`` maps every key to the
    rank of its marked one; linear (a scratch array, left all -1 again) instead of a sort.
    """
    M = len(key)
    ar = np.arange(M, dtype=scratch.dtype)
    scratch[key] = ar
    win = scratch[key]
    scratch[key] = -1
    first = win == ar
    if first.all():
        return None
    return first, (np.cumsum(first, dtype=np.int64) - 1)[win]


def _cat(parts: list, dtype) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def _table(levels: np.ndarray, n: int):
    """Integer distance table with a dummy-node column; (table, sentinel) in the smallest fitting dtype."""
    top = int(levels.max(initial=0))
    dt = np.int16 if top < 2**15 - 2 else np.int32
    sentinel = np.iinfo(dt).min                  # never a distance nor a distance less a link's hops
    tbl = np.full((len(levels), n + 1), sentinel, dt)
    tbl[:, :n] = np.where(levels >= 0, levels, sentinel)
    return tbl, sentinel


def route_pairs(net: _Net, mask: np.ndarray, s: np.ndarray, d: np.ndarray, split: str,
                from_source: bool | None = None) -> _Part:
    """Exact per-hop ECMP for pairs (s, d) of node indices on the links in ``mask``, one piece per distinct pair.

    Parameters
    ----------
    net : _Net
    mask : numpy.ndarray of bool, shape (L,)
        The links the routes may use.
    s, d : numpy.ndarray of int, shape (P,)
        Node indices of each pair's ends (``s != d``).
    split : {"equal", "capacity"}
    from_source : bool, optional
        Search from the sources (unweighted links only) or from the destinations;
        ``None`` (default): from the end with fewer distinct nodes.

    Returns
    -------
    _Part
        Row ``p`` of its ``flow_piece`` is one entry of 1.0 at the piece of pair ``p``
        (empty when ``d`` is out of reach); that piece's ``piece_link`` row holds the
        share of each link (rows not sorted by link).  Hops and latency (slowest path,
        links plus switches entered) per pair.
    """
    lt, n = net.lt, net.n
    L, P = len(lt), len(s)
    if P == 0:
        return _empty_part(0, L)
    pair_of, keys = _compact(s.astype(np.int64) * n + d, None)       # distinct pairs share a piece
    us, ud = keys // n, keys % n
    U = len(keys)
    dags = _Dags(net, mask, ud, split)          # the links (by source), their weights and the search graph
    g = _Graph(net, dags)
    n_src, n_dst = len(_distinct(us)), len(dags.dests)
    if from_source is None:
        from_source = n_src < n_dst
    from_source = bool(from_source) and g.unweighted
    root, other = (us, ud) if from_source else (ud, us)
    order = np.argsort(root, kind="stable")
    roots, rstart = np.unique(root[order], return_index=True)
    rend = np.append(rstart[1:], U)
    search = g.forward_search() if from_source else dags.S
    reach = np.zeros(U, bool)
    hops = np.zeros(U, np.int32)
    lat = np.zeros(U)
    piece_of = np.full(U, -1, np.int64)
    pl_ind, pl_val, pl_cnt = [], [], []
    per_root = max(1, _CHUNK_CELLS // (n + 1))           # distance rows held at once
    per_walk = max(1, _WALK_CELLS // n)                  # pairs walked together
    scratch = np.full(min(per_walk, U) * (n + 1), -1, np.int32 if per_walk * (n + 1) < 2**31 else np.int64)
    n_pieces = 0
    for r0 in range(0, len(roots), per_root):
        rc = roots[r0:r0 + per_root]
        starts = np.where(net.fwd[rc], rc, dags.outid[rc])
        levels = _hop_levels(search, starts, n, g.unweighted)     # whole hops (a patched circuit counts 2)
        levels[np.arange(len(rc)), rc] = 0
        pidx = order[rstart[r0]:rend[min(r0 + per_root, len(roots)) - 1]]
        row = np.searchsorted(rc, root[pidx])
        D = levels[row, other[pidx]]
        ok = D >= 0
        pidx, row, D = pidx[ok], row[ok], D[ok].astype(np.int64)
        reach[pidx] = True
        hops[pidx] = D
        tbl, sentinel = _table(levels, n)
        del levels
        # nodes that cannot be on a path where the walk looks them up: non-forwarding
        # ones other than the row's own root (the destination; the source)
        tbl[:, np.flatnonzero(~net.fwd)] = sentinel
        tbl[np.arange(len(rc)), rc] = 0
        walk = _walk_from_source if from_source else _walk_from_dest
        for p0 in range(0, len(pidx), per_walk):
            pp = pidx[p0:p0 + per_walk]
            fe, k, share, plat = walk(g, tbl, row[p0:p0 + per_walk], us[pp], ud[pp], D[p0:p0 + per_walk], scratch)
            lat[pp] = plat
            m = len(pp)
            # the batch's pieces, grouped by pair (a stable sort of small ints is a radix sort)
            by = np.argsort(fe.astype(np.int16 if m < 2**15 else np.int64), kind="stable")
            pl_ind.append(g.la[k[by]])
            pl_val.append(share[by])
            pl_cnt.append(np.bincount(fe, minlength=m))
            piece_of[pp] = n_pieces + np.arange(m)
            n_pieces += m
    counts = np.concatenate(pl_cnt) if pl_cnt else np.zeros(0, np.int64)
    nnz = int(counts.sum())
    idt = np.int32 if max(n_pieces, L, nnz, P) < 2**31 - 1 else np.int64
    pl = sp.csr_matrix((n_pieces, L), dtype=float)
    pl.data = np.concatenate(pl_val) if pl_val else np.zeros(0)
    pl.indices = (np.concatenate(pl_ind) if pl_ind else np.zeros(0)).astype(idt)
    pl.indptr = np.concatenate([[0], np.cumsum(counts)]).astype(idt)
    pl.has_sorted_indices = False
    ok = reach[pair_of]
    on = ok & (hops[pair_of] > 0)                    # a pair from a node to itself crosses no link
    fp = sp.csr_matrix((P, n_pieces), dtype=float)
    fp.data = np.ones(int(on.sum()))
    fp.indices = piece_of[pair_of[on]].astype(idt)
    fp.indptr = np.concatenate([[0], np.cumsum(on)]).astype(idt)
    return _Part(fp, pl, ok, hops[pair_of], lat[pair_of])


class _Graph:
    """The links of a walk: ends, weights, split weights and latencies, each with a dummy link (index pad)."""

    def __init__(self, net: _Net, dags: _Dags):
        n = net.n
        self.n, self.fwd, self.outid = n, net.fwd, dags.outid
        self.la = dags.la
        nt = np.int32 if n < 2**31 - 1 else np.int64        # node ids: half the memory traffic when they fit
        self.nt = nt
        self.src = np.append(dags.lsrc, n).astype(nt)
        self.dst = np.append(dags.ldst, n).astype(nt)
        w = dags.lw.astype(np.int64)
        self.w = np.append(w, 1)
        self.weights = np.unique(w).tolist()
        self.unweighted = self.weights in ([], [1])
        self.cap = np.append(dags.cap, 0.0)
        self.lat = np.append(dags.llat, 0.0)
        self.out = _Adjacency(dags.lsrc, n)
        self._in = None
        self._dags = dags

    @property
    def into(self) -> _Adjacency:
        if self._in is None:
            self._in = _Adjacency(self._dags.ldst, self.n)
        return self._in

    def forward_search(self) -> sp.csr_matrix:
        """Search graph along the flow: link a->b is the edge a->b, from a's own copy when a does not forward."""
        d = self._dags
        ns = d.S.shape[0]
        tail = np.where(self.fwd[d.lsrc], d.lsrc, self.outid[d.lsrc])
        return sp.csr_matrix((np.ones(len(tail)), (tail, d.ldst)), shape=(ns, ns))


def _walk_from_dest(g: _Graph, tbl, row, s, d, D, scratch):
    """Push one unit from each source toward its destination; ``tbl[row]``: distances to the destination.

    Returns the links of every pair's route as ``(pair, link position, share)`` and the
    slowest latency per pair.
    """
    n, m = g.n, len(s)
    flat_tbl = tbl.ravel()
    it = np.int32 if tbl.size < 2**31 - 1 and len(scratch) < 2**31 - 1 else np.int64
    row0 = row.astype(it) * it(n + 1)
    plat = np.zeros(m)
    out_f, out_k, out_v = [], [], []
    pending = {0: [(np.arange(m, dtype=it), s.astype(it), np.ones(m), np.zeros(m))]}
    for t in range(int(D.max(initial=0)) + 1):
        got = pending.pop(t, None)
        if got is None:
            continue
        f, x, mass, xlat = (np.concatenate(c) for c in zip(*got)) if len(got) > 1 else got[0]
        if t:
            # one entry per (pair, node): the mass adds up, the slowest latency is kept
            dup = _dedupe(scratch, f * it(n + 1) + x)
            if dup is not None:
                first, inv = dup
                mass = np.bincount(inv, weights=mass)
                slow = np.full(len(mass), -np.inf)
                np.maximum.at(slow, inv, xlat)
                f, x, xlat = f[first], x[first], slow
            at_d = x == d[f]
            if at_d.any():
                plat[f[at_d]] = xlat[at_d]
                live = ~at_d
                f, x, mass, xlat = f[live], x[live], mass[live], xlat[live]
                if not len(f):
                    continue
        # next hops: links to a node the link's hops closer to the destination
        base, togo = row0[f], D[f] - t
        if len(g.weights) == 1:
            togo -= g.weights[0]
            e, k, y = g.out.links(x, g.dst, lambda i, k, y: flat_tbl[base[i] + y] == togo[i])
        else:
            e, k, y = g.out.links(x, g.dst, lambda i, k, y: flat_tbl[base[i] + y] == togo[i] - g.w[k])
        fe = f[e]
        wk = g.cap[k]
        share = mass[e] * (wk / np.bincount(e, weights=wk, minlength=len(x))[e])
        out_f.append(fe)
        out_k.append(k)
        out_v.append(share)
        ylat = xlat[e] + g.lat[k]
        for wt in g.weights:
            sel = slice(None) if len(g.weights) == 1 else g.w[k] == wt
            pending.setdefault(t + wt, []).append((fe[sel], y[sel], share[sel], ylat[sel]))
    return _cat(out_f, np.int64), _cat(out_k, np.int64), _cat(out_v, np.float64), plat


def _walk_from_source(g: _Graph, tbl, row, s, d, D, scratch):
    """Sweep back from each destination, then push one unit forward; ``tbl[row]``: distances from the source.

    Unweighted links.  The sweep finds the cone level by level (level ``h``: distance
    ``h`` from the source): the tails of the links into level ``h + 1`` that lie at
    level ``h``, with the slowest latency to the destination (the latest level is
    final when its heads are).  The push then splits each node's demand over its links
    into the cone, as ECMP does toward the destination.  Returns as
    :func:`_walk_from_dest`.
    """
    n, m = g.n, len(s)
    flat_tbl = tbl.ravel()
    it = np.int32 if tbl.size < 2**31 - 1 and len(scratch) < 2**31 - 1 else np.int64
    row0 = row.astype(it) * it(n + 1)
    d = d.astype(it)
    top = int(D.max(initial=0))
    starts_at = {h: np.flatnonzero(D == h).astype(it) for h in _distinct(D).tolist()}
    # the sweep: per level h, the cone's nodes (pair, node, latency to d) and the links into level h
    f = starts_at[top]
    x, xlat = d[f], np.zeros(len(f))
    nodes = {top: (f, x)}
    links = {}
    for h in range(top, 0, -1):
        base = row0[f]
        e, k, tail = g.into.links(x, g.src, lambda i, k, t: flat_tbl[base[i] + t] == h - 1)
        fe = f[e]
        new = starts_at.get(h - 1)                        # pairs whose destination lies at level h - 1
        if new is not None:
            fe = np.concatenate([fe, new])
            tail = np.concatenate([tail, d[new]])
        cand_lat = np.concatenate([xlat[e] + g.lat[k], np.zeros(len(fe) - len(e))])
        dup = _dedupe(scratch, fe * it(n + 1) + tail)
        if dup is None:
            inv = np.arange(len(fe))
            f, x, xlat = fe, tail, cand_lat
        else:
            first, inv = dup
            f, x = fe[first], tail[first]
            xlat = np.full(len(f), -np.inf)
            np.maximum.at(xlat, inv, cand_lat)
        links[h] = (inv[:len(e)], e, k)                   # (tail entry at h - 1, head entry at h, link)
        nodes[h - 1] = (f, x)
    plat = np.zeros(m)
    plat[f] = xlat                                        # level 0: each pair's source, once
    # the push: one unit at each source, split over the node's links into the cone
    mass = np.ones(len(f))
    out_f, out_k, out_v = [], [], []
    for h in range(1, top + 1):
        tl, hl, k = links[h]
        wk = g.cap[k]
        share = mass[tl] * (wk / np.bincount(tl, weights=wk, minlength=len(mass))[tl])
        out_f.append(nodes[h][0][hl])
        out_k.append(k)
        out_v.append(share)
        mass = np.bincount(hl, weights=share, minlength=len(nodes[h][0]))
    return _cat(out_f, np.int64), _cat(out_k, np.int64), _cat(out_v, np.float64), plat
