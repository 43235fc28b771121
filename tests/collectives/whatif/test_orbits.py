"""Orbit folding of failure sweeps: orbits by formula, every folded result equal to its whatif."""
from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from fabricsim.collectives.whatif.orbits import fabric_symmetry, scenario_orbits
from fabricsim.collectives.placement import by_size
from fabricsim.collectives.whatif import _fabric, _groups, sweep, whatif
from fabricsim.fabrics import build
from fabricsim.topo.failures import PRESERVES, domain_classes, domains, preserved_symmetries

GiB = 2 ** 30


def _params_json(params):
    return json.dumps(params or {}, sort_keys=True, default=list)


def _check_against_whatif(s, fabric, params, *, group_size=None, placement="packed", draws=4, seed=0, **kw):
    """Scenarios drawn at random (seeded) equal whatif on the same failures to 1e-9 relative."""
    pj = _params_json(params)
    G = _fabric(fabric, pj)
    groups = _groups(fabric, pj, ("size", group_size, placement))
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(s.scenarios), size=min(draws, len(s.scenarios)), replace=False)
    # one scenario of every orbit too (not only its representative)
    by_orbit = {}
    for sc in s.scenarios:
        by_orbit.setdefault(sc["orbit"], sc)
    for sc in [s.scenarios[i] for i in picks] + list(by_orbit.values())[:6]:
        w = whatif(G, sc["failed"], s.collective, groups=groups, size_bytes=GiB, baseline=s.baseline,
                   algorithm=s.algorithm, **kw)
        assert sc["time_s"] == pytest.approx(w.degraded.time_s, rel=1e-9), sc["failed"]
        assert sc["bandwidth_time_s"] == pytest.approx(w.degraded.bandwidth_time_s, rel=1e-9), sc["failed"]
        assert sc["partial"] == w.partial
        if sc["top_bottleneck"] is not None:
            # the image of the representative's busiest link is a busiest link of this scenario
            util = {b["link"]: b["utilization"] for b in w.degraded.bottlenecks}
            top = w.degraded.bottlenecks[0]["utilization"]
            assert sc["top_bottleneck"] in util or len(util) == len(w.degraded.bottlenecks)
            if sc["top_bottleneck"] in util:
                assert util[sc["top_bottleneck"]] == pytest.approx(top, rel=1e-9)


@pytest.mark.parametrize("racks", [1, 2, 3])
def test_pod_link_sweep_has_three_orbits_by_formula(racks):
    s = sweep("jalapeno-pod", {"racks": racks}, "link", collective="all-to-all", size_bytes=GiB,
              algorithm="direct")
    n_chips = 128 * racks
    sizes = sorted(sc["orbit_size"] for sc in {sc["orbit"]: sc for sc in s.scenarios}.values())
    # chip - local switch (6 per chip), chip - leaf (4 per chip), leaf - rail switch (4 leaves x 2 rails x 8)
    want = sorted([n_chips * 6, n_chips * 4, racks * 4 * 2 * 8])
    assert s.summary["count"] == sum(want) and s.summary["orbits"] == 3 and s.summary["solved"] == 3
    assert sizes == want
    assert s.summary["distinct"] <= 3
    _check_against_whatif(s, "jalapeno-pod", {"racks": racks}, seed=racks)


def test_orbit_ids_and_sizes_are_consistent():
    s = sweep("jalapeno-pod", {"racks": 2}, "link", collective="all-to-all", size_bytes=GiB, algorithm="direct")
    count = {}
    for sc in s.scenarios:
        count[sc["orbit"]] = count.get(sc["orbit"], 0) + 1
    assert all(sc["orbit_size"] == count[sc["orbit"]] for sc in s.scenarios)
    # one result per orbit
    per_orbit = {}
    for sc in s.scenarios:
        per_orbit.setdefault(sc["orbit"], set()).add(sc["time_s"])
    assert all(len(v) == 1 for v in per_orbit.values())
    # the summary weighs each orbit by its size: the median is that of all 2,688 scenarios
    x = np.array([sc["slowdown"] for sc in s.scenarios])
    assert s.summary["median"] == pytest.approx(float(np.median(x)))
    assert s.method["orbits"] == 3 and len(s.method["representatives"]) == 3
    assert sum(r["orbit_size"] for r in s.method["representatives"]) == 2688


