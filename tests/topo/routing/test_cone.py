"""Routes of degraded tori and pair-by-pair ECMP against straightforward references.

The dimension-order router gives a pair whose path a failure broke one slot, which
its ECMP route (one piece per pair, walked inside the pair's shortest-path cone by
:mod:`fabricsim.topo.routing.cone`) fills.  Every test here compares the per-link
shares ``flow_piece @ piece_link``, reachability, hop counts and latencies with a
reference computed pair by pair from scratch (networkx distances, a coordinate walk),
or with the shared-piece ECMP router (``ecmp._generic_shared``), on several sizes.
"""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from fabricsim.fabrics import build
from fabricsim.topo.contract import forwarding_graph
from fabricsim.topo.failures import apply_failures
from fabricsim.topo.routing import cone, core, ecmp, link_table, route, torus

TOL = 1e-12


# ----------------------------------------------------------------------------------------
# references, pair by pair
# ----------------------------------------------------------------------------------------
def _dor_ref(G, s, d):
    """{(u, v): share} of the dimension-order walk on the intact torus of G's dims (no failures)."""
    dims = [int(k) for k in G.graph["dims"].split("x")]
    axes = "xyzw"[:len(dims)]
    cs = [G.nodes[s][a] for a in axes]
    cd = [G.nodes[d][a] for a in axes]
    name = {tuple(G.nodes[v][a] for a in axes): v for v in G if G.nodes[v].get("kind") == "chip"}
    shares, hops = {}, 0
    cur = list(cs)
    for i, k in enumerate(dims):
        e = (cd[i] - cur[i]) % k
        if e == 0:
            continue
        hops += min(e, k - e)
        ways = [(1, e)] if e < k - e else [(-1, k - e)] if e > k - e else [(1, e), (-1, k - e)]
        for sign, length in ways:
            p = list(cur)
            for _ in range(length):
                q = list(p)
                q[i] = (p[i] + sign) % k
                key = (name.get(tuple(p), tuple(p)), name.get(tuple(q), tuple(q)))
                shares[key] = shares.get(key, 0.0) + 1.0 / len(ways)
                p = q
        cur[i] = cd[i]
    return shares, hops


def _ecmp_ref(G, s, d, split="equal"):
    """{(u, v): share} of per-hop ECMP from s to d, and the hop count; (None, None) when out of reach."""
    H = forwarding_graph(G)
    keep = [v for v, a in H.nodes(data=True) if a.get("forwards") or v in (s, d)]
    K = H.subgraph(keep)
    if s not in K or d not in K or not nx.has_path(K, s, d):
        return None, None
    dist = nx.single_source_dijkstra_path_length(K, d, weight=lambda u, v, a: a.get("hops", 1))
    mass = {s: 1.0}
    shares = {}
    for u in sorted(dist, key=lambda x: -dist[x]):
        if u == d or u not in mass:
            continue
        nxt = [v for v in K[u] if v in dist and dist[u] == K[u][v].get("hops", 1) + dist[v]
               and (v == d or H.nodes[v].get("forwards"))]
        w = {v: (1.0 if split == "equal" else K[u][v]["capacity_gbps"]) for v in nxt}
        tot = sum(w.values())
        for v in nxt:
            x = mass[u] * w[v] / tot
            shares[(u, v)] = shares.get((u, v), 0.0) + x
            mass[v] = mass.get(v, 0.0) + x
    return shares, dist[s]


def _slowest(lt, shares, s, d):
    """Latency of the slowest path from s to d over the links with a share."""
    D = nx.DiGraph()
    D.add_edges_from((u, v, {"w": -lt.latency_ns[lt.index(u, v)]}) for u, v in shares)
    return -nx.bellman_ford_path_length(D, s, d, weight="w")


def _explicit(r, f):
    A = r.shares([f]).tocoo()
    lt = r.links
    return {(lt.nodes[lt.src[l]], lt.nodes[lt.dst[l]]): v for l, v in zip(A.col, A.data)}


