"""InfraGraph both ways: catalog fabrics round-trip with equal audit totals and prices; foreign files; bad files."""
import json

import pytest
from click.testing import CliRunner

pytest.importorskip("infragraph")   # in the test extra; skipped only where the extra is not installed
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402  (hypothesis: test extra)

from fabricsim.cli import main
from fabricsim.collectives.placement import by_size
from fabricsim.collectives.price import price
from fabricsim.fabrics import build
from fabricsim.fabrics.infragraph_io import read_infragraph
from fabricsim.fabrics.userfile import load_fabric
from fabricsim.topo.auditing import audit
from fabricsim.topo.contract import validate
from fabricsim.topo.errors import BadInput
from fabricsim.topo.export import infragraph_document, write_infragraph

MIB = 2**20


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _totals(G):
    return audit(G, hops=False, bisect=False).totals


def _price(G, collective, n):
    return price(G, collective, groups=by_size(G, n), size_bytes=64 * MIB).time_s


def _same_graph(G, H):
    assert list(G.nodes) == list(H.nodes)
    assert dict(G.nodes(data=True)) == dict(H.nodes(data=True))
    assert ({frozenset((u, v)): d for u, v, d in G.edges(data=True)}
            == {frozenset((u, v)): d for u, v, d in H.edges(data=True)})
    assert H.graph == G.graph


ROUND_TRIPS = [
    ("mi355x", {}, "all-reduce", 8),
    ("torus", {"dims": (4, 4, 4)}, "all-gather", 16),
    ("nvl72", {}, "all-reduce", 72),
    ("jalapeno-rack", {}, "reduce-scatter", 128),
    pytest.param("jalapeno-pod", {}, "all-reduce", 256, marks=pytest.mark.slow),
]


@pytest.mark.parametrize("name, kw, collective, n", ROUND_TRIPS)
def test_round_trip_same_graph_audit_and_price(tmp_path, name, kw, collective, n):
    G = build(name, **kw)
    path = tmp_path / f"{name}.json"
    write_infragraph(G, path)
    H = read_infragraph(path)
    assert validate(H) == []
    _same_graph(G, H)
    assert _totals(H) == _totals(G)
    assert _price(H, collective, n) == _price(G, collective, n)


def test_cli_export_then_import(tmp_path):
    ig, fab = tmp_path / "torus.json", tmp_path / "fabric.json"
    r = run("export", "torus", "--set", "dims=4x4x4", "--format", "infragraph", "-o", str(ig))
    assert r.exit_code == 0, r.output
    assert "InfraGraph carries only as annotations: routing policy 'dor'" in r.stderr
    doc = json.loads(ig.read_text())
    assert set(doc) == {"infrastructure", "annotations"}
    assert "routing policy 'dor'" in doc["infrastructure"]["description"]   # in the file as well
    assert doc["infrastructure"]["instances"][0]["count"] == 64
    from infragraph import Infrastructure
    from infragraph.infragraph_service import InfraGraphService
    service = InfraGraphService()    # the package's own expansion of the slices: every bundle once
    service.set_graph(Infrastructure().deserialize(doc["infrastructure"]))
    assert service.get_networkx_graph().number_of_edges() == 192 > len(doc["infrastructure"]["edges"])
    r = run("import", "infragraph", str(ig), "-o", str(fab))
    assert r.exit_code == 0, r.output
    assert "64 chips, 0 switches, 192 links" in r.stderr
    H, G = load_fabric(fab), build("torus", dims=(4, 4, 4))
    assert _totals(H) == _totals(G)
    assert _price(H, "all-reduce", 64) == _price(G, "all-reduce", 64)


def test_gpu_with_nic_chips_import_in_a_fresh_process(tmp_path):
    """rail-cluster's chips are "<gpu>+<nic>" devices registered while building; a fresh reader registers them."""
    import subprocess
    import sys
    ig, fab = tmp_path / "rc.json", tmp_path / "fabric.json"
    write_infragraph(build("rail-cluster"), ig)
    code = ("from fabricsim.fabrics.infragraph_io import read_infragraph\n"
            f"G = read_infragraph({str(ig)!r})\nprint(G.nodes['n0/gpu0']['model'])")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == build("rail-cluster").nodes["n0/gpu0"]["model"]
    assert run("import", "infragraph", str(ig), "-o", str(fab)).exit_code == 0
    G, H = build("rail-cluster"), load_fabric(fab)
    assert _totals(H) == _totals(G) and _price(H, "all-reduce", 16) == _price(G, "all-reduce", 16)


def test_export_links_carry_capacity_and_latency():
    G = build("nvl72")
    doc = infragraph_document(G)
    (link,) = doc.infrastructure["links"]
    e = next(iter(G.edges(data=True)))[2]
    assert link["physical"]["bandwidth"]["gigabits_per_second"] == e["capacity_gbps"]
    assert link["physical"]["latency"]["ns"] == e["latency_ns"]
    assert any("reduces" in x for x in doc.notes)   # NVLS is an annotation only, and said so


