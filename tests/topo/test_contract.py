import networkx as nx
import pytest

from fabricsim.fabrics import build
from fabricsim.topo.contract import add_bundle, forwarding_graph, validate


def _tiny():
    G = nx.Graph(routing="ecmp")
    G.add_node("a", kind="chip", model="jalapeno", forwards=False, rank=0)
    G.add_node("b", kind="chip", model="jalapeno", forwards=False, rank=1)
    G.add_node("s", kind="switch", model="BCM78914", role="local", forwards=True)
    for c in "ab":
        add_bundle(G, c, "s", lanes=4, lane_gbps=200, port_gbps=800, medium="copper", tier="local", latency_ns=5)
    return G


def test_tiny_graph_is_valid():
    assert validate(_tiny()) == []


@pytest.mark.parametrize("mutate, where, problem", [
    (lambda G: G.nodes["a"].update(kind="gpu"), "a", "kind"),
    (lambda G: G.nodes["a"].update(model="nope"), "a", "device catalog"),
    (lambda G: G.nodes["s"].update(model="jalapeno"), "s", "is a chip"),
    (lambda G: G.nodes["s"].pop("role"), "s", "no role"),
    (lambda G: G.nodes["b"].update(rank=5), "graph", "ranks"),
    (lambda G: G.nodes["b"].update(rank="1"), "b", "rank"),
    (lambda G: G.edges["a", "s"].update(lanes=0), "a -- s", "lanes"),
    (lambda G: G.edges["a", "s"].update(capacity_gbps=1.0), "a -- s", "capacity_gbps"),
    (lambda G: G.edges["a", "s"].update(medium="air"), "a -- s", "medium"),
    (lambda G: G.edges["a", "s"].update(lanes=3), "a -- s", "whole"),
    (lambda G: G.add_node("z", kind="chip", model="jalapeno", forwards=False, rank=2), "z", "no links"),
    (lambda G: G.graph.update(routing="magic"), "graph", "routing"),
])
def test_validator_names_the_element_at_fault(mutate, where, problem):
    G = _tiny()
    mutate(G)
    found = validate(G)
    assert any(v.where == where and problem in v.problem for v in found), found


def test_validator_reports_every_violation_not_just_the_first():
    G = _tiny()
    G.nodes["a"]["kind"] = "gpu"
    G.edges["b", "s"]["medium"] = "air"
    assert len(validate(G)) >= 2


@pytest.mark.parametrize("name, params", [
    ("jalapeno-rack", {}), ("jalapeno-rack", {"trays": 4}),
    ("jalapeno-pod", {"racks": 2}), ("jalapeno-pod", {"racks": 2, "leaf": "static"}),
    ("jalapeno-pod", {"racks": 2, "rail_wiring": "per-port", "leaf": "static"}),
])
def test_jalapeno_fabrics_are_valid(name, params):
    assert validate(build(name, **params)) == []


def test_forwarding_graph_replaces_patch_leaves_by_circuits():
    G = build("jalapeno-pod", racks=2, leaf="static")
    H = forwarding_graph(G)
    assert not any(d.get("role") == "leaf" for _, d in H.nodes(data=True))
    # each chip's 8 global lanes become 8 one-lane circuits, one to each rail's switch of its column
    c = "r01/xpu013"
    circuits = [m for m in H[c] if H.nodes[m]["role"] == "rail"]
    assert len(circuits) == 8
    assert {H.nodes[m]["column"] for m in circuits} == {G.nodes[c]["column"]}
    assert all(H.edges[c, m]["lanes"] == 1 and H.edges[c, m]["hops"] == 2 for m in circuits)
    # a switched pod is its own forwarding graph
    S = build("jalapeno-pod", racks=2)
    assert forwarding_graph(S) is S
