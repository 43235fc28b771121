"""A phase priced under adaptive routing (``split="adaptive"``): multipath max-min fair rates.

The engine (:func:`fabricsim.collectives.engine._price_phase`) hands a phase here when
its split is ``adaptive``.  The flows' allowed paths are the supports of their
``equal`` routes; their rates are the multipath max-min fair allocation over those
paths, solved exactly by :mod:`fabricsim.topo.multipath` (a linear program per fill
level), with completion times re-solved as flows finish.

Size: a symmetry fold of the phase (the routing policy's, computed on the ``equal``
routes; every fold maps the fabric and the flows' path sets onto themselves) gives a
program over classes and link orbits.  Without a fold, the flows are listed: at most
:data:`~fabricsim.topo.multipath.MAX_FLOWS` flows and
:data:`~fabricsim.topo.multipath.MAX_ARCS` arc variables, else a one-line
:class:`~fabricsim.topo.errors.BadInput` names the size and suggests ``--split equal``.
"""
from __future__ import annotations

import weakref

import numpy as np

from ..topo.errors import BadInput

__all__ = ["step_adaptive", "refuse_size", "AdaptiveRefused"]


class AdaptiveRefused(BadInput):
    """A phase too big for the multipath program: a given ``--split adaptive`` refuses with it; the
    fabric's default adaptive falls back to ``equal`` (:func:`fabricsim.collectives.engine.solve`)."""

NOTE = ("adaptive routing: each flow spreads over every path of its equal-cost route set; rates are the "
        "multipath max-min fair allocation (exact: where saturated cuts prove the equal shares already reach it, "
        "those; else a linear program per fill level)")


def refuse_size(what: str, n: int, limit: int, why: str = "") -> AdaptiveRefused:
    """The one-line refusal of a phase too big for the multipath program."""
    # one reason each (two folds may refuse for the same cause, in other words)
    reasons = list(dict.fromkeys(r.strip() for r in why.split(";") if r.strip()))
    if len(reasons) > 1 and len({r.split(":")[0] for r in reasons}) == 1:
        reasons = reasons[:1]
    extra = f" ({'; '.join(reasons)})" if reasons else ""
    return AdaptiveRefused(f"--split adaptive: {what} {n:,} exceeds {limit:,} and no symmetry fold applies{extra}; "
                           f"use --split equal (fixed ECMP shares) or a smaller group", param="split")


# Steps solved before, per graph (dropped with it): key -> (step, bytes scale, capacity scale).
# Multipath max-min rates scale with capacity and times with bytes / capacity, so a phase of
# the same flows on capacities in the same proportions (a size sweep, a calibration fit's
# efficiencies) is the stored step rescaled, not another program.
_STEPS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
# steps kept per graph (I: a calibration fit's algorithms x phases, with room)
STEPS_KEPT = 256


def _step_key(ph, ctx) -> tuple:
    """(key, bytes scale, capacity scale): what the step depends on, with sizes and capacities
    normalised by their largest (proportions to 12 digits)."""
    import hashlib
    h = hashlib.blake2b(digest_size=16)
    lt = ctx.table
    cap = np.asarray(ctx.cap, np.float64)
    c_scale = float(np.max(cap[np.isfinite(cap)], initial=1.0)) or 1.0
    sizes = np.asarray(ph.pair_bytes if ph.pair_bytes is not None else [ph.flow_bytes], np.float64)
    s_scale = float(sizes.max(initial=0.0)) or 1.0
    for a in (lt.src, lt.dst, np.round(cap / c_scale, 12), ph.rows, ph.row_group,
              np.zeros(0) if ph.pairs is None else ph.pairs, np.round(sizes / s_scale, 12)):
        a = np.ascontiguousarray(a)
        h.update(str(a.shape).encode() + a.dtype.str.encode())
        h.update(a.tobytes())
    h.update(repr(sorted((k, str(v)) for k, v in ctx.G.graph.items())).encode())
    return ((h.hexdigest(), ctx.n_groups, ctx.tiers, ctx.bound_only, ctx.symmetry, CERTIFY, multipath_limits()),
            s_scale, c_scale)


def multipath_limits() -> tuple:
    from ..topo import multipath
    return multipath.MAX_FLOWS, multipath.MAX_ARCS, CERT_MAX_SUPPORT


