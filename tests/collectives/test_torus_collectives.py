"""Concurrent multi-axis torus collectives (torus-concurrent) against closed forms.

Every expected figure is derived here from the graph (link rate, hop latency) and the
ideal step model of collectives/engine.py ``_Model._ideal``: a phase of r identical steps
takes r x (step bandwidth time + step latency), the step latency being the slowest route's
latency + the per-step overhead + (messages a rank sends in the step - 1) x the message
overhead, in series.
"""
import networkx as nx
import numpy as np
import pytest

from fabricsim.collectives import busbw_factor, by_size, price
from fabricsim.collectives.algorithms import algorithms_for, phases, view_of
from fabricsim.collectives.engine import DEFAULT_MESSAGE_OVERHEAD_NS, DEFAULT_STEP_OVERHEAD_NS
from fabricsim.fabrics import build
from fabricsim.fabrics.torus import LANES_PER_LINK
from fabricsim.topo.errors import BadInput

GiB = float(2 ** 30)


def _link_Bps(G):
    """Raw rate of one ICI link (its lanes x lane rate) per direction, from the graph; a ring
    of 2 is one bundle of both links (2 x the lanes), a flow each way."""
    rates = {e["capacity_gbps"] / e["lanes"] for *_, e in G.edges(data=True)}
    assert len(rates) == 1
    return rates.pop() * LANES_PER_LINK / 8 * 1e9


def _hop_s(G):
    lat = {e["latency_ns"] for *_, e in G.edges(data=True)}
    assert len(lat) == 1
    return lat.pop() * 1e-9


def concurrent_all_reduce_s(dims, S, B, hop_s, overhead_s, message_s, collective="all-reduce"):
    """Closed form of torus-concurrent on a full torus of ``dims`` (every ring wraps).

    Axes of extent k >= 2: a_0 .. a_{A-1}.  Shard i holds s_i = S w_i / sum(w),
    w_i = k_i / (k_i - 1), and at stage j reduces along a_{(i + j) mod A}, entering it with
    d_ij = s_i / (product of the extents it already reduced over).  A bidirectional ring
    of k moves d (k - 1) / (2k) per flow per direction over its k - 1 steps; each flow has
    its link (a ring of 2: its half of the doubled bundle) to itself, so the stage's
    bandwidth time is the largest such volume / B, and its latency is R_j = max (k - 1)
    steps of (one hop + overhead + (2A - 1) x message overhead): every chip sends 2 flows
    on each of the A axes per step.  All-reduce runs every stage twice (reduce-scatter,
    then all-gather retracing it), reduce-scatter and all-gather once.
    """
    ks = [k for k in dims if k >= 2]
    A = len(ks)
    w = np.array([k / (k - 1) for k in ks])
    d = S * w / w.sum()
    rounds = 2 if collective == "all-reduce" else 1
    total = 0.0
    for j in range(A):
        on = [ks[(i + j) % A] for i in range(A)]
        vol = max(d[i] * (on[i] - 1) / (2 * on[i]) for i in range(A))
        R = max(on) - 1
        step_lat = hop_s + overhead_s + (2 * A - 1) * message_s
        total += rounds * (vol / B + R * step_lat)
        d = d / np.array(on)
    return total


@pytest.mark.parametrize("dims", ["2x2x2", "4x4x4", "4x4x8", "4x4x1", "2x4x6", "8x3x1"])
@pytest.mark.parametrize("collective", ["all-reduce", "reduce-scatter", "all-gather"])
def test_closed_form_ideal(dims, collective):
    G = build("torus", dims=dims)
    shape = tuple(int(k) for k in dims.split("x"))
    n = int(np.prod(shape))
    B, hop = _link_Bps(G), _hop_s(G)
    assert B == 100e9                                    # 4 lanes x 200 Gb/s per ICI link (fabrics/torus.py)
    overhead = float(G.graph.get("step_overhead_ns", DEFAULT_STEP_OVERHEAD_NS)) * 1e-9
    message = float(G.graph.get("message_overhead_ns", DEFAULT_MESSAGE_OVERHEAD_NS)) * 1e-9
    for S in (GiB, 3e6):
        r = price(G, collective, groups=by_size(G, n), size_bytes=S, algorithm="torus-concurrent",
                  protocol="ideal", efficiency=1.0)
        want = concurrent_all_reduce_s(shape, S, B, hop, overhead, message, collective)
        assert r.time_s == pytest.approx(want, rel=1e-9)
        assert r.algorithm == "torus-concurrent"


