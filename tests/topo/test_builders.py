"""Generic builders: counts, lanes and hop diameters against closed-form formulas."""
from __future__ import annotations

import math

import numpy as np
import pytest

from fabricsim.topo.builders import torus
from fabricsim.topo.contract import validate
from hops_reference import chip_diameter, hop_matrix


# --- torus ------------------------------------------------------------------------------

TORUS_DIMS = [(2,), (3,), (7,), (1, 5), (2, 2), (2, 3), (4, 4), (1, 2, 3), (2, 3, 4), (4, 4, 4),
              (3, 5, 2), (2, 2, 2, 2), (8, 12, 12)]


def torus_links(dims) -> int:
    """Physical links: every chip starts one link per dimension with k > 1, and a ring of 2
    has two links between the pair (its +1 and -1 neighbours coincide)."""
    return math.prod(dims) * sum(k > 1 for k in dims)


def torus_bundles(dims) -> int:
    n = math.prod(dims)
    return n * sum(k >= 3 for k in dims) + n // 2 * sum(k == 2 for k in dims)


@pytest.mark.parametrize("dims", TORUS_DIMS, ids=lambda d: "x".join(map(str, d)))
def test_torus_counts_and_lanes(dims):
    G = torus(dims, lanes_per_link=4, lane_gbps=180.0)
    assert validate(G) == []
    n = math.prod(dims)
    assert G.number_of_nodes() == n
    assert G.number_of_edges() == torus_bundles(dims)
    assert sum(d["lanes"] for *_, d in G.edges(data=True)) == 4 * torus_links(dims)
    per_chip = 2 * 4 * sum(k > 1 for k in dims)
    for c in G:
        assert sum(G.edges[c, m]["lanes"] for m in G[c]) == per_chip
    assert G.graph["dims"] == "x".join(map(str, dims))
    assert G.graph["routing"] == "dor"


