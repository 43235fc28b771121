"""Policy ``ecmp``: shortest paths in physical hops, split per hop (equally or by capacity).

Shortest paths count a virtual patch edge's ``hops`` and pass only through nodes with
``forwards=True`` (the endpoints need not forward); at every hop the flow splits over
the next hops on shortest paths, equally or in proportion to the next-hop link
capacity (``split="capacity"``).

:func:`_route_on` is ECMP on a subset of the links, which the other policies reuse
(the tier rule routes each tier by it, dimension-order routing its broken pairs):
the factored fast paths of :mod:`.leaf` first (a single switched tier, a leaf-spine
tier), then per-destination shortest-path DAGs (:func:`_generic`) for what they
leave.  :func:`_ecmp_loads` pushes demand down the same DAGs without per-flow pieces.

Symmetry fold (:func:`fold_twins`): interchangeable chips ("twins": same rack, same
links to the same neighbours) within each row of an all-to-all; ECMP treats twins
alike, so swapping them maps routes onto routes.  Where the routes relay by in-rack
position (rail-only PXN, :mod:`.leaf`), the positions fold takes over.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from . import leaf
from .cone import route_pairs
from .core import PolicyRoutes, _compact, _coo_part, _Dags, _distinct, _empty_part, _merge, _Net, _Part, _Reach, _reach
from .quotient import Fold, _classes_on_orbits

__all__ = ["route_ecmp", "fold_twins"]



def _generic(net: _Net, mask: np.ndarray, s: np.ndarray, d: np.ndarray, split: str) -> _Part:
    """Exact per-hop ECMP for pairs (s, d) of node indices on the links in ``mask``.

    A destination that few pairs share (:func:`_few_per_dest` distinct sources at
    most) has its pairs routed one by one inside their shortest-path cones
    (:func:`.cone.route_pairs`, a piece per pair); the others build the DAG's pieces
    once per first hop and share them among their sources (:func:`_generic_shared`).
    Both give the same shares, hop counts and latencies.
    """
    P = len(s)
    if P == 0:
        return _empty_part(0, len(net.lt))
    n = net.n
    pairs = _distinct(s.astype(np.int64) * n + d)
    per_dest = np.bincount(pairs % n, minlength=n)
    few = per_dest[d] <= _few_per_dest(net, mask)
    if few.all():
        return route_pairs(net, mask, s, d, split)
    if not few.any():
        return _generic_shared(net, mask, s, d, split)
    a, b = np.flatnonzero(few), np.flatnonzero(~few)
    return _merge(P, len(net.lt), [(a, route_pairs(net, mask, s[a], d[a], split)),
                                   (b, _generic_shared(net, mask, s[b], d[b], split))])


def _few_per_dest(net: _Net, mask: np.ndarray) -> int:
    """Most distinct sources per destination routed pair by pair (:func:`.cone.route_pairs`).

    A pair's walk looks at every link out of each node of its cone, so high-degree
    switches make it dear, while the shared pieces cost a pass over all links per
    destination: 2048 // (largest out-degree), between 8 and 256 (measured on tori,
    boardfly, groq-lpx and maia200: the walk is the faster below it).
    """
    deg = np.bincount(net.lt.src[mask], minlength=net.n).max(initial=1)
    return int(np.clip(2048 // max(int(deg), 1), 8, 256))


def _generic_shared(net: _Net, mask: np.ndarray, s: np.ndarray, d: np.ndarray, split: str) -> _Part:
    """Exact per-hop ECMP for pairs (s, d) of node indices on the links in ``mask``, pieces shared per destination.

    Pieces: single links (the source's first hops) and, per destination, the DAG
    from each first-hop node to it (shared by every source with that first hop),
    built by powers of the DAG's split matrix over dense destinations x links tables:
    cheap per pair when many pairs share a destination.
    """
    lt, n = net.lt, net.n
    L, P = len(lt), len(s)
    if P == 0:
        return _empty_part(0, L)
    dags = _Dags(net, mask, d, split)
    la, ldst = dags.la, dags.ldst
    reach = np.zeros(P, bool)
    hops = np.zeros(P, np.int32)
    lat = np.zeros(P)
    f_rows, f_cols, f_vals = [], [], []      # flow -> piece (link pieces: -1 - link id, for now)
    p_rows, p_cols, p_vals = [], [], []
    n_node_pieces = 0
    for ch in dags:
        dc, dist, jj, kk, key_u, key_v, frac = ch.dc, ch.dist, ch.jj, ch.kk, ch.key_u, ch.key_v, ch.frac
        c = len(dc)
        sk = key_u                           # sorted: row-major nonzero over source-ordered links
        pidx, pj, h, key_s = dags.reached(s, dc, dist, ch.pidx)
        reach[pidx] = True
        hops[pidx] = h
        lo = np.searchsorted(sk, key_s, "left")
        hi = np.searchsorted(sk, key_s, "right")
        cnt = hi - lo
        rep = np.repeat(np.arange(len(pidx)), cnt)
        pos = lo[rep] + np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        e = pos
        first_link = la[kk[e]]
        first_frac = frac[e]
        f_rows.append(pidx[rep])
        f_cols.append(-1 - first_link.astype(np.int64))
        f_vals.append(first_frac)
        # node pieces: the DAG from each first-hop node that is not the destination
        nxt = key_v[e]
        inner = ldst[kk[e]] != dc[pj[rep]]
        pinv, pkeys = _compact(nxt[inner], c * n)
        f_rows.append(pidx[rep][inner])
        f_cols.append(n_node_pieces + pinv)
        f_vals.append(first_frac[inner])
        if len(pkeys):
            T = sp.csr_matrix((frac, (key_u, key_v)), shape=(c * n, c * n))
            Fm = sp.csr_matrix((frac, (key_u, la[kk])), shape=(c * n, L))
            X = sp.csr_matrix((np.ones(len(pkeys)), (np.arange(len(pkeys)), pkeys)), shape=(len(pkeys), c * n))
            acc = [X]
            for _ in range(int(dist[np.isfinite(dist)].max()) + 1):
                X = X @ T
                if X.nnz == 0:
                    break
                acc.append(X)
            Nm = acc[0] if len(acc) == 1 else sp.vstack(acc).tocsr()
            if len(acc) > 1:
                # rows of every step belong to the same pieces: fold them back
                fold = sp.csr_matrix((np.ones(Nm.shape[0]), (np.arange(Nm.shape[0]),
                                                             np.tile(np.arange(len(pkeys)), len(acc)))),
                                     shape=(Nm.shape[0], len(pkeys)))
                Nm = (fold.T @ Nm).tocsr()
            PL = (Nm @ Fm).tocoo()
            p_rows.append(PL.row.astype(np.int64) + n_node_pieces)
            p_cols.append(PL.col.astype(np.int64))
            p_vals.append(PL.data)
        n_node_pieces += len(pkeys)
        lat[pidx] = dags.latency(dc, kk, key_u, key_v, dags.levels(dist, jj, kk))[key_s]
    # link pieces get ids after the node pieces
    rows = np.concatenate(f_rows) if f_rows else np.zeros(0, np.int64)
    cols = np.concatenate(f_cols) if f_cols else np.zeros(0, np.int64)
    vals = np.concatenate(f_vals) if f_vals else np.zeros(0)
    is_link = cols < 0
    linv, links = _compact(-1 - cols[is_link], L)
    cols = cols.copy()
    cols[is_link] = n_node_pieces + linv
    K = n_node_pieces + len(links)
    p_rows.append(n_node_pieces + np.arange(len(links)))
    p_cols.append(links)
    p_vals.append(np.ones(len(links)))
    return _coo_part(P, K, L, rows, cols, vals, np.concatenate(p_rows), np.concatenate(p_cols),
                     np.concatenate(p_vals), reach, hops, lat)


def _ecmp_loads(net: _Net, mask: np.ndarray, s: np.ndarray, d: np.ndarray, w: np.ndarray, split: str):
    """Link bytes of per-hop ECMP flows (s, d) moving ``w`` bytes each, without per-flow pieces.

    Each destination's demand is pushed down its shortest-path DAG, farthest nodes
    first, splitting at every node as :func:`_generic` does: O(DAG edges) per
    destination instead of a piece per (first hop, destination).  Returns
    ``(link_bytes (L,), reach, hops, lat)`` with ``reach``/``hops``/``lat`` per pair.
    """
    lt, n = net.lt, net.n
    L, P = len(lt), len(s)
    link_bytes = np.zeros(L)
    reach = np.zeros(P, bool)
    hops = np.zeros(P, np.int32)
    lat = np.zeros(P)
    if P == 0:
        return link_bytes, reach, hops, lat
    dags = _Dags(net, mask, d, split)
    la = dags.la
    for ch in dags:
        dc, dist, jj, kk, key_u, key_v, frac = ch.dc, ch.dist, ch.jj, ch.kk, ch.key_u, ch.key_v, ch.frac
        c = len(dc)
        pidx, _, h, key_s = dags.reached(s, dc, dist, ch.pidx)
        reach[pidx] = True
        hops[pidx] = h
        node_bytes = np.bincount(key_s, weights=w[pidx], minlength=c * n)   # demand entering at each node
        levels = order, bounds = dags.levels(dist, jj, kk)
        ku, kv, fr = key_u[order], key_v[order], frac[order]
        edge_bytes = np.zeros(len(order))
        for a0, a1 in zip(bounds[-2::-1], bounds[:0:-1]):   # farthest first: a node's inflow is complete
            f = node_bytes[ku[a0:a1]] * fr[a0:a1]
            edge_bytes[a0:a1] = f
            np.add.at(node_bytes, kv[a0:a1], f)
        link_bytes += np.bincount(la[kk[order]], weights=edge_bytes, minlength=L)
        lat[pidx] = dags.latency(dc, kk, key_u, key_v, levels)[key_s]
    return link_bytes, reach, hops, lat


# ---------------------------------------------------------------------------------------
# ECMP on a link subset: fast paths first, generic for what they leave
# ---------------------------------------------------------------------------------------
def _route_on(net: _Net, mask: np.ndarray, s: np.ndarray, d: np.ndarray, split: str,
              reach: _Reach | None = None, fast: bool = True) -> _Part:
    L, P = len(net.lt), len(s)
    if P == 0:
        return _empty_part(0, L)
    rest = None                              # pairs not yet routed; None: all P, in order
    done: list[tuple[np.ndarray | None, _Part]] = []
    if fast:
        for path in (leaf._switched, leaf._leafspine):   # looked up per call (tests swap them)
            if rest is not None and not len(rest):
                break
            got = path(net, mask, s if rest is None else s[rest], d if rest is None else d[rest], split)
            if got is None:
                continue
            left = np.ones(P if rest is None else len(rest), bool)
            for idx, part in got:
                # a fast path reports the pairs it routed, None for all it was given
                if idx is None:
                    done.append((rest, part))
                    left[:] = False
                else:
                    done.append((idx if rest is None else rest[idx], part))
                    left[idx] = False
            rest = np.flatnonzero(left) if rest is None else rest[left]
    if rest is None or len(rest):
        reach = reach or _reach(net, mask)
        sr, dr = (s, d) if rest is None else (s[rest], d[rest])
        ok = reach(sr, dr)
        if ok.all():
            done.append((rest, _generic(net, mask, sr, dr, split)))
        elif ok.any():
            ok = np.flatnonzero(ok)
            done.append((ok if rest is None else rest[ok], _generic(net, mask, sr[ok], dr[ok], split)))
    if len(done) == 1 and (done[0][0] is None or len(done[0][0]) == P):
        return done[0][1]
    return _merge(P, L, [(np.arange(P) if i is None else i, p) for i, p in done])


def route_ecmp(net: _Net, s: np.ndarray, d: np.ndarray, split: str, tiers: str) -> PolicyRoutes:
    """Policy ``ecmp``: every pair by ECMP over every link (``tiers`` does not apply)."""
    return PolicyRoutes(_route_on(net, np.ones(len(net.lt), bool), s, d, split))


# ---------------------------------------------------------------------------------------
# Symmetry fold: twins
# ---------------------------------------------------------------------------------------
def fold_twins(G, rows, pairs=None, *, links=None, split: str = "equal", tiers: str = "rule", guard=None,
               positional=None) -> Fold:
    """Fold an all-to-all phase into classes of interchangeable chips, or say why not.

    Two chips are *twins* when they sit in the same rack, neither forwards, and they
    have the same links to the same neighbours (capacity, latency, hops and tier alike,
    both directions): swapping them maps the fabric onto itself.  All chips of a
    switched rack (NVL72, the Jalapeño rack and pod, a leaf's chips in a Clos) are
    twins.  Within one row of an all-to-all, permuting the twins of the row maps the
    phase onto itself too, so the flows from twin class ``K`` to twin class ``K'`` of a
    row share one rate: one class of ``|K| |K'|`` flows (``|K| (|K| - 1)`` when ``K =
    K'``).  A link's orbit is its pair of ends with each chip replaced by its class.

    Parameters
    ----------
    G, rows, links, split, tiers, guard
        As in :func:`.torus.fold_translations` (``tiers`` is passed to the routing of
        the representatives).
    pairs : None
        Ordered patterns (rings, shifts) are refused: swapping twins would reorder them.
    positional : callable, optional
        Where the representatives' routes relay (rail-only PXN, chosen by in-rack
        position, which swapping twins does not keep): the fold to hand over to,
        called as ``positional(G, lt, net, rows, X, cls, row_of, split, tiers, guard)``
        (the tier policy passes :func:`.leaf._fold_positions`); without it, refused.

    Returns
    -------
    Fold
        ``method="twins"`` (or the hand-over's, with the twins' refusal in ``refused``).

    Examples
    --------
    >>> import numpy as np
    >>> from fabricsim.fabrics import build
    >>> G = build("jalapeno-rack")
    >>> q = fold_twins(G, np.arange(128)[None, :]).quotient
    >>> q.n_classes, q.n_flows == 128 * 127
    (1, True)
    >>> fold_twins(G, np.arange(128)[None, :], [[0], [1]]).reason
    'an ordered pattern (ring, shift): swapping twins would reorder it'
    """
    from . import link_table, policy_of, route
    from .core import _net
    M = "twins"

    def no(reason: str) -> Fold:
        return Fold.refuse(M, reason)

    if pairs is not None:
        return no("an ordered pattern (ring, shift): swapping twins would reorder it")
    if policy_of(G).dimension_order:
        return no("dimension-order routes tell torus neighbours apart (no two chips are twins)")
    rows = np.asarray(rows, dtype=np.int64)
    if rows.ndim != 2 or rows.size == 0 or rows.shape[1] < 2:
        return no("the phase has no flows to fold")
    lt = link_table(G) if links is None else links
    net = _net(G, lt)
    n = len(lt.nodes)
    u, v = lt.src.astype(np.int64), lt.dst.astype(np.int64)
    attrs = [np.asarray(lt.capacity_gbps), np.asarray(lt.latency_ns), np.asarray(lt.hops), np.asarray(lt.tier)]
    by_u = np.argsort(u, kind="stable")
    by_v = np.argsort(v, kind="stable")
    u_start = np.searchsorted(u[by_u], np.arange(n + 1))
    v_start = np.searchsorted(v[by_v], np.arange(n + 1))
    rack = net.attr.get("rack", np.full(n, -1, np.int64))
    candidates = np.flatnonzero(net.is_chip & ~net.fwd)
    cls = np.arange(n, dtype=np.int64)          # class per node: itself unless it has twins
    sig_of = {}
    for x in candidates.tolist():
        out = by_u[u_start[x]:u_start[x + 1]]
        inn = by_v[v_start[x]:v_start[x + 1]]
        key = (int(rack[x]),
               tuple(sorted(zip(v[out].tolist(), *(a[out].tolist() for a in attrs)))),
               tuple(sorted(zip(u[inn].tolist(), *(a[inn].tolist() for a in attrs)))))
        cls[x] = sig_of.setdefault(key, x)
    if len(sig_of) == len(candidates):
        return no("no two chips are twins (same rack, not forwarding, the same links to the same neighbours)"
                  if len(candidates) else "every chip forwards (a chip on a path tells its neighbours apart)")
    # the phase: rows of distinct, present chips; twins are refined by row
    flat = rows.ravel()
    if np.bincount(flat).max() > 1:
        return no("groups share chips (rows must be disjoint)")
    if flat.max() >= len(net.node_of_rank):
        return no(f"a group names rank {int(flat.max())}, which no chip carries")
    X = net.node_of_rank[rows]
    if (X < 0).any():
        return no("a group lost a chip (the caller reports the broken group)")
    R, m = rows.shape
    row_of = np.full(n, -1, np.int64)
    row_of[X] = np.arange(R)[:, None]
    refined = np.unique(cls * (R + 1) + row_of + 1, return_inverse=True)[1].astype(np.int64)
    # the classes of each row: members sorted by (row, class); a class's first two members
    C = refined[X]                                       # (R, m)
    order = np.argsort(C, axis=1, kind="stable")
    Cs = np.take_along_axis(C, order, axis=1)
    starts = np.ones((R, m), bool)
    starts[:, 1:] = Cs[:, 1:] != Cs[:, :-1]
    n_cls_row = starts.sum(axis=1)
    if 4 * int((n_cls_row ** 2).sum()) > R * m * (m - 1):
        return no(f"too few twins to gain: {int((n_cls_row ** 2).sum()):,} classes would stand for "
                  f"{R * m * (m - 1):,} flows (needs at least 4 flows per class)")
    # representatives: per row, one flow per ordered pair of its classes
    reps_s, reps_d, reps_row, mult = [], [], [], []
    for r in range(R):
        pos = np.flatnonzero(starts[r])                  # where each class begins in the sorted row
        count = np.diff(np.append(pos, m))
        first = rows[r, order[r, pos]]
        second = rows[r, order[r, np.minimum(pos + 1, m - 1)]]
        j = len(pos)
        a, b = np.repeat(np.arange(j), j), np.tile(np.arange(j), j)
        same = a == b
        keep = ~same | (count[a] >= 2)
        a, b, same = a[keep], b[keep], same[keep]
        reps_s.append(first[a])
        reps_d.append(np.where(same, second[b], first[b]))
        reps_row.append(np.full(len(a), r, np.int64))
        mult.append(np.where(same, count[a] * (count[a] - 1), count[a] * count[b]))
    rep_src, rep_dst = np.concatenate(reps_s), np.concatenate(reps_d)
    multiplicity = np.concatenate(mult).astype(np.int64)
    if guard is not None:
        guard(len(rep_src))
    routes = route(G, rep_src, rep_dst, split=split, tiers=tiers, links=lt)
    if not np.all(routes.reachable):
        return no("a representative flow has no route (twins may differ in reach)")
    if np.any(routes.relayed):
        # a relay is chosen by position: only moves that treat every rack alike keep it
        why = no("routes relay through a chip chosen by in-rack position (rail-only PXN), which swapping "
                 "twins does not keep")
        if positional is None:
            return why
        got = positional(G, lt, net, rows, X, cls, row_of, split, tiers, guard)
        return Fold(got.quotient, got.method, got.reason, (why,) + got.refused)
    # link orbits: both ends replaced by their classes (a switch is a class of its own)
    n_cls = int(refined.max()) + 1
    link_orbit = np.unique(refined[u] * n_cls + refined[v], return_inverse=True)[1].astype(np.int64)
    return _classes_on_orbits(M, "swapping twins", link_orbit, lt, multiplicity, rep_src, rep_dst,
                              np.concatenate(reps_row), routes, R, no)
