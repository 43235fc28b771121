"""Issue 24 item 1: each fabric's declared switching is its default split; the cut certificate
that spares intact symmetric fabrics the multipath LP (collectives/adaptive.py certify_equal)."""
from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest

from fabricsim.collectives import adaptive, price
from fabricsim.fabrics import build
from fabricsim.topo import multipath
from fabricsim.topo.errors import BadInput
from fabricsim.topo.failures import apply_failures
from fabricsim.topo.routing.switching import default_split, switching_of


def _chips(G) -> int:
    return sum(1 for _, d in G.nodes(data=True) if d.get("kind") == "chip")


def _fail_links(G: nx.Graph, k: int, rng) -> nx.Graph:
    H = G.copy()
    H.graph["failed"] = True
    edges = list(H.edges)
    for i in rng.choice(len(edges), size=k, replace=False):
        H.remove_edge(*edges[i])
    return H


# ------------------------------------------------------------------ the certificate against the LP
def _small():
    return [("pod-2x8", build("jalapeno-pod", racks=2, trays=1), 3),
            ("rack-32", build("jalapeno-rack", trays=4), 6)]


@pytest.mark.parametrize("name,G,n_fail", _small(), ids=lambda x: x if isinstance(x, str) else "")
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("collective,algorithm", [("all-to-all", "direct"), ("all-reduce", "ring")])
def test_certificate_agrees_with_the_lp(name, G, n_fail, seed, collective, algorithm, monkeypatch):
    """Where the certificate skips the LP its price is the LP's (1e-6), intact (seed 0) or under random
    link failures; the certificate must not pass where adaptive and equal differ."""
    H = G if seed == 0 else _fail_links(G, n_fail, np.random.default_rng(seed))
    kw = dict(groups=[list(range(_chips(G)))], size_bytes=2**24, algorithm=algorithm, protocol="ideal",
              split="adaptive")
    got = price(H, collective, **kw)
    monkeypatch.setattr(adaptive, "CERTIFY", False)
    want = price(H, collective, **kw)
    assert got.time_s == pytest.approx(want.time_s, rel=1e-6), (name, seed, got.notes)
    assert got.bound_s == pytest.approx(want.bound_s, rel=1e-6)
    if seed == 0 or algorithm == "ring":             # intact, or ring phases (proved on these degraded ones too)
        assert any("proved by saturated cuts" in n or "parallel planes" in n for n in got.notes), got.notes


def test_certificate_refuses_where_equal_shares_strand_capacity():
    """The pod without rail 3: equal ECMP shares leave the leaves' other uplinks idle (x1.99 in the
    issue); no saturated cut proves them fair, so the LP runs and is faster than equal."""
    G = build("jalapeno-pod", racks=2)               # 256 chips (with 2 trays a rack, rails are not the limit)
    H, _ = apply_failures(G, ["rail:3"])
    kw = dict(groups=[list(range(256))], size_bytes=2**24, algorithm="direct", protocol="ideal")
    eq = price(H, "all-to-all", split="equal", **kw)
    ad = price(H, "all-to-all", split="adaptive", **kw)
    assert not any("proved by saturated cuts" in n for n in ad.notes)
    assert ad.time_s < eq.time_s * 0.9


def test_cuts_of_a_two_path_flow():
    """One flow over two parallel two-hop paths: layers {a->x, a->y} and {x->b, y->b}; the ends-only
    cuts are the same two sets."""
    import scipy.sparse as sp
    # nodes a=0, x=1, y=2, b=3; links 0: a->x, 1: a->y, 2: x->b, 3: y->b
    S = sp.csr_array(np.array([[0.5, 0.5, 0.5, 0.5]]))
    for layers in (True, False):
        c = adaptive._Cuts(S, [0, 0, 1, 2], [1, 2, 3, 3], np.arange(4), [0], [3], layers=layers)
        assert sorted(map(tuple, c.cut_orbits)) == [(0, 1), (2, 3)]
        assert c.pair_cls.tolist() == [0, 0]


def test_certificate_needs_a_saturated_cut():
    """Two flows a->b sharing one link of capacity 10 with a second path only one of them may use:
    equal max-min (5, 5) is not multipath fair (the second flow takes its own path too)."""
    import scipy.sparse as sp
    from fabricsim.topo import solver
    # links 0: a->b (cap 10), 1: a->c, 2: c->b (cap 10 each); flow 0 only link 0, flow 1 both paths
    S = sp.csr_array(np.array([[1.0, 0, 0], [0.5, 0.5, 0.5]]))
    cap = np.array([10.0, 10.0, 10.0])
    P = sp.csr_array(np.array([[1.0, 0], [0.5, 0.5]]))        # pieces: link 0 / path via c
    Q = sp.csr_array(np.array([[1.0, 0, 0], [0, 1.0, 1.0]]))
    cuts = adaptive._Cuts(S, [0, 0, 2], [1, 2, 1], np.arange(3), [0, 0], [1, 1])
    sizes = np.array([1.0, 1.0])
    bound = solver.link_load_bound(P, Q, cap, sizes).time_s
    ok, why = adaptive.certify_equal(cuts, P, Q, cap, np.ones(2), sizes, bound, False)
    assert not ok and why
    p = multipath.paths_of(S, [0, 0, 2], [1, 2, 1], [0, 0], [1, 1], capacity_Bps=cap)
    assert multipath.maxmin_rates(p).rate_Bps.tolist() == pytest.approx([10.0, 10.0])


