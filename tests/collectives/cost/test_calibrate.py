"""`fabricsim calibrate`: fits from nccl-tests logs, through the library and the CLI."""
from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.collectives import by_size, price
from fabricsim.collectives.cost import load_calibration, parse_log, parse_text
from fabricsim.collectives.cost import calibrate as cal_mod
from fabricsim.collectives.cost.calibrate import _decompose, _model_time, calibrate, calibrate_logs
from fabricsim.fabrics import build
from fabricsim.topo.errors import BadInput
from repo_paths import DATA

DATA = DATA / "nccl"
NVL72_LOG = DATA / "gb200_nvl72_72rank_coreweave.log"
AZURE_LOG = DATA / "gb200_4gpu_azure_ring.log"
GiB = 2**30


@pytest.fixture(scope="module")
def nvl72():
    return build("nvl72")


@pytest.fixture(scope="module")
def fit72(nvl72):
    """The fit of the whole 72-rank log (shared: every fit prices each size a few dozen times)."""
    return calibrate_logs(nvl72, [NVL72_LOG])


@pytest.fixture(scope="module")
def fit_both(nvl72):
    return calibrate_logs(nvl72, [NVL72_LOG, AZURE_LOG])


def _two_rows(tmp_path) -> Path:
    """The CoreWeave log with only its 512 MiB and 8 GiB rows."""
    keep = []
    for line in NVL72_LOG.read_text().splitlines():
        tok = line.split()
        if tok and tok[0].isdigit() and int(tok[0]) not in (512 * 2**20, 8 * GiB):
            continue
        keep.append(line)
    p = tmp_path / "two_rows.log"
    p.write_text("\n".join(keep) + "\n")
    return p


def _measured():
    run, = parse_log(NVL72_LOG)
    return {p.size_bytes: p.time_us for p in run.select(in_place=False)}


def test_two_rows_predict_the_middle_within_5pct_library(nvl72, tmp_path):
    res = calibrate_logs(nvl72, [_two_rows(tmp_path)])
    fit, = res.fits
    assert fit.section == "all-reduce" and fit.algorithm is None and fit.nranks == (72,)
    assert len(fit.points) == 2
    groups = by_size(nvl72, 72, count=1)
    meas = _measured()
    for size in (GiB, 2 * GiB, 4 * GiB):
        t = _model_time(nvl72, groups, "all-reduce", None, None, size, fit.params)
        assert t * 1e6 == pytest.approx(meas[size], rel=0.05)