def step_adaptive(ph, ctx, guard):
    """Price one step of ``ph`` with adaptive routing: an engine ``_Step`` (a stored one rescaled
    where the same flows were solved on capacities in the same proportions)."""
    import dataclasses
    key, s1, c1 = _step_key(ph, ctx)
    try:
        per = _STEPS.setdefault(ctx.G, {})
    except TypeError:                        # a graph that takes no weak reference: no store
        per = {}
    hit = per.get(key)
    if hit is None:
        st = _step_adaptive(ph, ctx, guard)
        per[key] = (dataclasses.replace(st), s1, c1)
        while len(per) > STEPS_KEPT:
            per.pop(next(iter(per)))
        return st
    st, s0, c0 = hit
    b, t = s1 / s0, (s1 / s0) / (c1 / c0)
    return dataclasses.replace(st, time_s=st.time_s * t, bound_s=st.bound_s * t,
                               link_bytes=np.asarray(st.link_bytes) * b, group_finish_s=st.group_finish_s * t,
                               examples=list(st.examples))


def _step_adaptive(ph, ctx, guard):
    """Price one step of ``ph`` with adaptive routing: an engine ``_Step``."""
    from ..topo import multipath, routing
    from ..topo.routing.core import node_arrays
    from . import engine
    lt = ctx.table
    node_of_rank = node_arrays(ctx.G, lt).node_of_rank
    st = _step_certified(ph, ctx, guard, node_of_rank) if CERTIFY else None
    if st is not None:
        return st
    auto = automorphism_fold(ctx.G, ph, lt, ctx.cap, ctx.tiers) if ctx.symmetry else (None, "")
    if auto[0] is not None:
        return _step_automorphisms(ph, ctx, *auto)
    f, refused = engine._fold(ctx.G, ph, lt, "equal", ctx.tiers, ctx.symmetry, guard)
    if auto[1]:
        refused.insert(0, ("automorphisms", auto[1]))
    if f is not None and f.quotient is None:
        s = engine._fold_stabilizer(ctx.G, ph, lt, "equal", guard)
        if s is not None:
            refused.extend(s.attempts())
            f = s
    if f is not None and f.quotient is not None:
        q = f.quotient
        S = q.routes.shares()
        paths = multipath.paths_of(S, lt.src, lt.dst, node_of_rank[q.rep_src], node_of_rank[q.rep_dst],
                                   link_group=q.link_orbit, group_capacity_Bps=q.orbit_capacity(ctx.cap),
                                   multiplicity=q.multiplicity, aggregate=False)
        if paths.n_arcs > multipath.MAX_ARCS:
            raise refuse_size(f"the folded program's arc variables ({q.n_classes:,} classes)", paths.n_arcs,
                              multipath.MAX_ARCS)
        sizes = np.full(q.n_classes, ph.flow_bytes)
        step_bw, step_bound, gbytes, finish, events = _solve(paths, sizes, ctx.bound_only)
        lb = q.per_link(gbytes)
        orbit_fin = np.zeros(int(q.row_orbit.max()) + 1)
        np.maximum.at(orbit_fin, q.row_orbit[q.rep_row], finish)
        g_fin = np.zeros(ctx.n_groups)
        np.maximum.at(g_fin, ph.row_group, orbit_fin[q.row_orbit])
        st = engine._Step(step_bw, step_bound, lb, float(np.max(q.routes.latency_ns)), events, g_fin,
                          relayed=int(q.multiplicity[np.asarray(q.routes.relayed)].sum()),
                          note=q.describe())
        st.path, st.quotient_size = f.method, int(q.n_classes)
        st.refused = tuple((m, r) for m, r in refused if r)
        return st
    why = "; ".join(r for _, r in refused if r)
    sel, src, dst = engine._flow_pairs(ph)
    if len(src) > multipath.MAX_FLOWS:
        raise refuse_size("flows", len(src), multipath.MAX_FLOWS, why)
    routes = routing.route(ctx.G, src, dst, split="equal", tiers=ctx.tiers, links=lt)
    ok, reach, bad, examples = engine._reached(ph, sel, src, dst, routes)
    rows = np.flatnonzero(ok)
    sizes = ph.size_bytes[reach]
    if len(rows) == 0:
        step_bw = step_bound = 0.0
        lb, finish, events = np.zeros(len(ctx.cap)), np.zeros(0), 0
    else:
        paths = multipath.paths_of(routes.shares(rows), lt.src, lt.dst, node_of_rank[src[rows]],
                                   node_of_rank[dst[rows]], capacity_Bps=ctx.cap, aggregate=True)
        if paths.n_arcs > multipath.MAX_ARCS:
            raise refuse_size("arc variables", paths.n_arcs, multipath.MAX_ARCS, why)
        step_bw, step_bound, lb, finish, events = _solve(paths, sizes, ctx.bound_only)
    g_fin = np.zeros(ctx.n_groups)
    if finish.size:
        np.maximum.at(g_fin, ph.group[reach], finish)
    lat_ns = float(np.max(np.asarray(routes.latency_ns)[ok])) if ok.any() else 0.0
    st = engine._Step(step_bw, step_bound, lb, lat_ns, events, g_fin, len(bad), examples,
                      relayed=int(np.asarray(routes.relayed)[ok].sum()), reach=reach)
    st.refused = tuple(refused)
    return st


