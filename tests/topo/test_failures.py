"""Failure domains, the spec language and degraded graphs (fabricsim.topo.failures)."""
import json

import pytest

from fabricsim.fabrics import build
from fabricsim.topo.contract import validate
from fabricsim.topo.errors import BadInput
from fabricsim.topo.failures import FailureSpec, apply_failures, chip_tier_bandwidth, domain_classes, domains, \
    parse_spec


@pytest.fixture(scope="module")
def pod4():
    return build("jalapeno-pod", racks=4)


@pytest.fixture(scope="module")
def static4():
    return build("jalapeno-pod", racks=4, leaf="static")


# --------------------------------------------------------------------------- domains
@pytest.mark.parametrize("name, params, expected", [
    ("jalapeno-rack", {}, {"tray", "local-switch", "switch-tray", "rack"}),
    ("jalapeno-pod", {"racks": 2}, {"tray", "local-switch", "leaf-switch", "switch-tray", "rack", "rail",
                                    "rail-switch", "ocs"}),
    ("nvl72", {}, {"tray", "switch-tray", "rack", "nvlink-switch"}),
    ("ironwood", {"dims": (4, 4, 8)}, {"tray", "cube", "ocs"}),
    ("boardfly", {"groups": 3}, {"board", "group", "ocs"}),
    ("torus", {"dims": (4, 4)}, {"link", "lanes"}),
])
def test_each_fabric_has_its_shared_fate_classes(name, params, expected):
    G = build(name, **params)
    have = domain_classes(G)
    assert expected <= set(have)
    assert have[0] == "node" and "link" in have
    assert list(domains(G)) == have


def test_pod_domain_counts(pod4):
    D = domains(pod4)
    racks = 4
    assert len(D["tray"]) == racks * 16 and all(len(d.nodes) == 8 for d in D["tray"])
    assert len(D["rack"]) == racks and all(len(d.nodes) == 128 + 6 + 4 for d in D["rack"])
    assert len(D["rail"]) == 8 and all(len(d.nodes) == 8 for d in D["rail"])
    assert len(D["rail-switch"]) == 64 and len(D["local-switch"]) == 6 * racks and len(D["leaf-switch"]) == 4 * racks
    # 6 one-ASIC local switch trays and 2 global switch trays of 2 ASICs per rack
    sizes = sorted(len(d.nodes) for d in D["switch-tray"])
    assert sizes == [1] * 6 * racks + [2] * 2 * racks
    assert [d.id for d in D["tray"][:2]] == ["r00/t00", "r00/t01"]
    # one optical switch per rack on the uplinks: 4 leaves x 16 rail switches
    assert len(D["ocs"]) == racks and all(len(d.edges) == 64 for d in D["ocs"])
    assert len(D["link"]) == pod4.number_of_edges()


def test_nvl72_trays():
    D = domains(build("nvl72"))
    assert [len(d.nodes) for d in D["switch-tray"]] == [2] * 9
    assert [len(d.nodes) for d in D["tray"]] == [4] * 18
    assert D["tray"][5].id == "t05" and D["switch-tray"][4].id == "st4"
    G = build("nvl72")
    assert apply_failures(G, ["tray:r00/t05"])[1][0]["nodes_removed"] == ["gpu20", "gpu21", "gpu22", "gpu23"]
    assert D["switch-tray"][0].as_dict() == {"id": "st0", "description": D["switch-tray"][0].description,
                                             "nodes": ["nvsw00", "nvsw01"], "edges": [], "lanes": None}


def test_static_leaves_offer_no_lane_domains_on_patched_bundles(static4):
    lanes = domains(static4, ["lanes"])["lanes"]
    assert lanes and all("gsw" not in d.id for d in lanes)


def test_user_graph_gets_domains_after_a_file_round_trip(tmp_path):
    from fabricsim.fabrics.userfile import export_fabric, load_fabric
    G = build("jalapeno-pod", racks=2)
    path = export_fabric(G, tmp_path / "pod.graphml")
    H = load_fabric(str(path))
    assert {c: len(v) for c, v in domains(H).items()} == {c: len(v) for c, v in domains(G).items()}


def test_domains_refuses_a_class_the_fabric_lacks():
    with pytest.raises(BadInput, match=r"'rail' is not one 'nvl72' has \(did you mean tray, rack\?\); choose one of: node, chip"):
        domains(build("nvl72"), ["rail"])


# --------------------------------------------------------------------------- spec parsing
@pytest.mark.parametrize("text, spec", [
    ("node:r00/lsw0", FailureSpec("node", "r00/lsw0")),
    (" link:a--b ", FailureSpec("link", "a--b")),
    ("lanes:r00/xpu000--r00/lsw0=3", FailureSpec("lanes", "r00/xpu000--r00/lsw0", 3)),
    ("Rail:2", FailureSpec("rail", "2")),
    ("rail-switch:rail0/sw3", FailureSpec("rail-switch", "rail0/sw3")),
    ("switch-tray:r00/st6", FailureSpec("switch-tray", "r00/st6")),
])
def test_parse_spec(text, spec):
    assert parse_spec(text) == spec
    assert parse_spec(spec.text) == spec


