"""fabricsim atlas: every failure class N-1, each class's worst equal to whatif, availability (issue 24)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.collectives import by_size
from fabricsim.collectives.whatif import atlas, availability, load_rates, whatif
from fabricsim.collectives.whatif.atlas import HOURS_PER_YEAR, Rates
from fabricsim.collectives.whatif.sweeps import _fabric
from fabricsim.topo.errors import BadInput
from fabricsim.topo.failures import domain_classes, domains

POD = ("jalapeno-pod", {"racks": "2"})
GiB = 2 ** 30


def _pod_atlas(classes, **kw):
    return atlas(*POD, collective="all-to-all", size_bytes=GiB, classes=classes, algorithm="direct", **kw)


@pytest.fixture(scope="module")
def pod():
    """The 2-rack pod's atlas of four classes: rail switches, links, OCS and chips."""
    return _pod_atlas(["rail-switch", "link", "ocs", "chip"])


def _whatif(a, spec):
    G = _fabric(a.fabric, json.dumps(a.params, sort_keys=True))
    return whatif(G, [spec], a.collective, groups=by_size(G, a.group_size), size_bytes=a.size_bytes,
                  algorithm=a.algorithm, protocol=a.protocol)


def _blast(w):
    hit = {g["group"] for g in w.affected_groups}
    return (sum(1 for c in w.affected_chips["chips"] if c["lost"] or c["cut_off"] or c["group"] in hit),
            len(w.affected_groups))


def test_every_class_of_the_fabric_is_in_the_atlas():
    a = atlas("jalapeno-rack", None, collective="all-reduce", size_bytes=GiB, group_size=8, algorithm="ring")
    G = _fabric("jalapeno-rack", "{}")
    assert a.names == domain_classes(G)
    for c in a.classes:
        assert c.skipped is None, c
        assert c.scenarios == len(domains(G, [c.failure_class])[c.failure_class]) == len(c.slowdowns)
        assert 1 <= c.solved == c.orbits <= c.scenarios


def test_worst_of_each_class_equals_whatif(pod):
    for c in pod.classes:
        w = _whatif(pod, c.worst)
        if c.worst_slowdown is None:        # nothing priced (the chip's group broke)
            assert math.isnan(w.slowdown) and c.unpriced == c.scenarios
        else:
            assert w.slowdown == pytest.approx(c.worst_slowdown, rel=1e-9, abs=0)
            assert c.worst_slowdown == pytest.approx(c.slowdown_max, rel=1e-12)
        chips, groups = _blast(w)
        assert chips <= c.chips_affected_max and groups <= c.groups_affected_max


def test_drawn_scenarios_equal_whatif(pod):
    """Random members of each class's orbits (not only representatives) price as whatif prices them."""
    rng = np.random.default_rng(7)
    G = _fabric(pod.fabric, json.dumps(pod.params, sort_keys=True))
    for cls in ("link", "rail-switch"):
        c = pod.get(cls)
        doms = domains(G, [cls])[cls]
        for i in rng.choice(len(doms), size=2, replace=False):
            w = _whatif(pod, f"{cls}:{doms[i].id}")
            assert w.slowdown == pytest.approx(c.slowdowns[i], rel=1e-9, abs=0)


def test_blast_radius_and_shape(pod):
    rs = pod.get("rail-switch")
    assert (rs.scenarios, rs.orbits, rs.solved) == (64, 1, 1)
    # every chip of the single 256-chip group is hit when the group slows; one group
    assert (rs.chips_affected_max, rs.groups_affected_max) == (256, 1)
    ln = pod.get("link")
    # the pod's default split is adaptive (Tomahawk 6 cognitive routing, topo.routing.switching): a
    # degraded fabric's multipath rates come from the LP, within roundoff of the unhurt 1.0
    assert ln.orbits == 3 and ln.slowdown_min == pytest.approx(1.0, rel=1e-12) and ln.slowdown_max > 1.0
    ch = pod.get("chip")
    assert ch.unpriced == ch.scenarios == 256 and ch.slowdown_max is None


def test_max_orbits_refuses_a_class_with_its_reason():
    a = _pod_atlas(["link", "rail-switch"], max_orbits=2)
    link, rs = a.get("link"), a.get("rail-switch")
    assert link.skipped and "3 orbits" in link.skipped and "max_orbits 2" in link.skipped
    assert link.slowdowns == () and rs.skipped is None
    assert any("link" in n for n in a.notes)


