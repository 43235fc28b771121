"""User fabric files: TOML recipes, GraphML, node-link JSON; every malformed file is a BadInput
naming the file, the place and the reason."""
from __future__ import annotations

import json

import networkx as nx
import pytest

from fabricsim.fabrics import build
from fabricsim.fabrics.userfile import export_fabric, load_fabric
from fabricsim.topo.builders import BUILDERS
from fabricsim.topo.contract import validate
from fabricsim.topo.errors import BadInput


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


# --- TOML recipes ---------------------------------------------------------------------------

RECIPES = {
    "torus": 'dims = [4, 4]\nlanes_per_link = 2',
    "switched_domain": "chips = 16\nplanes = 4",
    "leaf_spine": "leaves = 4\nchips_per_leaf = 8\nspines = 2\noversubscription = 2.0",
    "dragonfly": "p = 2\na = 4\nh = 2",
    "full_mesh": "chips = 6",
    "boardfly": "groups = 3",
}


def test_every_builder_has_a_recipe():
    assert set(RECIPES) == set(BUILDERS)


@pytest.mark.parametrize("builder", sorted(RECIPES))
def test_recipe_builds_a_valid_graph(builder, tmp_path):
    p = write(tmp_path, f"my-{builder}.toml", f'builder = "{builder}"\n[params]\n{RECIPES[builder]}\n')
    G = load_fabric(p)
    assert validate(G) == []
    assert G.graph["name"] == f"my-{builder}" and G.graph["builder"] == builder
    assert json.loads(G.graph["params"])


def test_torus_recipe_and_overrides(tmp_path):
    p = write(tmp_path, "t.toml", 'name = "lab"\ndescription = "a 4x4"\nbuilder = "torus"\n'
                                  '[params]\ndims = [4, 4]\n')
    G = load_fabric(p)
    assert (G.graph["name"], G.graph["description"], G.graph["dims"]) == ("lab", "a 4x4", "4x4")
    assert G.number_of_edges() == 32 and G.graph["routing"] == "dor"
    H = load_fabric(p, dims="2x3x2", lanes_per_link="2", link_gbps="800")
    assert H.graph["dims"] == "2x3x2"
    # rings of 3 carry one 2-lane link per bundle, rings of 2 both links (4 lanes)
    assert {(e["axis"], e["lanes"]) for *_, e in H.edges(data=True)} == {("x", 4), ("y", 2), ("z", 4)}
    assert {e["lane_gbps"] for *_, e in H.edges(data=True)} == {400.0}
    assert json.loads(H.graph["params"])["dims"] == [2, 3, 2]


def test_bool_and_literal_overrides(tmp_path):
    p = write(tmp_path, "b.toml", 'builder = "boardfly"\n[params]\ngroups = 2\n')
    assert load_fabric(p, port_placement="naive").graph["port_placement"] == "naive"
    assert load_fabric(p, groups="3").number_of_nodes() == 96


@pytest.mark.parametrize("text, match", [
    ('builder = "hypercube"\n', r"b\.toml: builder = 'hypercube' is not a builder; choose one of: "
                                r"switched_domain, leaf_spine, torus, dragonfly, full_mesh, boardfly"),
    ('builder = "torus"\n[params]\ndims = [4, 4]\nsize = 3\n',
     r"b\.toml: \[params\] 'size' is not a parameter of torus; valid: dims, lanes_per_link"),
    ('[params]\ndims = [4]\n', r"b\.toml: missing key 'builder'; choose one of: switched_domain"),
    ('builder = "torus"\ncolor = "red"\n', r"b\.toml: unknown key 'color'; valid keys: builder, params"),
    ('builder = "torus"\n[params]\nlanes_per_link = 2\n', r"b\.toml: \[params\] is missing 'dims'"),
    ('builder = "torus"\n[params]\ndims = [4, 0]\n', r"b\.toml: \[params\]: dims=\(4, 0\).*integer >= 1"),
    ('builder = "boardfly"\n[params]\ngroups = 99\n', r"groups=99 is out of range; valid: 1\.\.37"),
    ('builder = "torus"\nparams = 3\n', r"'params' must be a table"),
    ('builder = "torus"\n[params\ndims = [4]\n', r"b\.toml: .*line 2"),
])
def test_bad_recipes(tmp_path, text, match):
    p = write(tmp_path, "b.toml", text)
    with pytest.raises(BadInput, match=match):
        load_fabric(p)


def test_bad_override(tmp_path):
    p = write(tmp_path, "t.toml", 'builder = "torus"\n[params]\ndims = [4, 4]\n')
    with pytest.raises(BadInput, match=r"override 'colour' is not a parameter of torus"):
        load_fabric(p, colour="red")


def test_bad_override_value(tmp_path):
    p = write(tmp_path, "t.toml", 'builder = "torus"\n[params]\ndims = [4, 4]\n')
    with pytest.raises(BadInput, match=r"lanes_per_link='two' is not valid: expected int"):
        load_fabric(p, lanes_per_link="two")