# ------------------------------------------------------------------ the default split
@pytest.mark.parametrize("fabric,kw,split", [("jalapeno-rack", dict(trays=1), "adaptive"),
                                             ("jalapeno-pod", dict(racks=1, trays=1), "adaptive"),
                                             ("torus", dict(dims="4x4"), "equal")])
def test_default_split_is_the_fabrics(fabric, kw, split):
    G = build(fabric, **kw)
    r = price(G, "all-to-all", groups=[list(range(_chips(G)))], size_bytes=2**20, protocol="ideal")
    assert r.split == split and r.split_source.startswith("fabric default")
    assert switching_of(G).source in r.split_source
    d = json.loads(json.dumps(r.as_dict()))
    assert (d["split"], d["split_source"]) == (r.split, r.split_source)
    given = price(G, "all-to-all", groups=[list(range(_chips(G)))], size_bytes=2**20, protocol="ideal",
                  split="equal")
    assert (given.split, given.split_source) == ("equal", "given")
    if split == "adaptive":                          # intact: the same answer, said so in a note
        assert given.time_s == pytest.approx(r.time_s, rel=1e-9)
        assert any(n.startswith("split adaptive: fabric default (adaptive, F: Broadcom Tomahawk 6") for n in r.notes)


def test_user_file_without_a_declaration_stays_equal(tmp_path):
    from fabricsim.fabrics.userfile import load_fabric
    G = build("jalapeno-rack", trays=1)
    data = nx.node_link_data(G, edges="edges")
    data["graph"] = {"name": "my-rack"}
    path = tmp_path / "my-rack.json"
    path.write_text(json.dumps(data, default=str))
    U = load_fabric(path)
    assert default_split(U) == ("equal", "fabric default (nothing declared: static ECMP hashing)")
    r = price(U, "all-to-all", groups=[list(range(8))], size_bytes=2**20, protocol="ideal")
    assert (r.split, r.split_source) == ("equal", default_split(U)[1])
    data["graph"]["switching"] = "adaptive"
    path.write_text(json.dumps(data, default=str))
    U = load_fabric(path)
    r = price(U, "all-to-all", groups=[list(range(8))], size_bytes=2**20, protocol="ideal")
    assert r.split == "adaptive" and "declared in the fabric file (my-rack)" in r.split_source
    U.graph["switching"] = "spray"
    with pytest.raises(BadInput, match="switching = 'spray'; choose one of: static, weighted, adaptive"):
        price(U, "all-to-all", groups=[list(range(8))], size_bytes=2**20)


def test_default_adaptive_falls_back_to_equal_where_it_cannot_run(monkeypatch):
    """Too big for the multipath program: the default prices equal and says so; a given adaptive refuses."""
    G = build("jalapeno-rack", trays=2)
    monkeypatch.setattr(adaptive, "CERTIFY", False)
    monkeypatch.setattr(multipath, "MAX_FLOWS", 10)
    kw = dict(groups=[list(range(16))], size_bytes=2**20, protocol="ideal", algorithm="direct", symmetry=False)
    r = price(G, "all-to-all", **kw)
    eq = price(G, "all-to-all", split="equal", **kw)
    assert r.split == "equal" and r.split_source.endswith("adaptive could not run, equal instead")
    assert any(n.startswith("split: the fabric's default adaptive could not run direct (flows 240 exceeds 10")
               for n in r.notes), r.notes
    assert r.time_s == eq.time_s
    with pytest.raises(BadInput, match="--split equal"):
        price(G, "all-to-all", split="adaptive", **kw)


def test_mix_reads_a_default_adaptive_as_equal():
    from fabricsim.collectives import by_size
    from fabricsim.collectives.jobs import Job, mix
    G = build("jalapeno-rack", trays=1)
    g = by_size(G, 8)
    jobs = [Job("a", "all-reduce", g, 2**20, algorithm="ring"), Job("b", "all-to-all", g, 2**20)]
    r = mix(G, jobs)
    eq = mix(G, jobs, split="equal")
    assert r.notes[0].startswith("split equal: the fabric's default adaptive (fabric default (adaptive, F:")
    assert r.makespan_s == eq.makespan_s and not any(n.startswith("split") for n in eq.notes)