def test_time_budget_stops_a_class():
    a = _pod_atlas(["link"], budget_s=1e-6)
    assert a.get("link").skipped and "budget" in a.get("link").skipped


@pytest.mark.slow
def test_full_pod_atlas_every_class_worst_equals_whatif():
    """Every class of the 2-rack pod (about 3 s): all present, each worst equal to whatif."""
    a = atlas(*POD, collective="all-to-all", size_bytes=GiB, algorithm="direct")
    assert a.names == domain_classes(_fabric(POD[0], json.dumps(POD[1], sort_keys=True)))
    for c in a.classes:
        assert c.skipped is None
        w = _whatif(a, c.worst)
        if c.worst_slowdown is None:
            assert math.isnan(w.slowdown)
        else:
            assert w.slowdown == pytest.approx(c.worst_slowdown, rel=1e-9, abs=0)


def test_worker_processes_give_the_same_atlas_and_keep_the_budget():
    from fabricsim.collectives.whatif import LocalRunner
    one = _pod_atlas(["link", "rail-switch"])
    two = _pod_atlas(["link", "rail-switch"], runner=LocalRunner(2))
    for x, y in zip(one.classes, two.classes):
        assert (x.slowdowns, x.chips_affected_max, x.groups_affected_max, x.worst) == \
            (y.slowdowns, y.chips_affected_max, y.groups_affected_max, y.worst)
    stopped = _pod_atlas(["link"], runner=LocalRunner(2), budget_s=1e-3)
    assert "budget" in stopped.get("link").skipped


def test_unknown_class_is_one_line():
    with pytest.raises(BadInput, match=r"'rail-swich'.*rail-switch"):
        _pod_atlas(["rail-swich"])
    res = CliRunner().invoke(main, ["atlas", "jalapeno-pod", "--set", "racks=2", "--collective", "all-to-all",
                                    "--size", "1GiB", "--classes", "rail-swich"])
    assert res.exit_code == 2
    err = [line for line in res.output.splitlines() if line.startswith("Error")]
    assert len(err) == 1 and "--classes" in err[0] and "rail-switch" in err[0]


# ---------------------------------------------------------------------------------------
# availability
# ---------------------------------------------------------------------------------------
TOY = """
[classes.rail-switch]
rate_per_year = 0.05
repair_h = 10.0
source = "toy"
label = "I"

[classes.chip]
rate_per_year = 0.01
repair_h = 5.0
"""


@pytest.fixture()
def toy(tmp_path):
    p = tmp_path / "toy.toml"
    p.write_text(TOY)
    return p


def test_availability_matches_a_hand_computation(pod, toy):
    rates = load_rates(toy)
    v = availability(pod, rates)
    # hand: every rail switch of the 2-rack pod slows the all-to-all alike (whatif on one of them)
    s = _whatif(pod, "rail-switch:rail0/sw0").slowdown
    p = 0.05 * 10.0 / 8760
    row = {r["class"]: r for r in v.classes}
    rs, ch = row["rail-switch"], row["chip"]
    assert rs["elements"] == 64 and rs["failures_per_year"] == 64 * 0.05
    assert rs["fraction_degraded"] == 64 * 0.05 * 10.0 / 8760 and rs["fraction_down"] == 0.0
    assert rs["expected_slowdown"] == pytest.approx(1 + 64 * p * (s - 1), rel=1e-12)
    # a chip takes the only group down: all of its time is down, none slowed
    assert ch["fraction_down"] == ch["fraction_degraded"] == 256 * 0.01 * 5.0 / 8760
    assert ch["expected_slowdown"] == 1.0
    # the default file's link rate is kept (the toy file names other classes); OCS: partial -> down
    assert row["link"]["rate_per_year"] == load_rates().of("link")[0]
    assert row["ocs"]["fraction_down"] == row["ocs"]["fraction_degraded"] > 0
    only_chips = {r["class"]: r for r in availability(pod, Rates({"chip": (0.01, 5.0, "toy")})).classes}
    assert only_chips["link"]["rate_per_year"] is None and "no rate" in only_chips["link"]["note"]
    t = v.total
    assert t["fraction_degraded"] == pytest.approx(sum(r["fraction_degraded"] for r in v.classes
                                                       if r["rate_per_year"] is not None), rel=1e-15)
    assert v.method == "analytic"