@pytest.mark.parametrize("dims", TORUS_DIMS, ids=lambda d: "x".join(map(str, d)))
def test_torus_diameter_is_sum_of_half_rings(dims):
    G = torus(dims)
    # a torus is vertex-transitive: one source's eccentricity is the diameter; check two anyway
    sources = ["c" + ".".join("00" for _ in dims), max(G)]
    assert chip_diameter(G, sources) == sum(k // 2 for k in dims)
    if G.number_of_nodes() <= 64:
        assert chip_diameter(G) == sum(k // 2 for k in dims)


@pytest.mark.parametrize("dims", [(2, 3, 4), (3, 1, 5, 2)], ids=str)
def test_torus_coordinates_rank_and_neighbours(dims):
    G = torus(dims)
    axes = "xyzw"[:len(dims)]
    for n, d in G.nodes(data=True):
        coords = tuple(d[a] for a in axes)
        assert n == "c" + ".".join(f"{c:02d}" for c in coords)
        assert d["rank"] == int(np.ravel_multi_index(coords, dims))  # x slowest, last fastest
        assert d["forwards"] is True and d["kind"] == "chip"
    for u, v, e in G.edges(data=True):
        cu = [G.nodes[u][a] for a in axes]
        cv = [G.nodes[v][a] for a in axes]
        diff = [i for i in range(len(dims)) if cu[i] != cv[i]]
        assert len(diff) == 1 and axes[diff[0]] == e["axis"]
        k = dims[diff[0]]
        assert (cu[diff[0]] - cv[diff[0]]) % k in (1, k - 1)
        assert e["lanes"] == (2 if k == 2 else 1)


def test_torus_ring_of_two_is_one_doubled_bundle():
    G = torus((2,), lanes_per_link=2, link_gbps=800.0)
    assert list(G.edges) == [("c00", "c01")]
    e = G.edges["c00", "c01"]
    assert (e["lanes"], e["lane_gbps"], e["port_gbps"], e["capacity_gbps"]) == (4, 400.0, 800.0, 1600.0)


def test_torus_wide_ids():
    G = torus((101, 2))
    assert "c100.001" in G and "c000.000" in G  # one width for every axis


@pytest.mark.parametrize("dims, match", [
    ((8, 0, 12), r"dims=\(8, 0, 12\).*integer >= 1"),
    ((), r"dims=\(\).*1 to 4"),
    ((2, 2, 2, 2, 2), r"5 dimensions; a torus has 1 to 4"),
    ((1, 1), r"dims=\(1, 1\) gives 1 chip.*at least 2"),
])
def test_torus_refuses_bad_dims(dims, match):
    with pytest.raises(ValueError, match=match):
        torus(dims)


def test_torus_refuses_unknown_chip():
    with pytest.raises(ValueError, match="chip_model='nope'.*choose one of"):
        torus((4, 4), chip_model="nope")


# --- switched domain, leaf-spine, full mesh -----------------------------------------------

from fabricsim.topo.builders import boardfly, dragonfly, full_mesh, leaf_spine, switched_domain  # noqa: E402


@pytest.mark.parametrize("chips, planes", [(2, 1), (8, 6), (72, 18), (128, 6)])
def test_switched_domain_counts_and_two_hops(chips, planes):
    G = switched_domain(chips=chips, planes=planes, lanes_per_link=2, chips_per_tray=2, switches_per_tray=1)
    assert validate(G) == []
    assert G.number_of_edges() == chips * planes
    assert all(G.degree(s) == chips for s, d in G.nodes(data=True) if d["kind"] == "switch")
    assert all(G.degree(c) == planes for c, d in G.nodes(data=True) if d["kind"] == "chip")
    assert chip_diameter(G) == 2


@pytest.mark.parametrize("leaves, per_leaf, spines, over, up_lanes", [
    (4, 8, 4, 1.0, 8), (4, 8, 4, 2.0, 4), (2, 16, 8, 4.0, 2), (1, 4, 1, 1.0, 16)])
def test_leaf_spine_oversubscription(leaves, per_leaf, spines, over, up_lanes):
    G = leaf_spine(leaves=leaves, chips_per_leaf=per_leaf, spines=spines, oversubscription=over,
                   lanes_per_link=4)
    assert validate(G) == []
    assert G.number_of_edges() == leaves * per_leaf + leaves * spines
    for l in range(leaves):
        lid = f"leaf{l:02d}"
        down = sum(G.edges[lid, n]["capacity_gbps"] for n in G[lid] if G.nodes[n]["kind"] == "chip")
        up = sum(G.edges[lid, n]["capacity_gbps"] for n in G[lid] if G.nodes[n].get("role") == "spine")
        assert down / up == pytest.approx(over)
        assert all(G.edges[lid, n]["lanes"] == up_lanes for n in G[lid] if G.nodes[n].get("role") == "spine")
    assert chip_diameter(G) == (2 if leaves == 1 else 4)


def test_leaf_spine_refuses_fractional_uplinks():
    with pytest.raises(ValueError, match=r"oversubscription=3.*valid ratios.*1, 2, 4, 8"):
        leaf_spine(leaves=2, chips_per_leaf=8, spines=4, oversubscription=3, lanes_per_link=4)


@pytest.mark.parametrize("chips", [2, 3, 8, 17])
def test_full_mesh(chips):
    G = full_mesh(chips=chips)
    assert validate(G) == []
    assert G.number_of_edges() == chips * (chips - 1) // 2
    assert chip_diameter(G) == 1


# --- dragonfly ------------------------------------------------------------------------------

def router_diameter(G) -> int:
    routers = [n for n, d in G.nodes(data=True) if d.get("role") == "router"]
    H = G.subgraph(routers)
    D, nodes = hop_matrix(H, routers)
    return int(D.max())


@pytest.mark.parametrize("p, a, h", [(1, 2, 1), (2, 4, 2), (3, 6, 3), (4, 8, 4), (2, 3, 5)])
def test_dragonfly_full_size(p, a, h):
    G = dragonfly(p=p, a=a, h=h)
    g = a * h + 1
    assert validate(G) == []
    chips_ = [n for n, d in G.nodes(data=True) if d["kind"] == "chip"]
    assert len(chips_) == g * a * p
    tiers = [d["tier"] for *_, d in G.edges(data=True)]
    assert tiers.count("global") == g * (g - 1) // 2 == g * a * h // 2  # every port used, once
    assert tiers.count("local") == g * a * (a - 1) // 2
    # every router: p terminals, a-1 local, h global links
    for r, d in G.nodes(data=True):
        if d["kind"] == "switch":
            kinds = [G.edges[r, n]["tier"] for n in G[r]]
            assert (kinds.count("terminal"), kinds.count("local"), kinds.count("global")) == (p, a - 1, h)
    # every pair of groups joined by exactly one global link
    pairs = {frozenset((G.nodes[u]["group"], G.nodes[v]["group"]))
             for u, v, e in G.edges(data=True) if e["tier"] == "global"}
    assert len(pairs) == g * (g - 1) // 2
    assert router_diameter(G) <= 3
    assert chip_diameter(G) <= 5


def test_dragonfly_balanced_1056():
    G = dragonfly(p=4, a=8, h=4)
    assert G.graph["groups"] == 33
    assert sum(d["kind"] == "chip" for _, d in G.nodes(data=True)) == 33 * 8 * 4 == 1056
    assert router_diameter(G) == 3
    assert chip_diameter(G) == 5


@pytest.mark.parametrize("g", [2, 5, 9])
def test_dragonfly_fewer_groups_reuse_ports(g):
    G = dragonfly(p=2, a=4, h=2, g=g)
    assert validate(G) == []
    per_pair = 8 // (g - 1)
    links = sum(e["lanes"] for *_, e in G.edges(data=True) if e["tier"] == "global")
    assert links == per_pair * g * (g - 1) // 2
    assert router_diameter(G) <= 3


def test_dragonfly_refuses_too_many_groups():
    with pytest.raises(ValueError, match=r"g=34 is out of range; valid: 1\.\.33"):
        dragonfly(p=4, a=8, h=4, g=34)


# --- boardfly -------------------------------------------------------------------------------

def external_ports_per_board(G) -> dict:
    used: dict = {}
    for u, v, e in G.edges(data=True):
        if e["span"] == "board":
            continue
        ports = e["capacity_gbps"] / e["port_gbps"]
        for n in (u, v):
            used[G.nodes[n]["board"]] = used.get(G.nodes[n]["board"], 0) + ports
    return used


@pytest.mark.parametrize("groups", [2, 3, 9, 17])
def test_boardfly_spread_keeps_seven_hops(groups):
    G = boardfly(groups=groups)
    assert validate(G) == []
    assert G.number_of_nodes() == groups * 32
    # groups are symmetric under the shift G -> G+1, so group 0's chips are enough sources
    assert chip_diameter(G, [n for n in G if n.startswith("g00/")]) == 7
    assert max(external_ports_per_board(G).values()) <= 16


@pytest.mark.parametrize("groups", [3, 9, 17])
def test_boardfly_naive_is_longer(groups):
    G = boardfly(groups=groups, port_placement="naive")
    assert validate(G) == []
    assert chip_diameter(G, [n for n in G if n.startswith("g00/")]) > 7
    assert max(external_ports_per_board(G).values()) <= 16


@pytest.mark.parametrize("C, B, P, m, g", [(2, 4, 8, 1, 6), (1, 3, 4, 1, 4), (4, 4, 8, 2, 5)])
def test_boardfly_other_shapes_are_valid(C, B, P, m, g):
    G = boardfly(chips_per_board=C, boards_per_group=B, ports_per_board=P, links_per_group_pair=m, groups=g)
    assert validate(G) == []
    assert G.number_of_nodes() == C * B * g
    links = sum(e["lanes"] for *_, e in G.edges(data=True) if e["span"] == "global") // 8
    assert links == m * g * (g - 1) // 2
    assert max(external_ports_per_board(G).values()) <= P


def test_boardfly_refuses_groups_above_ports():
    with pytest.raises(ValueError, match=r"groups=38 is out of range; valid: 1\.\.37"):
        boardfly(groups=38)
