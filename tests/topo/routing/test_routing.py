"""Tests of fabricsim.topo.routing: conservation, exact shares against independent
references (networkx shortest paths, an explicit DOR walk), degraded graphs, relays."""
from __future__ import annotations

from fractions import Fraction

import networkx as nx
import numpy as np
import pytest

from fabricsim.fabrics import FABRICS, build
from fabricsim.topo import routing as R
from fabricsim.topo.contract import forwarding_graph
from fabricsim.topo.routing import link_table, route


# ----------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------
def all_pairs(n):
    s, d = np.divmod(np.arange(n * n), n)
    keep = s != d
    return s[keep], d[keep]


def sample_pairs(n, k, seed):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, n, k)
    d = (s + rng.integers(1, n, k)) % n
    return s, d


def n_chips(G):
    return sum(1 for _, a in G.nodes(data=True) if a["kind"] == "chip")


def explicit(r, rows):
    """{(u, v): share} per flow in ``rows`` from the factored routes."""
    M = r.shares(rows).tocsr()
    lt = r.links
    out = []
    for i in range(len(rows)):
        row = M[i]
        out.append({(lt.nodes[lt.src[l]], lt.nodes[lt.dst[l]]): v for l, v in zip(row.indices, row.data)
                    if abs(v) > 1e-15})
    return out


def check_conservation(r, rows):
    """Shares leave the source summing to 1, enter the destination summing to 1, balance elsewhere."""
    lt = r.links
    n = len(lt.nodes)
    M = r.shares(rows).toarray()
    for i, f in enumerate(rows):
        if not r.reachable[f]:
            assert M[i].sum() == 0
            continue
        assert (M[i] >= 0).all()
        net = np.bincount(lt.src, weights=M[i], minlength=n) - np.bincount(lt.dst, weights=M[i], minlength=n)
        nz = np.flatnonzero(np.abs(net) > 1e-9)
        assert len(nz) == 2, f"flow {f}: imbalance at {[lt.nodes[k] for k in nz]}"
        assert sorted(np.round(net[nz], 9)) == [-1.0, 1.0]


def rank_node(G):
    return {a["rank"]: v for v, a in G.nodes(data=True) if a["kind"] == "chip"}


def ref_ecmp(G, s, d, *, edge_ok=lambda e: True, split="equal"):
    """Per-hop ECMP from scratch with networkx: {(u, v): share} of one unit from s to d."""
    H = forwarding_graph(G)
    keep = [v for v, a in H.nodes(data=True) if a.get("forwards") or v in (s, d)]
    K = nx.Graph()
    K.add_nodes_from(keep)
    K.add_edges_from((u, v, a) for u, v, a in H.subgraph(keep).edges(data=True) if edge_ok(a))
    if not nx.has_path(K, s, d):
        return None, None
    dist = nx.single_source_dijkstra_path_length(K, d, weight=lambda u, v, a: a.get("hops", 1))
    mass = {s: Fraction(1) if split == "equal" else 1.0}
    shares = {}
    for u in sorted(dist, key=lambda x: -dist[x]):
        if u == d or u not in mass:
            continue
        nxt = [v for v in K[u] if v in dist and dist[u] == K[u][v].get("hops", 1) + dist[v]
               and (v == d or H.nodes[v].get("forwards"))]
        w = {v: (1 if split == "equal" else K[u][v]["capacity_gbps"]) for v in nxt}
        tot = sum(w.values())
        for v in nxt:
            x = mass[u] * w[v] / tot
            shares[(u, v)] = shares.get((u, v), 0) + x
            mass[v] = mass.get(v, 0) + x
    return {k: float(v) for k, v in shares.items()}, dist[s]


def same_shares(a, b):
    assert set(a) == set(b), (set(a) ^ set(b))
    for k in a:
        assert a[k] == pytest.approx(b[k], abs=1e-12), k


def generic_only(monkeypatch):
    monkeypatch.setattr(R.leaf, "_switched", lambda *a: None)
    monkeypatch.setattr(R.leaf, "_leafspine", lambda *a: None)