def test_cli_json_says_which_split_ran():
    from click.testing import CliRunner
    from fabricsim.cli import main
    res = CliRunner().invoke(main, ["price", "all-to-all", "--fabric", "jalapeno-rack", "--set", "trays=1",
                                    "--size", "1MiB", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["split"] == "adaptive" and d["split_source"].startswith("fabric default (adaptive, F: Broadcom")
    res = CliRunner().invoke(main, ["price", "all-to-all", "--fabric", "jalapeno-rack", "--set", "trays=1",
                                    "--size", "1MiB", "--json", "--split", "equal"])
    assert json.loads(res.output)["split_source"] == "given"


@pytest.mark.slow
def test_pod_rail_failure_under_the_default_split_is_eight_sevenths():
    """Issue 24 done-when, under the DEFAULT split (Tomahawk 6 cognitive routing: adaptive)."""
    from fabricsim.collectives.whatif import whatif
    w = whatif(build("jalapeno-pod"), ["rail:3"], "all-to-all", groups=[list(range(2048))], size_bytes=2**30,
               algorithm="direct")
    assert w.bandwidth_slowdown == pytest.approx(8 / 7, rel=5e-3)


def test_a_stored_step_rescaled_equals_a_fresh_solve():
    """A size sweep or another efficiency reuses the solved step, rescaled: the same as solving anew."""
    G = build("jalapeno-pod", racks=2, trays=1)
    H, _ = apply_failures(G, ["rail:3"])
    kw = dict(groups=[list(range(16))], algorithm="direct", protocol="ideal", split="adaptive")
    adaptive._STEPS.clear()
    price(H, "all-to-all", size_bytes=2**20, efficiency=0.5, **kw)
    assert len(adaptive._STEPS[H]) == 1
    again = price(H, "all-to-all", size_bytes=3 * 2**24, efficiency=0.8, **kw)
    assert len(adaptive._STEPS[H]) == 1                  # no new program
    adaptive._STEPS.clear()
    fresh = price(H, "all-to-all", size_bytes=3 * 2**24, efficiency=0.8, **kw)
    assert again.time_s == pytest.approx(fresh.time_s, rel=1e-12)
    assert again.bound_s == pytest.approx(fresh.bound_s, rel=1e-12)
    assert np.allclose(again.link_bytes, fresh.link_bytes, rtol=1e-12, atol=0)
    H.remove_edge(*next(iter(H.edges)))                   # a changed graph is not the stored one
    price(H, "all-to-all", size_bytes=2**20, **kw)
    assert len(adaptive._STEPS[H]) == 2


# ------------------------------------------------------------------ parallel planes: any traffic, no LP
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("fabric,kw", [("jalapeno-rack", {"trays": 1}), ("nvl72", {})])
def test_parallel_planes_agree_with_the_lp_for_any_traffic(fabric, kw, seed, monkeypatch):
    """An unequal all-to-all-v on a single switched tier: the structural proof (parallel_planes) skips
    the LP, and the LP gives the same price (1e-6)."""
    G = build(fabric, **kw)
    n = 4
    T = np.random.default_rng(seed).integers(1, 2**20, size=(n, n)).astype(float)
    np.fill_diagonal(T, 0)
    args = dict(groups=[list(range(n))], traffic=T, algorithm="direct", protocol="ideal", split="adaptive")
    got = price(G, "all-to-all", **args)
    assert any("parallel planes" in x for x in got.notes), got.notes
    monkeypatch.setattr(adaptive, "CERTIFY", False)
    want = price(G, "all-to-all", **args)
    assert got.time_s == pytest.approx(want.time_s, rel=1e-6)


def test_parallel_planes_refuses_unequal_links():
    """A chip whose links to the switches differ in capacity (a lane lost) is not parallel planes."""
    from fabricsim.topo.routing import link_table, route
    G = build("jalapeno-rack", trays=2)
    u, v = next((a, b) for a, b, d in G.edges(data=True) if d.get("tier") == "local")
    H, _ = apply_failures(G, [f"lanes:{u}--{v}=1"])
    for graph, expect in ((G, True), (H, False)):
        lt = link_table(graph)
        src, dst = np.array([0, 1, 2]), np.array([1, 2, 0])
        r = route(graph, src, dst, links=lt)
        nodes = [lt.node_index[n] for n in sorted((n for n, d in graph.nodes(data=True) if d.get("kind") == "chip"),
                                                   key=lambda n: graph.nodes[n]["rank"])]
        assert adaptive.parallel_planes(r.shares(), lt, np.array(nodes)[src], np.array(nodes)[dst]) is expect
