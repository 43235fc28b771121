"""The sweep's CLI side: the progress bar with ETA, --explain and the orbit columns."""
from __future__ import annotations

import io
import json

from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.collectives.whatif.text import SweepProgress


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_progress_bar_redraws_in_place_with_an_eta_by_orbits():
    out, clock = io.StringIO(), Clock()
    bar = SweepProgress(out, tty=True, clock=clock)
    bar.plan(10, 2)
    clock.t = 3.0
    for i in range(1, 7):                       # orbit 0: 6 scenarios, solved in 3 s
        bar(i, 10, {"orbit": 0})
    text = out.getvalue()
    assert text.startswith("\r") and "6/10 scenarios, 1/2 orbits solved" in text and "ETA 3.0 s" in text
    clock.t = 6.0
    for i in range(7, 11):
        bar(i, 10, {"orbit": 1})
    assert out.getvalue().endswith("\n") and "done" in bar.last and "100%" in bar.last


def test_progress_is_silent_for_short_sweeps():
    out, clock = io.StringIO(), Clock()
    bar = SweepProgress(out, tty=True, clock=clock)
    for i in range(1, 5):
        bar(i, 4, {})
    assert out.getvalue() == ""
    log, clock = io.StringIO(), Clock()
    bar = SweepProgress(log, tty=False, clock=clock)
    clock.t = 5.0
    for i in range(1, 5):
        bar(i, 4, {})
    assert log.getvalue() == ""


def test_progress_in_a_log_is_one_line_per_tenth():
    log, clock = io.StringIO(), Clock()
    bar = SweepProgress(log, tty=False, clock=clock)
    for i in range(1, 101):
        clock.t = 0.2 * i                       # passes 10 s half way
        bar(i, 100, {})
    lines = log.getvalue().splitlines()
    assert 5 <= len(lines) <= 7 and "\r" not in log.getvalue()
    assert lines[-1].endswith("done") and "100/100 scenarios" in lines[-1]
    assert "ETA" in lines[0]


def test_sweep_explain_and_json_method():
    r = CliRunner()
    res = r.invoke(main, ["sweep", "all-to-all", "--fabric", "torus", "--set", "dims=4x4x4", "--class", "link",
                          "--size", "1GiB", "--algorithm", "direct", "--explain", "--top", "2"])
    assert res.exit_code == 0, res.output
    assert "192 scenarios in 3 orbit(s), 3 representative(s) solved" in res.output
    assert "orbit size" in res.output and "translation by 1 along x" in res.output
    res = r.invoke(main, ["sweep", "all-to-all", "--fabric", "torus", "--set", "dims=4x4x4", "--class", "link",
                          "--size", "1GiB", "--algorithm", "direct", "--json"])
    d = json.loads(res.stdout)
    assert d["method"]["orbits"] == 3 and len(d["method"]["representatives"]) == 3
    assert {"orbit", "orbit_size"} <= set(d["scenarios"][0]) and d["summary"]["orbits"] == 3


def test_no_fold_option():
    res = CliRunner().invoke(main, ["sweep", "all-reduce", "--fabric", "nvl72", "--class", "switch", "--size",
                                    "1GiB", "--algorithm", "ring", "--group-size", "72", "--no-fold", "--explain"])
    assert res.exit_code == 0, res.output
    assert "no orbit folding" in res.output and "orbit size" not in res.output


def test_whatif_explain_names_the_kept_symmetries():
    r = CliRunner()
    args = ["whatif", "all-to-all", "--fabric", "torus", "--set", "dims=4x4x4", "--fail",
            "link:c00.00.00--c01.00.00", "--size", "1GiB", "--algorithm", "direct"]
    res = r.invoke(main, args + ["--explain"])
    assert res.exit_code == 0, res.output
    assert "kept by the failure: 2 of 6 generator(s)" in res.output
    assert "its orbit: 64 of the class's 192 domains" in res.output
    d = json.loads(r.invoke(main, args + ["--json", "--explain"]).stdout)
    sym = d["method"]["symmetry"]
    assert sym["orbit_size"] == 64 and len(sym["stabilizer"]) == 2 and sym["refused"] == []
    assert sym["not_checked"] == ["translation"]
    d = json.loads(r.invoke(main, args + ["--json"]).stdout)
    assert "symmetry" not in d["method"]


def test_whatif_explain_gives_refusal_reasons():
    res = CliRunner().invoke(main, ["whatif", "all-to-all", "--fabric", "jalapeno-pod", "--set", "racks=2",
                                    "--set", "leaf=static", "--fail", "rail-switch:rail0/sw0", "--size", "1GiB",
                                    "--algorithm", "direct", "--json", "--explain"])
    sym = json.loads(res.stdout)["method"]["symmetry"]
    assert any("relay" in r["reason"] for r in sym["refused"])


def test_whatif_and_sweep_with_nothing_priced_print_no_nan():
    """The whole fabric failed: every figure of the degraded side is n/a, never nan or 0."""
    r = CliRunner()
    base = ["--fabric", "jalapeno-rack", "--group-size", "8", "--size", "64MiB"]
    res = r.invoke(main, ["whatif", "all-reduce", *base, "--fail", "rack:0"])
    assert res.exit_code == 0, res.output
    out = res.output
    assert "nan" not in out and "xn/a" not in out
    assert "slowdown n/a: every group lost a chip" in out
    assert next(ln for ln in out.splitlines() if ln.startswith("busbw")).split()[-1] == "n/a"
    assert "algorithm changed" not in out
    assert "before 128 at 600  after 128 lost" in out
    res = r.invoke(main, ["sweep", "all-reduce", *base, "--class", "rack"])
    assert res.exit_code == 0, res.output
    assert "nan" not in res.output and "xn/a" not in res.output
    assert "1 with nothing priced" in res.output


def test_whatif_counts_a_cut_off_chip():
    fails = [a for n in ("c01.00.00", "c03.00.00", "c00.01.00", "c00.03.00", "c00.00.01", "c00.00.03")
             for a in ("--fail", f"link:c00.00.00--{n}")]
    res = CliRunner().invoke(main, ["whatif", "all-reduce", "--fabric", "torus", "--set", "dims=4x4x4",
                                    "--size", "64MiB", *fails])
    assert res.exit_code == 0, res.output
    assert "after 57 at 600, 6 at 500, 1 at 0" in res.output and "cut off 1" in res.output


def test_explain_spells_plurals():
    res = CliRunner().invoke(main, ["whatif", "all-reduce", "--fabric", "jalapeno-rack", "--group-size", "8",
                                    "--size", "64MiB", "--fail", "chip:r00/xpu003", "--explain"])
    assert res.exit_code == 0, res.output
    assert "interchangeable local switches like" in res.output and "switchs" not in res.output