@pytest.mark.parametrize("dims", ["4x4x4", "4x4x6", "3x5x4"])
def test_torus_link_sweep_has_one_orbit_per_axis(dims):
    s = sweep("torus", {"dims": dims}, "link", collective="all-to-all", size_bytes=GiB, algorithm="direct")
    k = [int(x) for x in dims.split("x")]
    n = math.prod(k)
    assert s.summary["orbits"] == 3 and s.summary["count"] == 3 * n
    assert sorted({sc["orbit_size"] for sc in s.scenarios}) == [n]
    families = {g["family"] for g in s.method["generators"]}
    assert families == {"translation", "reflection"}
    _check_against_whatif(s, "torus", {"dims": dims}, draws=3)


def test_nvl72_switch_sweep_is_one_orbit():
    s = sweep("nvl72", None, "switch", collective="all-reduce", size_bytes=GiB, group_size=72, algorithm="ring")
    assert s.summary["count"] == 18 and s.summary["orbits"] == 1
    _check_against_whatif(s, "nvl72", None, group_size=72, draws=3)


def test_ring_keeps_rotations_and_refuses_other_reorderings():
    G = build("nvl72")
    sym = fabric_symmetry(G, [list(range(72))], "ring")
    used = {g.name for g in sym.generators}
    refused = dict(sym.refused)
    # moving tray 0 to tray 1, 1 to 2 ... rotates the ring by 4 ranks: kept
    assert any(n.startswith("tray cycle") for n in used)
    # swapping two trays (or two GPUs) is not a rotation of the ring
    why = next(r for n, r in refused.items() if n.startswith("tray transposition"))
    assert "ring order" in why
    s = sweep("nvl72", None, "tray", collective="all-reduce", size_bytes=GiB, group_size=72, algorithm="ring")
    assert s.summary["orbits"] == 1


def _brute_force_orbits(sym, doms, combos):
    """Orbits by closing every scenario under the generators, in plain Python (the reference)."""
    ix = sym.ix
    e_of = {}
    for e, (u, v) in enumerate(zip(ix.eu.tolist(), ix.ev.tolist())):
        e_of[(u, v)] = e_of[(v, u)] = e
    dom_of_edge = {e_of[(ix.index[d.edges[0][0]], ix.index[d.edges[0][1]])]: i for i, d in enumerate(doms)}
    images = []
    for g in sym.generators:
        eimg = ix.edge_image(g.perm)
        images.append({i: dom_of_edge[int(eimg[e])] for e, i in dom_of_edge.items()})
    index = {c: i for i, c in enumerate(combos)}
    label = [-1] * len(combos)
    nxt = 0
    for c in combos:
        if label[index[c]] >= 0:
            continue
        stack = [c]
        label[index[c]] = nxt
        while stack:
            x = stack.pop()
            for im in images:
                y = tuple(sorted(im[j] for j in x))
                if label[index[y]] < 0:
                    label[index[y]] = nxt
                    stack.append(y)
        nxt += 1
    return label


@pytest.mark.parametrize("dims", ["3x3x3", "4x4x2"])
def test_n2_orbits_equal_a_brute_force_closure(dims):
    G = build("torus", dims=tuple(int(x) for x in dims.split("x")))
    n = G.number_of_nodes()
    sym = fabric_symmetry(G, [list(range(n))], "direct")
    doms = domains(G, ["link"])["link"]
    combos = list(itertools.combinations(range(len(doms)), 2))
    orb = scenario_orbits(sym, doms, combos)
    ref = _brute_force_orbits(sym, doms, combos)
    # the same partition
    pairs = set(zip(orb.orbit.tolist(), ref))
    assert len(pairs) == orb.n_orbits == len(set(ref))
    assert orb.n_orbits < len(combos) // 10


