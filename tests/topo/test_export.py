"""ASTRA-sim export: the network.yml parses as YAML with exactly the analytical backend's four keys."""
import networkx as nx
import pytest
import yaml
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.fabrics import build
from fabricsim.topo import builders as B
from fabricsim.topo.contract import add_bundle
from fabricsim.topo.errors import BadInput
from fabricsim.topo.export import astra_network

KEYS = {"topology", "npus_count", "bandwidth", "latency"}


def export(tmp_path, *args, name="network.yml"):
    out = tmp_path / name
    res = CliRunner().invoke(main, ["export", *map(str, args), "-o", str(out)])
    return res, out


def load(path):
    doc = yaml.safe_load(path.read_text())
    assert set(doc) == KEYS
    assert len({len(doc[k]) for k in KEYS}) == 1          # one entry per dimension in every key
    return doc


@pytest.mark.parametrize("dims, link", [("4x4x4", 90.0), ("8x4x2", 45.0), ("6x6", 120.0)])
def test_torus_is_one_ring_per_dimension_at_the_link_rate(tmp_path, dims, link):
    res, out = export(tmp_path, "torus", "--set", f"dims={dims}", "--set", f"link_GBps={link}", "--format", "astra-sim")
    assert res.exit_code == 0, res.output
    doc = load(out)
    ks = [int(k) for k in dims.split("x")]
    assert doc["topology"] == ["Ring"] * len(ks)
    assert doc["npus_count"] == ks[::-1]              # ASTRA-sim's dimension 0 is the fastest rank digit
    assert doc["bandwidth"] == [pytest.approx(link)] * len(ks)
    assert doc["latency"] == [1000.0] * len(ks)


def test_nvl72_is_one_switch_of_72(tmp_path):
    res, out = export(tmp_path, "nvl72")            # .yml -> astra-sim without --format
    assert res.exit_code == 0, res.output
    doc = load(out)
    assert doc["topology"] == ["Switch"] and doc["npus_count"] == [72]
    assert doc["bandwidth"] == [pytest.approx(900.0)]   # 18 links x 50 GB/s per direction
    assert "in-network reduction" in res.output and "in-network reduction" in out.read_text()


def test_vera_rubin_doubles_the_switch_bandwidth():
    gb, vr = (astra_network(build("nvl72", generation=g)).dims[0] for g in ("gb200", "vera-rubin"))
    assert vr.bandwidth_GBps == pytest.approx(2 * gb.bandwidth_GBps)


def test_jalapeno_rack_and_pod(tmp_path):
    rack = astra_network(build("jalapeno-rack")).dims
    assert [(d.topology, d.npus, d.bandwidth_GBps) for d in rack] == [("Switch", 128, pytest.approx(600.0))]
    res, out = export(tmp_path, "jalapeno-pod", "--set", "racks=4", "--format", "astra-sim")
    assert res.exit_code == 0, res.output
    doc = load(out)
    assert doc["topology"] == ["Switch", "Switch"] and doc["npus_count"] == [128, 4]
    # 6 x 800G local per chip; 8 x 200G global lanes per chip, uplinks non-blocking
    assert doc["bandwidth"] == [pytest.approx(600.0), pytest.approx(200.0)]
    assert "rail-only" in res.output and "rail-only" in out.read_text()


def test_boardfly_maps_with_its_wiring_stated_lost():
    net = astra_network(build("boardfly", groups=5))
    assert [(d.topology, d.npus) for d in net.dims] == [("Ring", 4), ("FullyConnected", 8), ("FullyConnected", 5)]
    # one 200 GB/s link per board pair shared by 4 chips; 2 links per group pair shared by 32
    assert [d.bandwidth_GBps for d in net.dims] == [pytest.approx(200.0), pytest.approx(50.0), pytest.approx(12.5)]
    assert any("land on particular chips" in x for x in net.losses)


