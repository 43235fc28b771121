"""The machines most users own: HGX A100/H100/H200/B200/B300 nodes, AMD Instinct nodes with NICs,
rail-optimized clusters of them, and NVL72 racks joined by InfiniBand rails.

Every figure is computed from the built graph and checked against the published figure it derives
from (links x GB/s per link), and against a parameter change that must move it."""
from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.collectives import by_size, price
from fabricsim.collectives.algorithms import view_of
from fabricsim.collectives.cost.family import FAMILIES, load_family
from fabricsim.fabrics import FABRICS, build
from fabricsim.topo import routing
from fabricsim.topo.auditing import audit
from fabricsim.topo.contract import validate
from fabricsim.topo.devices import device
from fabricsim.topo.errors import BadInput

NEW = ("hgx-a100", "hgx-h100", "hgx-b200", "hgx-b300", "instinct-node", "rail-cluster", "nvl72-cluster")
# (fabric, params, scale-up tier, scale-up family, network family)
CASES = [("hgx-a100", {}, "nvlink", "nvlink3", "infiniband"),
         ("hgx-h100", {}, "nvlink", "nvlink4", "infiniband"),
         ("hgx-h100", {"generation": "h200"}, "nvlink", "nvlink4", "infiniband"),
         ("hgx-b200", {}, "nvlink", "nvlink5", "infiniband"),
         ("hgx-b300", {}, "nvlink", "nvlink5", "infiniband"),
         ("instinct-node", {}, "xgmi", "infinity-fabric", "roce"),
         ("instinct-node", {"generation": "mi325x"}, "xgmi", "infinity-fabric", "roce"),
         ("rail-cluster", {}, "nvlink", "nvlink4", "infiniband"),
         ("rail-cluster", {"gpu": "a100", "nodes": 3}, "nvlink", "nvlink3", "infiniband"),
         ("rail-cluster", {"gpu": "b300"}, "nvlink", "nvlink5", "infiniband"),
         ("rail-cluster", {"gpu": "mi300x", "nodes": 4}, "xgmi", "infinity-fabric", "roce"),
         ("nvl72-cluster", {}, "nvlink", "nvlink5", "infiniband"),
         ("nvl72-cluster", {"generation": "gb300"}, "nvlink", "nvlink5", "infiniband")]


def chips(G):
    return sorted((n for n, d in G.nodes(data=True) if d["kind"] == "chip"), key=lambda n: G.nodes[n]["rank"])


def tier_GBps(G, n, tier):
    """Per-direction GB/s of node ``n``'s links on ``tier``."""
    return sum(e["capacity_gbps"] for *_, e in G.edges(n, data=True) if e["tier"] == tier) / 8


def links_on(r, f):
    """(src, dst, share) of flow ``f``'s route."""
    s = r.shares([f])
    s = np.asarray(s.toarray() if hasattr(s, "toarray") else s).ravel()
    lt = r.links
    return {(lt.nodes[lt.src[i]], lt.nodes[lt.dst[i]]): round(float(s[i]), 9) for i in np.flatnonzero(s)}


@pytest.mark.parametrize("name, params, tier, fam, net", CASES, ids=str)
def test_builds_validates_audits_and_names_its_families(name, params, tier, fam, net):
    G = build(name, **params)
    assert validate(G) == []
    assert audit(G, hops=False, bisect=False).ok
    tiers = {e["tier"] for *_, e in G.edges(data=True)}
    want = {tier: fam, "rail": net} | ({"spine": net} if "cluster" in name else {})
    assert json.loads(G.graph["families"]) == want and set(want) == tiers
    assert G.graph["family"] == fam and set(want.values()) <= set(FAMILIES)
    assert G.graph["routing"] == "ecmp"


# --- HGX nodes: per-GPU NVLink from the published link counts -------------------------------------

