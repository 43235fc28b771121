"""whatif / sweep --recovery restart [--spares N]: the job placed again on the surviving chips."""
import json

import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.collectives import by_size, price
from fabricsim.collectives.whatif import sweep, whatif
from fabricsim.collectives.whatif.scenario import job_groups, restart_job, survivors
from fabricsim.collectives.whatif.sweeps import MAX_RESTART_SCENARIOS
from fabricsim.fabrics import build
from fabricsim.topo.errors import BadInput
from fabricsim.topo.failures import apply_failures

GiB = 2**30
SMALL = {"racks": 2, "trays": 4}          # 2 racks x 4 trays x 8 chips = 64 chips, ranks 0-31 in rack 0
SETS = ["--fabric", "jalapeno-pod", "--set", "racks=2", "--set", "trays=4"]


@pytest.fixture(scope="module")
def pod():
    return build("jalapeno-pod", **SMALL)


def run(*args):
    return CliRunner().invoke(main, list(args))


# --------------------------------------------------------------------------- placement over survivors
@pytest.mark.parametrize("placement", ["packed", "spread", "random:3"])
def test_job_groups_without_spares_is_by_size(pod, placement):
    assert job_groups(pod, 8, placement) == by_size(pod, 8, placement)


def test_spares_hold_out_the_highest_ranks(pod):
    g = job_groups(pod, 8, "packed", spares=8)
    assert len(g) == 7 and max(r for x in g for r in x) == 55
    # spread over the 56 chips left: stride 56 / 8 = 7
    assert job_groups(pod, 8, "spread", spares=8)[0] == tuple(range(0, 56, 7))


def test_survivors_drop_lost_and_cut_off_chips(pod):
    H, _ = apply_failures(pod, ["rack:1"])
    alive, dropped = survivors(H)
    assert alive == list(range(32))
    # a chip whose links all failed is present but cut off
    links = [f"link:r00/xpu000--{n}" for n in pod["r00/xpu000"]]
    H2, _ = apply_failures(pod, links)
    alive2, dropped2 = survivors(H2)
    assert 0 not in alive2 and len(alive2) == 63 and dropped2["cut_off"] == 1


# --------------------------------------------------------------------------- restart on a rack failure
def test_rack_failure_restart_moves_all_reduce_job_and_loses_whole_groups(pod):
    groups = by_size(pod, 8)
    r = whatif(pod, ["rack:0"], "all-reduce", groups=groups, size_bytes=GiB, algorithm="ring",
               recovery="restart")
    rec = r.recovery
    assert rec["mode"] == "restart" and rec["shrunk"] == "groups"
    assert (rec["ranks_before"], rec["ranks_after"], rec["groups_lost"], rec["group_size_after"]) == (64, 32, 4, 8)
    assert rec["chips_dropped"] == {"lost": 32, "cut_off": 0, "disconnected": 0}
    # the restarted job runs on rack 1's chips, and its price is the price of those groups on the degraded fabric
    H, _ = apply_failures(pod, ["rack:0"])
    want = price(H, "all-reduce", groups=by_size(pod, 8)[4:], size_bytes=GiB, algorithm="ring", reference=pod)
    assert r.degraded.time_s == want.time_s and not r.partial
    assert r.slowdown == pytest.approx(want.time_s / r.baseline.time_s, rel=1e-12)
    # half the ranks: per byte of payload the job takes twice the slowdown
    assert rec["per_byte_slowdown"] == pytest.approx(2 * r.slowdown, rel=1e-12)
    # reroute leaves the 4 broken groups out (partial); restart prices a whole (smaller) job
    rr = whatif(pod, ["rack:0"], "all-reduce", groups=groups, size_bytes=GiB, algorithm="ring")
    assert rr.partial and rr.degraded.broken_groups["count"] == 4 and rr.recovery == {"mode": "reroute"}


def test_all_to_all_shrinks_its_groups(pod):
    r = whatif(pod, ["tray:r00/t00"], "all-to-all", groups=by_size(pod, 32), size_bytes=GiB, algorithm="direct",
               recovery="restart")
    rec = r.recovery
    assert rec["shrunk"] == "ranks" and rec["groups_after"] == 2 and rec["group_size_after"] == 28
    assert rec["ranks_lost"] == 8 and r.degraded.group_size == 28
    # packed over the 56 survivors: group 0 is ranks 8..35, across the two racks, so it is slower than intact
    assert r.slowdown > 1.5
    assert any("shrank every group from 32 to 28" in n for n in r.notes)