def _expand(blocks):
    def idx(sl):
        a, _, b = sl.partition(":")
        return list(range(int(a), int(b))) if b else [int(a)]
    out = set()
    for scheme, a, b in blocks:
        xs, ys = idx(a), idx(b)
        out |= {(x, y) for x in xs for y in ys} if scheme == "many2many" else set(zip(xs, ys, strict=True))
    return out


@given(pairs=st.sets(st.tuples(st.integers(0, 12), st.integers(0, 12)), max_size=60), same=st.booleans())
def test_property_edge_blocks_cover_the_bundles_exactly(pairs, same):
    """The compressed edge entries (many2many rectangles, one2one diagonals) expand to exactly the bundles."""
    from fabricsim.topo.export import _ig_blocks
    if same:     # within one instance the exporter writes each pair once, lower index first, no self-loops
        pairs = {(min(a, b), max(a, b)) for a, b in pairs if a != b}
    blocks = _ig_blocks(sorted(pairs), same=same)
    got = _expand(blocks)
    assert got == set(pairs) and sum(1 for _ in blocks) <= max(1, len(pairs))


def test_changing_the_fabric_changes_the_file():
    a = infragraph_document(build("torus", dims=(4, 4, 4))).infrastructure
    b = infragraph_document(build("torus", dims=(4, 4, 2))).infrastructure
    assert a["instances"][0]["count"] == 64 and b["instances"][0]["count"] == 32


# --------------------------------------------------------------------------- a foreign file
def _foreign(pcie_gbps=512.0, eth_gbps=400.0, model_annotations=True):
    """Two servers of 2 xpus, each xpu behind its own NIC on one switch's ports (the blueprints' style)."""
    infra = {
        "name": "two-servers", "description": "hand-written",
        "devices": [
            {"name": "server", "components": [{"name": "xpu", "count": 2, "choice": "xpu"},
                                              {"name": "nic", "count": 2, "choice": "nic"},
                                              {"name": "cpu", "count": 1, "choice": "cpu"}],
             "links": [{"name": "pcie", "physical": {"bandwidth": {"choice": "gigabits_per_second",
                                                                   "gigabits_per_second": pcie_gbps},
                                                     "latency": {"choice": "ns", "ns": 100.0}}}],
             "edges": [{"ep1": {"component": "xpu"}, "ep2": {"component": "nic"}, "scheme": "one2one",
                        "link": "pcie"},
                       {"ep1": {"component": "cpu"}, "ep2": {"component": "xpu"}, "scheme": "many2many",
                        "link": "pcie"}]},
            {"name": "sw", "components": [{"name": "asic", "count": 1, "choice": "switch"},
                                          {"name": "port", "count": 4, "choice": "port"}],
             "links": [{"name": "ic"}],
             "edges": [{"ep1": {"component": "asic"}, "ep2": {"component": "port"}, "scheme": "many2many",
                        "link": "ic"}]}],
        "instances": [{"name": "server", "device": "server", "count": 2}, {"name": "sw", "device": "sw", "count": 1}],
        "links": [{"name": "eth", "physical": {"bandwidth": {"choice": "gigabytes_per_second",
                                                             "gigabytes_per_second": eth_gbps / 8},
                                               "latency": {"choice": "us", "us": 0.5}}}],
        "edges": [{"ep1": {"instance": f"server[{i // 2}]", "component": f"nic[{i % 2}]"},
                   "ep2": {"instance": "sw[0]", "component": f"port[{i}]"}, "scheme": "one2one", "link": "eth"}
                  for i in range(4)]}
    ann = {"nodes": [{"name": "server", "attributes": [{"attribute": "model", "value": "h100-sxm"}]},
                     {"name": "sw", "attributes": [{"attribute": "model", "value": "QM9700"}]}]}
    return {"infrastructure": infra, "annotations": ann if model_annotations else {}}


def test_foreign_file_joins_through_nics_and_ports(tmp_path):
    p = tmp_path / "two.json"
    p.write_text(json.dumps(_foreign()))
    G = read_infragraph(p)
    assert validate(G) == []
    chips = [n for n, d in G.nodes(data=True) if d["kind"] == "chip"]
    assert len(chips) == 4 and G.number_of_edges() == 4
    e = G.edges["server.0.xpu.0", "sw.0.asic.0"]
    assert e["capacity_gbps"] == 400.0                   # the chain's narrowest link (eth), not pcie
    assert e["latency_ns"] == pytest.approx(100.0 + 500.0)   # pcie + eth; the ic link has none
    assert "cpu" in G.graph["notes"] and "one lane" in G.graph["inferred"]
    # the price moves with the file's figures
    p2 = tmp_path / "slow.json"
    p2.write_text(json.dumps(_foreign(eth_gbps=100.0)))
    assert _price(read_infragraph(p2), "all-reduce", 4) > _price(G, "all-reduce", 4)