# ----------------------------------------------------------------------------------------
# link table
# ----------------------------------------------------------------------------------------
def test_link_table_rack():
    G = build("jalapeno-rack")
    lt = link_table(G)
    assert len(lt) == 2 * G.number_of_edges() == 1536
    l = lt.index("r00/xpu000", "r00/lsw0")
    assert lt.capacity_gbps[l] == 800.0
    assert lt.capacity_Bps[l] == pytest.approx(800e9 / 8)
    assert lt.tier[l] == "local"
    # entering a switch pays its latency; entering a chip does not
    assert lt.latency_ns[l] == pytest.approx(5.0 + 450.0)
    assert lt.latency_ns[lt.index("r00/lsw0", "r00/xpu000")] == pytest.approx(5.0)
    with pytest.raises(KeyError, match="no link"):
        lt.index("r00/xpu000", "r00/xpu001")


def test_link_table_static_pod_virtual_edges():
    lt = link_table(build("jalapeno-pod", racks=2, leaf="static"))
    l = lt.index("r00/xpu003", "rail5/sw3")
    assert lt.hops[l] == 2 and lt.capacity_gbps[l] == 200.0


# ----------------------------------------------------------------------------------------
# argument checks
# ----------------------------------------------------------------------------------------
def test_bad_arguments():
    G = build("jalapeno-rack", trays=1)
    with pytest.raises(ValueError, match="split='fast'; choose one of: equal, capacity"):
        route(G, [0], [1], split="fast")
    with pytest.raises(ValueError, match="tiers='all'; choose one of: rule, any"):
        route(G, [0], [1], tiers="all")
    with pytest.raises(ValueError, match="src == dst == 2"):
        route(G, [0, 2], [1, 2])
    with pytest.raises(ValueError, match="1-D arrays of one length"):
        route(G, [0, 1], [1])


def test_unknown_rank_is_unreachable():
    G = build("jalapeno-rack", trays=1)
    r = route(G, [0, 0], [1, 99])
    assert r.reachable.tolist() == [True, False]
    assert r.flow_piece[1].nnz == 0 and r.hops[1] == 0


def test_empty():
    r = route(build("jalapeno-rack", trays=1), np.zeros(0, int), np.zeros(0, int))
    assert r.flow_piece.shape[0] == 0 and len(r) == 0


# ----------------------------------------------------------------------------------------
# conservation on every catalog fabric we can build small
# ----------------------------------------------------------------------------------------
SMALL = [("jalapeno-rack", {}), ("jalapeno-pod", {"racks": 2}), ("jalapeno-pod", {"racks": 3, "leaf": "static"}),
         ("jalapeno-pod", {"racks": 2, "rail_wiring": "per-port"}),
         ("jalapeno-pod", {"racks": 2, "rail_wiring": "per-port", "leaf": "static"}),
         ("nvl72", {}), ("helios", {}), ("torus", {"dims": "4x4x2"}), ("torus", {"dims": "3x5"}),
         ("boardfly", {"groups": 4})]


@pytest.mark.parametrize("name,params", [p for p in SMALL if p[0] in FABRICS], ids=lambda p: str(p))
@pytest.mark.parametrize("split", ["equal", "capacity"])
def test_conservation(name, params, split):
    G = build(name, **params)
    s, d = sample_pairs(n_chips(G), 300, seed=len(name))
    r = route(G, s, d, split=split)
    assert r.reachable.all()
    check_conservation(r, np.arange(len(s)))
    assert (r.hops > 0).all() and (r.latency_ns > 0).all()


# ----------------------------------------------------------------------------------------
# Jalapeño rack
# ----------------------------------------------------------------------------------------
def test_rack_every_pair_six_ways():
    G = build("jalapeno-rack")
    s, d = all_pairs(128)
    r = route(G, s, d)
    assert r.reachable.all() and (r.hops == 2).all() and not r.relayed.any()
    assert r.flow_piece.shape[1] == 2 * 128          # one up and one down piece per chip
    rows = np.arange(0, len(s), 811)
    for f, sh in zip(rows, explicit(r, rows)):
        su, du = f"r00/xpu{s[f]:03d}", f"r00/xpu{d[f]:03d}"
        assert len(sh) == 12
        assert all(v == pytest.approx(1 / 6) for v in sh.values())
        assert sum(1 for (u, _) in sh if u == su) == 6 and sum(1 for (_, v) in sh if v == du) == 6
    assert r.latency_ns[0] == pytest.approx(5 + 450 + 5)