def test_spares_keep_the_job_size(pod):
    groups = job_groups(pod, 8, "packed", spares=8)
    r = whatif(pod, ["tray:r00/t01"], "all-reduce", groups=groups, size_bytes=GiB, algorithm="ring",
               recovery="restart", spares=8)
    rec = r.recovery
    assert rec["shrunk"] == "none" and rec["ranks_lost"] == 0 and rec["spares_used"] == 8
    assert rec["ranks_after"] == rec["ranks_before"] == 56
    # the lost tray's place is taken by the spare tray (ranks 56..63), packed in rank order
    assert r.degraded.group_size == 8 and not r.partial
    assert rec["per_byte_slowdown"] == r.slowdown


def test_too_few_chips_shrinks_and_says_so(pod):
    # 32 spares: the job is 4 groups in rack 0; rack 0 and one spare tray fail -> 24 chips left: 3 groups
    groups = job_groups(pod, 8, "packed", spares=32)
    r = whatif(pod, ["rack:0", "tray:r01/t00"], "all-reduce", groups=groups, size_bytes=GiB, algorithm="ring",
               recovery="restart", spares=32)
    rec = r.recovery
    assert rec["spares_used"] == 24 and rec["groups_after"] == 3 and rec["groups_lost"] == 1
    assert rec["shrunk"] == "groups" and any("lost 1 whole group(s) of 8" in n for n in r.notes)
    # no group fits: refused in one line
    with pytest.raises(BadInput, match=r"restart: 0 chip\(s\) survive, fewer than one group of 8"):
        whatif(pod, ["rack:0", "rack:1"], "all-reduce", groups=groups, size_bytes=GiB, algorithm="ring",
               recovery="restart", spares=32)


def test_restart_without_lost_chips_equals_reroute(pod):
    """A leaf switch failure takes no chip (they keep their local links): the restarted job is the same job on the
    same degraded fabric, so restart = reroute."""
    groups = by_size(pod, 64)
    a = whatif(pod, ["leaf-switch:r00/gsw0"], "all-to-all", groups=groups, size_bytes=GiB, algorithm="direct")
    b = whatif(pod, ["leaf-switch:r00/gsw0"], "all-to-all", groups=groups, size_bytes=GiB, algorithm="direct",
               recovery="restart")
    assert b.recovery["moved"] == 0 and b.recovery["ranks_lost"] == 0
    assert a.slowdown == b.slowdown and a.degraded.time_s == b.degraded.time_s and a.slowdown > 1


def test_restart_needs_placement_groups(pod):
    with pytest.raises(BadInput, match=r"not the 'packed' groups over chips 0..63"):
        whatif(pod, ["rack:1"], "all-reduce", groups=by_size(pod, 8, "spread"), size_bytes=GiB, recovery="restart")
    with pytest.raises(BadInput, match=r"unknown recovery 'retry'; choose one of: reroute, restart"):
        whatif(pod, ["rack:1"], "all-reduce", groups=by_size(pod, 8), size_bytes=GiB, recovery="retry")
    with pytest.raises(BadInput, match=r"spares 8: spare chips are used only by recovery 'restart'"):
        whatif(pod, ["rack:1"], "all-reduce", groups=by_size(pod, 8), size_bytes=GiB, spares=8)
    with pytest.raises(BadInput, match=r"spares 64 leave no chip for the job"):
        job_groups(pod, 8, spares=64)


# --------------------------------------------------------------------------- sweeps
def test_restart_sweep_prices_every_scenario_as_its_whatif(pod):
    s = sweep("jalapeno-pod", SMALL, "tray", collective="all-to-all", size_bytes=GiB, group_size=32,
              algorithm="direct", recovery="restart", spares=8)
    assert s.method["fold"] is False and "restart" in s.method["reason"]
    assert s.recovery == {"mode": "restart", "spares": 8} and s.summary["count"] == 8
    # the job is one group of 32 on rack 0 (56 chips beside the spares): only rack 0's 4 trays touch it, and
    # each is replaced by the spare tray
    assert s.summary["restart"]["restarted"] == 8 and s.summary["restart"]["used_spares"] == 4
    assert s.summary["restart"]["shrunk"] == 0 and s.summary["restart"]["ranks_lost_max"] == 0
    groups = job_groups(pod, 32, "packed", spares=8)
    for sc in s.scenarios[:3]:
        w = whatif(pod, sc["failed"], "all-to-all", groups=groups, size_bytes=GiB, algorithm="direct",
                   recovery="restart", spares=8)
        assert sc["slowdown"] == w.slowdown
        assert sc["recovery"]["per_byte_slowdown"] == pytest.approx(w.recovery["per_byte_slowdown"], rel=1e-12)
        assert sc["recovery"]["spares_used"] == w.recovery["spares_used"]