def test_foreign_yaml(tmp_path):
    yaml = pytest.importorskip("yaml")
    p = tmp_path / "two.yaml"
    p.write_text(yaml.safe_dump(_foreign()))
    assert read_infragraph(p).number_of_edges() == 4


# --------------------------------------------------------------------------- malformed files
def _bad(tmp_path, doc, suffix=".json"):
    p = tmp_path / f"bad{suffix}"
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def _mutate(fn):
    d = _foreign()
    fn(d)
    return d


BAD = [
    ('{"infrastructure": ', "line 1, column 20: malformed JSON"),
    ("[1, 2]", "top level must be"),
    (_mutate(lambda d: d["infrastructure"]["devices"][0]["components"][0].update(choice="gpu")),
     "infrastructure.devices[0]: property choice shall be one of"),
    (_mutate(lambda d: d["infrastructure"]["edges"][0]["ep1"].update(instance="ghost[0]")),
     "Instance 'ghost' does not exist"),
    (_mutate(lambda d: (d["infrastructure"]["links"][0].pop("physical"),
                        d["infrastructure"]["devices"][0]["links"][0]["physical"].pop("bandwidth"))),
     "has no physical bandwidth"),
    (_mutate(lambda d: d.update(annotations={})), "no 'model' annotation"),
    (_mutate(lambda d: d["annotations"]["nodes"][0]["attributes"][0].update(value="no-such-chip")),
     "contract violation"),
    (_mutate(lambda d: d.update(extra=1)), "unknown key 'extra'"),
]


@pytest.mark.parametrize("doc, expected", BAD)
def test_bad_file_one_line_exit_2(tmp_path, doc, expected):
    p = _bad(tmp_path, doc)
    with pytest.raises(BadInput) as exc:
        read_infragraph(p)
    assert expected in str(exc.value) and str(p) in str(exc.value) and "\n" not in str(exc.value)
    r = run("import", "infragraph", str(p), "-o", str(tmp_path / "out.json"))
    assert r.exit_code == 2 and expected in r.stderr.strip().splitlines()[-1]


def test_bad_suffix_and_missing_file(tmp_path):
    with pytest.raises(BadInput, match="unknown file type '.xml'"):
        read_infragraph(tmp_path / "x.xml")
    with pytest.raises(BadInput, match="no such file"):
        read_infragraph(tmp_path / "x.json")


def test_export_format_needs_json_suffix(tmp_path):
    r = run("export", "mi355x", "--format", "infragraph", "-o", str(tmp_path / "x.yml"))
    assert r.exit_code == 2 and "writes .json files" in r.stderr



_VALID = json.dumps(_foreign())


def _graph_or_one_line(p):
    """Reading ``p`` gives a valid graph, or one BadInput line that names the file."""
    try:
        G = read_infragraph(p)
    except BadInput as exc:
        assert str(p) in str(exc) and "\n" not in str(exc)
    else:
        assert validate(G) == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, len(_VALID)), junk=st.text(max_size=8))
def test_property_any_damaged_file_is_a_graph_or_one_line(tmp_path, cut, junk):
    """A damaged document (cut short, junk spliced in) reads into a valid graph or fails in one BadInput line."""
    p = tmp_path / "h.json"
    p.write_text(_VALID[:cut] + junk + _VALID[cut:])
    _graph_or_one_line(p)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from([("devices", 0, "name"), ("devices", 1, "components"), ("instances", 0, "count"),
                             ("instances", 1, "device"), ("edges", 2, "scheme"), ("edges", 0, "link"),
                             ("links", 0, "physical")]),
       value=st.one_of(st.none(), st.integers(-3, 5), st.text(max_size=6), st.lists(st.integers(), max_size=2),
                       st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)))
def test_property_any_wrong_field_is_a_graph_or_one_line(tmp_path, path, value):
    """Any one field of the schema replaced by a wrong value: a valid graph or one BadInput line."""
    d = _foreign()
    key, i, field = path
    d["infrastructure"][key][i][field] = value
    p = tmp_path / "f.json"
    p.write_text(json.dumps(d))
    _graph_or_one_line(p)


def test_malformed_yaml_names_the_line(tmp_path):
    p = _bad(tmp_path, "infrastructure:\n  name: [x\n", suffix=".yaml")
    with pytest.raises(BadInput, match=r"bad\.yaml: line 3, column 1: malformed YAML"):
        read_infragraph(p)


def test_damaged_file_found_by_the_property_is_one_line(tmp_path):
    # hypothesis (cut=1840, junk='0') spliced a character that left an attribute name that is not text
    p = tmp_path / "h.json"
    p.write_text(_VALID[:1840] + "0" + _VALID[1840:])
    _graph_or_one_line(p)