def test_bad_input_is_a_value_error():
    assert issubclass(BadInput, ValueError)


# --- GraphML and node-link JSON -------------------------------------------------------------

@pytest.mark.parametrize("ext", [".graphml", ".json"])
def test_round_trip_keeps_types(ext, tmp_path):
    G = build("boardfly", groups=2)
    H = load_fabric(export_fabric(G, tmp_path / f"bf{ext}"))
    assert validate(H) == []
    assert nx.utils.graphs_equal(G, H)
    for n in ("g00/b0/c0", "g01/b7/c3"):
        assert type(H.nodes[n]["rank"]) is int and type(H.nodes[n]["forwards"]) is bool
    e = H.edges["g00/b0/c0", "g00/b0/c1"]
    assert (type(e["lanes"]), type(e["lane_gbps"]), type(e["medium"])) == (int, float, str)


@pytest.mark.parametrize("ext", [".graphml", ".json"])
def test_tuple_node_ids_become_strings(ext, tmp_path):
    G = build("nvl72")
    G = nx.relabel_nodes(G, {n: ("n", n) for n in G})
    H = load_fabric(export_fabric(G, tmp_path / f"t{ext}"))
    assert "('n', 'gpu00')" in H and validate(H) == []


def test_export_refuses_non_scalar(tmp_path):
    G = build("nvl72")
    G.nodes["gpu03"]["tags"] = ["a", "b"]
    with pytest.raises(BadInput, match=r"gpu03: attribute 'tags' = \['a', 'b'\] is not a scalar"):
        export_fabric(G, tmp_path / "x.graphml")


def test_export_refuses_unknown_extension(tmp_path):
    with pytest.raises(BadInput, match=r"unknown file type '\.yaml'; use one of: \.graphml, \.json"):
        export_fabric(build("nvl72"), tmp_path / "x.yaml")


def test_malformed_graphml(tmp_path):
    p = write(tmp_path, "bad.graphml", '<?xml version="1.0"?>\n<graphml>\n<graph>\n</graphml>\n')
    with pytest.raises(BadInput, match=r"bad\.graphml: line 4, column \d+: malformed XML"):
        load_fabric(p)


def test_malformed_json(tmp_path):
    p = write(tmp_path, "bad.json", '{"nodes": [],\n "edges": [\n  {"source": 1,}\n]}\n')
    with pytest.raises(BadInput, match=r"bad\.json: line 3, column \d+: malformed JSON"):
        load_fabric(p)


@pytest.mark.parametrize("data, match", [
    ([], r"top level must be a node-link object"),
    ({"nodes": [], "links": []}, r"node-link key 'edges' must be a list \(this file uses 'links'"),
    ({"nodes": [{"name": "a"}], "edges": []}, r"nodes\[0\] has no 'id'"),
    ({"nodes": [{"id": "a"}], "edges": [{"source": "a"}]}, r"edges\[0\] needs 'source' and 'target'"),
])
def test_bad_node_link_structure(tmp_path, data, match):
    p = write(tmp_path, "g.json", json.dumps(data))
    with pytest.raises(BadInput, match=match):
        load_fabric(p)


@pytest.mark.parametrize("ext", [".graphml", ".json"])
def test_contract_violation_names_the_element(ext, tmp_path):
    G = build("nvl72")
    G.nodes["gpu07"]["kind"] = "gpu"
    G.edges["gpu01", "nvsw02"]["medium"] = "wireless"
    p = export_fabric(G, tmp_path / f"v{ext}")
    with pytest.raises(BadInput, match=r"v\.\w+: 3 contract violations: gpu07: kind 'gpu'.*"
                                       r"gpu01 -- nvsw02: medium 'wireless'"):
        load_fabric(p)


def test_rank_as_float_is_refused(tmp_path):
    G = build("nvl72")
    G.nodes["gpu00"]["rank"] = 0.0
    p = export_fabric(G, tmp_path / "r.json")
    with pytest.raises(BadInput, match=r"gpu00: chip rank 0\.0 is not an integer"):
        load_fabric(p)


def test_unknown_extension(tmp_path):
    p = write(tmp_path, "f.yaml", "x: 1\n")
    with pytest.raises(BadInput, match=r"f\.yaml: unknown file type '\.yaml'; use one of: \.toml, \.graphml"):
        load_fabric(p)


def test_missing_file(tmp_path):
    with pytest.raises(BadInput, match=r"nope\.json: no such file"):
        load_fabric(tmp_path / "nope.json")


def test_overrides_refused_for_stored_graphs(tmp_path):
    p = export_fabric(build("nvl72"), tmp_path / "n.json")
    with pytest.raises(BadInput, match=r"parameters \(generation\) apply only to \.toml recipes"):
        load_fabric(p, generation="gb300")