def test_cube_is_three_times_the_sequential_rings_bandwidth():
    """k x k x k: the sequential rings move S(k-1)/k (1 + 1/k + 1/k^2) per direction over one
    axis at a time; three shards on three axes at once divide that by 3 exactly."""
    G = build("torus", dims="4x4x4")
    kw = dict(groups=by_size(G, 64), size_bytes=GiB, protocol="ideal")
    seq = price(G, "all-reduce", algorithm="torus-rings", **kw)
    con = price(G, "all-reduce", algorithm="torus-concurrent", **kw)
    k, B = 4, _link_Bps(G)
    assert seq.bandwidth_time_s == pytest.approx(GiB * (k - 1) / k * (1 + 1 / k + 1 / k ** 2) / B, rel=1e-12)
    assert con.bandwidth_time_s == pytest.approx(seq.bandwidth_time_s / 3, rel=1e-12)
    # every ICI link of the torus is busy for the whole bandwidth time
    assert np.all(con.link_utilization == pytest.approx(1.0, rel=1e-9))


def test_default_price_busbw_and_auto():
    """`fabricsim price all-reduce --fabric torus --set dims=4x4x4 --size 1GiB`: the family's
    protocol and efficiency; the one-axis-at-a-time rings gave 179.9 GB/s busbw before."""
    G = build("torus", dims="4x4x4")
    g = by_size(G, 64)
    auto = price(G, "all-reduce", groups=g, size_bytes=GiB)
    seq = price(G, "all-reduce", groups=g, size_bytes=GiB, algorithm="torus-rings")
    assert auto.algorithm == "torus-concurrent"
    assert auto.busbw_GBps >= 2.5 * seq.busbw_GBps and auto.busbw_GBps >= 2.5 * 179
    assert auto.alternatives["torus-concurrent"] < auto.alternatives["torus-rings"]
    assert auto.busbw_GBps == pytest.approx(GiB / auto.time_s / 1e9 * busbw_factor("all-reduce", 64))


def test_every_chip_sends_what_a_reduce_scatter_must():
    """Per chip, the stages' flows add up to S (1 - 1/n): each shard s_i is reduce-scattered
    down to s_i / n, whatever the axis order; every stage drives every axis, both ways."""
    G = build("torus", dims="2x4x6")
    n, S = 48, 1e9
    view = view_of(G)
    plist = phases("reduce-scatter", "torus-concurrent", by_size(G, n), S, view)
    assert len(plist) == 3
    sent = np.zeros(n)
    for ph in plist:
        np.add.at(sent, ph.src, ph.repeat * ph.size_bytes)
        # every chip sends 6 flows a step: to both neighbours on each of the 3 axes
        assert np.all(np.bincount(ph.src, minlength=n) == 6)
        d = view.coords[ph.dst] - view.coords[ph.src]
        moved = (d != 0).sum(axis=1)
        assert np.all(moved == 1)                        # one axis per flow: ring neighbours
        assert set(np.nonzero(d)[1].tolist()) == {0, 1, 2}
    assert sent == pytest.approx(np.full(n, S * (1 - 1 / n)), rel=1e-12)


def test_all_gather_retraces_in_reverse():
    G = build("torus", dims="4x4x8")
    view, g = view_of(G), by_size(G, 128)
    rs = phases("reduce-scatter", "torus-concurrent", g, 1e9, view)
    ag = phases("all-gather", "torus-concurrent", g, 1e9, view)
    assert [p.name for p in ag] == ["all-gather " + p.name for p in reversed(rs)]
    for a, b in zip(ag, reversed(rs)):
        assert np.array_equal(a.size_bytes, b.size_bytes) and a.repeat == b.repeat
    ar = phases("all-reduce", "torus-concurrent", g, 1e9, view)
    assert [p.repeat for p in ar] == [2 * p.repeat for p in rs]


def test_symmetry_classes_equal_every_flow():
    """Groups that tile the torus the same way fold by translations, to the per-flow answer."""
    G = build("torus", dims="8x4x4")
    g = by_size(G, 16)                                   # x-planes: 1x4x4 boxes, two axes at once
    kw = dict(groups=g, size_bytes=2 ** 24, algorithm="torus-concurrent", protocol="ideal")
    fast = price(G, "all-reduce", **kw)
    slow = price(G, "all-reduce", symmetry=False, **kw)
    assert fast.method["path"] == "translations"
    for f in ("time_s", "bandwidth_time_s", "latency_s", "bound_s"):
        assert getattr(fast, f) == pytest.approx(getattr(slow, f), rel=1e-12)
    assert np.allclose(fast.link_bytes, slow.link_bytes, rtol=1e-12)


def test_refusals():
    G = build("torus", dims="4x4x4")
    view = view_of(G)
    with pytest.raises(BadInput, match="2 or more axes"):
        phases("all-reduce", "torus-concurrent", by_size(G, 4), 1e6, view)      # a z line of 4
    with pytest.raises(BadInput, match="full box"):
        phases("all-reduce", "torus-concurrent", [tuple(range(8)) + (17, 18)], 1e6, view)
    with pytest.raises(BadInput, match="coordinates"):
        phases("all-reduce", "torus-concurrent", [tuple(range(8))], 1e6, view_of(build("jalapeno-rack")))
    with pytest.raises(BadInput, match="all-to-all"):
        phases("all-to-all", "torus-concurrent", by_size(G, 64), 1e6, view)
    assert "torus-concurrent" not in algorithms_for("all-reduce", by_size(G, 4), view)
    assert "torus-concurrent" in algorithms_for("all-reduce", by_size(G, 16), view)


