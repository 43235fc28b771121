"""What-if pricing and sweeps (fabricsim.collectives.whatif): the issue's closed forms."""
import json
import math

import pytest

from fabricsim.collectives import by_size
from fabricsim.collectives.plots import plot_sweep
from fabricsim.collectives.whatif import LocalRunner, _scenarios, sweep, whatif
from fabricsim.fabrics import build
from fabricsim.topo.errors import BadInput

GiB = 2**30


@pytest.fixture(scope="module")
def rack():
    return build("jalapeno-rack")


@pytest.fixture(scope="module")
def pod4():
    return build("jalapeno-pod", racks=4)


# --------------------------------------------------------------------------- closed forms
def test_rack_local_switch_down_slows_tp8_ring_by_six_fifths(rack):
    """Every chip keeps 5 of its 6 local switch ports: the ring's bandwidth time x 6/5."""
    w = whatif(rack, ["local-switch:r00/lsw2"], "all-reduce", groups=by_size(rack, 8), size_bytes=GiB,
               algorithm="ring")
    assert w.bandwidth_slowdown == pytest.approx(6 / 5, rel=1e-12)
    # latency (per-step route latency + overhead) is unchanged, so time = 6/5 bandwidth + the same latency
    b = w.baseline
    assert w.degraded.latency_s == pytest.approx(b.latency_s, rel=1e-12)
    assert w.slowdown == pytest.approx((6 / 5 * b.bandwidth_time_s + b.latency_s) / b.time_s, rel=1e-12)
    assert len(w.affected_groups) == 16 and all(g["slowdown"] == pytest.approx(w.slowdown, rel=1e-12)
                                                for g in w.affected_groups)
    assert w.affected_chips["tier_bandwidth_changed"] == 128
    assert w.tier_bandwidth["by_tier"]["local"] == {"before": {"600": 128}, "after": {"500": 128}}
    assert not w.partial


def _a2a(G, specs, **kw):
    n = len(by_size(G, 2)) * 2
    return whatif(G, specs, "all-to-all", groups=by_size(G, n), size_bytes=GiB, algorithm="direct", **kw)


def test_pod_switched_leaf_down_slows_all_to_all_by_four_thirds(pod4):
    """One in-rack global ASIC down: its rack's 128 chips keep 6 of 8 global lanes."""
    # split="equal": the pod's default is adaptive (Tomahawk 6 Cognitive Routing, topo/routing/switching.py),
    # which reaches the same 4/3 but spreads the diverted third over other links than the ones named here
    w = _a2a(pod4, ["leaf-switch:r01/gsw2"], split="equal")
    assert w.bandwidth_slowdown == pytest.approx(4 / 3, rel=1e-9)
    assert w.tier_bandwidth["by_tier"]["global"]["after"] == {"200": 384, "150": 128}
    assert w.affected_chips["tier_bandwidth_changed"] == 128
    # the rack's surviving global ASICs take the diverted third: their links now pace the collective
    assert w.new_bottlenecks and all(b["link"].startswith("r01/") or "-> r01/" in b["link"]
                                     for b in w.new_bottlenecks)
    assert {round(b["load_growth"], 9) for b in w.new_bottlenecks} == {round(4 / 3, 9)}


def test_new_bottleneck_is_the_link_that_lost_lanes(rack):
    # split="equal": the rack's default is adaptive (Tomahawk 6 Cognitive Routing, topo/routing/switching.py),
    # under which the ring moves off the halved link (x1.09, no link paces it alone)
    w = whatif(rack, ["lanes:r00/xpu000--r00/lsw0=2"], "all-reduce", groups=by_size(rack, 8), size_bytes=GiB,
               algorithm="ring", split="equal")
    assert w.bandwidth_slowdown == pytest.approx(2.0, rel=1e-12)
    assert [b["link"] for b in w.new_bottlenecks] == ["r00/lsw0 -> r00/xpu000", "r00/xpu000 -> r00/lsw0"]
    assert all(b["load_growth"] == pytest.approx(2.0) and b["capacity_GBps"] == 50.0 for b in w.new_bottlenecks)