def test_two_rows_predict_the_middle_within_5pct_cli(nvl72, tmp_path):
    out = tmp_path / "cal.toml"
    res = CliRunner().invoke(main, ["calibrate", str(_two_rows(tmp_path)), "--fabric", "nvl72", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "two_rows.log" in out.read_text().splitlines()[1]
    meas = _measured()
    for size, label in ((GiB, "1GiB"), (2 * GiB, "2GiB"), (4 * GiB, "4GiB")):
        r = CliRunner().invoke(main, ["price", "all-reduce", "--fabric", "nvl72", "--size", label,
                                      "--calibration", str(out), "--json"])
        assert r.exit_code == 0, r.output
        assert json.loads(r.output)["time_s"] * 1e6 == pytest.approx(meas[size], rel=0.05)


def test_fit_is_closer_than_the_default(fit72):
    fit, = fit72.fits
    assert fit.rms_error_pct < 5 and fit.rms_error_pct < fit.default_rms_error_pct / 3
    assert 0 < fit.params["efficiency"] <= 1
    assert all(v >= 0 for v in fit.params.values())


def _probe_params():
    names = cal_mod.fitted_params()
    return names, {n: {"efficiency": 0.37, "step_latency_us": 2.5, "base_latency_us": 7.0}[n] for n in names}


@pytest.mark.parametrize("protocol", ["ideal", "simple"])
@pytest.mark.parametrize("algorithm", ["nvls", "ring", "direct"])
@pytest.mark.parametrize("size", [8.0, 2**33])
def test_decomposition_matches_a_direct_price(nvl72, algorithm, size, protocol):
    """Where one term of the engine dominates (small or large sizes) it is exactly L0 + B/eff + k*latency."""
    from fabricsim.collectives.cost import Calibration
    groups = by_size(nvl72, 72, count=1)
    names, params = _probe_params()
    base, coef = _decompose(nvl72, groups, "all-reduce", algorithm, protocol, size, names)
    want = price(nvl72, "all-reduce", groups=groups, size_bytes=size, algorithm=algorithm, protocol=protocol,
                 calibration=Calibration(flat=params)).time_s
    got = base + sum(coef[n] / params[n] if n == "efficiency" else coef[n] * params[n] for n in names)
    assert got == pytest.approx(want, rel=1e-9)
    assert _model_time(nvl72, groups, "all-reduce", algorithm, protocol, size, params) == pytest.approx(want, rel=1e-12)


def test_reported_model_times_are_the_engines(nvl72, fit_both):
    """Every reported model time is a direct price with the fitted constants (defect-corrected fits too)."""
    from fabricsim.collectives.cost import Calibration
    fit = fit_both.fits[1]
    for p in fit.points[::5]:
        r = price(nvl72, "all-reduce", groups=by_size(nvl72, 4, count=1), size_bytes=p.size_bytes,
                  algorithm="ring", protocol="auto", calibration=Calibration(flat=dict(fit.params)))
        assert p.model_time_us == pytest.approx(r.time_s * 1e6, rel=1e-12)


def test_algorithm_from_the_log_gets_its_own_section(fit_both, tmp_path):
    res = fit_both
    assert [f.section for f in res.fits] == ["all-reduce", "all-reduce.ring"]
    ring = res.fits[1]
    assert ring.algorithm == "ring" and ring.nranks == (4,) and ring.protocol is None
    assert len(ring.points) == 24                 # in-place only: the out-of-place columns are N/A
    p = tmp_path / "cal.toml"
    p.write_text(res.toml())
    cal = load_calibration(p)
    assert cal.lookup("all-reduce", "ring", "simple") == pytest.approx(ring.params)
    assert cal.lookup("all-reduce", "nvls", "simple") == pytest.approx(res.fits[0].params)


def test_fit_changes_with_the_measurements(nvl72, fit72, tmp_path):
    """No hard-coded answer: slower measurements give a lower efficiency."""
    slow = tmp_path / "slow.log"
    lines = []
    for line in NVL72_LOG.read_text().splitlines():
        tok = line.split()
        if tok and tok[0].isdigit():
            tok[5] = f"{float(tok[5]) * 2:.1f}"
            line = "  ".join(tok)
        lines.append(line)
    slow.write_text("\n".join(lines) + "\n")
    a, = fit72.fits
    b, = calibrate_logs(nvl72, [slow]).fits
    assert b.params["efficiency"] == pytest.approx(a.params["efficiency"] / 2, rel=0.02)


def test_protocol_and_algorithm_lines_are_read(nvl72, tmp_path):
    p = tmp_path / "ring_simple.log"
    p.write_text("NCCL_ALGO=Ring\nNCCL_PROTO=Simple\n" + AZURE_LOG.read_text().replace("algorithm=Ring", ""))
    fit, = calibrate_logs(nvl72, [p]).fits
    assert fit.algorithm == "ring" and fit.protocol == "simple"
    assert fit.section == "all-reduce.ring.simple"


def test_exclusion_leaves_the_choice_to_the_model(nvl72, fit72, tmp_path):
    p = tmp_path / "no_nvls.log"
    p.write_text("NCCL_ALGO=^NVLS\n" + NVL72_LOG.read_text())
    fit, = calibrate_logs(nvl72, [p]).fits
    assert fit.section == "all-reduce" and fit.algorithm is None
    # without NVLS the model must pay the ring/direct all-reduce: a higher efficiency explains the same times
    full, = fit72.fits
    assert fit.params["efficiency"] > full.params["efficiency"]


@pytest.mark.slow      # ~5 s alone (the CLI fits both logs again, beside the fixture's fit)
def test_json_shape(fit_both):
    res = CliRunner().invoke(main, ["calibrate", str(NVL72_LOG), str(AZURE_LOG), "--fabric", "nvl72", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert {"collective", "algorithm", "protocol", "params", "rms_error_pct"} <= set(d["fits"][0])
    assert {"size_bytes", "measured_busbw_GBps", "model_busbw_GBps", "error_pct"} <= set(d["points"][0])
    assert len(d["points"]) == 5 + 24
    lib = fit_both.as_dict()
    assert d == json.loads(json.dumps(lib))


def test_text_table(tmp_path):
    res = CliRunner().invoke(main, ["calibrate", str(NVL72_LOG), "--fabric", "nvl72"])
    assert res.exit_code == 0, res.output
    assert "measured us" in res.output and "error %" in res.output
    assert "8 GiB" in res.output and "20,299.0" in res.output


def test_group_size_matching_the_log(fit72):
    a, = fit72.fits
    r = CliRunner().invoke(main, ["calibrate", str(NVL72_LOG), "--fabric", "nvl72", "--group-size", "72", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["fits"][0]["params"] == pytest.approx(dict(a.params))


@pytest.mark.parametrize("args, words", [
    (["--group-size", "8"], ["72 ranks", "groups have 8 chips"]),
    (["--mesh", "tp=4,dp=18", "--over", "tp"], ["72 ranks", "groups have 4 chips"]),
])
def test_mismatched_ranks_one_line_exit_2(args, words):
    res = CliRunner().invoke(main, ["calibrate", str(NVL72_LOG), "--fabric", "nvl72", *args])
    assert res.exit_code == 2, res.output
    err = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    assert len(err) == 1 and "Traceback" not in res.output
    for w in words:
        assert w in err[0]


def test_more_ranks_than_the_fabric(tmp_path):
    p = tmp_path / "big.log"
    p.write_text(NVL72_LOG.read_text().replace("nranks=72", "nranks=144"))
    res = CliRunner().invoke(main, ["calibrate", str(p), "--fabric", "nvl72"])
    assert res.exit_code == 2
    err, = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    assert "144 ranks" in err and "72 chips" in err


def test_malformed_log_names_file_and_line(tmp_path):
    p = tmp_path / "bad.log"
    lines = NVL72_LOG.read_text().splitlines()
    row = next(i for i, ln in enumerate(lines) if ln.split()[:1] == ["1073741824"])
    lines[row] = lines[row].replace("3108.8", "3108.8x")
    p.write_text("\n".join(lines) + "\n")
    res = CliRunner().invoke(main, ["calibrate", str(p), "--fabric", "nvl72"])
    assert res.exit_code == 2, res.output
    err, = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    assert f"{p}:{row + 1}: bad time '3108.8x'" in err


def test_unknown_nccl_algorithm(nvl72, tmp_path):
    p = tmp_path / "collnet.log"
    p.write_text("NCCL_ALGO=CollnetDirect\n" + NVL72_LOG.read_text())
    with pytest.raises(BadInput, match=r"NCCL_ALGO=CollnetDirect has no fabricsim counterpart; known: nvls, ring, tree"):
        calibrate_logs(nvl72, [p])


def test_collective_without_a_model(nvl72, tmp_path):
    p = tmp_path / "bcast.log"
    p.write_text(NVL72_LOG.read_text().replace("all_reduce_perf", "broadcast_perf"))
    with pytest.raises(BadInput, match=r"the model has no broadcast"):
        calibrate_logs(nvl72, [p])


def test_missing_log_exit_2(tmp_path):
    res = CliRunner().invoke(main, ["calibrate", str(tmp_path / "nope.log"), "--fabric", "nvl72"])
    assert res.exit_code == 2
    err, = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    assert "nope.log: cannot read" in err


def test_runs_without_points_are_refused(nvl72):
    with pytest.raises(BadInput, match="no nccl-tests runs"):
        calibrate(nvl72, [])


# ---------------------------------------------------------------- --calibration on price / whatif / compare / sweep
# protocol ideal: efficiency scales the raw line rate alone, so the ratios are exact
_RACK = ["--fabric", "jalapeno-rack", "--group-size", "8", "--size", "64MiB", "--json", "--protocol", "ideal"]


def _bw(args):
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.output)["bandwidth_time_s"]


def test_calibration_sections_pick_by_collective_and_algorithm(tmp_path):
    f = tmp_path / "cal.toml"
    f.write_text("efficiency = 0.8\n[all-reduce.ring]\nefficiency = 0.5\n[all-gather]\nefficiency = 0.25\n")
    full = _bw(["price", "all-reduce", *_RACK, "--algorithm", "ring"])        # _RACK has --protocol ideal
    cal = ["--calibration", str(f)]
    assert _bw(["price", "all-reduce", *_RACK, "--algorithm", "ring", *cal]) == pytest.approx(2 * full, rel=1e-9)
    direct = _bw(["price", "all-reduce", *_RACK, "--algorithm", "direct"])
    assert _bw(["price", "all-reduce", *_RACK, "--algorithm", "direct", *cal]) == pytest.approx(direct / 0.8, rel=1e-9)
    ag = _bw(["price", "all-gather", *_RACK, "--algorithm", "ring"])
    assert _bw(["price", "all-gather", *_RACK, "--algorithm", "ring", *cal]) == pytest.approx(4 * ag, rel=1e-9)
    # the command line still wins over the file
    assert _bw(["price", "all-reduce", *_RACK, "--algorithm", "ring", *cal, "--efficiency", "1"]) == pytest.approx(full)


def test_base_latency_is_added_once(tmp_path):
    f = tmp_path / "cal.toml"
    f.write_text("[all-reduce.ring]\nbase_latency_us = 5\n")
    args = ["price", "all-reduce", *_RACK, "--algorithm", "ring"]
    plain = json.loads(CliRunner().invoke(main, args).output)["time_s"]
    res = CliRunner().invoke(main, args + ["--calibration", str(f)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["time_s"] == pytest.approx(plain + 5e-6, rel=1e-12)


def test_whatif_reads_the_calibration(tmp_path):
    f = tmp_path / "cal.toml"
    f.write_text("[all-reduce]\nefficiency = 0.5\n")
    args = ["whatif", "all-reduce", *_RACK, "--algorithm", "ring", "--fail", "local-switch:r00/lsw0"]
    plain = CliRunner().invoke(main, args)
    half = CliRunner().invoke(main, args + ["--calibration", str(f)])
    assert plain.exit_code == 0 and half.exit_code == 0, plain.output + half.output
    for key in ("baseline", "degraded"):
        assert json.loads(half.output)[key]["bandwidth_time_s"] == pytest.approx(
            2 * json.loads(plain.output)[key]["bandwidth_time_s"], rel=1e-9)


@pytest.mark.parametrize("text, words", [
    ("efficiency = true\n", ["efficiency = True is not a number"]),
    ("[all-reduce]\nefficiency = 1.5\n", ["all-reduce.efficiency = 1.5 is out of range"]),
    ("[all-reduce.nvlz]\nefficiency = 0.5\n", ["unknown algorithm 'nvlz'"]),
    ("efficiency = nan\n", ["not finite"]),
    ("[all-reduce.nvls.fast]\nefficiency = 0.5\n", ["unknown protocol 'fast'"]),
])
@pytest.mark.parametrize("command", ["price", "compare"])
def test_bad_calibration_is_one_line_exit_2(tmp_path, text, words, command):
    f = tmp_path / "cal.toml"
    f.write_text(text)
    fab = ["--fabric", "jalapeno-rack"] if command == "price" else ["--fabrics", "jalapeno-rack,nvl72"]
    res = CliRunner().invoke(main, [command, "all-reduce", *fab, "--group-size", "8", "--size", "1MiB",
                                    "--calibration", str(f)])
    assert res.exit_code == 2, res.output
    err, = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    assert "Traceback" not in res.output and "cal.toml" in err
    for w in words:
        assert w in err


def test_every_nccl_tests_collective_gets_its_section(nvl72):
    """all_gather_perf and alltoall_perf runs of one file: one section each, and never worse than the default."""
    res = calibrate_logs(nvl72, [DATA / "v2_13_two_runs_crlf.log"])
    assert [f.section for f in res.fits] == ["all-gather", "all-to-all"]
    for f in res.fits:
        assert f.protocol == "ll128" and f.nranks == (4,)
        assert f.rms_error_pct <= f.default_rms_error_pct
    assert set(res.calibration.sections) == {"all-gather", "all-to-all"}


def test_latency_fitted_only_from_large_sizes_is_flagged_as_an_intercept():
    # CoreWeave's NVL72 log runs 512 MiB - 8 GiB: the base latency it fits (hundreds of us)
    # is where the bandwidth curve meets zero, not NCCL's small-message latency; the fit
    # and the file say so, with the measured range. A log with small sizes is not flagged.
    res = calibrate_logs(build("nvl72"), [NVL72_LOG])
    (fit,) = res.fits
    note = [n for n in fit.notes if "intercept" in n]
    assert note and "512 MiB - 8 GiB" in note[0] and "base_latency_us" in note[0]
    assert fit.params["base_latency_us"] > 100      # the figure the note is about
    assert "measured 512 MiB - 8 GiB" in res.header and "intercept" in res.header
    small = calibrate_logs(build("nvl72"), [DATA / "gb200_4gpu_azure_ring.log"])
    assert not any("intercept" in n for f in small.fits for n in f.notes)
    assert min(p.size_bytes for f in small.fits for p in f.points) < 2 ** 20


# ---------------------------------------------------------------- logs without a binary, switches, degenerate logs
PASTED = DATA / "pasted_table_no_binary.log"


def test_cli_collective_reads_a_log_without_binary():
    res = CliRunner().invoke(main, ["calibrate", str(PASTED), "--fabric", "nvl72", "--group-size", "8",
                                    "--collective", "all-gather", "--json"])
    assert res.exit_code == 0, res.output
    assert [f["section"] for f in json.loads(res.output)["fits"]] == ["all-gather"]


@pytest.mark.parametrize("args, words", [
    ([str(PASTED)], ["cannot tell which collective", "--collective", "all-reduce, all-gather, reduce-scatter, all-to-all"]),
    ([str(NVL72_LOG), "--collective", "all-gather"], ["all_reduce_perf", "collective='all-gather' was given (--collective)"]),
])
def test_cli_collective_errors_are_one_line(args, words):
    res = CliRunner().invoke(main, ["calibrate", *args, "--fabric", "nvl72"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    err, = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    for w in words:
        assert w in err


_COLS = "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"


def _log(rows, n=8, pre=""):
    """A synthetic all-reduce log: (size, time_us) rows, algbw/busbw by the nccl-tests definitions."""
    out = [pre + f"#@ collective=all_reduce_perf nranks={n}\n" + _COLS]
    for size, t in rows:
        alg = size / t / 1e3 if t > 0 else 0.0
        out.append(f"{size} {size // 4} float sum -1 {t:.2f} {alg:.2f} {alg * 2 * (n - 1) / n:.2f} 0 "
                   f"{t:.2f} {alg:.2f} {alg * 2 * (n - 1) / n:.2f} 0\n")
    return "".join(out)


@pytest.mark.parametrize("rows, words", [
    ([(2**20, 50.0)], ["one size 1 MiB"]),
    ([(2**20, 50.0), (2**20, 60.0)], ["one size 1 MiB"]),
    ([(2**k, 20.0) for k in range(10, 30, 4)], ["same time (20 us) from 1 KiB to 64 MiB"]),
    ([(2**k, 1000.0 / k) for k in range(10, 30, 4)], ["does not grow with size"]),
    ([(2**k, 0.0) for k in range(10, 16)], ["no all-reduce points to fit"]),
])
def test_degenerate_logs_are_one_line_exit_2(tmp_path, rows, words):
    p = tmp_path / "degenerate.log"
    p.write_text(_log(rows))
    res = CliRunner().invoke(main, ["calibrate", str(p), "--fabric", "nvl72"])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    err, = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    for w in words:
        assert w in err


@pytest.mark.parametrize("bad", ["nan", "inf", "-5.0"])
def test_non_finite_or_negative_times_are_one_line(tmp_path, bad):
    p = tmp_path / "bad.log"
    p.write_text(_log([(2**k, 10.0 + k) for k in range(10, 14)]).replace(" 20.00 ", f" {bad} ", 1))
    res = CliRunner().invoke(main, ["calibrate", str(p), "--fabric", "nvl72"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    err, = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    assert f"bad time '{bad}'" in err


def test_size_zero_rows_are_not_fitted(nvl72):
    text = _log([(0, 10.0)] + [(2**k, 20.0 + 2**k / 1e5) for k in range(10, 22, 2)])
    fit, = calibrate(nvl72, parse_text(text, "zero.log")).fits
    assert all(p.size_bytes > 0 for p in fit.points)
    assert any("size 0 not fitted" in n for n in fit.notes)


# A switch: ring with constants A below 1 MiB, nvls with constants B from 1 MiB, priced by the engine
# (the synthetic curve the break rule is tested on; NCCL_ALGO=Ring,NVLS leaves NCCL both, as a log may)
_A = {"efficiency": 0.9, "base_latency_us": 4.0, "step_latency_us": 0.5}
_B = {"efficiency": 0.5, "base_latency_us": 20.0, "step_latency_us": 3.0}
_CUT = 2**20


def _switch_rows(nvl72, sizes):
    from fabricsim.collectives.cost import Calibration
    g = by_size(nvl72, 8, count=1)
    return [(s, price(nvl72, "all-reduce", groups=g, size_bytes=s, algorithm="ring" if s < _CUT else "nvls",
                      calibration=Calibration(flat=_A if s < _CUT else _B)).time_s * 1e6) for s in sizes]


@pytest.fixture(scope="module")
def switch_rows(nvl72):
    return _switch_rows(nvl72, [2**k for k in range(12, 31)])        # 4 KiB - 1 GiB: 8 sizes below, 11 above


def test_break_in_the_curve_is_found_but_one_affine_algorithm_explains_it(nvl72, switch_rows):
    """Under NCCL's tuner form every algorithm's time is affine in the size (latency + bytes / bandwidth),
    so one algorithm with new constants past the break fits both sides as well as two algorithms do:
    the break is located and reported, and the log cannot tell which algorithm ran -- the TUNING lines
    can (test_switch_from_nccl_tuning_lines)."""
    res = calibrate(nvl72, parse_text(_log(switch_rows, pre="NCCL_ALGO=Ring,NVLS\n"), "switch.log"))
    fit, = res.fits
    note, = [n for n in fit.notes if n.startswith("a break in the curve")]
    assert "between 512 KiB and 1 MiB" in note and "not an algorithm switch" in note


def test_one_curve_is_not_split(nvl72):
    """The same rows priced by nvls alone: no break, one fit."""
    from fabricsim.collectives.cost import Calibration
    g = by_size(nvl72, 8, count=1)
    rows = [(s, price(nvl72, "all-reduce", groups=g, size_bytes=s, algorithm="nvls",
                      calibration=Calibration(flat=_B)).time_s * 1e6) for s in [2**k for k in range(12, 31, 2)]]
    fit, = calibrate(nvl72, parse_text(_log(rows, pre="NCCL_ALGO=Ring,NVLS\n"), "one.log")).fits
    assert fit.section == "all-reduce" and not any("switch" in n for n in fit.notes)


def test_switch_from_nccl_tuning_lines(nvl72, switch_rows):
    """NCCL's TUNING lines name the algorithm per size: the split follows them, no curve needed."""
    tuning = "".join(f"h:1:1 [0] NCCL INFO AllReduce: {s} Bytes -> Algo {'RING' if s < _CUT else 'NVLS'} proto "
                     f"SIMPLE channel{{Lo..Hi}}={{0..15}}\n" for s, _ in switch_rows)
    res = calibrate(nvl72, parse_text(tuning + _log(switch_rows), "tuning.log"))
    assert [f.section for f in res.fits] == ["all-reduce.ring", "all-reduce.nvls"]
    note, = [n for n in res.fits[0].notes if n.startswith("the points span")]
    assert "TUNING lines in tuning.log say ring to nvls between 512 KiB and 1 MiB (line" in note


# --- big and extreme logs (issue 26 item 8) ------------------------------------------------
@pytest.mark.slow
def test_a_log_of_repeated_runs_fits_as_one_run_and_prices_each_point_once(monkeypatch):
    nvl72 = _hgx()
    one = _log([(2**k, 10.0 + 2**k / 2e5) for k in range(12, 30, 4)])
    calls = []
    real = cal_mod._price()
    monkeypatch.setattr(cal_mod, "_price", lambda: lambda *a, **k: calls.append(k["size_bytes"]) or real(*a, **k))
    fit1, = calibrate(nvl72, parse_text(one, "one.log")).fits
    n1 = len(calls)
    calls.clear()
    fit5, = calibrate(nvl72, parse_text(one * 5, "five.log")).fits
    assert fit5.params == pytest.approx(fit1.params, rel=1e-5)
    assert len(calls) <= n1                     # repeated sizes are priced once, not 5 times


def test_a_log_over_the_line_bound_is_refused_at_once(monkeypatch):
    from fabricsim.collectives.cost import nccl_tests
    monkeypatch.setattr(nccl_tests, "MAX_LOG_LINES", 50)
    with pytest.raises(BadInput, match=r"big\.log: 61 lines, more than the 50 a log may have"):
        parse_text(_log([(2**k, 10.0 + k) for k in range(10, 14)]) * 10, "big.log")


from hypothesis import given, settings, strategies as st  # noqa: E402

_times = st.one_of(st.floats(min_value=0, max_value=1e308, allow_subnormal=True), st.just(5e-324),
                   st.just(1e308), st.floats(min_value=1e-3, max_value=1e6))


@functools.lru_cache(maxsize=1)
def _hgx():
    return build("hgx-h100")


@settings(max_examples=12, deadline=None)
@given(times=st.lists(_times, min_size=1, max_size=6), start=st.integers(0, 30))
def test_any_timings_fit_with_finite_constants_or_refuse_in_one_line(times, start):
    G = _hgx()
    text = _log([(2**(start + 2 * i), t) for i, t in enumerate(times)], n=8)
    try:
        result = calibrate(G, parse_text(text, "t.log"))
    except BadInput as exc:
        assert "\n" not in str(exc)
        return
    for fit in result.fits:
        assert all(math.isfinite(v) for v in fit.params.values())


def test_nccl_ring_across_nodes_is_rail_rings_and_inside_a_node_is_ring(nvl72):
    # NCCL binds its ring channels to NICs across nodes (fabricsim's rail-rings); inside one NVLink
    # domain its Ring is the flat ring. A 2 x 8 MI325X log forced to Ring (tests/data/nccl/README.md)
    G = build("rail-cluster", gpu="mi325x", nodes=2)
    fit, = calibrate_logs(G, [DATA / "mi325x_2x8gpu_aac_roce_ring.log"]).fits
    assert fit.section == "all-reduce.rail-rings"
    assert max(abs(p.default_error_pct) for p in fit.points) < 15       # the flat ring was +629% rms
    tray, = calibrate_logs(nvl72, [AZURE_LOG]).fits
    assert tray.section == "all-reduce.ring"


def test_a_fit_driven_to_zero_efficiency_is_one_line():
    # found by the hypothesis property above (times=[2126.0, 9357.0], start=0): ZeroDivisionError escaped
    text = _log([(1, 2126.0), (4, 9357.0)], n=8)
    try:
        result = calibrate(_hgx(), parse_text(text, "t.log"))
    except BadInput as exc:
        assert "\n" not in str(exc)
    else:
        assert all(math.isfinite(v) for f in result.fits for v in f.params.values())