def test_n2_sweep_folds_pairs_and_matches_whatif():
    s = sweep("nvl72", None, "switch", n=2, collective="all-reduce", size_bytes=GiB, group_size=72,
              algorithm="ring")
    assert s.summary["count"] == math.comb(18, 2) and s.summary["orbits"] == 1
    _check_against_whatif(s, "nvl72", None, group_size=72, draws=2)
    t = sweep("torus", {"dims": "3x3x3"}, "link", n=2, collective="all-to-all", size_bytes=GiB,
              algorithm="direct", samples=None)
    assert t.summary["count"] == math.comb(81, 2) and t.summary["orbits"] < 200
    _check_against_whatif(t, "torus", {"dims": "3x3x3"}, draws=3, seed=5)


def test_sampling_draws_scenarios_not_orbits():
    full = sweep("jalapeno-pod", {"racks": 2}, "link", collective="all-to-all", size_bytes=GiB, algorithm="direct")
    s = sweep("jalapeno-pod", {"racks": 2}, "link", collective="all-to-all", size_bytes=GiB, algorithm="direct",
              samples=200, seed=3)
    assert s.summary["count"] == 200 and s.summary["orbits"] <= 3
    # the sampled scenarios' orbit shares follow the scenario counts, not one per orbit
    sizes = {}
    for sc in s.scenarios:
        sizes[sc["orbit_size"]] = sizes.get(sc["orbit_size"], 0) + 1
    assert max(sizes.values()) > 60
    ref = {tuple(sc["failed"]): sc["time_s"] for sc in full.scenarios}
    assert all(sc["time_s"] == pytest.approx(ref[tuple(sc["failed"])], rel=1e-9) for sc in s.scenarios)


@pytest.mark.slow    # over 5 s on the 2-core machine (pytest --durations, 2026-12-04)
def test_random_placement_folds_less_and_says_why():
    s = sweep("jalapeno-pod", {"racks": 2}, "link", collective="all-to-all", size_bytes=GiB, group_size=64,
              placement="random:1", algorithm="direct", samples=40, seed=1)
    packed = sweep("jalapeno-pod", {"racks": 2}, "link", collective="all-to-all", size_bytes=GiB, group_size=64,
                   algorithm="direct", samples=40, seed=1)
    assert s.summary["orbits"] > packed.summary["orbits"]
    reasons = [r["reason"] for r in s.method["refused"]]
    assert any("group" in r for r in reasons)
    _check_against_whatif(s, "jalapeno-pod", {"racks": 2}, group_size=64, placement="random:1", draws=3)


def test_static_leaves_refuse_chip_permutations():
    G = build("jalapeno-pod", racks=2, leaf="static")
    sym = fabric_symmetry(G, [list(range(256))], "direct")
    refused = dict(sym.refused)
    assert any(n.startswith("twins") and "relay" in r for n, r in refused.items())
    assert all(g.positional for g in sym.generators)
    s = sweep("jalapeno-pod", {"racks": 2, "leaf": "static"}, "rail-switch", collective="all-to-all",
              size_bytes=GiB, algorithm="direct")
    assert s.summary["orbits"] < s.summary["count"]
    _check_against_whatif(s, "jalapeno-pod", {"racks": 2, "leaf": "static"}, draws=2)


def test_a_relaying_representative_splits_by_positional_generators():
    G = build("jalapeno-pod", racks=2)
    sym = fabric_symmetry(G, [list(range(256))], "direct")
    assert sym.conditional and any(not g.positional for g in sym.generators)
    doms = domains(G, ["link"])["link"]
    combos = [(i,) for i in range(len(doms))]
    orb = scenario_orbits(sym, doms, combos, needs_positional=lambda c: True)
    # without moving positions: chip-local and chip-leaf links by in-rack position (128 each), uplinks one orbit
    assert orb.n_orbits == 128 + 128 + 1
    assert any("split" in n for n in orb.notes)
    # a real relay: an optical switch cuts a rack off the global tier (the orbit keeps the rack swap)
    s = sweep("jalapeno-pod", {"racks": 2}, "ocs", collective="all-to-all", size_bytes=GiB, algorithm="direct")
    assert s.summary["orbits"] == 1 and any("relay" in n for n in s.notes)
    _check_against_whatif(s, "jalapeno-pod", {"racks": 2}, draws=2)