@pytest.mark.slow
def test_full_pod_switched_leaf_down_four_thirds():
    G = build("jalapeno-pod")
    w = _a2a(G, ["node:r00/gsw0"])
    assert w.bandwidth_slowdown == pytest.approx(4 / 3, rel=1e-9)
    assert w.tier_bandwidth["by_tier"]["global"]["after"] == {"200": 1920, "150": 128}


@pytest.mark.parametrize("algorithm", ["ring", "nvls"])
def test_nvl72_switch_tray_down_slows_all_reduce_by_18_over_16(algorithm):
    G = build("nvl72")
    w = whatif(G, ["switch-tray:st3"], "all-reduce", groups=by_size(G, 72), size_bytes=GiB, algorithm=algorithm)
    assert w.bandwidth_slowdown == pytest.approx(18 / 16, rel=1e-12)
    assert w.tier_bandwidth["by_tier"]["nvlink"]["after"] == {"800": 72}


def test_static_per_lane_rail_switch_matches_the_articles_table():
    """Reading A: racks x 16 chips (256 in the pod) at 175 GB/s, the rest untouched; the
    all-to-all is paced by the slowest chip's global port: 200/175 = 8/7."""
    racks = 4
    G = build("jalapeno-pod", racks=racks, leaf="static")
    w = _a2a(G, ["rail-switch:rail2/sw6"])
    assert w.tier_bandwidth["by_tier"]["global"]["after"] == {"200": 112 * racks, "175": 16 * racks}
    changed = [c for c in w.affected_chips["chips"] if c["tier_GBps_before"] != c["tier_GBps_after"]]
    assert len(changed) == 16 * racks and {c["rank"] % 8 for c in changed} == {6}
    assert w.bandwidth_slowdown == pytest.approx(8 / 7, rel=1e-9)
    assert not w.partial


@pytest.mark.slow
def test_full_pod_static_per_lane_rail_switch_256_chips_at_175():
    G = build("jalapeno-pod", leaf="static")
    w = _a2a(G, ["rail-switch:rail0/sw0"])
    assert w.tier_bandwidth["by_tier"]["global"]["after"] == {"200": 1792, "175": 256}
    assert w.bandwidth_slowdown == pytest.approx(8 / 7, rel=1e-9)


@pytest.mark.parametrize("spec, cut_per_rack", [("rail-switch:rail1/sw2", 2), ("rail:1", 16)])
def test_static_per_port_failures_relay_through_the_racks(spec, cut_per_rack):
    """Reading B: a rail switch carries 2 chips per rack whole (a whole rail: 16 per rack); the
    chips cut off the global tier are reached through their racks (PXN on both sides), so the
    price is whole and slower, not partial."""
    racks = 4
    G = build("jalapeno-pod", racks=racks, leaf="static", rail_wiring="per-port")
    w = _a2a(G, [spec])
    # the chips with no global link left count at 0 GB/s: the counts after add up to every chip
    assert w.tier_bandwidth["by_tier"]["global"]["after"] == {"200": (128 - cut_per_rack) * racks,
                                                              "0": cut_per_rack * racks}
    assert w.affected_chips["cut_off"] == 0        # they keep their local links
    assert w.affected_chips["tier_bandwidth_changed"] == cut_per_rack * racks
    assert w.degraded.unreachable_pairs["count"] == 0 and not w.partial
    assert w.bandwidth_slowdown > 1.0
    assert any("relay" in n for n in w.degraded.notes)
    json.dumps(w.as_dict(), allow_nan=False)


def test_a_rack_cut_off_the_global_tier_is_partial_not_an_error():
    """The optical switch of a rack gone: its chips reach no other rack at all."""
    G = build("jalapeno-pod", racks=2, trays=2)      # 16 chips per rack: see the slow case below
    w = _a2a(G, ["ocs:1"])
    assert w.partial and w.degraded.unreachable_pairs["count"] == 2 * 16 * 16
    assert w.degraded.unreachable_pairs["examples"]
    assert any(n.startswith("PARTIAL") for n in w.notes)
    json.dumps(w.as_dict(), allow_nan=False)


def test_a_rack_cut_off_the_global_tier_is_a_partial_result():
    G = build("jalapeno-pod", racks=2)
    w = _a2a(G, ["ocs:1"])
    # rack 1 lost its optical uplinks: every cross-rack pair, both ways, has no route
    assert w.degraded.unreachable_pairs["count"] == 2 * 128 * 128
    assert w.partial


