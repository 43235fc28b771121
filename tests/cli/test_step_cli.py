"""`fabricsim step`: the JSON is the library's result, tables and plots, one-line errors."""
from __future__ import annotations

import json
from math import comb

import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.collectives.jobs.step import step
from fabricsim.fabrics import build


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_json_equals_the_library_result():
    res = run("step", "--model", "deepseek-r1", "--fabric", "jalapeno-rack", "--mesh", "ep=128", "--phase",
              "decode", "--batch", "1024", "--json")
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)
    want = json.loads(json.dumps(step(build("jalapeno-rack"), "deepseek-r1", mesh="ep=128", batch=1024).as_dict()))
    assert got == want
    moe = [layer for layer in got["layers"] if layer["kind"] == "moe"]
    assert len(moe) == 58
    assert sum(c["bytes_total"] for layer in moe for c in layer["collectives"] if c["name"] == "dispatch") \
        == pytest.approx(58 * 1024 * 128 * (1 - comb(254, 8) / comb(256, 8)) * 7168, rel=1e-12)  # per (token, rank)


def test_table(tmp_path):
    res = run("step", "--model", "gpt-oss-120b", "--fabric", "jalapeno-rack", "--mesh", "tp=8,ep=16",
              "--batch", "256", "--compute-us", "20")
    assert res.exit_code == 0, res.output
    out = res.stdout
    r = step(build("jalapeno-rack"), "gpt-oss-120b", mesh="tp=8,ep=16", batch=256, compute_us=20.0)
    assert f"communication {r.comm_s * 1e6:,.2f} us per step" in out
    assert f"{r.tokens_per_s_comm_bound:,.0f} tokens/s bound by communication" in out
    for name in ("attn-allreduce", "dispatch", "combine", "moe-allgather"):
        assert name in out
    assert "compute 720.00 us per step (in series)" in out


def test_fabrics_side_by_side_and_plot(tmp_path):
    png = tmp_path / "step.png"
    res = run("step", "--model", "deepseek-r1", "--fabrics", "jalapeno-rack,nvl72", "--mesh", "ep=64",
              "--batch", "512", "--plot", str(png), "--json")
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)
    assert [r["fabric"] for r in got] == ["jalapeno-rack", "nvl72"] and all(r["chips"] == 64 for r in got)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = run("step", "--model", "deepseek-r1", "--fabrics", "jalapeno-rack,nvl72", "--mesh", "ep=64",
                "--batch", "512")
    assert table.exit_code == 0
    rows = [ln.split()[0] for ln in table.stdout.splitlines()]
    assert "jalapeno-rack" in rows and "nvl72" in rows


def test_model_file(tmp_path):
    m = tmp_path / "tiny.toml"
    m.write_text("layers = 2\nhidden = 1024\nheads = 8\nexperts = 16\ntop_k = 2\n")
    res = run("step", "--model", str(m), "--fabric", "jalapeno-rack", "--mesh", "ep=16,dp=8", "--batch", "64",
              "--json")
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)
    assert got["model"] == "tiny" and [layer["kind"] for layer in got["layers"]] == ["moe", "moe"]


@pytest.mark.parametrize("args, words", [
    (["--model", "deepseek", "--fabric", "jalapeno-rack", "--mesh", "ep=128"], ["unknown model 'deepseek'"]),
    (["--model", "deepseek-r1", "--fabric", "jalapeno-rack", "--mesh", "ep=128,pp=2"], ["'pp' is not modelled"]),
    (["--model", "deepseek-r1", "--fabric", "jalapeno-rack", "--mesh", "ep=x"], ["not name=integer"]),
    (["--model", "deepseek-r1", "--fabric", "jalapeno-rack", "--mesh", "tp=3,ep=32"], ["tp=3 must divide"]),
    (["--model", "deepseek-r1", "--fabric", "nvl72", "--mesh", "ep=128"], ["needs 128 chips", "has 72"]),
    (["--model", "deepseek-r1", "--fabric", "jalapeno-rack", "--mesh", "ep=128", "--plot", "s.gif"], ["s.gif"]),
    (["--model", "deepseek-r1", "--fabric", "jalapeno-rack", "--mesh", "ep=128", "--plot", "/nope/s.png"],
     ["does not exist"]),
    (["--model", "deepseek-r1", "--fabric", "jalapeno-rack", "--mesh", "ep=128", "--phase", "prefill"],
     ["prefill needs --seq"]),
    (["--model", "deepseek-r1", "--fabric", "jalapeno-rack", "--mesh", "ep=128", "--batch", "0"], ["batch 0"]),
    (["--model", "deepseek-r1", "--fabric", "jalapeno-rack", "--mesh", "ep=128", "--skew", "zipf:x"], ["zipf"]),
    (["--model", "deepseek-r1", "--fabric", "jalapeno-rack", "--mesh", "ep=128", "--dispatch-dtype", "int4"],
     ["int4"]),
    (["--model", "deepseek-r1", "--fabric", "jalapeno-rak", "--mesh", "ep=128"], ["did you mean jalapeno-rack"]),
    (["--model", "deepseek-r1", "--fabric", "jalapeno-rack", "--mesh", "ep=128", "--seed", "-1"], ["-1"]),
    (["--model", "deepseek-r1", "--fabric", "jalapeno-rack", "--mesh", "ep=128", "--compute-us", "nan"], ["nan"]),
    (["--model", "deepseek-r1", "--fabric", "jalapeno-rack", "--fabrics", "nvl72", "--mesh", "ep=64"],
     ["--fabric F or --fabrics"]),
    (["--model", "deepseek-r1", "--mesh", "ep=64"], ["--fabric F or --fabrics"]),
])
def test_bad_input_is_one_line_exit_2(args, words):
    res = CliRunner().invoke(main, ["step", *args])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    err = [ln for ln in res.output.splitlines() if ln.startswith("Error:")]
    assert len(err) == 1, res.output
    for w in words:
        assert w in err[0]


def test_bad_model_file_names_the_field(tmp_path):
    m = tmp_path / "bad.toml"
    m.write_text("layers = 4\nfirst_dense = 9\nhidden = 64\nheads = 8\n")
    res = run("step", "--model", str(m), "--fabric", "jalapeno-rack", "--mesh", "ep=128")
    assert res.exit_code == 2 and "first_dense = 9 > layers = 4" in res.output
