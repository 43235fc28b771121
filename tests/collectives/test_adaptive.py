"""split="adaptive": multipath max-min fair rates (topo/multipath.py, collectives/adaptive.py).

The check LP here is written separately from the solver: the plain per-flow *path*
formulation (every path of each flow's route support enumerated), filled level by
level with an individual max-rate test per flow -- a different program and a
different freezing rule from the solver's arc formulation with dual/probe freezing.
"""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from scipy.optimize import linprog

from fabricsim.collectives import price
from fabricsim.fabrics import build
from fabricsim.topo import multipath
from fabricsim.topo.errors import BadInput
from fabricsim.topo.routing import link_table, route

GBps = 1e9


# ------------------------------------------------------------------ the independent check
def _paths_of_flow(lt, support: np.ndarray, s: int, d: int) -> list[np.ndarray]:
    """Every simple path s -> d over the links ``support`` (link indices), by depth-first search."""
    out_links: dict[int, list[int]] = {}
    for l in support.tolist():
        out_links.setdefault(int(lt.src[l]), []).append(l)
    paths, stack = [], [(s, [], {s})]
    while stack:
        v, used, seen = stack.pop()
        if v == d:
            paths.append(np.array(used))
            continue
        for l in out_links.get(v, []):
            w = int(lt.dst[l])
            if w not in seen:
                stack.append((w, used + [l], seen | {w}))
    return paths


def reference_rates(G, src, dst, weights=None) -> np.ndarray:
    """Multipath max-min fair rates by the path formulation and per-flow max-rate tests."""
    lt = link_table(G)
    r = route(G, src, dst, split="equal", links=lt)
    node = {int(G.nodes[v]["rank"]): lt.node_index[v] for v in lt.nodes if "rank" in G.nodes[v]}
    S = r.shares()
    F = len(src)
    w = np.ones(F) if weights is None else np.asarray(weights, float)
    paths = [_paths_of_flow(lt, S[[f]].indices, node[int(src[f])], node[int(dst[f])]) for f in range(F)]
    owner = np.concatenate([[f] * len(p) for f, p in enumerate(paths)]).astype(int)
    flat = [p for ps in paths for p in ps]
    Pn = len(flat)
    unit = float(lt.capacity_Bps.max())
    cap = lt.capacity_Bps / unit
    A_link = np.zeros((len(lt), Pn))
    for j, p in enumerate(flat):
        A_link[p, j] += 1.0
    M = np.zeros((F, Pn))
    M[owner, np.arange(Pn)] = 1.0            # rate_f = sum of its path flows
    rate = np.full(F, np.nan)

    def solve(obj, lower):
        # max obj . y  s.t. link caps, M y >= lower (open), M y == rate (frozen)
        frozen = ~np.isnan(rate)
        A_ub = np.vstack([A_link, -M[~frozen]])
        b_ub = np.concatenate([cap, -lower[~frozen]])
        res = linprog(-obj, A_ub=A_ub, b_ub=b_ub, A_eq=M[frozen] if frozen.any() else None,
                      b_eq=rate[frozen] if frozen.any() else None, bounds=(0, None), method="highs")
        assert res.status == 0, res.message
        return -res.fun

    while np.isnan(rate).any():
        open_ = np.flatnonzero(np.isnan(rate))
        # max t: one extra variable is avoided by bisection-free trick: t is the min over open of rate/w,
        # so solve max t with t as a column
        frozen = ~np.isnan(rate)
        A_ub = np.vstack([np.hstack([np.zeros((len(lt), 1)), A_link]),
                          np.hstack([w[open_, None], -M[open_]])])
        b_ub = np.concatenate([cap, np.zeros(len(open_))])
        c = np.zeros(Pn + 1)
        c[0] = -1
        A_eq = np.hstack([np.zeros((int(frozen.sum()), 1)), M[frozen]]) if frozen.any() else None
        res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=rate[frozen] if frozen.any() else None,
                      bounds=(0, None), method="highs")
        assert res.status == 0, res.message
        t = -res.fun
        lower = w * t
        newly = []
        for f in open_:
            best = solve(M[f], lower)
            if best <= w[f] * t * (1 + 1e-7) + 1e-12:
                newly.append(f)
        assert newly, "some open flow must be blocked at the level"
        rate[newly] = w[newly] * t * (1 - 1e-12)
    return rate * unit


def _random_pairs(n_chips: int, k: int, rng) -> tuple[np.ndarray, np.ndarray]:
    pairs = set()
    while len(pairs) < k:
        a, b = rng.integers(0, n_chips, 2)
        if a != b:
            pairs.add((int(a), int(b)))
    a = np.array(sorted(pairs))
    return a[:, 0], a[:, 1]


def _fail_links(G: nx.Graph, k: int, rng, keep=lambda u, v: True) -> nx.Graph:
    H = G.copy()
    edges = [e for e in H.edges if keep(*e)]
    for i in rng.choice(len(edges), size=k, replace=False):
        H.remove_edge(*edges[i])
    return H