def test_switched_rail_switch_equal_and_capacity_split(pod4):
    """A whole rail switch: every leaf keeps 15 of 16 equal uplinks, so both splits give 16/15.
    Half an uplink bundle: the capacity split moves the leaf's upward load off the weak
    bundle, but the spine's downward share to that leaf is set upstream (per-hop split),
    so both splits end at 2x."""
    eq = _a2a(pod4, ["rail-switch:rail0/sw0"], split="equal")
    cap = _a2a(pod4, ["rail-switch:rail0/sw0"], split="capacity")
    assert eq.bandwidth_slowdown == pytest.approx(16 / 15, rel=1e-9)
    assert cap.bandwidth_slowdown == pytest.approx(16 / 15, rel=1e-9)
    spec = ["lanes:r00/gsw0--rail0/sw0=8"]
    eq, cap = _a2a(pod4, spec, split="equal"), _a2a(pod4, spec, split="capacity")
    util = {s: {b["link"]: b["utilization"] for b in w.degraded.bottlenecks} for s, w in (("eq", eq), ("cap", cap))}
    assert util["eq"]["r00/gsw0 -> rail0/sw0"] == pytest.approx(1.0)
    assert util["cap"]["r00/gsw0 -> rail0/sw0"] < 0.6
    assert util["cap"]["rail0/sw0 -> r00/gsw0"] == pytest.approx(1.0)
    assert eq.bandwidth_slowdown == pytest.approx(2.0, rel=1e-9)
    assert cap.bandwidth_slowdown == pytest.approx(2.0, rel=1e-9)


# --------------------------------------------------------------------------- groups, chips, JSON
def test_lost_chip_breaks_its_group_only(rack):
    w = whatif(rack, ["chip:r00/xpu011"], "all-reduce", groups=by_size(rack, 8), size_bytes=GiB,
               algorithm="ring")
    assert w.affected_groups == ({"group": 1, "broken": True, "slowdown": None, "lost": [11]},)
    assert w.affected_chips["lost"] == 1 and w.affected_chips["count"] == 8   # the lost one + its group
    assert w.partial and w.degraded.broken_groups["count"] == 1
    assert w.bandwidth_slowdown == pytest.approx(1.0)


def test_disconnected_chip_is_a_result(rack):
    specs = [f"link:r00/xpu005--r00/lsw{s}" for s in range(6)]
    w = whatif(rack, specs, "all-to-all", groups=by_size(rack, 128), size_bytes=GiB, algorithm="direct")
    assert w.partial and w.degraded.unreachable_pairs["count"] == 2 * 127
    assert w.tier_bandwidth["by_tier"]["local"]["after"] == {"600": 127, "0": 1}
    assert w.tier_bandwidth["chips_cut_off"] == 1 and w.affected_chips["cut_off"] == 1


def test_a_chip_with_no_link_left_is_counted_cut_off():
    """A torus chip with its six links failed: present but cut off, at 0 GB/s, in every count."""
    G = build("torus", dims="4x4x4")
    specs = [f"link:c00.00.00--{n}" for n in ("c01.00.00", "c03.00.00", "c00.01.00", "c00.03.00", "c00.00.01",
                                             "c00.00.03")]
    w = whatif(G, specs, "all-reduce", groups=by_size(G, 64), size_bytes=2**26)
    after = w.tier_bandwidth["by_tier"]["ici"]["after"]
    assert after == {"600": 57, "500": 6, "0": 1} and sum(after.values()) == 64
    c0 = next(c for c in w.affected_chips["chips"] if c["rank"] == 0)
    assert c0["cut_off"] and not c0["lost"] and c0["tier_GBps_after"] == {"ici": 0.0}
    assert w.affected_chips["cut_off"] == 1 and w.tier_bandwidth["chips_cut_off"] == 1
    d = json.loads(json.dumps(w.as_dict(), allow_nan=False))
    assert d["tier_bandwidth"]["by_tier"]["ici"]["after"]["0"] == 1


