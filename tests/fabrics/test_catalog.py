"""Catalog fabrics (NVL72, tori, Ironwood, Boardfly, Helios): figures checked against the
sources' numbers and against formulas computed from the built graphs."""
from __future__ import annotations

import math
from collections import Counter

import pytest

from fabricsim.fabrics import FABRICS, build
from fabricsim.fabrics.userfile import export_fabric, load_fabric
from fabricsim.topo.contract import validate
from fabricsim.topo.devices import device
from hops_reference import chip_diameter, chip_ids


def lanes_at(G, n) -> int:
    return sum(G.edges[n, m]["lanes"] for m in G[n])


# --- NVL72 ------------------------------------------------------------------------------

@pytest.mark.parametrize("generation, gpu", [("gb200", "blackwell-gpu"), ("gb300", "blackwell-ultra-gpu")])
def test_nvl72_blackwell(generation, gpu):
    G = build("nvl72", generation=generation)
    assert validate(G) == []
    gpus = chip_ids(G)
    sws = [n for n, d in G.nodes(data=True) if d["kind"] == "switch"]
    assert len(gpus) == 72 and len(sws) == 18
    assert {G.nodes[g]["model"] for g in gpus} == {gpu}
    # 1,296 links = 18 switch chips x 72 ports, every port used by a GPU
    assert G.number_of_edges() == 1296 == 18 * 72
    ports = {s: sum(G.edges[s, g]["capacity_gbps"] / G.edges[s, g]["port_gbps"] for g in G[s]) for s in sws}
    assert set(ports.values()) == {72.0}
    assert all(lanes_at(G, s) == device("nvlink5-switch").lanes for s in sws)
    # 18 links x 2 lanes x 200G = 7.2 Tb/s = 900 GB/s per direction per GPU
    assert {sum(G.edges[g, s]["capacity_gbps"] for s in G[g]) / 8 for g in gpus} == {900.0}
    assert chip_diameter(G) == 2
    assert Counter(G.nodes[g]["tray"] for g in gpus) == {t: 4 for t in range(18)}
    assert Counter(G.nodes[s]["switch_tray"] for s in sws) == {t: 2 for t in range(9)}
    assert all(G.nodes[s]["reduces"] and device(G.nodes[s]["model"]).can_reduce for s in sws)
    assert G.graph["inferred"] == ""


def test_nvl72_vera_rubin():
    G = build("nvl72", generation="vera-rubin")
    assert validate(G) == []
    gpus = chip_ids(G)
    sws = [n for n, d in G.nodes(data=True) if d["kind"] == "switch"]
    assert len(sws) == 36 and G.number_of_edges() == 36 * 72
    assert Counter(G.nodes[s]["switch_tray"] for s in sws) == {t: 4 for t in range(9)}
    # 3.6 TB/s bidir per GPU = 1,800 GB/s per direction
    assert {sum(G.edges[g, s]["capacity_gbps"] for s in G[g]) / 8 for g in gpus} == {1800.0}
    assert chip_diameter(G) == 2
    assert "inferred" in G.graph["inferred"] and "inferred" in FABRICS["nvl72"].description.lower()


def test_nvl72_refuses_unknown_generation():
    with pytest.raises(ValueError, match=r"generation='h100'.*gb200, gb300, vera-rubin"):
        build("nvl72", generation="h100")


def test_nvl72_builder_refuses_unknown_generation():
    from fabricsim.fabrics.nvl72 import nvl72
    with pytest.raises(ValueError, match=r"generation='b100'; choose one of: gb200, gb300, vera-rubin"):
        nvl72(generation="b100")


# --- TPU torus ----------------------------------------------------------------------------