def _check_torus(G, pairs, split="equal"):
    """route() of the pairs against the references: DOR where the walk is intact, else ECMP."""
    chips = {a["rank"]: v for v, a in G.nodes(data=True) if a.get("kind") == "chip"}
    s, d = pairs
    r = route(G, s, d, split=split)
    H = forwarding_graph(G)
    n_ecmp = 0
    for f in range(len(s)):
        a, b = chips.get(int(s[f])), chips.get(int(d[f]))
        if a is None or b is None:
            assert not r.reachable[f] and r.flow_piece[f].nnz == 0
            continue
        ref, hops = _dor_ref(G, a, b)
        if not all(H.has_edge(u, v) for u, v in ref):
            ref, hops = _ecmp_ref(G, a, b, split)
            n_ecmp += 1
        if ref is None:
            assert not r.reachable[f] and r.flow_piece[f].nnz == 0
            continue
        got = _explicit(r, f)
        assert r.reachable[f] and int(r.hops[f]) == hops
        assert set(got) == set(ref), f
        for k, v in ref.items():
            assert abs(got[k] - v) <= TOL * max(1.0, abs(v)), (f, k)
        lat = _slowest(r.links, ref, a, b)
        assert abs(r.latency_ns[f] - lat) <= TOL * lat
    return r, n_ecmp


def _degraded(dims, fails, latencies=False, seed=0):
    G = build("torus", dims=dims)
    if latencies:                       # unequal latencies: the slowest of several paths differs
        rng = np.random.default_rng(seed)
        for u, v, a in G.edges(data=True):
            a["latency_ns"] = float(rng.integers(500, 1500))
    return apply_failures(G, fails)[0]


# ----------------------------------------------------------------------------------------
# degraded tori: route() against the references
# ----------------------------------------------------------------------------------------
ONE = ["link:c00.00.00--c01.00.00"]
TWO = ["link:c00.00.00--c01.00.00", "link:c02.01.03--c02.02.03"]


@pytest.mark.parametrize("dims, fails", [("4x4x4", ONE), ("4x4x4", TWO), ("6x4x8", ONE), ("6x4x8", TWO),
                                         ("5x3", ["link:c00.00--c01.00"]), ("2x4x3", ["link:c00.00.00--c00.01.00"])])
@pytest.mark.parametrize("split", ["equal", "capacity"])
def test_degraded_torus_routes_match_reference(dims, fails, split):
    G = _degraded(dims, fails)
    n = G.number_of_nodes()
    s, d = np.nonzero(~np.eye(n, dtype=bool))
    if len(s) > 1200:                   # every pair is too many for the Python reference
        pick = np.random.default_rng(1).choice(len(s), 1200, replace=False)
        s, d = s[pick], d[pick]
    r, n_ecmp = _check_torus(G, (s, d), split)
    assert n_ecmp > 0                   # the failure rerouted some of them


def test_degraded_torus_unequal_latencies():
    G = _degraded("4x6x4", TWO[:1] + ["link:c01.02.03--c01.03.03"], latencies=True)
    s, d = np.nonzero(~np.eye(96, dtype=bool))
    pick = np.random.default_rng(2).choice(len(s), 1200, replace=False)
    _check_torus(G, (s[pick], d[pick]))


def test_failed_chip_and_link():
    # pairs of the lost chip are out of reach; pairs crossing it or the link are rerouted
    G = _degraded("4x4x4", ONE + ["node:c02.02.02"])
    lost = 2 * 16 + 2 * 4 + 2
    s, d = np.nonzero(~np.eye(64, dtype=bool))
    keep = (s == lost) | (d == lost) | (np.arange(len(s)) % 4 == 0)
    s, d = s[keep], d[keep]
    r, _ = _check_torus(G, (s, d))
    assert not r.reachable[(s == lost) | (d == lost)].any() and r.reachable[(s != lost) & (d != lost)].all()


def test_rerouted_pairs_take_one_piece_each():
    # each rerouted pair's row is a single entry (its ECMP route), the others their DOR arcs
    G = _degraded("4x4x4", ONE)
    s, d = np.nonzero(~np.eye(64, dtype=bool))
    r = route(G, s, d)
    net = core._net(G, r.links)
    _, bad = torus._dor_paths(net, net.node_of_rank[s], net.node_of_rank[d], "equal")
    rows = np.diff(r.flow_piece.indptr)
    assert bad.sum() > 0 and (rows[bad] == 1).all() and (rows[~bad] >= 1).all() and (rows[~bad] <= 3).all()
    # no piece is the empty placeholder, no DOR piece crosses the failed link
    lt = r.links
    gone = [lt.node_index["c00.00.00"], lt.node_index["c01.00.00"]]
    assert not ((np.isin(lt.src, gone) & np.isin(lt.dst, gone))).any()


