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

import numpy as np

from ..topo.errors import BadInput

__all__ = ["step_adaptive", "refuse_size"]

NOTE = ("adaptive routing: each flow spreads over every path of its equal-cost route set; rates are the "
        "multipath max-min fair allocation (exact, a linear program per fill level)")


def refuse_size(what: str, n: int, limit: int, why: str = "") -> BadInput:
    """The one-line refusal of a phase too big for the multipath program."""
    # one reason each (two folds may refuse for the same cause, in other words)
    reasons = list(dict.fromkeys(r.strip() for r in why.split(";") if r.strip()))
    if len(reasons) > 1 and len({r.split(":")[0] for r in reasons}) == 1:
        reasons = reasons[:1]
    extra = f" ({'; '.join(reasons)})" if reasons else ""
    return BadInput(f"--split adaptive: {what} {n:,} exceeds {limit:,} and no symmetry fold applies{extra}; "
                    f"use --split equal (fixed ECMP shares) or a smaller group", param="split")


def step_adaptive(ph, ctx, guard):
    """Price one step of ``ph`` with adaptive routing: an engine ``_Step``."""
    from ..topo import multipath, routing
    from ..topo.routing.core import node_arrays
    from . import engine
    lt = ctx.table
    node_of_rank = node_arrays(ctx.G, lt).node_of_rank
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