@pytest.mark.parametrize("dims", [(8, 12, 12), (8, 8, 16), (4, 4, 4), (2, 4, 6), (1, 2, 9)], ids=str)
def test_torus_fabric(dims):
    G = build("torus", dims="x".join(map(str, dims)))
    assert validate(G) == []
    n = math.prod(dims)
    assert G.number_of_nodes() == n
    # physical links: N per dimension longer than 1 (a ring of 2 = one bundle of 2 links)
    assert sum(e["lanes"] for *_, e in G.edges(data=True)) // 4 == n * sum(k > 1 for k in dims)
    assert {lanes_at(G, c) for c in G} == {8 * sum(k > 1 for k in dims)}
    assert {e["capacity_gbps"] / e["lanes"] * 4 / 8 for *_, e in G.edges(data=True)} == {100.0}  # GB/s/link, raw
    first, last = min(G), max(G)
    assert chip_diameter(G, [first, last]) == sum(k // 2 for k in dims)  # vertex-transitive


def test_torus_1152_is_16_hops():
    G = build("torus")
    assert G.number_of_nodes() == 1152 and G.graph["dims"] == "8x12x12"
    assert chip_diameter(G, ["c00.00.00"]) == 16


def test_torus_refuses_zero_dim():
    with pytest.raises(ValueError, match=r"dims=\(8, 0, 12\).*integer >= 1"):
        build("torus", dims="8x0x12")


# --- Ironwood -----------------------------------------------------------------------------

@pytest.mark.parametrize("dims", [(4, 4, 4), (8, 8, 8), (4, 8, 12)], ids=str)
def test_ironwood_cubes_trays_and_optics(dims):
    G = build("ironwood", dims="x".join(map(str, dims)))
    assert validate(G) == []
    n = math.prod(dims)
    cubes = n // 64
    assert Counter(d["cube"] for _, d in G.nodes(data=True)) == {c: 64 for c in range(cubes)}
    assert all(d["rack"] == d["cube"] for _, d in G.nodes(data=True))
    assert Counter((d["cube"], d["tray"]) for _, d in G.nodes(data=True)) == {
        (c, t): 4 for c in range(cubes) for t in range(16)}
    media = Counter(e["medium"] for *_, e in G.edges(data=True))
    # each ring of k has k/4 cube-leaving links: N/4 per axis; a 2x2 tray holds 4 pcb links
    assert media == {"optical": 3 * n // 4, "pcb": n, "copper": 3 * n - 3 * n // 4 - n}
    ocs = Counter(e["ocs"] for *_, e in G.edges(data=True) if e["medium"] == "optical")
    assert ocs == {o: cubes for o in range(48)}  # 48 OCSes, one port pair per cube each
    assert all("ocs" not in e for *_, e in G.edges(data=True) if e["medium"] != "optical")
    for u, v, e in G.edges(data=True):
        if e["medium"] == "pcb":
            assert G.nodes[u]["tray"] == G.nodes[v]["tray"] and G.nodes[u]["cube"] == G.nodes[v]["cube"]
    assert chip_diameter(G, [min(G)]) == sum(k // 2 for k in dims)


def test_ironwood_9216_is_32_hops():
    G = build("ironwood")
    assert G.number_of_nodes() == 9216 and G.graph["dims"] == "16x24x24"
    assert "not published" in FABRICS["ironwood"].description
    assert chip_diameter(G, ["c00.00.00", "c15.23.23"]) == 32
    assert {lanes_at(G, c) for c in G} == {24}


def test_ironwood_refuses_partial_cubes():
    with pytest.raises(ValueError, match=r"dims=\(16, 24, 25\).*multiple of 4"):
        build("ironwood", dims="16x24x25")


# --- Boardfly -----------------------------------------------------------------------------

def external_ports(G) -> Counter:
    used: Counter = Counter()
    for u, v, e in G.edges(data=True):
        if e["span"] != "board":
            for n in (u, v):
                used[G.nodes[n]["board"]] += e["capacity_gbps"] / e["port_gbps"]
    return used


def test_boardfly_defaults_seven_hops():
    G = build("boardfly")
    assert validate(G) == []
    assert G.number_of_nodes() == 1152 == 36 * 8 * 4
    assert all(d["forwards"] for _, d in G.nodes(data=True)) and G.graph["routing"] == "ecmp"
    assert chip_diameter(G) == 7  # all pairs
    assert max(external_ports(G).values()) <= 16
    # every chip: 2 ring ports + up to 4 external = 6 ports of 8 lanes = the 48-lane budget
    # (36 groups use 70 of a group's 72 optical ports: two chips per group keep one free)
    lanes = Counter(lanes_at(G, c) for c in G)
    assert lanes == {48: 1152 - 2 * 36, 40: 2 * 36}
    # every pair of groups: 2 optical links
    pairs = Counter(frozenset((G.nodes[u]["group"], G.nodes[v]["group"]))
                    for u, v, e in G.edges(data=True) if e["span"] == "global")
    assert len(pairs) == 36 * 35 // 2 and set(pairs.values()) == {2}
    assert all(e["medium"] == "optical" and isinstance(e["ocs"], int)
               for *_, e in G.edges(data=True) if e["span"] == "global")


def test_boardfly_naive_placement_is_longer():
    G = build("boardfly", port_placement="naive")
    assert validate(G) == []
    assert chip_diameter(G) > 7
    assert max(external_ports(G).values()) <= 16


@pytest.mark.parametrize("groups", [4, 12, 37])
def test_boardfly_fewer_groups_keep_seven_hops(groups):
    G = build("boardfly", groups=groups)
    assert G.number_of_nodes() == groups * 32
    assert chip_diameter(G, [n for n in G if G.nodes[n]["group"] == 0]) == 7  # groups are symmetric


def test_boardfly_refuses_groups_above_ports():
    with pytest.raises(ValueError, match=r"groups=40 is out of range; valid: 1\.\.37"):
        build("boardfly", groups=40)


# --- Helios -------------------------------------------------------------------------------

def test_helios():
    G = build("helios")
    assert validate(G) == []
    gpus = chip_ids(G)
    sws = [n for n, d in G.nodes(data=True) if d["kind"] == "switch"]
    assert len(gpus) == 72 and len(sws) == 12
    # 72 lanes x 200G = 1.8 TB/s per direction = 3.6 TB/s bidir per GPU; 259.2 ~ 260 TB/s rack
    per_gpu = {sum(G.edges[g, s]["capacity_gbps"] for s in G[g]) / 8 for g in gpus}
    assert per_gpu == {1800.0}
    assert 72 * 2 * 1800.0 / 1000 == pytest.approx(259.2)
    assert {lanes_at(G, s) for s in sws} == {432} and 432 <= device("ualink-switch-102t").lanes
    assert chip_diameter(G) == 2
    assert "inferred" in FABRICS["helios"].description and "inferred" in G.graph["inferred"]


def test_helios_refuses_switch_count():
    with pytest.raises(ValueError, match=r"switches=10; choose one of: 12, 18, 24, 36, 72"):
        build("helios", switches=10)


# --- every catalog fabric: contract and file round trip -------------------------------------

CATALOG = [("nvl72", {}), ("nvl72", {"generation": "vera-rubin"}), ("torus", {}), ("boardfly", {}),
           ("helios", {}), ("ironwood", {"dims": "8x8x8"}), ("jalapeno-rack", {}),
           pytest.param("ironwood", {}, marks=pytest.mark.slow),  # 9,216 chips: ~12 s in GraphML
           pytest.param("jalapeno-pod", {}, marks=pytest.mark.slow)]


def test_catalog_covers_every_fabric():
    names = {c.values[0] if hasattr(c, "values") else c[0] for c in CATALOG}
    mine = {"nvl72", "torus", "boardfly", "helios", "ironwood"}
    assert mine <= set(FABRICS) and mine <= names
    assert {n for n in FABRICS if n.startswith("jalapeno")} <= names
    for name in mine:
        assert FABRICS[name].description and FABRICS[name].source


@pytest.mark.parametrize("name, params", CATALOG, ids=lambda v: v if isinstance(v, str) else None)
@pytest.mark.parametrize("ext", [".json", ".graphml"])
def test_catalog_round_trip(name, params, ext, tmp_path):
    G = build(name, **params)
    assert validate(G) == []
    H = load_fabric(export_fabric(G, tmp_path / f"{name}{ext}"))
    assert validate(H) == []
    assert (H.number_of_nodes(), H.number_of_edges()) == (G.number_of_nodes(), G.number_of_edges())
    assert H.graph["name"] == name
    n = next(iter(G))
    assert H.nodes[n] == G.nodes[n]
    u, v = next(iter(G.edges))
    assert H.edges[u, v] == G.edges[u, v]