def test_generic_builders():
    fm = astra_network(B.full_mesh(chips=8, lane_gbps=400.0)).dims
    assert [(d.topology, d.npus, d.bandwidth_GBps) for d in fm] == [("FullyConnected", 8, pytest.approx(50.0))]
    ls = astra_network(B.leaf_spine(leaves=4, chips_per_leaf=8, spines=2, oversubscription=2.0)).dims
    assert [(d.topology, d.npus) for d in ls] == [("Switch", 8), ("Switch", 4)]
    assert ls[1].bandwidth_GBps == pytest.approx(ls[0].bandwidth_GBps / 2)   # oversubscription 2
    sd = astra_network(B.switched_domain(chips=16, planes=4)).dims
    assert [(d.topology, d.npus, d.bandwidth_GBps) for d in sd] == [("Switch", 16, pytest.approx(100.0))]


def test_trays_fully_connected_in_front_of_switches():
    # Maia-style: 2 trays of 4 chips, a full mesh inside each tray, every chip on 2 switches
    G = nx.Graph(name="trays", routing="ecmp")
    for r in range(8):
        G.add_node(f"c{r}", kind="chip", model="generic-chip", forwards=False, rank=r, tray=r // 4, rack=0)
    for s in range(2):
        G.add_node(f"s{s}", kind="switch", model="generic-switch", role="t0", forwards=True, rack=0, plane=s)
        for r in range(8):
            add_bundle(G, f"c{r}", f"s{s}", lanes=2, lane_gbps=400.0, port_gbps=800.0, medium="copper",
                       tier="scale-up", latency_ns=10.0)
    for a in range(8):
        for b in range(a + 1, 8):
            if a // 4 == b // 4:
                add_bundle(G, f"c{a}", f"c{b}", lanes=3, lane_gbps=400.0, port_gbps=400.0, medium="pcb",
                           tier="tray", latency_ns=2.0)
    dims = astra_network(G).dims
    assert [(d.topology, d.npus) for d in dims] == [("FullyConnected", 4), ("Switch", 2)]
    assert dims[0].bandwidth_GBps == pytest.approx(150.0) and dims[1].bandwidth_GBps == pytest.approx(200.0)


def test_unmappable_fabric_is_a_one_line_error(tmp_path):
    p = tmp_path / "df.toml"
    p.write_text('name = "df"\nbuilder = "dragonfly"\n[params]\np = 2\na = 4\nh = 2\n')
    res, out = export(tmp_path, p)
    assert res.exit_code == 1 and "Traceback" not in res.output
    err = [line for line in res.output.splitlines() if line.startswith("Error:")]
    assert len(err) == 1 and "df: cannot be mapped onto ASTRA-sim" in err[0] and "reaches 2 of the 72" in err[0]
    assert not out.exists()


def test_irregular_graph_is_refused():
    G = B.torus((4, 4))
    del G.graph["dims"]
    G.remove_edge("c00.00", "c00.01")
    with pytest.raises(BadInput, match="cannot be mapped"):
        astra_network(G)


@pytest.mark.parametrize("name, fmt", [("g.graphml", None), ("g.json", None), ("g.json", "json")])
def test_graphml_and_json_exports_stay_as_they_were(tmp_path, name, fmt):
    args = ["nvl72"] + (["--format", fmt] if fmt else [])
    res, out = export(tmp_path, *args, name=name)
    assert res.exit_code == 0, res.output
    from fabricsim.fabrics.userfile import load_fabric
    assert load_fabric(out).number_of_edges() == 1296


@pytest.mark.parametrize("name, fmt, match", [("g.json", "astra-sim", "writes .yml or .yaml"),
                                               ("g.yml", "graphml", "writes .graphml"),
                                               ("g.json", "simai", "writes .txt"),
                                               ("g.csv", None, "ending in .graphml, .json, .yml, .yaml, .txt")])
def test_format_and_extension_must_agree(tmp_path, name, fmt, match):
    args = ["nvl72"] + (["--format", fmt] if fmt else [])
    res, _ = export(tmp_path, *args, name=name)
    assert res.exit_code == 2 and match in res.output


def test_ironwood_rings_and_its_optical_switches_stated_lost():
    net = astra_network(build("ironwood", dims=(4, 4, 8)))
    assert [(d.topology, d.npus) for d in net.dims] == [("Ring", 8), ("Ring", 4), ("Ring", 4)]
    assert any("optical circuit switches" in x for x in net.losses)