def _step_certified(ph, ctx, guard, node_of_rank):
    """The phase priced with ``equal`` where :func:`certify_equal` proves those rates multipath
    max-min fair (no linear program), else None."""
    import dataclasses
    from ..topo import multipath, routing, solver
    from . import engine
    eq = dataclasses.replace(ctx, split="equal")
    lt = ctx.table
    f, refused = engine._fold(ctx.G, ph, lt, "equal", ctx.tiers, ctx.symmetry, guard)
    if f is not None and f.quotient is None:
        s = engine._fold_stabilizer(ctx.G, ph, lt, "equal", guard)
        if s is not None:
            f = s
    if f is not None and f.quotient is not None:
        q = f.quotient
        P, Q, capO = q.routes.flow_piece, q.piece_orbit, q.orbit_capacity(ctx.cap)
        st = engine._step_classes(ph, q, eq)
        shares = q.routes.shares()
        for layers in (False, True):        # the ends first (cheap: no search), then every hop layer
            cuts = _Cuts(shares, lt.src, lt.dst, q.link_orbit, node_of_rank[q.rep_src], node_of_rank[q.rep_dst],
                         layers=layers)
            ok, why = certify_equal(cuts, P, Q, capO, q.multiplicity, np.full(q.n_classes, ph.flow_bytes),
                                    st.bound_s, ctx.bound_only)
            if ok:
                break
        if not ok:
            return None
        st.path, st.quotient_size = f.method, int(q.n_classes)
        st.refused = tuple((m, r) for m, r in refused if r)
    else:
        sel, src, dst = engine._flow_pairs(ph)
        if len(src) > multipath.MAX_FLOWS * 10:
            return None
        engine._guard_before_routing(solver, len(src), len(ctx.cap), ctx.bound_only, ctx.memory_limit_bytes)
        routes = routing.route(ctx.G, src, dst, split="equal", tiers=ctx.tiers, links=lt)
        ok_, reach, _, _ = engine._reached(ph, sel, src, dst, routes)
        rows = np.flatnonzero(ok_)
        if not len(rows):
            return None
        S = routes.shares(rows)
        if S.nnz > 4 * CERT_MAX_SUPPORT:
            return None
        st = engine._step_flows(ph, eq, routes)
        if parallel_planes(S, lt, node_of_rank[src[rows]], node_of_rank[dst[rows]]):
            st.refused = tuple(refused)
            st.note = ((st.note + "; ") if st.note else "") + (
                "adaptive = equal here for any traffic: every flow spreads evenly over all of its ends' "
                "equal-capacity links (parallel planes), so no split can do better: no linear program")
            return st
        for layers in (False, True)[:1 + (S.nnz <= CERT_MAX_SUPPORT)]:   # the ends first (cheap), then every hop layer
            cuts = _Cuts(S, lt.src, lt.dst, np.arange(len(lt)), node_of_rank[src[rows]], node_of_rank[dst[rows]],
                         layers=layers)
            ok, why = certify_equal(cuts, routes.flow_piece[rows], routes.piece_link, ctx.cap, np.ones(len(rows)),
                                    ph.size_bytes[reach], st.bound_s, ctx.bound_only)
            if ok:
                break
        if not ok:
            return None
        st.refused = tuple(refused)
    st.note = ((st.note + "; ") if st.note else "") + (
        f"adaptive = equal here, proved by saturated cuts ({cuts.n_cuts:,} checked): no linear program")
    return st