@pytest.mark.slow
@pytest.mark.parametrize("fabric", ["ironwood", "tpu8t"])
def test_full_pod_unequal_axes_beats_sequential(fabric):
    """16x24x24 / 20x20x24, ~55k flows a stage solved flow by flow: within 2.5-3x of the rings."""
    G = build(fabric)
    g = by_size(G, view_of(G).n_chips)
    seq = price(G, "all-reduce", groups=g, size_bytes=GiB, algorithm="torus-rings")
    con = price(G, "all-reduce", groups=g, size_bytes=GiB, algorithm="torus-concurrent")
    assert 2.5 * seq.busbw_GBps <= con.busbw_GBps <= 3 * seq.busbw_GBps


# ----------------------------------------------------------------------------- ring over direct links
def test_boardfly_ring_over_direct_links_reaches_link_rate():
    """Two boards of a Boardfly group (8 chips): rank order sends 3 -> 4 and 7 -> 0 across the
    one copper link between the boards, two ring flows share an in-board link and the ring
    runs at 2/3 of link rate.  Ordered along a Hamiltonian path of the group's links
    (board 0's ring ending at the copper link's chip, then board 1's ring from its end), every
    flow has its links to itself, the closing one included (it runs back over the path's
    unused reverse directions): 2(n-1) steps of S/n at the link rate B, plus per step the
    slowest route's latency and the overhead (one message a step: no message overhead)."""
    G = build("boardfly", groups=2)
    g = by_size(G, 8)
    B = {e["capacity_gbps"] for *_, e in G.edges(data=True)}.pop() / 8 * 1e9       # 200 GB/s per link
    S, n = GiB, 8
    kw = dict(groups=g, size_bytes=S, protocol="ideal", efficiency=1.0)
    linked = price(G, "all-reduce", algorithm="ring-linked", **kw)
    plain = price(G, "all-reduce", algorithm="ring", **kw)
    rows = phases("all-reduce", "ring-linked", g, S, view_of(G))[0].rows
    chip = {d["rank"]: v for v, d in G.nodes(data=True)}
    hops = [nx.shortest_path_length(G, chip[int(r[i])], chip[int(r[(i + 1) % n])]) for r in rows for i in range(n)]
    assert sorted(set(hops)) == [1, 3]                   # direct links, and the closing flow's 3 hops
    hop_s = {e["latency_ns"] for *_, e in G.edges(data=True)}.pop() * 1e-9
    step_lat = max(hops) * hop_s + DEFAULT_STEP_OVERHEAD_NS * 1e-9
    assert linked.time_s == pytest.approx(2 * (n - 1) * (S / n / B + step_lat), rel=1e-9)
    assert plain.bandwidth_time_s == pytest.approx(1.5 * linked.bandwidth_time_s, rel=1e-9)
    assert linked.busbw_GBps > 1.45 * plain.busbw_GBps
    auto = price(G, "all-reduce", groups=g, size_bytes=S)
    assert auto.algorithm == "ring-linked"


def test_ring_linked_finds_cycles_and_keeps_folds():
    """A 4x4 plane of a torus has a Hamiltonian cycle of links; groups laid alike share one
    order, so translation classes still price them, to the per-flow answer."""
    G = build("torus", dims="4x4x4")
    g = by_size(G, 16)
    ph = phases("all-reduce", "ring-linked", g, 1e6, view_of(G))[0]
    assert "a cycle of direct links" in ph.name
    chip = {d["rank"]: v for v, d in G.nodes(data=True)}
    assert all(G.has_edge(chip[int(a)], chip[int(b)]) for a, b in zip(ph.src, ph.dst))
    # the whole 4x4x4 torus: a cycle within the search budget, every flow on its own link at link rate
    whole = price(G, "all-reduce", groups=by_size(G, 64), size_bytes=GiB, algorithm="ring-linked",
                  protocol="ideal")
    assert whole.bandwidth_time_s == pytest.approx(2 * 63 * GiB / 64 / _link_Bps(G), rel=1e-9)
    kw = dict(groups=g, size_bytes=2 ** 24, algorithm="ring-linked", protocol="ideal")
    fast, slow = price(G, "all-reduce", **kw), price(G, "all-reduce", symmetry=False, **kw)
    assert fast.method["path"] == "translations"
    assert fast.time_s == pytest.approx(slow.time_s, rel=1e-12)


def test_ring_linked_refusals():
    with pytest.raises(BadInput, match="through switches"):
        phases("all-reduce", "ring-linked", [tuple(range(8))], 1e6, view_of(build("nvl72")))
    G = build("torus", dims="4x4x4")
    with pytest.raises(BadInput, match="no walk"):              # chips 0 and 2 of a z ring: not linked
        phases("all-reduce", "ring-linked", [(0, 2)], 1e6, view_of(G))
    assert "ring-linked" not in algorithms_for("all-reduce", [(0, 2)], view_of(G))