def test_unverifiable_algorithm_refuses_every_generator():
    G = build("jalapeno-pod", racks=2)
    sym = fabric_symmetry(G, by_size(G, 128), "hierarchical")
    assert not sym.generators and len(sym.refused) == 1 and "hierarchical" in sym.refused[0][1]


def test_no_fold_gives_the_same_results():
    a = sweep("torus", {"dims": "4x4x4"}, "link", collective="all-to-all", size_bytes=GiB, algorithm="direct",
              samples=6, seed=2)
    b = sweep("torus", {"dims": "4x4x4"}, "link", collective="all-to-all", size_bytes=GiB, algorithm="direct",
              samples=6, seed=2, fold=False)
    assert b.method == {"fold": False, "reason": "folding turned off (fold=False, --no-fold)"}
    ta = {tuple(sc["failed"]): sc["time_s"] for sc in a.scenarios}
    assert all(sc["time_s"] == pytest.approx(ta[tuple(sc["failed"])], rel=1e-9) for sc in b.scenarios)
    assert "orbit" not in b.scenarios[0]


def test_bad_generator_is_refused_with_its_reason():
    G = build("torus", dims=(4, 4, 4))
    # a user annotation that swaps two chips of a torus: not an automorphism
    G.graph["symmetry"] = json.dumps([{"name": "swap two chips", "map": {"c00.00.00": "c01.01.01",
                                                                         "c01.01.01": "c00.00.00"}}])
    sym = fabric_symmetry(G, [list(range(64))], "direct")
    why = dict(sym.refused)["annotation swap two chips"]
    assert "which is not a link" in why


def test_every_class_states_what_it_preserves():
    for name in ("jalapeno-pod", "nvl72", "torus", "boardfly"):
        G = build(name, **({"racks": 2} if name == "jalapeno-pod" else {"dims": (4, 4, 4)} if name == "torus"
                           else {"groups": 3} if name == "boardfly" else {}))
        for c in domain_classes(G):
            assert preserved_symmetries(c)
    assert "rack permutations" in PRESERVES["rail"]


@pytest.mark.slow
def test_full_pod_link_sweep_three_orbits():
    s = sweep("jalapeno-pod", None, "link", collective="all-to-all", size_bytes=GiB, group_size=2048,
              algorithm="direct")
    assert s.summary["count"] == 21504 and s.summary["orbits"] == 3 and s.summary["distinct"] == 3
    assert sorted({sc["orbit_size"] for sc in s.scenarios}) == [1024, 8192, 12288]
    _check_against_whatif(s, "jalapeno-pod", None, group_size=2048, draws=2, seed=11)


@pytest.mark.slow
def test_torus_8x8x8_link_sweep_three_orbits():
    s = sweep("torus", {"dims": "8x8x8"}, "link", collective="all-to-all", size_bytes=GiB, algorithm="direct")
    assert s.summary["count"] == 1536 and s.summary["orbits"] == 3
    _check_against_whatif(s, "torus", {"dims": "8x8x8"}, draws=1, seed=12)


@pytest.mark.parametrize("params", [{"racks": 2}, {"racks": 2, "rail_wiring": "per-port"}])
def test_relay_check_on_the_intact_table_equals_the_degraded_copy(params):
    from fabricsim.collectives.whatif.orbits import RelayCheck, _relays
    from fabricsim.topo.failures import apply_failures
    G = build("jalapeno-pod", **params)
    check, D = RelayCheck(G), domains(G)
    rng = np.random.default_rng(4)
    seen = set()
    for cls in ("link", "lanes", "leaf-switch", "rail-switch", "ocs", "rail", "chip"):
        ds = D[cls]
        for combo in [(int(i),) for i in rng.choice(len(ds), min(3, len(ds)), replace=False)] + [tuple(range(min(4, len(ds))))]:
            got = check([ds[j] for j in combo])
            assert got == _relays(apply_failures(G, [f"{cls}:{ds[j].id}" for j in combo])[0]), (cls, combo)
            seen.add(got)
    # every leaf link of one chip (4 per-lane, 1 per-port): it is cut off the global tier
    chip_leaf = [d for d in D["link"] if d.edges[0][0] == "r00/xpu000" and "gsw" in str(d.edges[0][1])]
    assert len(chip_leaf) == (1 if params.get("rail_wiring") == "per-port" else 4) and check(chip_leaf)