@pytest.mark.parametrize("name, params, gpu, links, link_GBps, switch, ports, reduces", [
    ("hgx-a100", {}, "a100-sxm", [2] * 6, 25.0, "nvswitch2", 36, False),     # 12 x 25 = 300 GB/s
    ("hgx-h100", {}, "h100-sxm", [5, 4, 4, 5], 25.0, "nvswitch3", 64, True),  # 18 x 25 = 450 GB/s
    ("hgx-h100", {"generation": "h200"}, "h200-sxm", [5, 4, 4, 5], 25.0, "nvswitch3", 64, True),
    ("hgx-h100", {"generation": "h800"}, "h800-sxm", [2, 2, 2, 2], 25.0, "nvswitch3", 64, True),  # 8 x 25 = 200
    ("hgx-b200", {}, "blackwell-gpu", [9, 9], 50.0, "nvlink5-switch", 72, True),  # 18 x 50 = 900 GB/s
    ("hgx-b300", {}, "blackwell-ultra-gpu", [9, 9], 50.0, "nvlink5-switch", 72, True),
], ids=str)
def test_hgx_nvlink_follows_the_published_split(name, params, gpu, links, link_GBps, switch, ports, reduces):
    G = build(name, nics=0, **params)
    gpus = chips(G)
    sws = [n for n, d in G.nodes(data=True) if d["kind"] == "switch"]
    assert len(gpus) == 8 and len(sws) == len(links) and G.number_of_edges() == 8 * len(links)
    assert {G.nodes[g]["model"] for g in gpus} == {gpu}
    for g in gpus:
        # links per switch: lanes / lanes per port, the published split
        assert [G.edges[g, f"nvsw{j}"]["lanes"] * G.edges[g, f"nvsw{j}"]["lane_gbps"]
                / G.edges[g, f"nvsw{j}"]["port_gbps"] for j in range(len(links))] == links
        assert tier_GBps(G, g, "nvlink") == sum(links) * link_GBps
    for j, s in enumerate(sws):
        assert G.nodes[s]["model"] == switch and bool(G.nodes[s].get("reduces")) is reduces
        used = sum(G.edges[s, g]["lanes"] * G.edges[s, g]["lane_gbps"] / G.edges[s, g]["port_gbps"] for g in G[s])
        assert used == 8 * links[j] <= ports == device(switch).ports_at(G.edges[s, gpus[0]]["port_gbps"])
    assert view_of(G).reduces is reduces          # NVLS offered exactly where the switches reduce


def test_hgx_per_gpu_figures():
    assert tier_GBps(build("hgx-a100", nics=0), "gpu0", "nvlink") == 12 * 25.0 == 300.0
    assert tier_GBps(build("hgx-h100", nics=0), "gpu0", "nvlink") == 18 * 25.0 == 450.0
    assert tier_GBps(build("hgx-b200", nics=0), "gpu0", "nvlink") == 18 * 50.0 == 900.0


@pytest.mark.parametrize("name, nic_gbps, leaf", [("hgx-a100", 200.0, "QM8700"), ("hgx-h100", 400.0, "QM9700"),
                                                  ("hgx-b200", 400.0, "QM9700"), ("hgx-b300", 800.0, "Q3400")])
def test_hgx_nics_one_per_gpu_to_its_rail_leaf(name, nic_gbps, leaf):
    G = build(name)
    for r, g in enumerate(chips(G)):
        assert [m for m in G[g] if G.nodes[m]["role"] == "leaf"] == [f"rail{r}"]
        e = G.edges[g, f"rail{r}"]
        assert (e["capacity_gbps"], e["tier"], e["rail"], e["lanes"]) == (nic_gbps, "rail", r, 4)
        assert G.nodes[f"rail{r}"]["model"] == leaf and not G.nodes[f"rail{r}"].get("reduces")
        assert G.nodes[g]["model"].endswith(("+cx6", "+cx7", "+cx8"))
        assert device(G.nodes[g]["model"]).lanes_by_tier["rail"] == 4
    # the NIC rate is a parameter: half the rate, half the rail capacity
    H = build(name, nic_gbps=nic_gbps / 2)
    assert H.edges["gpu0", "rail0"]["capacity_gbps"] == nic_gbps / 2
    # NVLS runs on the NVLink tier's reducing switches; the rail leaves (no SHARP) take no part
    assert view_of(G).reduces is (name != "hgx-a100")


def test_hgx_refuses_bad_nics_and_generation():
    with pytest.raises(BadInput, match=r"nics=4 is not valid: choose 0 \(no scale-out NICs\) or 8"):
        build("hgx-h100", nics=4)
    with pytest.raises(ValueError, match=r"generation='a100' is not valid: expected one of h100, h200"):
        build("hgx-h100", generation="a100")
    with pytest.raises(ValueError, match=r"nic_gbps=-1.0 is out of range"):
        build("hgx-b200", nic_gbps=-1.0)