@pytest.mark.parametrize("dims, fails", [("4x6x4", ONE), ("4x4x4", TWO[:1] + ["link:c03.00.00--c00.00.00"]),
                                         ("5x3", ["link:c00.00--c01.00"]), ("2x4x3", ["link:c00.00.00--c00.01.00"]),
                                         ("6x2x5", ONE), ("4x1x4", ONE)])
def test_stabilizer_quotient_routes_are_route_of_its_representatives(dims, fails):
    # the whole all-to-all's representatives are routed from their per-axis classes (a grid):
    # the very factors route() gives them pair by pair
    G = _degraded(dims, fails)
    n = G.number_of_nodes()
    q = torus.fold_stabilizer(G, np.arange(n)[None, :]).quotient
    assert q is not None and q.n_flows == n * (n - 1)
    r, got = route(G, q.rep_src, q.rep_dst), q.routes
    for name in ("flow_piece", "piece_link"):
        a, b = getattr(got, name), getattr(r, name)
        assert a.shape == b.shape and all(np.array_equal(getattr(a, x), getattr(b, x))
                                          for x in ("data", "indices", "indptr")), name
    for name in ("reachable", "relayed", "relay_rank", "hops", "latency_ns"):
        assert np.array_equal(getattr(got, name), getattr(r, name)), name


# ----------------------------------------------------------------------------------------
# ECMP pair by pair (the cone walk) against the shared pieces
# ----------------------------------------------------------------------------------------
def _same_part(a, b):
    A = (a.csr() @ a.pl).tocsr()
    B = (b.csr() @ b.pl).tocsr()
    assert A.shape == B.shape
    assert (a.reach == b.reach).all() and (a.hops == b.hops).all()
    D = abs(A - B)
    assert (D.max() if D.nnz else 0.0) <= TOL
    assert (A != 0).nnz == (B != 0).nnz
    assert np.allclose(a.lat, b.lat, rtol=TOL, atol=0)


def _graphs():
    yield "torus-4x4x4-failed", _degraded("4x4x4", TWO)
    yield "boardfly", build("boardfly", groups=3)
    yield "pod-static", build("jalapeno-pod", racks=2, leaf="static")      # patched circuits: 2 hops
    G = build("jalapeno-pod", racks=2)
    G.remove_node("r01/gsw2")
    yield "pod-degraded", G


@pytest.mark.parametrize("name, G", list(_graphs()), ids=lambda x: x if isinstance(x, str) else "")
@pytest.mark.parametrize("split", ["equal", "capacity"])
def test_cone_walk_matches_shared_pieces(name, G, split):
    lt = link_table(G)
    net = core._net(G, lt)
    mask = np.ones(len(lt), bool)
    chips = np.flatnonzero(net.is_chip)
    rng = np.random.default_rng(3)
    s = rng.choice(chips, 600)
    d = rng.choice(chips, 600)
    s, d = s[s != d], d[s != d]
    s, d = np.concatenate([s, s[:20]]), np.concatenate([d, d[:20]])      # repeated pairs share a piece
    ref = ecmp._generic_shared(net, mask, s, d, split)
    for from_source in (False, True):
        got = cone.route_pairs(net, mask, s, d, split, from_source=from_source)
        _same_part(got, ref)
        assert got.K == len(np.unique(s[got.reach] * net.n + d[got.reach]))


def test_cone_walk_on_a_link_subset_and_out_of_reach():
    # a subset of links (ECMP on one tier) leaves some pairs without a path
    G = build("jalapeno-pod", racks=2)
    lt = link_table(G)
    net = core._net(G, lt)
    mask = np.asarray(lt.tier) == "local"
    s, d = np.nonzero(~np.eye(256, dtype=bool))
    pick = np.random.default_rng(4).choice(len(s), 800, replace=False)
    s, d = net.node_of_rank[s[pick]], net.node_of_rank[d[pick]]
    ok = core._Reach(net, mask)(s, d)
    assert ok.any() and not ok.all()
    ref = ecmp._generic_shared(net, mask, s, d, "equal")
    for from_source in (False, True):
        got = cone.route_pairs(net, mask, s, d, "equal", from_source=from_source)
        _same_part(got, ref)
        assert (got.reach == ok).all() and (np.diff(got.csr().indptr) == got.reach).all()


