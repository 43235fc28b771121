"""The examples run headless, write their figure, and print what the library computes."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from fabricsim.collectives.cost.family import family_of
from fabricsim.collectives import by_size, price
from fabricsim.collectives.whatif import whatif
from fabricsim.fabrics import build
from fabricsim.collectives.serve import serve
from fabricsim.topo.auditing import audit, bisection, hop_stats
from fabricsim.topo.failures import apply_failures, chip_tier_bandwidth

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
_NUM = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def _run(name: str, outdir: Path) -> str:
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), str(outdir)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    png = outdir / f"{name}.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {png}" in proc.stdout
    return proc.stdout


def _row(out: str, label: str) -> list[float]:
    """The numbers on the first line that starts with ``label`` (after stripping)."""
    for line in out.splitlines():
        if line.strip().startswith(label):
            return [float(x.replace(",", "")) for x in _NUM.findall(line.strip()[len(label):])]
    raise AssertionError(f"no line starting with {label!r} in:\n{out}")


def _ep_row(out: str, width: int) -> list[float]:
    """The numbers after the EP width of the ep_width table row for ``width``."""
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == str(width):
            return [float(x.replace(",", "")) for x in _NUM.findall(" ".join(parts[1:]))]
    raise AssertionError(f"no row for EP {width} in:\n{out}")


def test_every_example_has_a_test_and_a_readme_line():
    scripts = {p.stem for p in EXAMPLES.glob("*.py")}
    readme = (EXAMPLES / "README.md").read_text()
    tested = {n[len("test_"):] for n in globals() if n.startswith("test_") and n[len("test_"):] in scripts}
    assert scripts == tested
    assert all(f"`{s}.py`" in readme for s in scripts)


def test_jalapeno_budgets(tmp_path):
    out = _run("jalapeno_budgets", tmp_path)
    rack = audit(build("jalapeno-rack"), hops=False, bisect=False)
    pod = audit(build("jalapeno-pod"), hops=False, bisect=False)
    assert _row(out, "local switch capacity")[-1] == pytest.approx(rack.totals["local_switch_capacity_Tbps"])
    assert rack.totals["local_switch_capacity_Tbps"] == pytest.approx(614.4)
    assert _row(out, "chips' local ports")[-1] == pytest.approx(rack.totals["local_chip_bandwidth_Tbps"])
    assert _row(out, "local switch uplinks")[-1] == 0
    assert _row(out, "chips' global ports per rack")[-1] == pytest.approx(pod.per_rack["0"]["global_chip_bandwidth_Tbps"])
    assert _row(out, "rail switch capacity wired")[-1] == pytest.approx(pod.totals["rail_switch_wired_Tbps"])
    assert _row(out, "chip differential pairs per rack")[-1] == pod.per_rack["0"]["chip_diff_pairs"] == 8192
    assert _row(out, "local copper pairs per rack")[-1] == rack.totals["copper_diff_pairs"] == 6144
    assert _row(out, "1.6T optical ports per rack")[-1] == pod.per_rack["0"]["optical_ports"] == 128
    assert _row(out, "audit findings failed")[-1] == 0


@pytest.mark.slow
def test_ep_width(tmp_path):
    out = _run("ep_width", tmp_path)
    G = build("jalapeno-pod")
    for n in (8, 256):
        flat = price(G, "all-to-all", groups=by_size(G, n), size_bytes=64 * 2**20, algorithm="direct")
        row = _ep_row(out, n)
        assert row[2] == pytest.approx(flat.time_s * 1e6, abs=0.051)
        assert row[3] == pytest.approx(flat.bandwidth_time_s * 1e6, abs=0.051)
    hier = price(G, "all-to-all", groups=by_size(G, 256), size_bytes=64 * 2**20, algorithm="hierarchical")
    assert _ep_row(out, 256)[4] == pytest.approx(hier.time_s * 1e6, abs=0.051)
    # one rack: the local tier's 600 GB/s as the Ethernet family delivers it (efficiency 0.977)
    assert _ep_row(out, 128)[-2] == pytest.approx(600.0 * family_of(G).efficiency, abs=0.051)
    assert _ep_row(out, 2048)[-2] < 220                                 # 16 racks: near the 200 GB/s side
    assert "local 600 GB/s, global 200 GB/s (3:1)" in out


@pytest.mark.slow
def test_rail_failure(tmp_path):
    out = _run("rail_failure", tmp_path)
    lines = [ln for ln in out.splitlines() if ln.startswith(("per-lane", "per-port"))]
    assert len(lines) == 8
    first = lines[0]
    assert first.startswith("per-lane (A) static    rail-switch:rail0/sw0")
    pod = build("jalapeno-pod", leaf="static")
    counts = Counter(v["global"] for v in chip_tier_bandwidth(apply_failures(pod, ["rail-switch:rail0/sw0"])[0])
                     .values())
    assert counts == {200.0: 1792, 175.0: 256}
    assert "256  1,792 at 200, 256 at 175" in first
    G = build("jalapeno-pod", racks=4, leaf="static")
    w = whatif(G, ["rail-switch:rail0/sw0"], "all-to-all", groups=by_size(G, 512), size_bytes=64 * 2**20,
               algorithm="direct")
    assert f"{w.bandwidth_slowdown:.4f}x" in first and f"{w.slowdown:.4f}x" in first
    assert w.bandwidth_slowdown == pytest.approx(8 / 7)
    per_port = next(ln for ln in lines if ln.startswith("per-port (B) static    rail-switch"))
    assert "32  2,016 at 200, 32 at 0" in per_port and "256 chips at 0 GB/s" in per_port


@pytest.mark.slow
def test_torus_vs_boardfly(tmp_path):
    out = _run("torus_vs_boardfly", tmp_path)
    torus, bf = build("torus", link_GBps=90.0), build("boardfly", link_GBps=90.0)
    ht, hb = hop_stats(torus), hop_stats(bf)
    assert (ht.diameter_hops, hb.diameter_hops) == (16, 7)
    assert _row(out, "diameter (hops)") == [16, 7]
    assert _row(out, "mean hops") == [round(ht.mean_hops, 3), round(hb.mean_hops, 3)]
    assert _row(out, "bisection GB/s") == [bisection(torus).GBps, bisection(bf).GBps]
    assert _row(out, "16 hops") == [ht.histogram[16], 0]
    assert _row(out, "7 hops") == [ht.histogram[7], hb.histogram[7]]
    r = price(torus, "all-to-all", groups=by_size(torus, 1152), size_bytes=64 * 2**20, algorithm="direct")
    assert _row(out, "all-to-all time (us)")[0] == pytest.approx(r.time_s * 1e6, abs=0.051)


def test_tp_allreduce(tmp_path):
    out = _run("tp_allreduce", tmp_path)
    nvl, rack = build("nvl72"), build("jalapeno-rack")
    s = 64 * 2**20
    nvls = price(nvl, "all-reduce", groups=by_size(nvl, 8), size_bytes=s, algorithm="nvls")
    direct = price(rack, "all-reduce", groups=by_size(rack, 8), size_bytes=s, algorithm="direct")
    row = _row(out, "64 MiB")
    assert row[0] == pytest.approx(nvls.time_s * 1e6, abs=0.051)
    assert row[1] == pytest.approx(nvls.busbw_GBps, abs=0.051)
    assert row[4] == pytest.approx(direct.time_s * 1e6, abs=0.051)
    assert row[5] == pytest.approx(direct.busbw_GBps, abs=0.051)
    ring72 = price(nvl, "all-reduce", groups=by_size(nvl, 72), size_bytes=2**32, algorithm="ring")
    assert f"ring busbw {ring72.busbw_GBps:,.1f}" in out
    assert "measured 835-847 GB/s" in out


@pytest.mark.slow    # over 5 s on the 2-core machine (pytest --durations, 2026-12-04)
def test_ocs_failures(tmp_path):
    out = _run("ocs_failures", tmp_path)
    G = build("ironwood", dims=(8, 8, 16))
    kw = dict(groups=by_size(G, 1024), size_bytes=2**30, algorithm="direct")
    z = whatif(G, ["ocs:32"], "all-to-all", bound_only=True, **kw)
    assert _row(out, "z ")[-1] == pytest.approx(z.slowdown, abs=1e-6)
    # the flow-level price of the degraded pod agrees with the bound: the all-to-all is link-paced
    flow = _row(out, "z flow-level")
    assert flow[0] == pytest.approx(flow[1], rel=1e-6) and flow[1] == pytest.approx(z.slowdown, abs=1e-6)
    assert _row(out, "8 down:")[-1] == pytest.approx(whatif(G, [f"ocs:{i}" for i in range(32, 40)], "all-to-all",
                                                            bound_only=True, **kw).slowdown, abs=1e-6)
    # all 16 z-axis OCSes down: the z rings are cut between the 4 cubes along z
    assert _row(out, "16 down:")[0] == 1024 * 768


@pytest.mark.slow     # ~2 min on a quiet 2-core machine: every calibration fit of docs/validation.md
def test_validation(tmp_path):
    """docs/validation.md's block is what examples/validation.py writes, and its numbers are calibrate's."""
    from fabricsim.collectives.cost.calibrate import calibrate_logs
    docs = EXAMPLES.parent / "docs"
    doc = tmp_path / "validation.md"
    doc.write_text((docs / "validation.md").read_text())
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, str(EXAMPLES / "validation.py"), str(tmp_path), "--doc", str(doc)],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for key in ("nvl72-72", "gb200-4gpu-ring"):
        png = tmp_path / f"validation-{key}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"wrote {png}" in proc.stdout
        assert (docs / "img" / png.name).is_file()
    assert doc.read_text() == (docs / "validation.md").read_text(), \
        "docs/validation.md is stale: run python examples/validation.py docs/img --doc docs/validation.md"
    fit, = calibrate_logs(build("nvl72"), [EXAMPLES.parent / "tests/data/nccl/gb200_nvl72_72rank_coreweave.log"]).fits
    assert f"{fit.rms_error_pct:.2f}%" in doc.read_text()
    assert f"rms: default {fit.default_rms_error_pct:.1f}%  calibrated {fit.rms_error_pct:.2f}%" in proc.stdout
    p8 = fit.points[-1]
    row = _row(proc.stdout, "8 GiB")          # the first table: the 72-rank series
    assert row[0] == pytest.approx(p8.measured_busbw_GBps, abs=0.006)
    assert row[3] == pytest.approx(p8.model_busbw_GBps, abs=0.006)
    assert row[4] == pytest.approx(p8.error_pct, abs=0.006)


@pytest.mark.slow
def test_token_cost(tmp_path):
    from fabricsim.collectives.jobs.step import step
    out = _run("token_cost", tmp_path)
    # the numbers after "ep=": ep, tokens, step us, us/token, tokens/s, dispatch us, combine us
    rows = {(ln.split()[0], ln.split()[1]): [float(x.replace(",", "")) for x in _NUM.findall(ln.split("ep=", 1)[1])]
            for ln in out.splitlines() if ln.strip()[:1].isdigit() and "ep=" in ln}
    for label, G in (("NVL72", build("nvl72")), ("TPU", build("torus", dims=(4, 4, 4)))):
        r = step(G, "deepseek-r1", mesh="ep=64", batch=32 * 64)
        row = rows[("64", label)]
        assert row[:2] == [64, r.tokens] and r.tokens == 2048
        assert row[2] == pytest.approx(r.comm_s * 1e6, abs=0.051)
        assert row[3] == pytest.approx(r.comm_s / r.tokens * 1e6, abs=5e-5)
        assert row[4] == pytest.approx(r.tokens_per_s_comm_bound, abs=0.5)
        d, c = r.layers[3].collectives
        assert row[5:7] == [pytest.approx(d.time_s * 1e6, abs=0.0051), pytest.approx(c.time_s * 1e6, abs=0.0051)]
    assert "NVL72" not in " ".join(ln for ln in out.splitlines() if ln.strip().startswith("256"))


@pytest.mark.slow
def test_seed_table(tmp_path):
    out = _run("seed_table", tmp_path)
    from fabricsim.topo.auditing import chip_bandwidth
    lpx = build("groq-lpx")
    g = by_size(lpx, 64, "packed", count=1)
    a2a = price(lpx, "all-to-all", groups=g, size_bytes=2**30, algorithm="direct")
    row = _row(out, "Groq 3 LPX *")
    assert row[0] == 256 and row[1] == chip_bandwidth(lpx)["chip_bandwidth_GBps"]
    assert row[3] == hop_stats(lpx).diameter_hops
    assert row[4] == pytest.approx(bisection(lpx).GBps / 128, abs=0.051)
    assert row[-1] == pytest.approx(a2a.busbw_GBps, abs=0.051)
    maia = _row(out, "Maia 200 *")
    assert maia[:3] == [6144, 1400.0, 2.8]
    assert _row(out, "TPU 8t superpod *")[:3] == [9600, 1200.0, 2.4]
    node = _row(out, "MI355X node *")
    assert node[:3] == [8, 537.6, 1.075] and out.splitlines()[[l.strip().startswith("MI355X") for l in
                                                               out.splitlines()].index(True)].count("—") == 3
    assert _row(out, "TPU 8t Virgo *")[:3] == [134400, 50.0, 0.1]


@pytest.mark.slow
def test_token_validation(tmp_path):
    """docs/token-validation.md's block is what examples/token_validation.py writes (7 sweeps, ~45 s)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    doc = tmp_path / "token-validation.md"
    doc.write_text((root / "docs" / "token-validation.md").read_text())
    proc = subprocess.run([sys.executable, str(root / "examples" / "token_validation.py"), "--doc", str(doc)],
                          capture_output=True, text=True, env=dict(os.environ, MPLBACKEND="Agg"), timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert doc.read_text() == (root / "docs" / "token-validation.md").read_text(), \
        "docs/token-validation.md is stale: run python examples/token_validation.py --doc docs/token-validation.md"
    # the published figures are the seed's, and the model's cells come from serve (spot-check one)
    r = serve(build("nvl72", accelerator="gb200"), "gpt-oss-120b", menu="inferencex")
    assert f"| GPT-OSS 120B | GB200 | min TBT (ms) | 1.87 | {r.min_tbt_s * 1e3:.2f} |" in doc.read_text()


@pytest.mark.slow
def test_design_rail_only():
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, str(root / "examples" / "design_rail_only.py"), "--no-write"],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    assert out.strip() == (root / "docs" / "design.md").read_text().strip(), \
        "docs/design.md is stale: run examples/design_rail_only.py"