def test_single_node_prices_over_nvlink_and_nics():
    G = build("hgx-h100")
    r = price(G, "all-reduce", groups=by_size(G, 8), size_bytes=2**28)
    assert math.isfinite(r.time_s) and r.time_s > 0
    lt = routing.link_table(G)
    lb = np.asarray(r.link_bytes)
    assert lb[np.asarray(lt.tier) == "rail"].sum() == 0       # one node: nothing crosses the NICs


# --- AMD Instinct nodes ------------------------------------------------------------------------

@pytest.mark.parametrize("generation, bidir_GBps", [("mi300x", 128.0), ("mi325x", 128.0), ("mi355x", 153.6)])
def test_instinct_node_mesh_plus_nics(generation, bidir_GBps):
    G = build("instinct-node", generation=generation)
    mesh = [e for *_, e in G.edges(data=True) if e["tier"] == "xgmi"]
    assert len(mesh) == 28 and {round(e["capacity_gbps"] / 8 * 2, 6) for e in mesh} == {bidir_GBps}
    assert tier_GBps(G, "gpu0", "xgmi") == pytest.approx(7 * bidir_GBps / 2)
    assert [G.edges[f"gpu{r}", f"rail{r}"]["capacity_gbps"] for r in range(8)] == [400.0] * 8
    assert build("instinct-node", generation=generation, nics=0).number_of_edges() == 28


def test_mi355x_entry_is_unchanged():
    G = build("mi355x")
    assert G.number_of_nodes() == 8 and G.number_of_edges() == 28 and "families" not in G.graph
    assert {d["model"] for _, d in G.nodes(data=True)} == {"mi355x"}
    assert G.graph["family"] == "infinity-fabric"


# --- rail-cluster ----------------------------------------------------------------------------------

def test_two_node_cluster_routes_rail_matched_pairs_over_their_rail_only():
    G = build("rail-cluster", nodes=2)
    assert len(chips(G)) == 16 and {G.nodes[c]["rack"] for c in chips(G)} == {0, 1}
    r = routing.route(G, np.arange(8), np.arange(8) + 8)
    assert r.reachable.all() and set(r.hops.tolist()) == {2}
    for f in range(8):
        assert links_on(r, f) == {(f"n0/gpu{f}", f"rail{f}"): 1.0, (f"rail{f}", f"n1/gpu{f}"): 1.0}
    # same node: NVLink only (over the four NVSwitch chips); cross-rail: leaf -> spine -> leaf
    r = routing.route(G, [3, 0], [5, 9])
    same = links_on(r, 0)
    assert {u.split("/")[-1] for u, _ in same} <= {"gpu3", "nvsw0", "nvsw1", "nvsw2", "nvsw3"}
    assert all(G.edges[u, v]["tier"] == "nvlink" for u, v in same)
    assert set(links_on(r, 1)) == {("n0/gpu0", "rail0"), ("rail0", "spine0"), ("spine0", "rail1"),
                                   ("rail1", "n1/gpu1")}


def test_amd_cluster_same_node_is_one_xgmi_hop():
    G = build("rail-cluster", gpu="mi355x", nodes=2)
    r = routing.route(G, [2, 2], [6, 10])
    assert links_on(r, 0) == {("n0/gpu2", "n0/gpu6"): 1.0}
    assert links_on(r, 1) == {("n0/gpu2", "rail2"): 1.0, ("rail2", "n1/gpu2"): 1.0}


def test_nic_rate_moves_the_rail_capacity_and_the_price():
    G4, G2 = build("rail-cluster"), build("rail-cluster", nic_gbps=200.0)
    assert {e["capacity_gbps"] for *_, e in G4.edges(data=True) if e["tier"] == "rail"} == {400.0}
    assert {e["capacity_gbps"] for *_, e in G2.edges(data=True) if e["tier"] == "rail"} == {200.0}
    groups = by_size(G4, 16)
    t4 = price(G4, "all-reduce", groups=groups, size_bytes=2**30).time_s
    t2 = price(G2, "all-reduce", groups=groups, size_bytes=2**30).time_s
    assert t2 > 1.2 * t4                     # the cross-node phase runs on the rails