def test_rack_without_a_switch():
    G = build("jalapeno-rack", trays=2)
    G.remove_node("r00/lsw2")
    r = route(G, [0, 3], [5, 9])
    for sh in explicit(r, [0, 1]):
        assert len(sh) == 10 and all(v == pytest.approx(1 / 5) for v in sh.values())


def test_rack_without_one_link():
    G = build("jalapeno-rack", trays=2)
    G.remove_edge("r00/xpu004", "r00/lsw1")
    r = route(G, [4, 2, 0], [7, 4, 1])
    a, b, c = explicit(r, [0, 1, 2])
    assert len(a) == 10 and len(b) == 10 and len(c) == 12
    assert ("r00/xpu004", "r00/lsw1") not in a and ("r00/lsw1", "r00/xpu004") not in b


def test_rack_capacity_split_degraded_bundle():
    G = build("jalapeno-rack", trays=2)
    e = G.edges["r00/xpu000", "r00/lsw3"]
    e["lanes"], e["capacity_gbps"] = 3, 3 * e["lane_gbps"]
    sh = explicit(route(G, [0], [1], split="capacity"), [0])[0]
    assert sh[("r00/xpu000", "r00/lsw3")] == pytest.approx(3 / 23)
    assert sh[("r00/lsw3", "r00/xpu001")] == pytest.approx(3 / 23)
    assert sh[("r00/xpu000", "r00/lsw0")] == pytest.approx(4 / 23)
    eq = explicit(route(G, [0], [1]), [0])[0]
    assert eq[("r00/xpu000", "r00/lsw3")] == pytest.approx(1 / 6)


def test_isolated_chip_unreachable():
    G = build("jalapeno-rack", trays=1)
    for sw in range(6):
        G.remove_edge("r00/xpu002", f"r00/lsw{sw}")
    r = route(G, [2, 0, 0], [0, 2, 1])
    assert r.reachable.tolist() == [False, False, True]
    assert r.flow_piece[0].nnz == 0


# ----------------------------------------------------------------------------------------
# Jalapeño pod
# ----------------------------------------------------------------------------------------
def test_pod_switched_per_lane():
    G = build("jalapeno-pod", racks=3)
    s = np.array([0, 0, 130])
    d = np.array([200, 5, 300])
    r = route(G, s, d)
    assert r.hops.tolist() == [4, 2, 4] and not r.relayed.any()
    inter, intra, _ = explicit(r, [0, 1, 2])
    out = {k: v for k, v in inter.items() if k[0] == "r00/xpu000"}
    assert len(out) == 4 and all(v == pytest.approx(1 / 4) for v in out.values())   # 8 lanes in 4 bundles
    up = {k: v for k, v in inter.items() if k[0].startswith("r00/gsw") and k[1].startswith("rail")}
    assert len(up) == 64 and all(v == pytest.approx(1 / 64) for v in up.values())
    into = {k: v for k, v in inter.items() if k[1] == "r01/xpu072"}
    assert len(into) == 4 and all(v == pytest.approx(1 / 4) for v in into.values())
    lt = r.links
    assert all(lt.tier[lt.index(*k)] == "global" for k in inter)
    assert all(lt.tier[lt.index(*k)] == "local" for k in intra) and len(intra) == 12


def test_pod_static_per_lane_relay():
    G = build("jalapeno-pod", racks=3, leaf="static")
    # rank 0: rack 0 tray 0 column 0; rank 128: rack 1 tray 0 column 0; 131: rack 1 tray 0 column 3
    r = route(G, [0, 0, 130], [128, 131, 0])
    assert r.relayed.tolist() == [False, True, True]
    assert r.relay_rank.tolist() == [-1, 3, 128]      # the chip of the source rack at d's position
    direct, relay, _ = explicit(r, [0, 1, 2])
    assert r.hops.tolist() == [4, 6, 6]
    assert len(direct) == 16 and all(v == pytest.approx(1 / 8) for v in direct.values())
    lt = r.links
    local = {k: v for k, v in relay.items() if lt.tier[lt.index(*k)] == "local"}
    assert len(local) == 12 and all(k[0].startswith("r00/") and k[1].startswith("r00/") for k in local)
    glob = {k: v for k, v in relay.items() if lt.tier[lt.index(*k)] == "global"}
    assert {u for u, _ in glob if u.startswith("r00/")} == {"r00/xpu003"}
    check_conservation(r, [0, 1, 2])