def _small_fabrics():
    torus = build("torus", dims="4x4")
    torus_ecmp = build("torus", dims="4x4")
    torus_ecmp.graph["routing"] = "ecmp"               # multipath shortest paths on the torus
    pod = build("jalapeno-pod", racks=2, trays=2)      # 32 chips, 4 leaves per rack, 8 rails
    rack = build("jalapeno-rack", trays=4)             # 32 chips on 6 switches
    # (name, graph, links failed, flows): the pod's cross-rack flows have 64 paths each, so fewer flows
    return [("torus-4x4-dor", torus, 2, 24), ("torus-4x4-ecmp", torus_ecmp, 3, 24), ("pod-2x16", pod, 6, 10),
            ("rack-32", rack, 8, 16)]


@pytest.mark.parametrize("name,G,n_fail,n_flows", _small_fabrics(), ids=lambda x: x if isinstance(x, str) else "")
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_adaptive_matches_path_lp(name, G, n_fail, n_flows, seed):
    """The solver's rates equal the independent path-formulation LP's to 1e-6, under random link failures."""
    rng = np.random.default_rng(seed)
    H = _fail_links(G, n_fail, rng)
    n = sum(1 for _, d in H.nodes(data=True) if d.get("kind") == "chip")
    src, dst = _random_pairs(n, n_flows, rng)
    weights = rng.uniform(0.5, 2.0, len(src)) if seed == 3 else None
    p, ok = multipath.paths_for(H, src, dst)
    src, dst = src[ok], dst[ok]
    if weights is not None:
        weights = weights[ok]
    got = multipath.maxmin_rates(p, weights=weights).rate_Bps
    want = reference_rates(H, src, dst, weights)
    assert np.max(np.abs(got - want) / want) < 1e-6, (name, seed, got, want)


# ------------------------------------------------------------------ closed forms
def test_one_flow_gets_the_sum_of_its_disjoint_paths():
    G = build("jalapeno-rack", trays=1)               # 8 chips x 6 switches, 100 GB/s per chip link
    p, _ = multipath.paths_for(G, [0], [1])
    assert multipath.maxmin_rates(p).rate_Bps[0] == pytest.approx(600 * GBps, rel=1e-9)
    G.remove_node("r00/lsw3")                         # 5 paths left
    p, _ = multipath.paths_for(G, [0], [1])
    assert multipath.maxmin_rates(p).rate_Bps[0] == pytest.approx(500 * GBps, rel=1e-9)


def test_two_flows_share_their_bottleneck_equally():
    G = build("jalapeno-rack", trays=1)
    p, _ = multipath.paths_for(G, [0, 1], [2, 2])     # both into chip 2: its 6 x 100 GB/s in-links
    assert multipath.maxmin_rates(p).rate_Bps.tolist() == pytest.approx([300 * GBps] * 2, rel=1e-9)
    # weights 1:3 split it 150:450
    r = multipath.maxmin_rates(p, weights=[1.0, 3.0]).rate_Bps
    assert r.tolist() == pytest.approx([150 * GBps, 450 * GBps], rel=1e-9)


def test_adaptive_beats_equal_where_equal_shares_strand_capacity():
    """One flow on two parallel paths of unequal capacity: equal split is held to twice the smaller."""
    import scipy.sparse as sp
    p = multipath.paths_of(sp.csr_array([[0.5, 0.5]]), [0, 0], [1, 1], [0], [1], capacity_Bps=[1.0, 3.0])
    assert multipath.maxmin_rates(p).rate_Bps[0] == pytest.approx(4.0)
    r = multipath.simulate(p, [8.0])
    assert (r.time_s, r.bound_s, r.events) == (pytest.approx(2.0), pytest.approx(2.0), 1)


def test_finish_times_resolve_when_flows_finish():
    """Two flows into chip 2 of a rack: the short one finishes, then the long one takes all 600 GB/s."""
    G = build("jalapeno-rack", trays=1)
    p, _ = multipath.paths_for(G, [0, 1], [2, 2])
    r = multipath.simulate(p, [300e9, 900e9])         # 1 s at 300 each, then 600 GB/s for the rest
    assert r.finish_s.tolist() == pytest.approx([1.0, 2.0])
    assert r.events == 2 and r.bound_s == pytest.approx(2.0)


def test_intact_pod_adaptive_equals_equal(monkeypatch):
    """The certificate proves the equal shares multipath max-min fair (no LP); the LP agrees."""
    from fabricsim.collectives import adaptive
    G = build("jalapeno-pod", racks=2, trays=2)
    kw = dict(groups=[list(range(32))], size_bytes=2**26, algorithm="direct", protocol="ideal")
    eq = price(G, "all-to-all", split="equal", **kw)
    ad = price(G, "all-to-all", split="adaptive", **kw)
    assert ad.time_s == pytest.approx(eq.time_s, rel=1e-9)
    assert ad.method["path"] == "twins" and any("proved by saturated cuts" in n for n in ad.notes)
    monkeypatch.setattr(adaptive, "CERTIFY", False)
    lp = price(G, "all-to-all", split="adaptive", **kw)
    assert lp.method["path"] == "automorphisms"
    assert lp.time_s == pytest.approx(eq.time_s, rel=1e-9)