def test_one_leaf_per_rail_up_to_the_leaf_radix():
    G = build("rail-cluster", nodes=32)         # DGX SuperPOD scalable unit: 32 nodes, 64-port leaves at 1:1
    leaves = [n for n, d in G.nodes(data=True) if d.get("role") == "leaf"]
    spines = [n for n, d in G.nodes(data=True) if d.get("role") == "spine"]
    assert sorted(leaves) == [f"rail{r}" for r in range(8)]
    for lf in leaves:
        down = sum(1 for m in G[lf] if G.nodes[m]["kind"] == "chip")
        up = sum(G.edges[lf, s]["lanes"] for s in spines) // 4
        assert down == up == 32 and down + up <= device("QM9700").ports_at(400.0)
    # one node more than a leaf holds: the rails split evenly over more leaves
    H = build("rail-cluster", nodes=33)
    per_rail = Counter(d["rail"] for _, d in H.nodes(data=True) if d.get("role") == "leaf")
    assert set(per_rail.values()) == {3} and audit(H, hops=False, bisect=False).ok


def test_spine_oversubscription():
    G = build("rail-cluster", nodes=4, spine_oversubscription=2.0)
    up = sum(G.edges["rail0", s]["capacity_gbps"] for s in G["rail0"] if G.nodes[s].get("role") == "spine")
    down = sum(G.edges["rail0", c]["capacity_gbps"] for c in G["rail0"] if G.nodes[c]["kind"] == "chip")
    assert down == 4 * 400.0 and up == down / 2
    with pytest.raises(BadInput, match=r"spine_oversubscription=3 gives 1.33333 up ports per leaf of 4 nodes; "
                                        r".* valid ratios 1, 2, 4"):
        build("rail-cluster", nodes=2 * 2, spine_oversubscription=3.0)


def test_sharp_marks_only_the_scale_out_switches():
    off, on = build("rail-cluster"), build("rail-cluster", sharp=True)
    for G, sharp in ((off, False), (on, True)):
        for n, d in G.nodes(data=True):
            if d.get("role") in ("leaf", "spine"):
                assert bool(d.get("reduces")) is sharp
            elif d.get("role") == "nvlink":
                assert d["reduces"] is True
    # every GPU reaches its NVLink switches; NVLS for a group across nodes is refused either way
    # (no one reducing switch reaches every member: SHARP across nodes needs NVLS-tree, not modelled)
    assert (view_of(off).reduces, view_of(on).reduces) == (True, True)
    for G in (off, on):
        with pytest.raises(BadInput, match="same reducing switches"):
            price(G, "all-reduce", groups=by_size(G, 16), size_bytes=2**30, algorithm="nvls")
    assert not any(d.get("reduces") for _, d in build("rail-cluster", gpu="a100", sharp=True).nodes(data=True)
                   if d.get("role") == "nvlink")
    with pytest.raises(BadInput, match=r"sharp=True needs InfiniBand .* gpu=mi300x uses roce leaves"):
        build("rail-cluster", gpu="mi300x", sharp=True)


@pytest.mark.parametrize("params, message", [
    ({"gpu": "v100"}, r"gpu='v100' is not valid: expected one of a100, h100"),
    ({"nodes": "0"}, r"nodes=0 is not valid: an integer 1..100,000"),
    ({"nic_gbps": "nan"}, r"nic_gbps='nan' is not valid: expected a finite number"),
])
def test_rail_cluster_refusals_are_one_line(params, message):
    with pytest.raises(ValueError, match=message):
        build("rail-cluster", **params)
    sets = [a for k, v in params.items() for a in ("--set", f"{k}={v}")]
    res = CliRunner().invoke(main, ["audit", "rail-cluster"] + sets)
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert res.output.strip().splitlines()[-1].startswith("Error:")


# --- nvl72-cluster ---------------------------------------------------------------------------------

@pytest.mark.parametrize("generation, nic_gbps", [("gb200", 400.0), ("gb300", 800.0)])
def test_nvl72_cluster(generation, nic_gbps):
    G = build("nvl72-cluster", generation=generation, racks=2)
    gpus = chips(G)
    assert len(gpus) == 144 and Counter(G.nodes[g]["rack"] for g in gpus) == {0: 72, 1: 72}
    nv = [n for n, d in G.nodes(data=True) if d.get("role") == "nvlink"]
    assert len(nv) == 36 and all(G.nodes[s]["reduces"] for s in nv)
    for g in gpus:
        assert tier_GBps(G, g, "nvlink") == 900.0 and tier_GBps(G, g, "rail") == nic_gbps / 8
        (leaf,) = [m for m in G[g] if G.nodes[m]["role"] == "leaf"]
        assert G.nodes[leaf]["rail"] == G.nodes[g]["rank"] % 4 == G.edges[g, leaf]["rail"]
    # same rail, other rack: over the rail tier (and spine where the rail needs two leaves), never NVLink
    r = routing.route(G, [5, 5], [77, 6])
    assert all(G.edges[u, v]["tier"] in ("rail", "spine") for u, v in links_on(r, 0))
    assert all(G.edges[u, v]["tier"] == "nvlink" for u, v in links_on(r, 1))