@pytest.mark.parametrize("text, match", [
    ("r00/lsw0", r"'r00/lsw0' is not CLASS:ID"),
    ("nod:r00/lsw0", r"unknown failure class 'nod'.*did you mean node"),
    ("lanes:a--b", r"lanes needs a count, lanes:A--B=K"),
    ("lanes:a--b=two", r"lane count 'two' is not an integer"),
    ("lanes:a--b=0", r"lane count 0 must be at least 1"),
    ("link:ab", r"a link is spelled A--B"),
    ("rack:", r"is not CLASS:ID"),
])
def test_parse_spec_errors(text, match):
    with pytest.raises(BadInput, match=match):
        parse_spec(text)


# --------------------------------------------------------------------------- applying
def test_node_failure_copies_and_records():
    G = build("jalapeno-rack")
    H, applied = apply_failures(G, ["node:r00/lsw0"])
    assert "r00/lsw0" in G and "r00/lsw0" not in H
    assert applied == [{"spec": "node:r00/lsw0", "nodes_removed": ["r00/lsw0"], "edges_removed": [],
                        "incident_edges_removed": 128, "lanes_removed": []}]
    assert json.loads(H.graph["failed"]) == applied
    assert validate(H) == []
    # failures stack: a degraded graph records both
    H2, _ = apply_failures(H, ["tray:t03"])
    assert [a["spec"] for a in json.loads(H2.graph["failed"])] == ["node:r00/lsw0", "tray:t03"]


def test_lanes_keep_capacity_consistent():
    G = build("jalapeno-rack")
    H, applied = apply_failures(G, ["lanes:r00/xpu000--r00/lsw0=1"])
    e = H.edges["r00/xpu000", "r00/lsw0"]
    assert (e["lanes"], e["capacity_gbps"], e["failed_lanes"]) == (3, 600.0, 1)
    assert e["capacity_gbps"] == e["lanes"] * e["lane_gbps"]
    assert applied[0]["lanes_removed"] == [{"link": "r00/xpu000--r00/lsw0", "lanes": 1, "left": 3}]
    assert validate(H) == []          # port_gbps narrowed so the 3 lanes make whole ports
    assert G.edges["r00/xpu000", "r00/lsw0"]["lanes"] == 4


def test_all_lanes_remove_the_link_and_either_order_works():
    G = build("jalapeno-rack")
    H, applied = apply_failures(G, ["lanes:r00/lsw0--r00/xpu000=4"])
    assert not H.has_edge("r00/xpu000", "r00/lsw0")
    assert applied[0]["edges_removed"] == ["r00/xpu000--r00/lsw0"]


def test_two_lane_specs_on_one_link_add_up():
    G = build("jalapeno-rack")
    H, _ = apply_failures(G, ["lanes:r00/xpu000--r00/lsw0=3", "lanes:r00/xpu000--r00/lsw0=3"])
    assert not H.has_edge("r00/xpu000", "r00/lsw0")


def test_overlapping_specs_remove_once(pod4):
    H, applied = apply_failures(pod4, ["rail:0", "rail-switch:rail0/sw3"])
    assert len(applied[0]["nodes_removed"]) == 8 and applied[1]["nodes_removed"] == []
    assert H.number_of_nodes() == pod4.number_of_nodes() - 8


def test_ocs_failure_cuts_a_racks_uplinks(pod4):
    H, applied = apply_failures(pod4, ["ocs:1"])
    assert len(applied[0]["edges_removed"]) == 64
    assert all(H.degree(f"r01/gsw{i}") == 128 for i in range(4))


def test_ids_accept_unpadded_integers(pod4):
    _, a = apply_failures(pod4, ["tray:r1/t3"])
    _, b = apply_failures(pod4, ["tray:r01/t03"])
    assert a[0]["nodes_removed"] == b[0]["nodes_removed"] and len(a[0]["nodes_removed"]) == 8


@pytest.mark.parametrize("spec, match", [
    ("node:r00/lsw9", r"no node 'r00/lsw9' in 'jalapeno-pod' \(did you mean r00/lsw.*\)"),
    ("link:r00/xpu000--r00/lsw9", r"no node 'r00/lsw9'.*did you mean"),
    ("link:r00/xpu000--r01/lsw0", r"no link between 'r00/xpu000' and 'r01/lsw0' \(did you mean r00/lsw0"),
    ("lanes:r00/xpu000--r00/lsw0=5", r"link r00/xpu000--r00/lsw0 has 4 lane\(s\); fail 1 to 4 \(4 removes"),
    ("rack:7", r"no rack '7' in 'jalapeno-pod'.*valid: 0, 1, 2, 3"),
    ("rail-switch:r00/lsw0", r"no rail-switch 'r00/lsw0'"),
    ("cube:1", r"failure class .cube. is not one 'jalapeno-pod' has; choose one of: node, chip"),
    ("tray:r09/t01", r"no tray 'r09/t01'.*did you mean"),
])
def test_bad_specs_are_refused_with_choices(pod4, spec, match):
    with pytest.raises(BadInput, match=match):
        apply_failures(pod4, [spec])