def test_lost_chips_complete_the_tier_counts(rack):
    w = whatif(rack, ["chip:r00/xpu011"], "all-reduce", groups=by_size(rack, 8), size_bytes=GiB)
    assert w.tier_bandwidth["by_tier"]["local"]["after"] == {"600": 127}
    assert w.tier_bandwidth["chips_lost"] == 1 and w.tier_bandwidth["chips_cut_off"] == 0


def test_everything_lost_gives_null_slowdown(rack):
    w = whatif(rack, ["rack:0"], "all-reduce", groups=by_size(rack, 8), size_bytes=GiB, algorithm="ring")
    assert math.isnan(w.slowdown) and w.partial
    d = json.loads(json.dumps(w.as_dict(), allow_nan=False))
    assert d["slowdown"] is None and len(d["affected_groups"]) == 16
    # nothing priced: no algorithm-changed note, busbw null (not 0), the note says so
    assert not any("algorithm changed" in n for n in w.notes)
    assert any("nothing could be priced" in n for n in w.notes)
    assert d["degraded"]["busbw_GBps"] is None and d["degraded"]["algbw_GBps"] is None


def test_unreachable_pairs_on_a_fabric_that_does_not_relay_say_why():
    G = build("mi355x")
    w = whatif(G, ["link:gpu0--gpu1"], "all-reduce", groups=by_size(G, 8), size_bytes=2**26)
    assert w.partial and w.degraded.unreachable_pairs["count"] == 2
    note = next(n for n in w.notes if n.startswith("PARTIAL"))
    assert "chips do not forward" in note and "covers only what could be priced" in note
    # a fabric with switches: unreachable pairs are not blamed on the chips
    rack = build("jalapeno-rack")
    w = whatif(rack, [f"link:r00/xpu005--r00/lsw{s}" for s in range(6)], "all-to-all", groups=by_size(rack, 128),
               size_bytes=GiB, algorithm="direct")
    assert not any("chips do not forward" in n for n in w.notes)


def test_as_dict_has_the_documented_keys(rack):
    w = whatif(rack, ["node:r00/lsw0"], "all-reduce", groups=by_size(rack, 8), size_bytes=2**20,
               algorithm="ring")
    d = json.loads(json.dumps(w.as_dict(), allow_nan=False))
    assert {"failed", "baseline", "degraded", "slowdown", "affected_chips", "affected_groups",
            "new_bottlenecks"} <= set(d)
    assert d["failed"][0]["spec"] == "node:r00/lsw0"
    assert d["baseline"] == w.baseline.as_dict() and d["degraded"]["time_s"] == w.degraded.time_s


def test_whatif_refuses_unknown_options_and_specs(rack):
    with pytest.raises(BadInput, match=r"unknown price option\(s\) 'splt'; valid: algorithm, split"):
        whatif(rack, ["node:r00/lsw0"], "all-reduce", groups=by_size(rack, 8), size_bytes=GiB, splt="equal")
    with pytest.raises(BadInput, match=r"no node 'r00/lsw7'.*did you mean"):
        whatif(rack, ["node:r00/lsw7"], "all-reduce", groups=by_size(rack, 8), size_bytes=GiB)


# --------------------------------------------------------------------------- sweeps
def _rack_sweep(**kw):
    args = dict(collective="all-reduce", size_bytes=GiB, group_size=8, algorithm="ring")
    args.update(kw)
    return sweep("jalapeno-rack", None, args.pop("cls", "local-switch"), **args)


def test_n1_sweep_symmetric_failures_agree():
    s = _rack_sweep()
    assert s.summary["count"] == 6 and s.summary["distinct"] == 1
    assert {sc["slowdown"] for sc in s.scenarios} == {s.scenarios[0]["slowdown"]}
    assert s.scenarios[0]["bandwidth_slowdown"] == pytest.approx(6 / 5, rel=1e-12)
    # ties ranked by spec text
    assert [sc["failed"] for sc in s.scenarios] == [[f"local-switch:r00/lsw{i}"] for i in range(6)]
    assert s.summary["histogram"] == {"edges": [s.summary["min"], s.summary["max"]], "counts": [6]}