# --- CLI --------------------------------------------------------------------------------------------

@pytest.mark.slow   # ``list`` builds every catalog fabric (Virgo's 134,400 chips): ~8 s
def test_list_shows_the_new_fabrics():
    res = CliRunner().invoke(main, ["list", "--json"])
    assert res.exit_code == 0, res.output
    rows = {r["name"]: r for r in json.loads(res.output)}
    assert set(NEW) <= set(rows) <= set(FABRICS)
    assert (rows["hgx-h100"]["chips"], rows["hgx-h100"]["switches"]) == (8, 12)   # 4 NVSwitch + 8 rail leaves
    assert rows["rail-cluster"]["chips"] == 16 and rows["nvl72-cluster"]["chips"] == 144
    for name in NEW:
        assert "inferred" in rows[name]["description"].lower() and "F" in rows[name]["source"]


@pytest.mark.parametrize("name", NEW)
def test_audit_cli_passes_its_budget_checks(name):
    res = CliRunner().invoke(main, ["audit", name])
    assert res.exit_code == 0, res.output
    assert "budget checks pass" in res.output


def test_price_rail_cluster_cli():
    res = CliRunner().invoke(main, ["price", "all-reduce", "--fabric", "rail-cluster", "--group-size", "16",
                                    "--count", "1", "--size", "1GiB", "--json"])
    assert res.exit_code == 0, res.output
    js = json.loads(res.output[res.output.index("{"):])
    assert math.isfinite(js["time_s"]) and js["time_s"] > 0
    # no faster than 16 GPUs' NICs allow for the cross-node half of the data (2 x (n-1)/n of S/8 per NIC)
    nic_Bps = 400e9 / 8 * load_family("infiniband").efficiency
    assert js["time_s"] >= 2 * (2 - 1) / 2 * 2**30 / 8 / nic_Bps


@pytest.mark.parametrize("name", ["hgx-h100", "rail-cluster"])
@pytest.mark.parametrize("ext", [".json", ".graphml"])
def test_round_trip_keeps_the_families(name, ext, tmp_path):
    from fabricsim.fabrics.userfile import export_fabric, load_fabric
    G = build(name)
    H = load_fabric(export_fabric(G, tmp_path / f"{name}{ext}"))
    assert validate(H) == [] and (H.number_of_nodes(), H.number_of_edges()) == (G.number_of_nodes(),
                                                                                 G.number_of_edges())
    assert json.loads(H.graph["families"]) == json.loads(G.graph["families"])
    assert H.edges["n0/gpu0" if name == "rail-cluster" else "gpu0", "rail0"] == \
        G.edges["n0/gpu0" if name == "rail-cluster" else "gpu0", "rail0"]


@pytest.mark.parametrize("call", [
    lambda: build("jalapeno_pod"),
    lambda: build("torus", dims=(0, 4)),
    lambda: build("jalapeno-pod", racks=0),
    lambda: build("rail-cluster", gpu="bogus"),
])
def test_library_build_errors_are_fabric_errors(call):
    """A notebook user catches FabricError (still a ValueError) for every bad catalog input."""
    from fabricsim.topo.errors import FabricError
    with pytest.raises(FabricError):
        call()


def test_a_bad_set_value_names_set_not_fabric():
    """A builder's refusal of a --set value points at --set (the name itself was fine)."""
    res = CliRunner().invoke(main, ["price", "all-reduce", "--fabric", "rail-cluster", "--set", "gpu=h10",
                                    "--size", "1GiB"])
    assert res.exit_code == 2
    assert res.output.strip().splitlines()[-1].startswith("Error: Invalid value for --set: gpu='h10' is not valid")
    res = CliRunner().invoke(main, ["price", "all-reduce", "--fabric", "rail_cluster", "--size", "1GiB"])
    assert res.output.strip().splitlines()[-1].startswith("Error: Invalid value for --fabric: unknown fabric")