def test_pod_relays_all_to_all_counts():
    G = build("jalapeno-pod", racks=2, leaf="static")
    s, d = all_pairs(256)
    r = route(G, s, d)
    inter = (s // 128) != (d // 128)
    same_col = (s % 8) == (d % 8)
    assert (r.relayed == (inter & ~same_col)).all()
    assert set(np.unique(r.hops[r.relayed])) == {6}
    rel = np.flatnonzero(r.relayed)
    # the relay sits in the source rack at the destination's in-rack position
    assert (r.relay_rank[rel] == (s[rel] // 128) * 128 + d[rel] % 128).all()


def test_pod_per_port_failed_rail_switch_relays():
    G = build("jalapeno-pod", racks=2, rail_wiring="per-port", leaf="static")
    G.remove_node("rail0/sw0")       # serves column 0 of trays 0-1 in every rack
    # rank 0 / 128: tray 0 column 0 of rack 0 / 1, both lost their global port;
    # rank 16 / 144: tray 2 column 0, served by rail0/sw1
    s = [16, 0, 16, 0]
    d = [144, 144, 128, 128]
    r = route(G, s, d)
    assert r.reachable.all()
    assert r.relayed.tolist() == [False, True, True, True]
    # source side: 0 -> 16 (local) -> 144; destination side: 16 -> 144 -> 128 (local);
    # both sides: 0 -> 1 (the nearest chip with a global port) -> 129 -> 128
    assert r.relay_rank.tolist() == [-1, 16, 144, 1]
    assert r.hops.tolist() == [4, 6, 6, 8]
    check_conservation(r, [0, 1, 2, 3])
    lt = r.links
    both = explicit(r, [3])[0]
    assert {k[0] for k in both if lt.tier[lt.index(*k)] == "global" and k[0].startswith("r0")} == {"r00/xpu001"}
    assert ("r01/lsw0", "r01/xpu000") in both and ("r00/xpu000", "r00/lsw0") in both


def test_pod_relay_not_needed_under_any_is_still_relayed_where_no_path():
    G = build("jalapeno-pod", racks=2, leaf="static")
    r = route(G, [0, 0], [131, 5], tiers="any")
    assert r.relayed.tolist() == [True, False]
    assert r.hops.tolist() == [6, 2]
    check_conservation(r, [0, 1])


@pytest.mark.parametrize("params", [{}, {"leaf": "static"}, {"rail_wiring": "per-port"},
                                    {"rail_wiring": "per-port", "leaf": "static"}], ids=str)
@pytest.mark.parametrize("tiers", ["rule", "any"])
def test_pod_factored_equals_generic(monkeypatch, params, tiers):
    G = build("jalapeno-pod", racks=2, **params)
    s, d = all_pairs(256)
    fast = route(G, s, d, tiers=tiers)
    generic_only(monkeypatch)
    slow = route(G, s, d, tiers=tiers)
    assert abs(fast.shares() - slow.shares()).max() < 1e-12
    assert (fast.hops == slow.hops).all() and np.allclose(fast.latency_ns, slow.latency_ns)
    assert (fast.relayed == slow.relayed).all()


def _degrade(G, how):
    if how == "leaf":
        G.remove_node("r01/gsw2")
    elif how == "rail":
        G.remove_node("rail3/sw5")
    elif how == "uplink":
        G.remove_edge("r00/gsw1", "rail2/sw4")
    elif how == "chiplink":
        G.remove_edge("r00/xpu009", "r00/gsw0")
    elif how == "lanes":
        e = G.edges["r00/gsw1", "rail3/sw1"]
        e["lanes"], e["capacity_gbps"] = 8, 8 * e["lane_gbps"]
    return G


@pytest.mark.parametrize("how", ["leaf", "rail", "uplink", "chiplink", "lanes"])
@pytest.mark.parametrize("split", ["equal", "capacity"])
def test_pod_degraded_matches_reference(how, split):
    G = _degrade(build("jalapeno-pod", racks=2), how)
    s, d = sample_pairs(256, 60, seed=3)
    s = np.concatenate([s, [9, 9, 200]])
    d = np.concatenate([d, [140, 3, 9]])
    r = route(G, s, d, split=split)
    check_conservation(r, np.arange(len(s)))
    nodes = rank_node(G)
    got = explicit(r, np.arange(len(s)))
    for f in range(len(s)):
        tier = "local" if s[f] // 128 == d[f] // 128 else "global"
        ref, hops = ref_ecmp(G, nodes[s[f]], nodes[d[f]], edge_ok=lambda a: a["tier"] == tier, split=split)
        same_shares(got[f], ref)
        assert r.hops[f] == hops


def test_pod_factored_piece_counts():
    G = build("jalapeno-pod", racks=4)
    s, d = all_pairs(512)
    r = route(G, s, d)
    inter = (s // 128) != (d // 128)
    per_flow = np.diff(r.flow_piece.indptr)
    assert (per_flow[inter] == 3).all() and (per_flow[~inter] == 2).all()
    assert r.piece_link.shape[0] < 4 * 512 + 4 * 3 + 10


# ----------------------------------------------------------------------------------------
# ECMP on generic graphs: against the networkx reference
# ----------------------------------------------------------------------------------------
def _fat_tree():
    from fabricsim.topo.contract import add_bundle
    G = nx.Graph(routing="ecmp")
    for i in range(8):
        G.add_node(f"c{i}", kind="chip", model="generic-chip", forwards=False, rank=i)
    for i in range(4):
        G.add_node(f"l{i}", kind="switch", model="generic-switch", role="leaf", forwards=True)
    for i in range(3):
        G.add_node(f"s{i}", kind="switch", model="generic-switch", role="spine", forwards=True)
    for i in range(8):
        add_bundle(G, f"c{i}", f"l{i // 2}", lanes=2, lane_gbps=100, port_gbps=200, medium="copper", tier="t",
                   latency_ns=1.0 + i)
        add_bundle(G, f"c{i}", f"l{(i // 2 + 1) % 4}", lanes=1, lane_gbps=100, port_gbps=100, medium="copper",
                   tier="t", latency_ns=2.0)
    for i in range(4):
        for j in range(3):
            if (i, j) != (2, 1):
                add_bundle(G, f"l{i}", f"s{j}", lanes=1 + (i + j) % 3, lane_gbps=100, port_gbps=100,
                           medium="optical", tier="t", latency_ns=10.0 * (j + 1))
    return G


@pytest.mark.parametrize("split", ["equal", "capacity"])
def test_generic_graph_matches_reference(split):
    G = _fat_tree()
    s, d = all_pairs(8)
    r = route(G, s, d, split=split)
    check_conservation(r, np.arange(len(s)))
    got = explicit(r, np.arange(len(s)))
    for f in range(len(s)):
        ref, hops = ref_ecmp(G, f"c{s[f]}", f"c{d[f]}", split=split)
        same_shares(got[f], ref)
        assert r.hops[f] == hops


def test_generic_latency_is_slowest_path():
    G = _fat_tree()
    r = route(G, [0], [7])
    lt = r.links
    sh = explicit(r, [0])[0]
    # slowest path over the links the flow uses
    D = nx.DiGraph()
    D.add_edges_from((u, v, {"w": -lt.latency_ns[lt.index(u, v)]}) for u, v in sh)
    worst = -nx.bellman_ford_path_length(D, "c0", "c7", weight="w")
    assert r.latency_ns[0] == pytest.approx(worst)


def test_forwarding_chips_boardfly_reference():
    if "boardfly" not in FABRICS:
        pytest.skip("boardfly not in the catalog")
    G = build("boardfly", groups=3)
    s, d = sample_pairs(n_chips(G), 40, seed=5)
    r = route(G, s, d)
    nodes = rank_node(G)
    got = explicit(r, np.arange(len(s)))
    for f in range(len(s)):
        ref, hops = ref_ecmp(G, nodes[s[f]], nodes[d[f]])
        same_shares(got[f], ref)
        assert r.hops[f] == hops


@pytest.mark.parametrize("name", ["nvl72", "helios"])
def test_single_tier_catalog_equals_generic(monkeypatch, name):
    if name not in FABRICS:
        pytest.skip(f"{name} not in the catalog")
    G = build(name)
    s, d = all_pairs(n_chips(G))
    fast = route(G, s, d, split="capacity")
    generic_only(monkeypatch)
    slow = route(G, s, d, split="capacity")
    assert abs(fast.shares() - slow.shares()).max() < 1e-12
    assert (fast.hops == slow.hops).all() and np.allclose(fast.latency_ns, slow.latency_ns)


def test_rack_factored_equals_generic(monkeypatch):
    G = build("jalapeno-rack")
    G.remove_edge("r00/xpu010", "r00/lsw4")
    e = G.edges["r00/xpu011", "r00/lsw2"]
    e["lanes"], e["capacity_gbps"] = 2, 2 * e["lane_gbps"]
    s, d = all_pairs(128)
    fast = [route(G, s, d, split=sp) for sp in ("equal", "capacity")]
    generic_only(monkeypatch)
    slow = [route(G, s, d, split=sp) for sp in ("equal", "capacity")]
    for a, b in zip(fast, slow):
        assert abs(a.shares() - b.shares()).max() < 1e-12
        assert np.allclose(a.latency_ns, b.latency_ns)


# ----------------------------------------------------------------------------------------
# torus DOR
# ----------------------------------------------------------------------------------------
def dor_walk(G, s, d):
    """Explicit per-pair dimension-order walk: {(u, v): share}."""
    dims = tuple(int(x) for x in G.graph["dims"].split("x"))
    axes = "xyzw"[:len(dims)]
    pos = {tuple(a[x] for x in axes): v for v, a in G.nodes(data=True)}
    cs = [G.nodes[s][x] for x in axes]
    cd = [G.nodes[d][x] for x in axes]
    shares = {}
    walks = [(list(cs), 1.0)]
    for i, k in enumerate(dims):
        e = (cd[i] - cs[i]) % k
        if e == 0:
            continue
        dirs = [(+1, e)] if e < k - e else [(-1, k - e)] if e > k - e else [(+1, e), (-1, k - e)]
        nxt = []
        for c, w in walks:
            for step, length in dirs:
                cur = list(c)
                for _ in range(length):
                    a = pos[tuple(cur)]
                    cur[i] = (cur[i] + step) % k
                    b = pos[tuple(cur)]
                    shares[(a, b)] = shares.get((a, b), 0) + w / len(dirs)
                nxt.append((cur, w / len(dirs)))
        walks = nxt
    return shares


@pytest.mark.parametrize("dims", [(3, 4), (4, 4, 2), (2, 3, 1), (6,), (2, 2, 2), (4, 3, 2, 2)], ids=str)
def test_dor_matches_walk(dims):
    from fabricsim.topo.builders import torus
    G = torus(dims)
    n = int(np.prod(dims))
    s, d = all_pairs(n)
    r = route(G, s, d)
    assert r.reachable.all()
    assert (np.diff(r.flow_piece.indptr) <= len(dims)).all()
    nodes = rank_node(G)
    rows = np.arange(len(s)) if len(s) < 600 else np.arange(0, len(s), 3)
    got = explicit(r, rows)
    for i, f in enumerate(rows):
        same_shares(got[i], dor_walk(G, nodes[s[f]], nodes[d[f]]))
    check_conservation(r, rows[:200])
    assert r.hops.max() == sum(k // 2 for k in dims)


def test_dor_latency_is_slowest_path():
    from fabricsim.topo.builders import torus
    G = torus((4, 3, 2))
    for k, (u, v) in enumerate(G.edges):
        G.edges[u, v]["latency_ns"] = 1.0 + 7 * (k % 5)
    s, d = all_pairs(24)
    r = route(G, s, d)
    lt = r.links
    nodes = rank_node(G)
    for f, sh in zip(range(len(s)), explicit(r, np.arange(len(s)))):
        D = nx.DiGraph()
        D.add_edges_from((u, v, {"w": -lt.latency_ns[lt.index(u, v)]}) for u, v in sh)
        assert r.latency_ns[f] == pytest.approx(-nx.bellman_ford_path_length(D, nodes[s[f]], nodes[d[f]], weight="w"))


def test_dor_tie_splits_half_each_way():
    from fabricsim.topo.builders import torus
    G = torus((4,))
    sh = explicit(route(G, [0], [2]), [0])[0]
    assert len(sh) == 4 and all(v == pytest.approx(0.5) for v in sh.values())


def test_dor_ring_of_two_is_one_bundle():
    from fabricsim.topo.builders import torus
    G = torus((2, 3))
    r = route(G, [0], [3])                            # (0,0) -> (1,0): a tie on the ring of 2
    sh = explicit(r, [0])[0]
    assert sh == {("c00.00", "c01.00"): pytest.approx(1.0)} and r.hops[0] == 1


def test_dor_degraded_falls_back_to_ecmp():
    from fabricsim.topo.builders import torus
    G = torus((4, 4))
    G.remove_edge("c00.00", "c01.00")
    s, d = all_pairs(16)
    r = route(G, s, d)
    assert r.reachable.all()
    check_conservation(r, np.arange(len(s)))
    nodes = rank_node(G)
    got = explicit(r, np.arange(len(s)))
    for f in range(len(s)):
        walk = dor_walk(torus((4, 4)), nodes[s[f]], nodes[d[f]])
        if ("c00.00", "c01.00") in walk or ("c01.00", "c00.00") in walk:
            same_shares(got[f], ref_ecmp(G, nodes[s[f]], nodes[d[f]])[0])
        else:
            same_shares(got[f], walk)


def test_dor_missing_chip():
    from fabricsim.topo.builders import torus
    G = torus((3, 3))
    G.remove_node("c01.01")
    r = route(G, [0, 4, 3], [8, 0, 5])
    assert r.reachable.tolist() == [True, False, True]
    check_conservation(r, [0, 1, 2])


def test_dor_needs_coordinates():
    G = build("jalapeno-rack", trays=1)
    G.graph["routing"] = "dor"
    with pytest.raises(R.BadInput, match="needs the graph attribute dims"):
        route(G, [0], [1])


# ----------------------------------------------------------------------------------------
# the full catalog sizes (speed is measured in benchmarks/bench_engine.py, not here)
# ----------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("params", [{}, {"leaf": "static"}], ids=str)
def test_pod_all_to_all_routes_every_pair(params):
    G = build("jalapeno-pod", **params)
    s, d = all_pairs(2048)
    r = route(G, s, d)
    assert r.reachable.all() and len(r) == 2048 * 2047
    cross = (s // 128) != (d // 128)
    # switched: 4 links across racks; static: 4, or 6 when relayed through a rack-mate
    assert set(np.unique(r.hops[cross])) <= {4, 6} and (r.hops[~cross] == 2).all()
    assert (r.relayed == (r.hops == 6)).all()


@pytest.mark.slow
def test_torus_all_to_all_mean_hops():
    from fabricsim.topo.builders import torus
    G = torus((8, 12, 12))
    s, d = all_pairs(1152)
    r = route(G, s, d)
    assert r.hops.mean() == pytest.approx(8.0, rel=0.01)     # mean ring distance k/4 per dimension


def test_forwarding_chips_leave_the_fast_paths(monkeypatch):
    # chip 0 is wired to a leaf of each rack and forwards: 4-hop paths through it exist
    from fabricsim.topo.contract import add_bundle
    G = build("jalapeno-pod", racks=2)
    G.nodes["r00/xpu000"]["forwards"] = True
    add_bundle(G, "r00/xpu000", "r01/gsw0", lanes=2, lane_gbps=200, port_gbps=400, medium="copper",
               tier="global", latency_ns=5.0)
    s, d = np.array([1, 1, 130]), np.array([129, 0, 2])
    r = route(G, s, d)
    nodes = rank_node(G)
    for f, got in enumerate(explicit(r, [0, 1, 2])):
        tier = "global" if s[f] // 128 != d[f] // 128 else "local"
        same_shares(got, ref_ecmp(G, nodes[s[f]], nodes[d[f]], edge_ok=lambda a: a["tier"] == tier)[0])


# ----------------------------------------------------------------------------------------
# random graphs: every path (fast or generic) against the networkx reference
# ----------------------------------------------------------------------------------------
def _random_fabric(shape, seed):
    from fabricsim.topo.contract import add_bundle
    rng = np.random.default_rng(seed)
    G = nx.Graph(routing="ecmp")
    n_chips = int(rng.integers(4, 10))
    chip_fwd = shape == "mesh"
    for i in range(n_chips):
        G.add_node(f"c{i}", kind="chip", model="generic-chip", forwards=chip_fwd, rank=i)

    def link(u, v):
        lanes = int(rng.integers(1, 5))
        add_bundle(G, u, v, lanes=lanes, lane_gbps=100, port_gbps=100, medium="copper", tier="t",
                   latency_ns=float(rng.integers(1, 20)))

    if shape == "single":                     # chips -- switches, random wiring
        sws = [f"s{j}" for j in range(int(rng.integers(2, 7)))]
        for j, sw in enumerate(sws):
            G.add_node(sw, kind="switch", model="generic-switch", role="local", forwards=True, latency_ns=7.0)
        for i in range(n_chips):
            for sw in sws:
                if rng.random() < 0.6:
                    link(f"c{i}", sw)
    elif shape == "clos":                     # chips -- leaves -- spines, random wiring
        leaves = [f"l{j}" for j in range(int(rng.integers(2, 6)))]
        spines = [f"p{j}" for j in range(int(rng.integers(1, 5)))]
        for x in leaves + spines:
            G.add_node(x, kind="switch", model="generic-switch", role="leaf" if x[0] == "l" else "spine",
                       forwards=True)
        for i in range(n_chips):
            for l in rng.choice(leaves, size=int(rng.integers(1, 3)), replace=False):
                link(f"c{i}", l)
        for l in leaves:
            for p in spines:
                if rng.random() < 0.7:
                    link(l, p)
    else:                                     # forwarding chips, a few switches, random edges
        for j in range(2):
            G.add_node(f"s{j}", kind="switch", model="generic-switch", role="x", forwards=bool(j))
        names = list(G.nodes)
        for a in range(len(names)):
            for b in range(a + 1, len(names)):
                if rng.random() < 0.3:
                    link(names[a], names[b])
    return G.subgraph([v for v in G if G.degree(v) or G.nodes[v]["kind"] == "chip"]).copy()


@pytest.mark.parametrize("shape", ["single", "clos", "mesh"])
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("split", ["equal", "capacity"])
def test_random_fabrics_match_reference(shape, seed, split):
    G = _random_fabric(shape, seed)
    n = n_chips(G)
    s, d = all_pairs(n)
    r = route(G, s, d, split=split)
    got = explicit(r, np.arange(len(s)))
    lt = r.links
    for f in range(len(s)):
        ref, hops = ref_ecmp(G, f"c{s[f]}", f"c{d[f]}", split=split)
        if ref is None:
            assert not r.reachable[f] and not got[f]
            continue
        assert r.reachable[f]
        same_shares(got[f], ref)
        assert r.hops[f] == hops
        # latency: slowest path over the links used
        D = nx.DiGraph()
        D.add_edges_from((u, v, {"w": -lt.latency_ns[lt.index(u, v)]}) for u, v in got[f])
        assert r.latency_ns[f] == pytest.approx(-nx.bellman_ford_path_length(D, f"c{s[f]}", f"c{d[f]}", weight="w"))


@pytest.mark.parametrize("split", ["equal", "capacity"])
def test_link_loads_equal_the_routes_summed(split):
    from fabricsim.topo.routing import link_loads
    torus = build("torus", dims="4x6x8")
    broken = torus.copy()                       # rerouted pairs (ECMP by propagation), lost pairs
    broken.remove_edge("c00.00.00", "c01.00.00")
    broken.remove_node("c03.05.07")
    rng = np.random.default_rng(0)
    for g, n in ((torus, 192), (broken, 192), (build("jalapeno-pod", racks=2), 256)):
        a, b = np.nonzero(~np.eye(n, dtype=bool))
        w = rng.random(len(a)) * 1e6
        r = route(g, a, b, split=split)
        ref = r.piece_link.T @ (r.flow_piece.T @ np.where(r.reachable, w, 0.0))
        got = link_loads(g, a, b, w, split=split)
        assert np.allclose(got.link_bytes, ref, rtol=1e-12, atol=1e-6)
        assert np.array_equal(got.reachable, r.reachable) and np.array_equal(got.hops, r.hops)
        assert np.allclose(got.latency_ns, r.latency_ns, rtol=1e-12)