def test_a_user_fabrics_symmetry_annotation_is_verified_and_used(tmp_path):
    from fabricsim.fabrics.userfile import export_fabric
    G = build("torus", dims=(4, 4, 4))
    G.graph["routing"] = "ecmp"                    # no torus generators: only what the file says
    shift = {f"c{x:02d}.{y:02d}.{z:02d}": f"c{(x + 1) % 4:02d}.{y:02d}.{z:02d}"
             for x in range(4) for y in range(4) for z in range(4)}
    G.graph["symmetry"] = json.dumps([{"name": "x + 1", "map": shift}])
    path = export_fabric(G, tmp_path / "ring4.json")
    s = sweep(str(path), None, "link", collective="all-to-all", size_bytes=GiB, algorithm="direct")
    assert [g["name"] for g in s.method["generators"]] == ["annotation x + 1"]
    assert s.summary["orbits"] == 192 // 4        # the translation's cycles of 4 links
    _check_against_whatif(s, str(path), None, draws=2)


def test_a_price_method_is_kept_per_representative_and_resumes(tmp_path, monkeypatch):
    """Where cost reports carry ``method`` (getattr), each representative's shows in the sweep's method,
    as plain JSON, so a results file still stores and reuses the representatives."""
    import fabricsim.collectives.whatif.sweeps as W       # the module whose sweep and workers call price
    from fabricsim.collectives.whatif.dask_runner import ResumableRunner
    from fabricsim.collectives.whatif import LocalRunner

    real = W.price

    class WithMethod:
        def __init__(self, r):
            self._r = r
            self.method = {"path": "twins", "quotient_size": np.int64(3), "refused": ({"method": "x", "reason": "y"},)}

        def __getattr__(self, k):
            return getattr(self._r, k)

    monkeypatch.setattr(W, "price", lambda *a, **k: WithMethod(real(*a, **k)))
    kw = dict(collective="all-to-all", size_bytes=GiB, algorithm="direct")
    path = tmp_path / "r.jsonl"
    s = sweep("torus", {"dims": "4x4x4"}, "link", runner=ResumableRunner(LocalRunner(), path), **kw)
    reps = s.method["representatives"]
    assert len(reps) == 3 and reps[0]["method"] == {"path": "twins", "quotient_size": 3,
                                                    "refused": [{"method": "x", "reason": "y"}]}
    assert len(path.read_text().splitlines()) == 3
    runner = ResumableRunner(LocalRunner(), path)
    again = sweep("torus", {"dims": "4x4x4"}, "link", runner=runner, **kw)
    assert runner.reused == 3 and again.scenarios == s.scenarios


def test_scenarios_in_any_order_and_too_many_failures():
    G = build("torus", dims=(4, 4, 4))
    sym = fabric_symmetry(G, [list(range(64))], "direct")
    doms = domains(G, ["link"])["link"]
    combos = [(i,) for i in range(len(doms))][::-1]
    orb = scenario_orbits(sym, doms, combos)
    assert orb.n_orbits == 3 and orb.reps.tolist() == sorted(orb.reps.tolist())
    # the orbits match the ones of the ordered list, scenario by scenario
    ref = scenario_orbits(sym, doms, combos[::-1])
    assert len(set(zip(orb.orbit[::-1].tolist(), ref.orbit.tolist()))) == 3
    many = scenario_orbits(sym, doms, [tuple(range(j, j + 6)) for j in range(3)])
    assert many.n_orbits == 3 and "not folded" in many.notes[0]


