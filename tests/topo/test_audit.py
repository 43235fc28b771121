import pytest

from fabricsim.fabrics import build
from fabricsim.fabrics.devices import JALAPENO, TH6_200G
from fabricsim.topo.auditing import audit, bisection, budget_findings, hop_stats


@pytest.fixture(scope="module")
def rack():
    return audit(build("jalapeno-rack"))


@pytest.fixture(scope="module")
def pod():
    return audit(build("jalapeno-pod"))


def test_local_closure_is_derived_from_switches_and_chips(rack):
    t = rack.totals
    local = JALAPENO.lanes_by_tier["local"] * JALAPENO.lane_gbps / 1000       # 4.8 Tb/s per chip
    assert t["local_switch_capacity_Tbps"] == pytest.approx(6 * TH6_200G.capacity_gbps / 1000) == 614.4
    assert t["local_chip_bandwidth_Tbps"] == pytest.approx(128 * local) == 614.4
    assert t["local_switch_wired_Tbps"] == pytest.approx(614.4)


def test_every_local_switch_uses_128_of_128_ports_with_zero_uplinks(rack):
    ports = [f for f in rack.findings if f.check == "switch ports 0.8T"]
    assert len(ports) == 6 and all(f.used == 128 == f.available for f in ports)
    updown = [f for f in rack.findings if f.check == "switch down/up"]
    assert len(updown) == 6 and all(f.available == 0 and "zero uplinks" in f.note for f in updown)
    assert rack.ok


def test_differential_pairs(rack, pod):
    assert rack.totals["chip_diff_pairs"] == 128 * 64 == 8192
    assert rack.totals["copper_diff_pairs"] == 6144
    assert pod.totals["copper_diff_pairs_per_rack"] == 8192       # local 6,144 + global backplane 2,048
    assert pod.totals["chip_diff_pairs_per_rack"] == 8192


def test_pod_optics_and_rail_switches(pod):
    t = pod.totals
    assert t["optical_ports_per_rack"] == 128                      # 128 x 1.6T leave every rack
    assert t["rail_switches"] == 64
    assert t["rail_switch_wired_Tbps"] == pytest.approx(64 * 51.2)
    unused = [f for f in pod.findings if f.check == "switch bandwidth" and "rail" in f.where]
    assert len(unused) == 64
    assert all(f.used == 51200 and f.available == 102400 and "50%" in f.note for f in unused)
    leaves = [f for f in pod.findings if f.check == "switch down/up" and "gsw" in f.where]
    assert len(leaves) == 64 and all(f.used == f.available == 51200 for f in leaves)
    assert pod.ok


def test_bisection(rack, pod):
    assert rack.bisection_GBps == pytest.approx(38400.0)          # 64 chips x 600 GB/s
    assert pod.bisection_GBps == pytest.approx(204800.0)          # 1,024 chips x 200 GB/s global
    assert "ranks" in pod.bisection_halves


def test_hops(rack, pod):
    assert (rack.diameter_hops, rack.mean_hops) == (2, 2.0)
    n, per_rack = 2048, 128
    same = n * (per_rack - 1)
    assert pod.diameter_hops == 4
    assert pod.hop_histogram == {2: same, 4: n * (n - 1) - same}
    assert pod.relay_pairs == 0


def test_static_leaves_need_relays_between_columns():
    h = hop_stats(build("jalapeno-pod", racks=2, leaf="static"))
    n, per_rack = 256, 128
    # other-rack pairs in another column (7 of 8) relay: local hop pair + 4 physical global links
    assert h.relay_pairs == n * per_rack * 7 // 8
    assert h.diameter_hops == 6 and h.unreachable_pairs == 0


@pytest.mark.parametrize("racks", [1, 2, 4, 8])
def test_totals_scale_with_racks(racks):
    a = audit(build("jalapeno-pod", racks=racks), hops=False)
    t = a.totals
    assert t["chips"] == 128 * racks
    assert t["switch_asics"] == racks * (6 + 4) + 64
    assert t["copper_diff_pairs"] == 8192 * racks
    assert t["optical_links"] == 64 * racks
    assert t["rail_switch_wired_Tbps"] == pytest.approx(64 * 3.2 * racks)
    assert a.bisection_GBps == pytest.approx(200 * 128 * racks / 2) if racks > 1 else True
    assert a.ok


