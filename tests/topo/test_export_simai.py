"""SimAI ns-3 topology out: the text parses back to the graph's nodes, switches, links and rates."""
import json
import re

import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.fabrics import build
from fabricsim.topo.contract import chips
from fabricsim.topo.errors import BadInput
from fabricsim.topo.export import simai_topology

UNIT_GBPS = {"Gbps": 1.0, "Mbps": 1e-3, "Tbps": 1e3}
UNIT_NS = {"ms": 1e6, "us": 1e3, "ns": 1.0}


def parse_simai(text: str) -> dict:
    """A reader as SimAI's (whitespace-separated tokens): header, switch ids, links."""
    tok = text.split()
    node_num, per_server, nv_num, sw_num, link_num = map(int, tok[:5])
    gpu_type = tok[5]
    pos = 6
    nv = [int(t) for t in tok[pos:pos + nv_num]]
    pos += nv_num
    sw = [int(t) for t in tok[pos:pos + sw_num]]
    pos += sw_num
    links = []
    for _ in range(link_num):
        src, dst, bw, lat, err = tok[pos:pos + 5]
        pos += 5
        b = re.fullmatch(r"([0-9.]+)(Gbps|Mbps|Tbps)", bw)
        t = re.fullmatch(r"([0-9.]+)(ms|us|ns)", lat)
        assert b and t, (bw, lat)
        links.append((int(src), int(dst), float(b[1]) * UNIT_GBPS[b[2]], float(t[1]) * UNIT_NS[t[2]], float(err)))
    assert pos == len(tok), "trailing tokens"
    return {"nodes": node_num, "per_server": per_server, "nv": nv, "sw": sw, "links": links, "gpu_type": gpu_type}


def _export(tmp_path, fabric, *sets):
    out = tmp_path / "topo.txt"
    r = CliRunner().invoke(main, ["export", fabric, *sets, "--format", "simai", "-o", str(out)],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "the SimAI mapping loses: lanes and ports" in r.output
    return parse_simai(out.read_text()), json.loads((tmp_path / "topo.txt.json").read_text())


@pytest.mark.parametrize("fabric, sets, per_server, gpu_type", [
    ("hgx-h100", ("--set", "nics=8"), 8, "H100"),
    ("rail-cluster", (), 8, "H100"),
    ("jalapeno-rack", (), 1, "NONE"),
    ("nvl72", (), 72, "NONE"),
])
def test_export_parses_back_to_the_graph(tmp_path, fabric, sets, per_server, gpu_type):
    params = dict(s.split("=") for s in sets[1::2])
    G = build(fabric, **{k: int(v) for k, v in params.items()})
    t, side = _export(tmp_path, fabric, *sets)
    n_chips = len(chips(G))
    nv = [n for n, d in G.nodes(data=True) if d.get("role") == "nvlink"]
    assert t["nodes"] == G.number_of_nodes()
    assert t["nodes"] - len(t["nv"]) - len(t["sw"]) == n_chips
    assert len(t["nv"]) == len(nv) and len(t["sw"]) == G.number_of_nodes() - n_chips - len(nv)
    assert sorted(t["nv"] + t["sw"]) == list(range(n_chips, t["nodes"]))
    assert t["per_server"] == per_server and t["gpu_type"] == gpu_type
    assert len(t["links"]) == G.number_of_edges()
    node = {int(i): n for i, n in side["nodes"].items()}
    assert [node[i] for i in range(n_chips)] == chips(G)
    for src, dst, bw, lat, err in t["links"]:
        e = G.edges[node[src], node[dst]]
        assert bw == pytest.approx(e["capacity_gbps"], rel=1e-9)
        half = sum(G.nodes[x].get("latency_ns", 0.0) / 2 for x in (node[src], node[dst]))
        assert lat == pytest.approx(e["latency_ns"] + half, abs=1e-3) and err == 0
    assert any("failure domains" in x for x in side["losses"])
    assert any("routing" in x for x in side["losses"])


def test_nvswitches_of_a_server_are_its_ids_and_bandwidths_follow_the_nic_rate(tmp_path):
    t, side = _export(tmp_path, "rail-cluster", "--set", "nodes=2", "--set", "nic_gbps=200")
    node = {int(i): n for i, n in side["nodes"].items()}
    assert [node[i].split("/")[0] for i in t["nv"]] == ["n0"] * 4 + ["n1"] * 4
    rail = {bw for s, d, bw, *_ in t["links"] if node[d].startswith("rail")}
    assert rail == {200.0}


def test_chip_to_chip_links_are_refused_in_one_line():
    with pytest.raises(BadInput, match="direct chip-to-chip link") as exc:
        simai_topology(build("mi355x"))
    assert "\n" not in str(exc.value)
