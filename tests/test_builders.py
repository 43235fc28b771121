"""Generic builders: counts, lanes and hop diameters against closed-form formulas."""
from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from fabricsim.topo.builders import torus
from fabricsim.topo.contract import validate


def hop_matrix(G: nx.Graph, sources) -> tuple[np.ndarray, list]:
    """Hops (links traversed) from each source to every node; only ``forwards`` nodes relay.

    Rows of non-forwarding nodes are removed from the adjacency, so such a node can end a
    path but never continue one; a source leaves through its own links first.
    """
    nodes = list(G)
    index = {n: i for i, n in enumerate(nodes)}
    fwd = np.array([bool(G.nodes[n]["forwards"]) for n in nodes])
    rows, cols = [], []
    for u, v in G.edges():
        i, j = index[u], index[v]
        if fwd[i]:
            rows.append(i); cols.append(j)
        if fwd[j]:
            rows.append(j); cols.append(i)
    A = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(nodes),) * 2)
    nbrs = sorted({index[m] for s in sources for m in G[s]})
    D = shortest_path(A, directed=True, unweighted=True, indices=nbrs)
    pos = {k: i for i, k in enumerate(nbrs)}
    out = np.empty((len(sources), len(nodes)))
    for r, s in enumerate(sources):
        out[r] = 1 + D[[pos[index[m]] for m in G[s]]].min(axis=0)
        out[r, index[s]] = 0
    return out, nodes


def chip_diameter(G: nx.Graph, sources=None) -> int:
    chips = [n for n, d in G.nodes(data=True) if d["kind"] == "chip"]
    D, nodes = hop_matrix(G, chips if sources is None else sources)
    cols = [i for i, n in enumerate(nodes) if G.nodes[n]["kind"] == "chip"]
    return int(D[:, cols].max())


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