def test_bcm78910_is_flagged_on_lane_rate():
    findings = budget_findings(build("jalapeno-rack", local_switch="BCM78910"))
    bad = [f for f in findings if not f.ok]
    assert bad and {f.check for f in bad} == {"lane rate"}
    assert len(bad) == 6                        # one lane-rate check per node: the six 100G switches
    assert bad[0].used == 200 and bad[0].available == 100 and "128 of its 128 links" in bad[0].note


def test_over_budget_switch_is_flagged():
    findings = budget_findings(build("jalapeno-rack", trays=20))     # 160 chips on 128-port switches
    bad = {f.check for f in findings if not f.ok}
    assert {"switch lanes", "switch bandwidth"} <= bad


def test_bisection_says_which_halves():
    b = bisection(build("jalapeno-rack", trays=2))
    assert b.GBps == pytest.approx(8 * 600)
    assert b.halves.startswith("ranks 0-7")


def test_skipped_figures_are_none_not_zero():
    """hops=False / bisect=False leave their figures None: a 0 would read like a result
    (a static-leaf pod relays 3,440,640 pairs; 0 relayed pairs would be a wrong figure)."""
    G = build("jalapeno-pod", leaf="static")
    a = audit(G, hops=False, bisect=False)
    skipped = ("diameter_hops", "mean_hops", "hop_histogram", "relay_pairs", "unreachable_pairs",
               "bisection_GBps", "bisection_halves")
    for key in skipped:
        assert getattr(a, key) is None, key
        assert a.as_dict()[key] is None, key
    assert a.ok and a.chips == 2048                    # the budgets are still there
    # skipping one keeps the other's figures
    only_hops = audit(build("jalapeno-rack"), bisect=False)
    assert (only_hops.diameter_hops, only_hops.mean_hops, only_hops.relay_pairs) == (2, 2.0, 0)
    assert only_hops.bisection_GBps is None and only_hops.bisection_halves is None
    only_bisection = audit(build("jalapeno-rack"), hops=False)
    assert only_bisection.bisection_GBps == pytest.approx(38400.0) and only_bisection.diameter_hops is None


def test_placeholder_chips_count_wired_pairs_and_say_so(tmp_path):
    """generic-chip's 4,096 lanes are a stand-in: chip_diff_pairs counts the lanes wired, with a note."""
    import json

    from click.testing import CliRunner

    from fabricsim.cli import main
    from fabricsim.fabrics.userfile import load_fabric
    from fabricsim.topo.builders import leaf_spine

    recipe = tmp_path / "t16.toml"
    recipe.write_text('builder = "torus"\n[params]\ndims = [4, 4]\nlanes_per_link = 2\n')
    a = audit(load_fabric(recipe))
    t = a.totals
    # 16 chips x 4 links x 2 lanes x 2 pairs at each chip; each copper lane has two chip ends
    assert t["chip_diff_pairs"] == 16 * 4 * 2 * 2 == 2 * t["copper_diff_pairs"] == 256
    assert len(a.notes) == 1 and "generic-chip" in a.notes[0] and "wired lanes" in a.notes[0]
    res = CliRunner().invoke(main, ["audit", str(recipe), "--json"])
    got = json.loads(res.output)
    assert got["totals"]["chip_diff_pairs"] == 256 and got["notes"] == list(a.notes)
    assert "note: placeholder device(s) generic-chip" in CliRunner().invoke(main, ["audit", str(recipe)]).output
    # a placeholder switch's spare capacity is no finding worth a note
    ls = audit(leaf_spine(leaves=2, chips_per_leaf=4, spines=2), hops=False, bisect=False)
    assert not [f for f in ls.findings if "unused" in f.note] and "generic-switch" in ls.notes[0]
    # real devices keep their package figure and get no note
    assert audit(build("jalapeno-rack"), hops=False, bisect=False).notes == ()