def test_a_bad_spec_applies_nothing(pod4):
    n = pod4.number_of_nodes()
    with pytest.raises(BadInput):
        apply_failures(pod4, ["node:r00/lsw0", "node:nope"])
    assert pod4.number_of_nodes() == n and "failed" not in pod4.graph


def test_partial_lanes_of_a_patched_bundle_are_refused(static4):
    with pytest.raises(BadInput, match=r"2 patched circuits of 1 lane\(s\) through r00/gsw0.*link:r00/xpu000"):
        apply_failures(static4, ["lanes:r00/xpu000--r00/gsw0=1"])


def test_single_circuit_patched_bundle_can_lose_lanes():
    G = build("jalapeno-pod", racks=2, leaf="static", rail_wiring="per-port")
    H, _ = apply_failures(G, ["lanes:r00/xpu000--r00/gsw0=3"])
    assert H.edges["r00/xpu000", "r00/gsw0"]["circuit_lanes"] == 5
    assert chip_tier_bandwidth(H)[0]["global"] == pytest.approx(5 * 25.0)


# --------------------------------------------------------------------------- per-chip bandwidth
def _count(tb, tier, value):
    return sum(1 for v in tb.values() if v.get(tier) == pytest.approx(value))


@pytest.mark.parametrize("racks", [4, 16])
def test_static_per_lane_rail_switch_costs_a_column_one_lane(racks):
    """FACTS §1, reading A: one rail switch down -> 16 chips per rack (256 in the pod) at 175 GB/s."""
    G = build("jalapeno-pod", racks=racks, leaf="static")
    H, _ = apply_failures(G, ["rail-switch:rail3/sw5"])
    tb = chip_tier_bandwidth(H)
    assert _count(tb, "global", 175.0) == 16 * racks
    assert _count(tb, "global", 200.0) == 128 * racks - 16 * racks
    assert all(v["local"] == 600.0 for v in tb.values())
    assert {tb[r]["global"] for r in range(128 * racks) if r % 8 == 5} == {175.0}


@pytest.mark.parametrize("spec, lost_per_rack", [("rail-switch:rail3/sw5", 2), ("rail:3", 16)])
def test_static_per_port_failures_cut_chips_off_the_global_tier(spec, lost_per_rack):
    """Reading B: a rail switch carries 2 chips per rack whole; a whole rail carries 16 per rack."""
    racks = 16
    G = build("jalapeno-pod", racks=racks, leaf="static", rail_wiring="per-port")
    tb = chip_tier_bandwidth(apply_failures(G, [spec])[0])
    assert sum(1 for v in tb.values() if "global" not in v) == lost_per_rack * racks
    assert _count(tb, "global", 200.0) == (128 - lost_per_rack) * racks


def test_switched_leaf_down_leaves_six_of_eight_lanes(pod4):
    tb = chip_tier_bandwidth(apply_failures(pod4, ["leaf-switch:r02/gsw1"])[0])
    assert _count(tb, "global", 150.0) == 128
    assert _count(tb, "global", 200.0) == 3 * 128


def test_nvl72_switch_tray_leaves_16_of_18_links():
    tb = chip_tier_bandwidth(apply_failures(build("nvl72"), ["switch-tray:st4"])[0])
    assert {v["nvlink"] for v in tb.values()} == {16 * 50.0}


def test_lost_chip_leaves_the_table():
    G = build("jalapeno-rack")
    tb = chip_tier_bandwidth(apply_failures(G, ["tray:t01"])[0])
    assert len(tb) == 120 and 8 not in tb


@pytest.mark.parametrize("name, params", [("jalapeno-pod", {"racks": 2}), ("nvl72", {}),
                                          ("ironwood", {"dims": (4, 4, 8)}), ("boardfly", {"groups": 3})])
def test_every_listed_id_is_a_valid_spec(name, params):
    G = build(name, **params)
    for cls, doms in domains(G).items():
        for d in (doms[0], doms[-1]):
            H, applied = apply_failures(G, [f"{cls}:{d.id}"])
            assert applied[0]["spec"] == f"{cls}:{d.id}"
            assert sorted(applied[0]["nodes_removed"]) == sorted(map(str, d.nodes))
            if d.lanes is None:
                assert len(applied[0]["edges_removed"]) == len(d.edges)
            else:
                assert applied[0]["lanes_removed"][0]["lanes"] == d.lanes