def test_generic_mixes_both_ways_by_destination(monkeypatch):
    # destinations with many sources share pieces, the others are walked: same routes as all shared
    G = _degraded("4x4x4", ONE)
    lt = link_table(G)
    net = core._net(G, lt)
    mask = np.ones(len(lt), bool)
    monkeypatch.setattr(ecmp, "_few_per_dest", lambda net, mask: 8)
    s_all, d_all = np.nonzero(~np.eye(64, dtype=bool))
    busy = d_all < 3                                     # 63 sources each
    quiet = np.flatnonzero(~busy)[::40]                  # a few sources each
    pick = np.concatenate([np.flatnonzero(busy), quiet])
    s, d = net.node_of_rank[s_all[pick]], net.node_of_rank[d_all[pick]]
    _same_part(ecmp._generic(net, mask, s, d, "equal"), ecmp._generic_shared(net, mask, s, d, "equal"))


# ----------------------------------------------------------------------------------------
# the pieces: breadth-first levels, broken arcs
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_bfs_levels_match_shortest_paths(seed):
    from scipy.sparse import csgraph
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n = int(rng.integers(2, 50))
        m = int(rng.integers(0, 4 * n))
        S = sp.csr_matrix((np.ones(m), (rng.integers(0, n, m), rng.integers(0, n, m))), shape=(n, n))
        keep = int(rng.integers(1, n + 1))
        roots = rng.integers(0, n, int(rng.integers(1, 6)))
        ref = csgraph.shortest_path(S, method="D", unweighted=True, indices=roots)[:, :keep]
        got = core._bfs_levels(S, roots, keep)
        assert (got == np.where(np.isfinite(ref), ref, -1)).all()


@pytest.mark.parametrize("dims", [(4, 4, 4), (5, 3), (2, 6), (7,)])
def test_broken_arcs_are_those_crossing_a_missing_link(dims):
    rng = np.random.default_rng(sum(dims))
    N = int(np.prod(dims))
    nd = len(dims)
    nbr = np.arange(nd * 2 * N).reshape(nd, 2, N)
    nbr[rng.random(nbr.shape) < 0.05] = -1
    strides = [int(np.prod(dims[i + 1:])) for i in range(nd)]
    bases = np.cumsum([0] + [N * (k - 1) for k in dims])
    K = int(bases[-1])
    got = torus._broken_arcs(nbr, dims, strides, bases, K)
    ref = np.zeros(K, bool)
    for i, k in enumerate(dims):
        for P in range(N):
            a = (P // strides[i]) % k
            for e in range(1, k):
                for dr, length, sign in ((0, e, 1), (1, k - e, -1)):
                    if 2 * length > k:
                        continue
                    pos = [P + ((a + sign * t) % k - a) * strides[i] for t in range(length)]
                    ref[bases[i] + P * (k - 1) + e - 1] |= bool((nbr[i, dr, pos] < 0).any())
    assert (got == ref).all()


# ----------------------------------------------------------------------------------------
# a bigger torus: the fold's ECMP pairs against the shared pieces
# ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_torus_12_rerouted_pairs_match_shared_pieces():
    G = _degraded("12x12x12", TWO)
    lt = link_table(G)
    net = core._net(G, lt)
    s, d = np.nonzero(~np.eye(1728, dtype=bool))
    part, bad = torus._dor_paths(net, net.node_of_rank[s], net.node_of_rank[d], "equal")
    s, d = net.node_of_rank[s[bad]], net.node_of_rank[d[bad]]
    mask = np.ones(len(lt), bool)
    ref = ecmp._generic_shared(net, mask, s, d, "equal")
    for from_source in (False, True):
        _same_part(cone.route_pairs(net, mask, s, d, "equal", from_source=from_source), ref)


def test_cone_walk_pair_to_itself():
    # a pair from a node to itself: reachable in 0 hops, no link, no piece entry (as the shared pieces)
    G = build("torus", dims="4x4x4")
    lt = link_table(G)
    net = core._net(G, lt)
    mask = np.ones(len(lt), bool)
    s, d = np.array([0, 1, 5]), np.array([0, 2, 5])
    ref = ecmp._generic_shared(net, mask, s, d, "equal")
    for from_source in (False, True):
        got = cone.route_pairs(net, mask, s, d, "equal", from_source=from_source)
        _same_part(got, ref)
        assert np.diff(got.csr().indptr).tolist() == [0, 1, 0] and got.lat.tolist() == [0.0, 1000.0, 0.0]