def parallel_planes(S, lt, src_node, dst_node) -> bool:
    """Whether the equal split's max-min rates are the multipath ones for ANY traffic, by structure.

    True when every flow's route support is exactly all of its source's out-links and all of its
    destination's in-links, each carrying ``1/degree`` of the flow, and each node's out-links (and
    in-links) have one capacity: the fabric is parallel planes (a single switched tier such as a
    Jalapeño rack, NVL72's switch trays) and the flow takes every plane.  Then any multipath split
    of any rates can be averaged over the planes without overloading a link (a chip's out-links
    carry at most ``k x capacity`` in total, and the even split puts a ``1/k`` share of that on each),
    so both splits allow the same rate vectors and have the same max-min fair rates, at every event.
    Conservative: anything else (a switch-to-switch hop, a failed lane, a flow missing a plane) is
    False and the cut certificate or the linear program decide.

    Parameters
    ----------
    S : scipy.sparse matrix, shape (F, L)
        Each flow's share of each link (``Routes.shares``).
    lt : LinkTable
    src_node, dst_node : numpy.ndarray of int, shape (F,)
        Link-table node index of each flow's ends.
    """
    import scipy.sparse as sp
    S = sp.csr_array(S)
    if S.shape[0] == 0 or S.nnz == 0:
        return False
    row = np.repeat(np.arange(S.shape[0]), np.diff(S.indptr))
    link = S.indices.astype(np.int64)
    tail, head = np.asarray(lt.src)[link], np.asarray(lt.dst)[link]
    src, dst = np.asarray(src_node, np.int64)[row], np.asarray(dst_node, np.int64)[row]
    up, down = tail == src, head == dst
    if not np.all(up ^ down):                       # only the ends' links, each once as up or down
        return False
    n = len(lt.nodes)
    cap = np.asarray(lt.capacity_gbps, np.float64)
    out_deg = np.bincount(lt.src, minlength=n)
    in_deg = np.bincount(lt.dst, minlength=n)
    # every out-link (in-link) of a node has one capacity
    for ends, deg in ((lt.src, out_deg), (lt.dst, in_deg)):
        lo = np.full(n, np.inf)
        hi = np.zeros(n)
        np.minimum.at(lo, ends, cap)
        np.maximum.at(hi, ends, cap)
        if np.any((deg > 0) & (hi > lo * (1 + 1e-12))):
            return False
    n_up = np.bincount(row[up], minlength=S.shape[0])
    n_down = np.bincount(row[down], minlength=S.shape[0])
    f_src, f_dst = np.asarray(src_node, np.int64), np.asarray(dst_node, np.int64)
    if np.any(n_up != out_deg[f_src]) or np.any(n_down != in_deg[f_dst]):
        return False                                # a flow that misses a plane (or takes a detour)
    share = S.data
    want = np.where(up, 1.0 / np.maximum(out_deg[src], 1), 1.0 / np.maximum(in_deg[dst], 1))
    return bool(np.allclose(share, want, rtol=1e-9, atol=0.0))


def _step_automorphisms(ph, ctx, paths, info):
    """The engine ``_Step`` of a phase folded by :func:`automorphism_fold`."""
    from ..topo import multipath
    from . import engine
    if paths.n_arcs > multipath.MAX_ARCS:
        raise refuse_size("the folded program's arc variables", paths.n_arcs, multipath.MAX_ARCS)
    C = paths.n_rows
    sizes = np.full(C, ph.flow_bytes)
    step_bw, step_bound, gbytes, finish, events = _solve(paths, sizes, ctx.bound_only)
    lb = np.asarray(gbytes)[info["link_orbit"]] / info["orbit_size"][info["link_orbit"]]
    g_fin = np.zeros(ctx.n_groups)
    np.maximum.at(g_fin, ph.row_group[info["row_t"][info["A"]]], finish[info["cls"]])
    routes = info["routes"]
    n_flows = int(paths.multiplicity.sum())
    note = (f"automorphisms ({info['n_twins']:,} twin classes, {info['n_generators']} fabric generators): "
            f"{n_flows:,} flows solved as {C:,} class{'es' if C != 1 else ''}")
    st = engine._Step(step_bw, step_bound, lb, float(np.max(routes.latency_ns)), events, g_fin, note=note)
    st.path, st.quotient_size = "automorphisms", C
    return st


