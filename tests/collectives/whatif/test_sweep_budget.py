"""N-2 sweeps are bounded: estimated from the time of the representatives solved so far, they run,
sample with a stated error, or stop with a one-line BadInput naming the estimate and --samples / --budget-s."""
from __future__ import annotations

import math

import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.collectives.whatif import sweep
from fabricsim.collectives.whatif.sweeps import DEFAULT_N2_BUDGET_S, _check_budget, _sample_error
from fabricsim.topo.errors import BadInput

GiB = 2 ** 30
TPU8T = ("tpu8t", {"dims": "4x4x8"})          # 128 chips, 48 OCSes: 1,128 pairs in 60 orbits
LPX = ("groq-lpx", {"trays": "4"})


def test_a_sweep_within_its_budget_runs_every_scenario():
    s = sweep(*LPX, "tray", n=2, collective="all-to-all", size_bytes=GiB, algorithm="direct")
    assert s.summary["count"] == math.comb(4, 2) and "sampled" not in s.summary


def test_a_sweep_over_its_budget_stops_with_the_estimate_and_the_options():
    with pytest.raises(BadInput) as e:
        sweep(*TPU8T, "ocs", n=2, collective="all-to-all", size_bytes=GiB, algorithm="direct", budget_s=1e-3)
    msg = str(e.value)
    assert "\n" not in msg and "1,128 scenarios fold into 60 to solve" in msg
    assert "estimated" in msg and "--samples" in msg and "--budget-s" in msg


def test_pairs_get_the_default_budget_and_singles_none(monkeypatch):
    seen = []
    import fabricsim.collectives.whatif.sweeps as sw
    monkeypatch.setattr(sw, "_check_budget", lambda b, *a: seen.append(b))
    sweep(*LPX, "tray", n=2, collective="all-to-all", size_bytes=GiB, algorithm="direct")
    assert set(seen) == {DEFAULT_N2_BUDGET_S}
    seen.clear()
    sweep(*LPX, "tray", n=1, collective="all-to-all", size_bytes=GiB, algorithm="direct")
    assert seen == []
    with pytest.raises(BadInput, match="budget_s"):
        sweep(*LPX, "tray", n=2, collective="all-to-all", size_bytes=GiB, algorithm="direct", budget_s=-1)


def test_check_budget_estimates_from_the_time_per_representative():
    _check_budget(10.0, 2.0, 1, 5, 9, "ocs", 2, None)           # 2 + 2 x 4 = 10 s: within
    with pytest.raises(BadInput, match=r"~11 s estimated, over the 10 s budget"):
        _check_budget(10.0, 2.2, 1, 5, 9, "ocs", 2, None)
    _check_budget(1e-9, 5.0, 5, 5, 9, "ocs", 2, None)           # nothing left: never refused


def test_a_sampled_sweep_states_its_error():
    s = sweep(*TPU8T, "ocs", n=2, samples=6, collective="all-to-all", size_bytes=GiB, algorithm="direct")
    e = s.summary["sampled"]
    assert (e["samples"], e["of"]) == (6, 1128)
    assert e["worse_fraction"] == pytest.approx(1 - 0.05 ** (1 / 6))
    assert (1 - e["worse_fraction"]) ** 6 == pytest.approx(0.05)       # P(6 draws miss them all) = 5 %
    assert any("lower bound" in n and "95%" in n for n in s.notes)
    assert _sample_error(100, 10_000)["worse_fraction"] == pytest.approx(0.0295, abs=1e-4)   # ~3 / K


def test_the_cli_refuses_in_one_line():
    r = CliRunner().invoke(main, ["sweep", "all-to-all", "--fabric", "tpu8t", "--set", "dims=4x4x8", "--class", "ocs",
                                  "--n", "2", "--budget-s", "0.001", "--size", "1GiB", "--algorithm", "direct"])
    assert r.exit_code == 2, r.output
    line = [ln for ln in r.output.splitlines() if "estimated" in ln]
    assert len(line) == 1 and "--samples" in line[0] and "--budget-s" in line[0]