@pytest.mark.parametrize("fail", ["rail:3", "leaf-switch:r00/gsw1", "rail-switch:rail0/sw1"])
def test_fold_equals_listed_flows(fail, monkeypatch):
    """The automorphism fold (a few classes) prices exactly as every flow listed (symmetry off)."""
    from fabricsim.collectives import adaptive
    from fabricsim.topo.failures import apply_failures
    monkeypatch.setattr(adaptive, "CERTIFY", False)          # the LP paths, not the certificate
    G = build("jalapeno-pod", racks=2, trays=2)
    H, _ = apply_failures(G, [fail])
    kw = dict(groups=[list(range(32))], size_bytes=2**26, algorithm="direct", protocol="ideal", split="adaptive")
    folded = price(H, "all-to-all", **kw)
    listed = price(H, "all-to-all", symmetry=False, **kw)
    assert listed.method["path"] == "per-flow" and folded.method["path"] == "automorphisms"
    assert folded.time_s == pytest.approx(listed.time_s, rel=1e-6)


def test_split_choice_is_checked():
    G = build("jalapeno-rack", trays=1)
    with pytest.raises(BadInput, match="adaptive"):
        price(G, "all-to-all", groups=[list(range(8))], size_bytes=1e6, split="spray")


def test_too_big_without_a_fold_is_refused(monkeypatch):
    G = build("jalapeno-rack", trays=2)
    monkeypatch.setattr(multipath, "MAX_FLOWS", 10)
    with pytest.raises(BadInput, match="--split equal"):
        price(G, "all-to-all", groups=[list(range(16))], size_bytes=1e6, split="adaptive", symmetry=False)


@pytest.mark.slow
def test_pod_rail_failure_is_eight_sevenths():
    """Issue 24: the pod losing 1 of 8 rails runs at 7/8 with adaptive routing (Tomahawk 6 cognitive
    routing rebalances), as the static-leaf design does, where equal ECMP shares gave x1.99."""
    from fabricsim.collectives.whatif import whatif
    kw = dict(groups=[list(range(2048))], size_bytes=2**30, algorithm="direct")
    ad = whatif(build("jalapeno-pod"), ["rail:3"], "all-to-all", split="adaptive", **kw)
    st = whatif(build("jalapeno-pod", leaf="static"), ["rail:3"], "all-to-all", **kw)
    assert ad.bandwidth_slowdown == pytest.approx(8 / 7, rel=5e-3)
    assert ad.slowdown == pytest.approx(st.slowdown, rel=1e-3)


def test_mix_refuses_adaptive_in_one_line():
    from fabricsim.collectives.jobs import mix
    G = build("jalapeno-rack", trays=1)
    with pytest.raises(BadInput, match="choose equal or capacity"):
        mix(G, [object()], split="adaptive")


def test_every_catalog_fabric_declares_its_switching():
    from fabricsim.collectives.engine import SPLIT_CHOICES
    from fabricsim.fabrics import FABRICS
    from fabricsim.topo.routing import SPLIT_CHOICES as ROUTING_SPLITS
    from fabricsim.topo.routing.switching import SWITCHING, switching_of
    assert set(SWITCHING) == set(FABRICS)
    assert SPLIT_CHOICES == ROUTING_SPLITS
    for name, sw in SWITCHING.items():
        assert sw.label in ("F", "D", "I") and sw.source and sw.split in SPLIT_CHOICES, name
    # Jalapeño's Tomahawk 6: Cognitive Routing 2.0, adaptive (found)
    pod = switching_of(build("jalapeno-pod", racks=1))
    assert (pod.behaviour, pod.label) == ("adaptive", "F")


def test_whatif_summary_counts_bandwidth_lost_along_paths():
    """Issue 24 item 4: losing rail 3 leaves every chip's own links whole, but its leaf 1 lost half its
    uplinks: along its paths a chip has 175 of 200 GB/s global, 7/8, as the adaptive headline says."""
    from fabricsim.collectives.whatif import whatif
    G = build("jalapeno-pod", racks=2)                 # 2 x 128 chips: each leaf 51.2 Tb/s down and up
    w = whatif(G, ["rail:3"], "all-to-all", groups=[list(range(256))], size_bytes=2**26, algorithm="direct",
               split="adaptive", protocol="ideal")
    assert w.affected_chips["tier_bandwidth_changed"] == 0
    assert w.affected_chips["path_bandwidth_changed"] == 256
    assert w.tier_bandwidth["by_tier_paths"]["global"] == {"before": {"200": 256}, "after": {"175": 256}}
    # the cross-rack half of each chip's traffic paces it; the headline is 200 / 175 on the global tier
    assert w.bandwidth_slowdown == pytest.approx(200 / 175, rel=1e-6)