def test_torus_translations_take_the_step_the_placement_allows():
    # groups of 8 on 4x4x4: fixed x, y in {0, 1} or {2, 3}, every z
    s = sweep("torus", {"dims": "4x4x4"}, "link", collective="all-to-all", size_bytes=GiB, group_size=8,
              algorithm="direct")
    names = [g["name"] for g in s.method["generators"]]
    assert "translation by 2 along y" in names and "translation by 1 along y" not in names
    assert "translation by 1 along x" in names and "translation by 1 along z" in names
    assert "reflection of y (x -> 1 - x mod 4)" in names
    # y links: inside a pair of y rows (y 0-1, 2-3) or between pairs (1-2, 3-0): two orbits
    assert s.summary["orbits"] == 4
    _check_against_whatif(s, "torus", {"dims": "4x4x4"}, group_size=8, draws=3)


def test_pod_switch_tray_sweep_two_orbits():
    # 6 local-switch trays and 2 global trays (2 leaves each) per rack; the leaf shift by two keeps trays whole
    s = sweep("jalapeno-pod", {"racks": 2}, "switch-tray", collective="all-to-all", size_bytes=GiB,
              algorithm="direct")
    assert s.summary["count"] == 16 and s.summary["orbits"] == 2
    assert sorted({sc["orbit_size"] for sc in s.scenarios}) == [4, 12]
    _check_against_whatif(s, "jalapeno-pod", {"racks": 2}, draws=3)


@pytest.mark.parametrize("groups, why", [([[0, 1], [2]], "differ in size"), ([[0, 999]], "no chip has"),
                                         ([[-1, 3]], "no chip has")])
def test_odd_groups_refuse_every_generator(groups, why):
    sym = fabric_symmetry(build("jalapeno-rack"), groups, "ring")
    assert not sym.generators and why in sym.refused[0][1]


def test_a_malformed_annotation_is_refused_not_raised():
    G = build("torus", dims=(3, 3, 3))
    for junk in ("not json", json.dumps([1, 2]), json.dumps([{"map": {"nowhere": "c00.00.00"}}]),
                 json.dumps({"map": []}), json.dumps([["a"]])):
        G.graph["symmetry"] = junk
        sym = fabric_symmetry(G, [list(range(27))], "direct")
        assert any(n == "the fabric's symmetry annotation" for n, _ in sym.refused), junk
        assert len(sym.generators) == 6              # the torus's own generators still hold


def test_full_mesh_chips_are_twins_linked_to_each_other():
    # MI355X's eight GPUs form a full mesh: every GPU is linked to the seven others, so
    # swapping two keeps the fabric (closed neighbourhoods agree); 28 links, one orbit,
    # each scenario priced as its own whatif (partial alike: chips do not relay there).
    s = sweep("mi355x", None, "link", collective="all-reduce", size_bytes=GiB, algorithm="direct")
    assert s.summary["count"] == 28 and s.summary["orbits"] == 1
    _check_against_whatif(s, "mi355x", None, draws=3)
    sym = fabric_symmetry(build("mi355x"), [list(range(8))], "direct")
    assert sym.generators and {g.family for g in sym.generators} == {"twins"} and not sym.refused


def test_a_structure_without_symmetry_says_so():
    # a full mesh of four chips whose six links all differ: no two chips are interchangeable,
    # nothing else suggests a generator, and the refusal says why instead of staying silent
    from fabricsim.topo import builders
    G = builders.full_mesh(chips=4)
    for k, (u, v, d) in enumerate(G.edges(data=True)):
        d["capacity_gbps"] = 100.0 * (k + 1)
    sym = fabric_symmetry(G, [[0, 1, 2, 3]], "direct")
    assert not sym.generators
    assert [why for _, why in sym.refused if "suggests none" in why], sym.refused
    # and with equal links the same mesh folds by its twins
    assert fabric_symmetry(builders.full_mesh(chips=4), [[0, 1, 2, 3]], "direct").generators