def test_restart_sweep_refuses_too_many_scenarios_and_explicit_groups():
    with pytest.raises(BadInput, match=rf"768 scenarios with recovery 'restart' is more than {MAX_RESTART_SCENARIOS}"):
        sweep("jalapeno-pod", SMALL, "link", collective="all-reduce", size_bytes=GiB, group_size=8,
              recovery="restart")
    with pytest.raises(BadInput, match=r"explicit groups .* cannot be re-placed"):
        sweep("jalapeno-pod", SMALL, "rack", collective="all-reduce", size_bytes=GiB, groups=[[0, 1], [2, 3]],
              recovery="restart")


def test_restart_sweep_reports_a_scenario_that_cannot_restart():
    s = sweep("jalapeno-pod", SMALL, "rack", collective="all-to-all", size_bytes=GiB, group_size=64,
              algorithm="direct", recovery="restart", n=2)
    (sc,) = s.scenarios
    assert sc["recovery"]["restarted"] is False and "cannot restart" in sc["recovery"]["reason"]
    assert sc["chips_lost"] == 64 and sc["slowdown"] != sc["slowdown"]          # NaN: nothing priced
    assert s.summary["unpriced"] == 1 and s.summary["restart"]["refused"] == 1


# --------------------------------------------------------------------------- CLI
def test_cli_whatif_restart_json_fields():
    res = run("whatif", "all-reduce", *SETS, "--group-size", "8", "--size", "1GiB", "--algorithm", "ring",
              "--fail", "tray:r00/t00", "--recovery", "restart", "--spares", "8", "--json")
    assert res.exit_code == 0, res.output
    rec = json.loads(res.output)["recovery"]
    for key in ("mode", "placement", "spares", "spares_used", "chips_dropped", "ranks_before", "ranks_after",
                "ranks_lost", "groups_before", "groups_after", "groups_lost", "group_size_before",
                "group_size_after", "shrunk", "moved", "per_byte_slowdown"):
        assert key in rec, key
    assert rec["mode"] == "restart" and rec["spares_used"] == 8 and rec["ranks_lost"] == 0
    res = run("whatif", "all-reduce", *SETS, "--group-size", "8", "--size", "1GiB", "--algorithm", "ring",
              "--fail", "tray:r00/t00", "--json")
    assert json.loads(res.output)["recovery"] == {"mode": "reroute"}


def test_cli_whatif_restart_text_says_what_ran():
    res = run("whatif", "all-to-all", *SETS, "--group-size", "32", "--size", "1GiB", "--algorithm", "direct",
              "--fail", "rack:1", "--recovery", "restart")
    assert res.exit_code == 0, res.output
    assert "recovery: restart (packed): 32 of 64 ranks in 2 group(s) of 16; lost 32 rank(s)" in res.output
    assert "the job shrank: per byte of its payload" in res.output and "restarted" in res.output


def test_cli_sweep_restart_table():
    res = run("sweep", "all-reduce", *SETS, "--group-size", "8", "--size", "1GiB", "--algorithm", "ring",
              "--class", "tray", "--recovery", "restart", "--spares", "8")
    assert res.exit_code == 0, res.output
    assert "recovery: restart with 8 spare(s): 8 restarted, 0 shrank, 7 used spares" in res.output
    assert "spares used" in res.output


@pytest.mark.parametrize("cmd, extra, words", [
    ("whatif", ["--recovery", "retry"], ["'retry' is not one of 'reroute', 'restart'"]),
    ("whatif", ["--spares", "-1"], ["--spares", "-1"]),
    ("whatif", ["--spares", "8"], ["--spares 8 needs --recovery restart"]),
    ("whatif", ["--recovery", "restart", "--spares", "64"], ["spares 64 leave no chip"]),
    ("whatif", ["--recovery", "restart", "--fail", "rack:0", "--spares", "32", "--fail", "rack:1"],
     ["cannot restart"]),
    ("sweep", ["--recovery", "restart", "--count", "2"], ["cannot be re-placed"]),
    ("sweep", ["--spares", "8"], ["--spares 8 needs --recovery restart"]),
])
def test_cli_bad_recovery_values_are_one_line(cmd, extra, words):
    base = (["whatif", "all-reduce", *SETS, "--group-size", "8", "--size", "1GiB", "--fail", "tray:r00/t00"]
            if cmd == "whatif" else
            ["sweep", "all-reduce", *SETS, "--group-size", "8", "--size", "1GiB", "--class", "tray"])
    res = run(*base, *extra)
    assert res.exit_code == 2, res.output
    err = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    assert len(err) == 1 and "Traceback" not in res.output, res.output
    for w in words:
        assert w in err[0], err[0]