def _solve(paths, sizes, bound_only: bool):
    """(step time, bound, bytes per constraint, finish per row, events)."""
    from ..topo import multipath
    if bound_only:
        t, gbytes = multipath.bound_s(paths, sizes)
        return t, t, gbytes, np.full(paths.n_rows, t), 0
    r = multipath.simulate(paths, sizes)
    return r.time_s, r.bound_s, r.group_bytes, np.asarray(r.finish_s), r.events


# ---------------------------------------------------------------------------------------
# The automorphism fold: twins and the verified fabric symmetries together
# ---------------------------------------------------------------------------------------
def automorphism_fold(G, ph, lt, cap: np.ndarray, tiers: str = "rule"):
    """Fold an all-to-all phase by every verified symmetry of the (possibly degraded) fabric at once.

    The group: swaps of twin chips (same rack, no forwarding, the same links to the same
    neighbours) with the generators :func:`~fabricsim.collectives.whatif.orbits.fabric_symmetry`
    verifies on ``G`` itself (rack, rail-pair, switch permutations ...: node permutations
    that map links onto links with equal attributes, keep the labels the routing reads
    and map every row onto a row).  Each maps the fabric, the rows and every flow's
    allowed paths (the support of its ``equal`` route: ECMP shortest paths on its tier)
    onto themselves, so the multipath max-min rates are constant on its flow orbits and
    some optimal split is invariant: the program over flow orbits and link orbits is exact.

    Flow orbits: the flows from twin class ``A`` to twin class ``B`` (one row) are one
    orbit of the twin swaps; the generators merge those orbits (union-find on the images
    of a representative pair).  Link orbits: twin swaps join links that differ only in
    the twin chip at one end; the generators join each link with its image.

    Refused (None, reason) where routes relay (the relay is chosen by in-rack position,
    which twin swaps do not keep), for ordered patterns (rings, shifts), or when no
    generator verifies and no chips are twins (then the policy's own fold is tried).

    Returns
    -------
    (multipath.Paths, info dict) or (None, reason)
    """
    from scipy.sparse import csgraph
    import scipy.sparse as sp
    from ..topo import multipath, routing
    from ..topo.routing.core import node_arrays
    from .whatif.orbits import _relays, fabric_symmetry
    if ph.pairs is not None:
        return None, "an ordered pattern (ring, shift): twin swaps would reorder it"
    if not ph.rows_disjoint or ph.pair_bytes is not None:
        return None, "rows share chips or carry unequal bytes"
    policy = routing.policy_of(G)
    if policy.tier_rule and _relays(G):
        return None, "routes relay (rail-only PXN): relays are chosen by in-rack position, which twin swaps move"
    if policy.dimension_order:
        return None, "dimension-order routes tell torus neighbours apart (the translation folds apply)"
    net = node_arrays(G, lt)
    n = net.n
    rows = np.asarray(ph.rows, np.int64)
    R, m = rows.shape
    nodes_of = net.node_of_rank
    # row of each chip node (-1: in no row)
    node_row = np.full(n, -1, np.int64)
    chip_nodes = nodes_of[rows.ravel()]
    if np.any(chip_nodes < 0):
        return None, "a row names a rank no chip carries"
    node_row[chip_nodes] = np.repeat(np.arange(R), m)
    # twin class of each chip node: (row, rack, non-forwarding, neighbour set with capacities)
    out_nb = {}
    for l in np.flatnonzero(node_row[lt.src] >= 0).tolist():
        out_nb.setdefault(int(lt.src[l]), []).append((int(lt.dst[l]), float(cap[l]), float(lt.latency_ns[l]),
                                                      int(lt.hops[l])))
    rack = net.attr.get("rack", np.full(n, -1, np.int64))
    sig = {}
    twin = np.full(n, -1, np.int64)
    for v in chip_nodes.tolist():
        key = (int(node_row[v]), int(rack[v]), bool(net.fwd[v]), tuple(sorted(out_nb.get(v, []))))
        twin[v] = sig.setdefault(key, len(sig))
    T = len(sig)
    size_t = np.bincount(twin[chip_nodes], minlength=T)
    # generators, as permutations of the link table's nodes
    sym = fabric_symmetry(G, [list(map(int, r)) for r in rows], "direct")
    ix = sym.ix
    to_lt = np.array([lt.node_index.get(v, -1) for v in ix.nodes], np.int64)
    gens = []
    for g in sym.generators:
        perm = np.arange(n)
        have = to_lt >= 0
        img = to_lt[g.perm]
        if np.any(have & (img < 0)):
            continue
        perm[to_lt[have]] = img[have]
        gens.append(perm)
    if not gens and T == len(chip_nodes):
        return None, "no generator verifies and no two chips are twins"
    # flow orbits: (twin A, twin B) pairs in one row, merged by the generators
    rep_node = np.zeros(T, np.int64)
    rep_node[twin[chip_nodes[::-1]]] = chip_nodes[::-1]           # first chip of each class
    row_t = np.zeros(T, np.int64)
    row_t[twin[chip_nodes]] = node_row[chip_nodes]
    A, B = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
    A, B = A.ravel(), B.ravel()
    keep = (row_t[A] == row_t[B]) & ((A != B) | (size_t[A] > 1))
    A, B = A[keep], B[keep]
    pid = np.full((T, T), -1, np.int64)
    pid[A, B] = np.arange(len(A))
    ei, ej = [], []
    for perm in gens:
        ta, tb = twin[perm[rep_node[A]]], twin[perm[rep_node[B]]]
        if np.any(ta < 0) or np.any(tb < 0) or np.any(pid[ta, tb] < 0):
            return None, "a generator maps a flow outside the phase"
        ei.append(np.arange(len(A)))
        ej.append(pid[ta, tb])
    P = len(A)
    if ei:
        M = sp.csr_matrix((np.ones(sum(map(len, ei))), (np.concatenate(ei), np.concatenate(ej))), shape=(P, P))
        _, cls = csgraph.connected_components(M, directed=False)
    else:
        cls = np.arange(P)
    C = int(cls.max()) + 1
    mult_pair = np.where(A == B, size_t[A] * (size_t[A] - 1), size_t[A] * size_t[B]).astype(np.float64)
    mult = np.bincount(cls, weights=mult_pair, minlength=C)
    first = np.full(C, -1, np.int64)
    first[cls[::-1]] = np.arange(P)[::-1]
    # representative flow of each class: two distinct chips of its first (A, B)
    ra, rb = A[first], B[first]
    members = [np.flatnonzero(twin == t) for t in range(T)] if T else []
    rep_s = np.array([members[a][0] for a in ra], np.int64)
    rep_d = np.array([members[b][1] if a == b else members[b][0] for a, b in zip(ra, rb)], np.int64)
    # link orbits: twin swaps (a chip end replaced by its class) and generator images
    L = len(lt)
    su, sv = lt.src.astype(np.int64), lt.dst.astype(np.int64)
    ku = np.where(twin[su] >= 0, n + twin[su], su)
    kv = np.where(twin[sv] >= 0, n + twin[sv], sv)
    _, base = np.unique(ku * (n + T + 1) + kv, return_inverse=True)
    base = np.asarray(base).ravel()
    lkey = su * n + sv
    korder = np.argsort(lkey, kind="stable")
    ksorted = lkey[korder]
    li, lj = [np.arange(L)], [base + L]
    for perm in gens:
        k = perm[su] * n + perm[sv]
        pos = np.minimum(np.searchsorted(ksorted, k), L - 1)
        img = np.where(ksorted[pos] == k, korder[pos], -1)
        if np.any(img < 0):
            return None, "a generator maps a link onto no link"
        li.append(np.arange(L))
        lj.append(img)
    NB = int(base.max()) + 1 + L
    M = sp.csr_matrix((np.ones(sum(map(len, li))), (np.concatenate(li), np.concatenate(lj))), shape=(NB, NB))
    _, lab = csgraph.connected_components(M, directed=False)
    _, link_orbit = np.unique(lab[:L], return_inverse=True)
    link_orbit = np.asarray(link_orbit).ravel()
    O = int(link_orbit.max()) + 1
    first_cap = np.zeros(O)
    first_cap[link_orbit] = cap
    if not np.allclose(first_cap[link_orbit], cap, rtol=1e-12, atol=0):
        return None, "links the symmetries exchange differ in capacity"
    orbit_size = np.bincount(link_orbit, minlength=O)
    group_cap = np.bincount(link_orbit, weights=cap, minlength=O)
    # the representatives' equal routes: their supports are the allowed paths
    routes = routing.route(G, net.rank[rep_s], net.rank[rep_d], split="equal", tiers=tiers, links=lt)
    if not np.all(routes.reachable):
        return None, "a representative flow has no route"
    paths = multipath.paths_of(routes.shares(), lt.src, lt.dst, rep_s, rep_d, link_group=link_orbit,
                               group_capacity_Bps=group_cap, multiplicity=mult, aggregate=False)
    info = dict(cls=cls, A=A, B=B, row_t=row_t, routes=routes, link_orbit=link_orbit, orbit_size=orbit_size,
                n_generators=len(gens), n_twins=T)
    return paths, info