def test_monte_carlo_agrees_within_its_error(pod, toy):
    rates = Rates({"rail-switch": (0.05, 10.0, "toy"), "chip": (0.01, 5.0, "toy")})
    v = availability(pod, rates, samples=400, seed=3)
    assert v.method == "analytic + monte carlo"
    for r in [*(r for r in v.classes if r["rate_per_year"] is not None), v.total]:
        m = r["mc"]
        for q in ("fraction_degraded", "fraction_down", "expected_slowdown"):
            err = m[q + "_se"]
            assert abs(m[q] - r[q]) <= 3 * err + 1e-15, (r.get("class", "total"), q, m[q], r[q], err)
        assert m["fraction_degraded_se"] > 0
    again = availability(pod, rates, samples=400, seed=3)
    assert again.total["mc"] == v.total["mc"]          # seeded: reproducible


@pytest.mark.parametrize("text, match", [
    ("not = [toml", "not TOML"),
    ("[classes.chip]\nrate_per_year = -0.1\nrepair_h = 5\n", r"classes.chip.rate_per_year = -0.1 must be"),
    ("[classes.chip]\nrate_per_year = 0.1\n", "classes.chip has no repair_h"),
    ("[classes.chip]\nrate_per_year = 0.1\nrepair_h = 5\nmtbf = 3\n", "unknown key.*mtbf"),
    ("[classes.chip]\nrate_per_year = 2.0\nrepair_h = 8760\n", "not a rare failure"),
    ("x = 1\n", r"no \[classes.NAME\]"),
])
def test_bad_rates_files_are_one_line(tmp_path, text, match):
    p = tmp_path / "r.toml"
    p.write_text(text)
    with pytest.raises(BadInput, match=match) as e:
        load_rates(p)
    assert "\n" not in str(e.value)
    res = CliRunner().invoke(main, ["atlas", "jalapeno-rack", "--collective", "all-reduce", "--size", "1MiB",
                                    "--classes", "local-switch", "--rates", str(p)])
    assert res.exit_code == 2 and "--rates" in res.output


def test_missing_rates_file(tmp_path):
    with pytest.raises(BadInput, match=r"nope\.toml: cannot read .*expected a failure-rates TOML file"):
        load_rates(tmp_path / "nope.toml")


def test_default_rates_are_cited():
    r = load_rates()
    for cls in ("chip", "link", "*-switch", "tray", "ocs"):
        lam, rep, src = r.classes[cls]
        assert lam > 0 and rep > 0 and src and "(" in src
    assert r.of("rail-switch") == r.classes["*-switch"] and r.of("node") is None and r.of("switch-tray") is None


def test_cli_json_schema_and_plot(tmp_path):
    png = tmp_path / "a.png"
    res = CliRunner().invoke(main, ["atlas", "jalapeno-rack", "--collective", "all-reduce", "--size", "1GiB",
                                    "--group-size", "8", "--algorithm", "ring", "--classes", "local-switch,chip",
                                    "--availability", "--samples", "50", "--json", "--plot", str(png)])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["fabric"] == "jalapeno-rack" and d["collective"] == "all-reduce"
    row = d["classes"][0]
    for k in ("class", "scenarios", "orbits", "chips_affected_max", "groups_affected_max", "slowdown_min",
              "slowdown_median", "slowdown_max", "worst"):
        assert k in row
    assert [c["class"] for c in d["classes"]] == ["local-switch", "chip"]
    assert d["availability"]["method"] == "analytic + monte carlo"
    assert png.stat().st_size > 1000


def test_cli_table():
    res = CliRunner().invoke(main, ["atlas", "jalapeno-rack", "--collective", "all-reduce", "--size", "1GiB",
                                    "--group-size", "8", "--algorithm", "ring", "--classes", "local-switch"])
    assert res.exit_code == 0, res.output
    a = atlas("jalapeno-rack", None, collective="all-reduce", size_bytes=GiB, group_size=8, algorithm="ring",
              classes=["local-switch"])
    row = next(line for line in res.stdout.splitlines() if line.startswith("local-switch"))
    assert f"x{a.get('local-switch').slowdown_max:.6g}" in row and "local-switch:r00/lsw0" in row


def test_samples_need_availability():
    res = CliRunner().invoke(main, ["atlas", "jalapeno-rack", "--collective", "all-reduce", "--size", "1GiB",
                                    "--samples", "10"])
    assert res.exit_code == 2 and "--availability" in res.output
