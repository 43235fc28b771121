"""Collectives across nodes as NCCL runs them: rail-bound rings, pipelined trees, per-tier families.

Closed forms under ``protocol="ideal"`` (raw line rate, no protocol effects) and the
measured two-node nccl-tests logs in ``tests/data/nccl`` (each cites its source).
"""
from __future__ import annotations


import numpy as np
import pytest

from fabricsim.collectives import by_size, price
from fabricsim.collectives.algorithms import _zigzag_paths, phases, view_of
from fabricsim.collectives.cost.family import families_of
from fabricsim.collectives.cost.nccl_tests import parse_log
from fabricsim.fabrics import build
from fabricsim.topo import routing
from repo_paths import DATA

DATA = DATA / "nccl"
GiB = 2 ** 30


@pytest.mark.parametrize("m", [2, 4, 6, 8])
def test_zigzag_orders_enter_and_leave_each_domain_once_per_chip(m):
    P = _zigzag_paths(m)
    assert sorted(P[:, 0]) == list(range(m)) and sorted(P[:, -1]) == list(range(m))
    for row in P:
        assert sorted(row) == list(range(m))
    # the first m/2 orders are edge-disjoint Hamiltonian paths of K_m: together every link once
    edges = [frozenset(e) for row in P[: m // 2] for e in zip(row, row[1:])]
    assert len(edges) == len(set(edges)) == m * (m - 1) // 2


@pytest.mark.parametrize("nodes", [2, 4])
def test_rail_rings_cross_nodes_on_their_own_rail_only(nodes):
    """Every channel leaves and enters a node at chips of one rail: no byte crosses the spine."""
    G = build("rail-cluster", gpu="h100", nodes=nodes)
    n = 8 * nodes
    r = price(G, "all-reduce", groups=[tuple(range(n))], size_bytes=GiB, algorithm="rail-rings", protocol="ideal")
    table = routing.link_table(G)
    tier = np.asarray(table.tier).astype(str)
    lb = np.asarray(r.link_bytes)
    assert lb[tier == "spine"].sum() == 0
    # each GPU's NIC carries one channel's crossing per step, both ways: all rail links equal
    rail = lb[tier == "rail"]
    assert rail.min() == pytest.approx(rail.max(), rel=1e-12) and rail.min() > 0


def test_rail_rings_bandwidth_is_the_nic_closed_form():
    """Ideal: 2(n-1) steps of S/(n m) per channel; the NIC carries one channel per step at its line rate."""
    G = build("rail-cluster", gpu="h100", nodes=2)
    n, m = 16, 8
    r = price(G, "all-reduce", groups=[tuple(range(n))], size_bytes=GiB, algorithm="rail-rings", protocol="ideal")
    gpu = next(u for u, d in G.nodes(data=True) if d.get("rank") == 0)
    nic_Bps = next(d["capacity_gbps"] for _, v, d in G.edges(gpu, data=True) if d["tier"] == "rail") * 1e9 / 8
    assert r.bandwidth_time_s == pytest.approx(2 * (n - 1) * GiB / (n * m) / nic_Bps, rel=1e-9)


def test_tree_tiers_overlap_on_disjoint_links():
    """A tree's in-node and cross-node transfers pipeline: the stage takes the slower one's time."""
    G = build("rail-cluster", gpu="h100", nodes=2)
    g = [tuple(range(16))]
    for algo in ("tree", "nvls-tree"):
        r = price(G, "all-reduce", groups=g, size_bytes=GiB, algorithm=algo, protocol="ideal")
        assert len(r.phases) == 2
        parts = [p.repeat * p.step_bandwidth_s for p in r.phases]
        assert r.bandwidth_time_s == pytest.approx(max(parts), rel=1e-12)
        assert r.bandwidth_time_s < sum(parts)
        assert any("pipelined tiers" in n for n in r.notes)


def test_nvls_tree_beats_the_ring_when_the_nics_are_the_bottleneck():
    G = build("rail-cluster", gpu="h100", nodes=2)
    g = [tuple(range(16))]
    ring = price(G, "all-reduce", groups=g, size_bytes=8 * GiB, algorithm="rail-rings")
    tree = price(G, "all-reduce", groups=g, size_bytes=8 * GiB, algorithm="nvls-tree")
    assert tree.time_s < ring.time_s
    best = price(G, "all-reduce", groups=g, size_bytes=8 * GiB)
    assert best.algorithm == "nvls-tree" and best.protocol == "simple"


def test_per_tier_families_price_the_network_with_its_own_latency():
    """The NIC tier is infiniband's, the NVLink tier nvlink4's: a cross-node phase pays NET latencies."""
    G = build("rail-cluster", gpu="h100", nodes=2)
    fams = families_of(G)
    assert fams.primary.name == "nvlink4" and fams.of("rail").name == "infiniband" and fams.mixed
    r = price(G, "all-reduce", groups=[tuple(range(16))], size_bytes=2 ** 20, algorithm="tree", protocol="ll")
    inside, across = r.phases
    net = fams.of("rail").step_latency_us("tree", "ll") * 1e-6
    nvl = fams.primary.step_latency_us("tree", "ll") * 1e-6
    assert net > nvl
    # every byte of the cross-node phase crosses nodes: it pays the network's step latency
    assert across.step_latency_s >= net and inside.step_latency_s < net


def test_an_unnamed_tier_says_it_took_the_fabrics_family():
    G = build("rail-cluster", gpu="h100", nodes=2)
    G.graph["families"] = '{"nvlink": "nvlink4"}'
    r = price(G, "all-reduce", groups=[tuple(range(16))], size_bytes=GiB)
    assert any("rail, spine not named in the fabric's families: priced with the nvlink4 family" in n
               for n in r.notes)


# measured two-node and two-rack all-reduce at the largest sizes (bandwidth-bound): within 20%
@pytest.mark.parametrize("log, fabric, params, ranks, sizes", [
    ("h100_2x8gpu_nebius_ib.log", "rail-cluster", dict(gpu="h100"), 16, (8 * GiB,)),
    ("h100_2x8gpu_gcp_a3mega_tcpxo.log", "rail-cluster", dict(gpu="h100", nic_gbps=200.0), 16, (8 * GiB,)),
    ("b200_2x8gpu_lambda_ib.log", "rail-cluster", dict(gpu="b200"), 16, (2 * GiB,)),
    ("b200_2x8gpu_gcp_a4_roce.log", "rail-cluster", dict(gpu="b200"), 16, (8 * GiB,)),
    ("gb200_nvl72_2rack_144rank_coreweave.log", "nvl72-cluster", dict(), 144, (8 * GiB, 16 * GiB)),
    ("mi300x_2x8gpu_aac_roce.log", "rail-cluster", dict(gpu="mi300x"), 16, (8 * GiB, 16 * GiB)),
])
def test_two_node_all_reduce_is_within_20_percent_of_measured(log, fabric, params, ranks, sizes):
    G = build(fabric, **params)
    points = {p.size_bytes: p for p in parse_log(DATA / log)[0].points if p.in_place}
    for size in sizes:
        r = price(G, "all-reduce", groups=[tuple(range(ranks))], size_bytes=size)
        assert r.busbw_GBps == pytest.approx(points[size].busbw_GBps, rel=0.20), (log, size, r.algorithm)


def test_two_node_mi300x_prices_the_measured_curve_above_1_gib_within_10_percent_and_says_rail_rings():
    """The AAC MI300X log (held out: no constant was fitted to it), 1-16 GiB in place.

    Default model, measured at fit time: +7.6% at 1 GiB falling to +7.1% at 16 GiB (the model is
    faster; 382.8 GB/s against 357.4 at 16 GiB), on rail-bound rings with the simple protocol.
    The source does not give the NICs' speed (400G is inferred from the busbw) nor RCCL's
    algorithm, so the band, not a tighter one, is asserted.  At 16 GiB the model gives the same
    382.8 GB/s with 800G NICs (its bound is inside the node there) and 195.6 GB/s with 200G.  Below 256 MiB the model is far too
    fast (+50% to +370%: the run's small-message floor is ~220 us); that is outside this test.
    """
    G = build("rail-cluster", gpu="mi300x")
    points = {p.size_bytes: p for p in parse_log(DATA / "mi300x_2x8gpu_aac_roce.log")[0].points if p.in_place}
    for size in (GiB, 4 * GiB, 16 * GiB):
        r = price(G, "all-reduce", groups=[tuple(range(16))], size_bytes=size)
        err = r.busbw_GBps / points[size].busbw_GBps - 1
        assert 0.0 < err < 0.10, (size, err)
        assert (r.algorithm, r.protocol) == ("rail-rings", "simple")


def test_two_node_mi325x_forced_ring_is_priced_as_rail_rings_within_10_percent():
    """The AAC MI325X log (held out), NCCL_ALGO=Ring, 4/8/16 GiB in place: NCCL's Ring across nodes is
    the rail-bound rings.  Default model, measured at fit time: +9.3% busbw at each size (379.3 /
    381.6 / 382.8 GB/s against 347.0 / 349.0 / 350.2); NIC speed not given in the source.
    """
    G = build("rail-cluster", gpu="mi325x")
    run, = parse_log(DATA / "mi325x_2x8gpu_aac_roce_ring.log")
    assert run.algorithm == "Ring" and run.nranks == 16
    for p in (p for p in run.points if p.in_place):
        r = price(G, "all-reduce", groups=[tuple(range(16))], size_bytes=p.size_bytes, algorithm="rail-rings")
        assert 0.0 < r.busbw_GBps / p.busbw_GBps - 1 < 0.10, p.size_bytes


def test_nvls_tree_refuses_domains_without_reducing_switches():
    G = build("rail-cluster", gpu="a100", nodes=2)
    with pytest.raises(Exception, match="nvls-tree needs"):
        phases("all-reduce", "nvls-tree", [tuple(range(16))], GiB, view_of(G))


@pytest.mark.parametrize("algorithm", ["rail-rings", "tree", "nvls-tree"])
def test_node_algorithms_on_one_node_name_themselves_and_the_option(algorithm):
    """A cross-node algorithm asked for inside one node: a one-line error about --algorithm, naming it."""
    from click.testing import CliRunner
    from fabricsim.cli import main
    res = CliRunner().invoke(main, ["price", "all-reduce", "--fabric", "hgx-h100", "--group-size", "8",
                                    "--size", "1GiB", "--algorithm", algorithm])
    assert res.exit_code == 2 and "Traceback" not in res.output
    err, = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    assert "--algorithm" in err and f"{algorithm} needs groups spanning 2+ racks (nodes)" in err