def test_n2_sweep_runs_every_pair():
    s = _rack_sweep(n=2)
    assert s.summary["count"] == math.comb(6, 2)
    assert s.scenarios[0]["bandwidth_slowdown"] == pytest.approx(6 / 4, rel=1e-12)
    assert all(len(sc["failed"]) == 2 for sc in s.scenarios)


def test_samples_are_reproducible_by_seed():
    a = _rack_sweep(cls="tray", n=2, samples=5, seed=7)
    b = _rack_sweep(cls="tray", n=2, samples=5, seed=7)
    c = _rack_sweep(cls="tray", n=2, samples=5, seed=8)
    assert a.as_dict() == b.as_dict()
    assert sorted(map(tuple, (sc["failed"] for sc in a.scenarios))) != \
        sorted(map(tuple, (sc["failed"] for sc in c.scenarios)))
    assert a.summary["count"] == 5 and a.summary["partial"] == 5      # two trays = two broken TP groups each


@pytest.mark.parametrize("k, n, samples", [(6, 1, 3), (9, 2, 20), (40, 2, 700), (7, 3, 10)])
def test_sampled_scenarios_are_distinct_valid_combinations(k, n, samples):
    got = _scenarios([str(i) for i in range(k)], n, samples, seed=3)
    assert len(got) == samples == len(set(got))
    assert all(len(c) == n and list(c) == sorted(set(c)) and c[-1] < k for c in got)
    assert got == _scenarios([str(i) for i in range(k)], n, samples, seed=3)


def test_runner_and_worker_count_do_not_change_results():
    a = sweep("jalapeno-pod", {"racks": 2}, "rail", collective="all-to-all", size_bytes=GiB, algorithm="direct")
    b = sweep("jalapeno-pod", {"racks": 2}, "rail", collective="all-to-all", size_bytes=GiB, algorithm="direct",
              runner=LocalRunner(workers=2))
    assert json.dumps(a.as_dict(), sort_keys=True) == json.dumps(b.as_dict(), sort_keys=True)
    assert a.summary["count"] == 8 and a.summary["distinct"] == 1


def test_sweep_progress_and_plot(tmp_path):
    seen = []
    s = _rack_sweep(progress=lambda done, total, res: seen.append((done, total)))
    assert seen == [(i, 6) for i in range(1, 7)]
    plot_sweep(s, tmp_path / "sweep.png")
    assert (tmp_path / "sweep.png").stat().st_size > 1000


def test_sweep_json_keys():
    d = json.loads(json.dumps(_rack_sweep().as_dict(), allow_nan=False))
    assert {"scenarios", "summary"} <= set(d)
    assert {"failed", "slowdown"} <= set(d["scenarios"][0])
    assert {"count", "min", "median", "p90", "max", "histogram", "partial"} <= set(d["summary"])


@pytest.mark.parametrize("kw, match", [
    (dict(cls="rail"), r"failure class 'rail' is not one 'jalapeno-rack' has.*choose one of: node, chip"),
    (dict(cls="rack", n=2), r"'rack' has 1 domain\(s\) in 'jalapeno-rack'; cannot fail 2"),
    (dict(n=0), r"n 0 must be a positive integer"),
    (dict(cls="link", n=2), r"294,528 scenarios \(C\(768, 2\)\) is more than 100,000; sample them"),
])
def test_sweep_bad_input(kw, match):
    with pytest.raises(BadInput, match=match):
        _rack_sweep(**kw)

# The full pod's 64-scenario rail-switch sweep is benchmarks/bench_sweep.py's job (minutes, not a test).


def test_pod_rail_switch_sweep_is_symmetric_on_4_racks():
    # split="equal": the pod's default is adaptive (Tomahawk 6 Cognitive Routing, topo/routing/switching.py),
    # under which a lost rail switch costs 64/63 (x1.0159: the rail's other switches take its share), not 16/15
    s = sweep("jalapeno-pod", {"racks": 4}, "rail-switch", collective="all-to-all", size_bytes=GiB, group_size=512,
              algorithm="direct", runner=LocalRunner(workers=2), split="equal")
    assert s.summary["count"] == 64 and s.summary["distinct"] == 1
    # every leaf keeps 15 of its 16 equal uplinks
    assert s.scenarios[0]["bandwidth_slowdown"] == pytest.approx(16 / 15, rel=1e-9)