# ---------------------------------------------------------------------------------------
# The certificate: where the equal split's max-min rates are already multipath max-min fair
# ---------------------------------------------------------------------------------------
# Try the certificate before any linear program (tests turn it off to compare with the LP)
CERTIFY = True
# Support entries (flow x link) the certificate may search by hop layer when no symmetry fold
# applies (I: ~100 bytes each in numpy temporaries; 4 M keep it under half a GiB and a few
# seconds); the sources' and destinations' links alone are tried up to 4x as many
CERT_MAX_SUPPORT = 4_000_000
# Relative tolerance of "saturated" and "equal rates" in the certificate: the fixed-split
# solver's rates are exact up to roundoff (its own rel_tol is 1e-9)
CERT_TOL = 1e-9


def _sorted_unique(x: np.ndarray) -> np.ndarray:
    x = np.sort(x)
    return x[np.r_[True, x[1:] != x[:-1]]] if len(x) else x


class _Cuts:
    """Cuts of a phase's flow classes from their route supports, and the classes forced across each.

    A class's support (the links its ``equal`` route uses) is layered by hop distance from
    its source: the links leaving the nodes at distance ``d`` (``d`` below the destination's
    distance) meet every path of the support, so each layer is a cut the class is forced
    across.  A cut is the set of link orbits of such a layer (all links of each orbit);
    classes whose layers give the same set share it.  Only those classes are listed as
    forced across it: a subset of the classes forced across it, which is enough for
    :func:`certify_equal` (if the listed ones fill the cut, no other class can cross it).

    Attributes
    ----------
    cut_orbits : list of numpy.ndarray
        The orbits of each cut.
    pair_cut, pair_cls : numpy.ndarray of int64
        (cut, class) pairs: the class is forced across the cut.
    """

    def __init__(self, S, link_src, link_dst, link_orbit, src_node, dst_node, layers: bool = True):
        import scipy.sparse as sp
        S = sp.csr_array(S)
        S.eliminate_zeros()
        C = S.shape[0]
        link_orbit = np.asarray(link_orbit, np.int64)
        e_cls = np.repeat(np.arange(C), np.diff(S.indptr))
        links = S.indices.astype(np.int64)
        tails = np.asarray(link_src, np.int64)[links]
        heads = np.asarray(link_dst, np.int64)[links]
        src, dst = np.asarray(src_node, np.int64), np.asarray(dst_node, np.int64)
        if layers:
            dt, keep, n_lay = self._depths(C, e_cls, tails, heads, src, dst)
        else:
            # the source's out-links and the destination's in-links only (no search: cheap)
            out, into = tails == src[e_cls], heads == dst[e_cls]
            keep, dt, n_lay = out | into, np.where(out, 0, 1), 2
        O = int(link_orbit.max(initial=0)) + 1
        layer = e_cls[keep] * n_lay + dt[keep]                   # (class, depth)
        key = _sorted_unique(layer * O + link_orbit[links[keep]])     # by layer, then orbit
        lay, orb = key // O, key % O
        grp = np.flatnonzero(np.r_[True, lay[1:] != lay[:-1]])
        bounds = np.r_[grp, len(key)].tolist()
        ids: dict[bytes, int] = {}
        cut_of = np.fromiter((ids.setdefault(orb[a:b].tobytes(), len(ids)) for a, b in zip(bounds[:-1], bounds[1:])),
                             np.int64, count=len(grp))
        self.cut_orbits = [np.frombuffer(k, np.int64) for k in ids]
        pairs = _sorted_unique(cut_of * C + lay[grp] // n_lay)
        self.pair_cut, self.pair_cls = pairs // C, pairs % C

    @staticmethod
    def _depths(C, e_cls, tails, heads, src, dst):
        """(hop depth of each support link's tail, which links lie before the destination's depth, depths)."""
        N = int(max(tails.max(initial=0), heads.max(initial=0), src.max(initial=0), dst.max(initial=0))) + 1
        # one node per (class, fabric node); sorting, not np.unique (numpy's hash-based unique
        # is several times slower on these keys)
        cn = np.arange(C) * N
        keys = _sorted_unique(np.concatenate([e_cls * N + heads, cn + src, cn + dst]))
        t, h = np.searchsorted(keys, e_cls * N + tails), np.searchsorted(keys, e_cls * N + heads)
        s_, d_ = np.searchsorted(keys, cn + src), np.searchsorted(keys, cn + dst)
        depth = np.full(len(keys), np.iinfo(np.int64).max, np.int64)
        depth[s_] = 0
        d = 0
        while True:                                  # breadth-first, all classes at once
            grow = (depth[t] == d) & (depth[h] > d + 1)
            if not grow.any():
                break
            depth[h[grow]] = d + 1
            d += 1
        dt = depth[t]
        return dt, dt < depth[d_][e_cls], d + 1      # layers before the destination: cuts

    @property
    def n_cuts(self) -> int:
        return len(self.cut_orbits)


def certify_equal(cuts: _Cuts, P, Q, capO, mult, size_bytes, bound_s: float, bound_only: bool):
    """Whether the equal split's max-min rates are the multipath max-min fair ones at every event.

    The certificate (exact): a cut ``K`` is *tight* at an event when the classes forced
    across it carry its whole capacity there (``sum m_c r_c = cap(K)``).  A class is
    certified when some tight cut it is forced across carries no faster class.  If every
    running class is certified, the rates are multipath max-min fair: by induction over
    the rate levels, the max-min fair vector ``x`` is lexicographically at least ``r``
    (``r`` is one split), so every class not yet proved has ``x >= `` the current level;
    a tight cut bounds its forced classes' sum by ``cap(K)``, which ``r`` already uses up,
    so none of them exceeds ``r``.  As the rates agree at every event, so do the finish
    times; the bound agrees when some cut's forced bytes over its capacity reach the
    fixed split's link-load bound (a lower bound for any split).

    Returns
    -------
    (bool, str)
        Certified, and a one-line reason when not.
    """
    from ..topo import solver
    capO = np.asarray(capO, np.float64)
    size = np.asarray(size_bytes, np.float64)
    mult = np.asarray(mult, np.float64)
    K = cuts.n_cuts
    capK = np.array([capO[k].sum() for k in cuts.cut_orbits])
    pc, pf = cuts.pair_cut, cuts.pair_cls
    finite = np.isfinite(capK) & (capK > 0)
    fb = np.bincount(pc, weights=mult[pf] * size[pf], minlength=K)
    lb = float(np.max(fb[finite] / capK[finite], initial=0.0))
    if lb < bound_s * (1 - CERT_TOL):
        return False, "no cut reaches the fixed split's link-load bound"
    if bound_only:
        return True, ""
    left = size.copy()
    alive = left > 0
    events = 0
    while alive.any():
        idx = np.flatnonzero(alive)
        r = np.zeros(len(size))
        r[idx] = solver.maxmin_rates(P[idx], Q, capO, multiplicity=mult[idx]).rate_Bps
        on = alive[pf]
        load = np.bincount(pc[on], weights=(mult * r)[pf[on]], minlength=K)
        tight = finite & (load >= capK * (1 - CERT_TOL))
        top = np.zeros(K)
        np.maximum.at(top, pc[on], r[pf[on]])
        good = on & tight[pc] & (r[pf] >= top[pc] * (1 - CERT_TOL))
        ok = np.zeros(len(size), bool)
        ok[pf[good]] = True
        if not ok[idx].all():
            return False, f"{int((~ok[idx]).sum()):,} flow classes have no saturated cut at event {events + 1}"
        dt = left[idx] / r[idx]
        step = float(dt.min())
        done = idx[dt <= step * (1 + CERT_TOL)]
        left[idx] -= r[idx] * step
        left[done] = 0.0
        alive[done] = False
        events += 1
    return True, ""
