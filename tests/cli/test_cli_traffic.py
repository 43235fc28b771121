"""price --traffic / --moe and the mix command through the CLI (issue 15)."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.collectives import by_size, price
from fabricsim.collectives.traffic import MoESpec, moe_traffic
from fabricsim.fabrics import build

S = 2.0**26


def run(*args):
    res = CliRunner().invoke(main, [str(a) for a in args])
    return res


def _json(*args):
    res = run(*args, "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_uniform_traffic_file_prices_as_uniform_all_to_all(tmp_path):
    np.savetxt(tmp_path / "u.csv", np.full((16, 16), S / 16), delimiter=",")
    common = ("all-to-all", "--fabric", "jalapeno-rack", "--group-size", "16", "--algorithm", "direct")
    v = _json("price", *common, "--traffic", tmp_path / "u.csv")
    u = _json("price", *common, "--size", f"{S:.0f}")
    assert v["time_s"] == pytest.approx(u["time_s"], rel=1e-9)
    assert v["traffic"]["bytes_total"] == pytest.approx(S * 16 * 8)      # 8 groups of 16, one matrix each
    assert v["traffic"]["imbalance"] == pytest.approx(1.0)


def test_doubling_one_row_doubles_the_bandwidth_time_cli_and_library(tmp_path):
    T = np.full((128, 128), S / 128)
    np.save(tmp_path / "one.npy", T)
    T2 = T.copy()
    T2[7] *= 2
    np.save(tmp_path / "two.npy", T2)
    common = ("all-to-all", "--fabric", "jalapeno-rack", "--algorithm", "direct")
    a = _json("price", *common, "--traffic", tmp_path / "one.npy")
    b = _json("price", *common, "--traffic", tmp_path / "two.npy")
    assert b["bandwidth_time_s"] == pytest.approx(2 * a["bandwidth_time_s"], rel=1e-9)
    G = build("jalapeno-rack")
    lib = price(G, "all-to-all", groups=by_size(G, 128), traffic=T2, algorithm="direct")
    assert b["time_s"] == pytest.approx(lib.time_s, rel=1e-12)


def test_directory_of_matrices(tmp_path):
    d = tmp_path / "per-group"
    d.mkdir()
    for k in range(2):
        np.save(d / f"g{k}.npy", np.full((64, 64), S / 64 * (k + 1)))
    r = _json("price", "all-to-all", "--fabric", "jalapeno-rack", "--group-size", "64", "--algorithm", "direct",
              "--traffic", d)
    assert r["traffic"]["bytes_total"] == pytest.approx(S * 64 * 3)
    assert r["traffic"]["imbalance"] == pytest.approx(2 / 1.5)


@pytest.mark.slow    # over 5 s on the 2-core machine (pytest --durations, 2026-12-04)
def test_moe_bytes_total_and_json_equals_library():
    spec = "experts=256,top_k=8,tokens=1024,hidden=7168,dtype=fp8"
    r = _json("price", "all-to-all", "--fabric", "jalapeno-rack", "--algorithm", "direct", "--moe", spec)
    t = moe_traffic(MoESpec.parse(spec), 128)
    # one copy per (token, rank): fewer bytes than one per (token, expert)
    assert r["traffic"]["bytes_total"] == pytest.approx(t.bytes_total, rel=1e-12)
    assert t.bytes_total < 1024 * 8 * 7168
    assert r["traffic"]["bytes_network"] == t.bytes_network and r["traffic"]["bytes_local"] == t.bytes_local
    assert r["traffic"]["imbalance"] == t.imbalance
    G = build("jalapeno-rack")
    lib = price(G, "all-to-all", groups=by_size(G, 128), traffic=t.matrix, algorithm="direct")
    assert r["time_s"] == pytest.approx(lib.time_s, rel=1e-12)


@pytest.mark.slow    # over 5 s on the 2-core machine (pytest --durations, 2026-12-04)
def test_zipf_moe_is_imbalanced_and_slower_than_uniform():
    base = "experts=256,top_k=8,tokens=1024,hidden=7168,dtype=fp8"
    common = ("price", "all-to-all", "--fabric", "jalapeno-rack", "--algorithm", "direct", "--moe")
    u = _json(*common, base)
    z = _json(*common, base + ",skew=zipf:1.0")
    assert z["traffic"]["imbalance"] > 1 and z["traffic"]["imbalance"] > u["traffic"]["imbalance"]
    assert z["time_s"] > u["time_s"]


@pytest.mark.parametrize("args,words", [
    (["--moe", "experts=8,top_k=2,tokens=64,hidden=8", "--traffic", "x.csv"], "not both"),
    (["--moe", "experts=8,top_k=2,tokens=64,hidden=8", "--size", "1MiB"], "leave out --size"),
    (["--moe", "experts=8,top_k=2,tokens=64"], "misses hidden"),
    (["--moe", "experts=8,top_k=2,tokens=64,hidden=8,colour=red"], "unknown moe key 'colour'"),
    (["--traffic", "missing.csv"], "no such file"),
    ([], "Missing option '--size'"),
])
def test_price_traffic_errors_are_one_line(args, words):
    res = run("price", "all-to-all", "--fabric", "jalapeno-rack", "--group-size", "8", *args)
    assert res.exit_code == 2
    err = [ln for ln in res.output.splitlines() if ln.startswith("Error")]
    assert len(err) == 1 and words in err[0], res.output
    assert "Traceback" not in res.output


def test_traffic_is_all_to_all_only():
    res = run("price", "all-reduce", "--fabric", "jalapeno-rack", "--moe", "experts=8,top_k=2,tokens=64,hidden=8")
    assert res.exit_code == 2 and "all-to-all-v" in res.output


def test_bad_matrix_file_names_file_and_line(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("1,2\n3,oops\n")
    res = run("price", "all-to-all", "--fabric", "jalapeno-rack", "--group-size", "2", "--traffic", p)
    assert res.exit_code == 2 and "bad.csv: line 2, field 2: 'oops' is not a number" in res.output


# ----------------------------------------------------------------------------- mix
MIX = """
[[job]]
name = "a"
collective = "all-to-all"
size = "64MiB"
group_size = 128
algorithm = "direct"

[[job]]
name = "b"
collective = "all-to-all"
size = 67108864
group_size = 128
algorithm = "direct"
"""


def test_mix_two_identical_all_to_alls_json(tmp_path):
    p = tmp_path / "mix.toml"
    p.write_text(MIX)
    d = _json("mix", p, "--fabric", "jalapeno-rack")
    G = build("jalapeno-rack")
    two = price(G, "all-to-all", groups=by_size(G, 128), size_bytes=2 * S, algorithm="direct")
    assert d["makespan_s"] == pytest.approx(two.time_s, rel=1e-9)
    assert [j["name"] for j in d["jobs"]] == ["a", "b"]
    assert set(d["jobs"][0]) >= {"name", "start_s", "finish_s"} and d["bottlenecks"]
    from fabricsim.collectives.jobs import load_jobs, mix
    lib = mix(G, load_jobs(p, G)).as_dict()
    assert d == json.loads(json.dumps(lib))


def test_mix_after_is_sequential_and_text_output(tmp_path):
    p = tmp_path / "mix.toml"
    p.write_text(MIX + 'after = ["a"]\n')
    d = _json("mix", p, "--fabric", "jalapeno-rack")
    assert d["makespan_s"] == pytest.approx(d["jobs"][0]["solo_s"] + d["jobs"][1]["solo_s"], rel=1e-12)
    assert d["jobs"][1]["start_s"] == pytest.approx(d["jobs"][0]["finish_s"])
    res = run("mix", p, "--fabric", "jalapeno-rack")
    assert res.exit_code == 0 and "makespan" in res.output and "slowdown" in res.output


def test_mix_moe_and_traffic_jobs(tmp_path):
    np.savetxt(tmp_path / "m.csv", np.full((8, 8), 1e6), delimiter=",")
    p = tmp_path / "mix.toml"
    p.write_text('[[job]]\nname = "d"\ncollective = "all-to-all"\n'
                 'moe = "experts=16,top_k=2,tokens=64,hidden=1024,dedup=expert"\n'
                 'group_size = 8\ncount = 1\n[[job]]\nname = "v"\ncollective = "all-to-all"\ntraffic = "m.csv"\n'
                 'groups = [[8, 9, 10, 11, 12, 13, 14, 15]]\n')
    d = _json("mix", p, "--fabric", "jalapeno-rack")
    assert d["jobs"][0]["bytes_total"] == 64 * 2 * 1024
    assert d["jobs"][1]["bytes_total"] == 64e6


@pytest.mark.parametrize("body,words", [
    (MIX + "colour = 1\n", "job 'b': unknown key 'colour'"),
    (MIX.replace('name = "b"', 'name = "a"'), "duplicate job name 'a'"),
    (MIX + 'after = ["c"]\n', "after 'c' names no job"),
    (MIX.replace('algorithm = "direct"\n\n', 'algorithm = "direct"\nafter = ["b"]\n\n', 1) + 'after = ["a"]\n',
     "cycle"),
    (MIX.replace('size = "64MiB"\n', ""), "job 'a': missing size"),
    (MIX.replace('size = "64MiB"', 'size = "64 parsecs"'), "is not a size"),
    (MIX.replace('size = "64MiB"', 'size = "64Mb"'), "a lower-case b is bits"),
    (MIX.replace('size = "64MiB"', 'size = 0.5'), "finite number of bytes >= 1 B"),
    (MIX.replace('collective = "all-to-all"', 'collective = "all-too-all"', 1), "collective 'all-too-all'"),
    (MIX.replace('name = "a"\n', ''), "job 1: missing name"),
    ("[[jobs]]\n", "unknown top-level key(s) jobs"),
    ("[[job\n", "not TOML"),
    (MIX.replace("group_size = 128", "group_size = 7", 1), "group size 7 does not divide"),
    (MIX.replace("group_size = 128", "groups = [[0, 3, 3]]", 1), "job 'a': group 0 lists chip rank 3 twice"),
    (MIX.replace("group_size = 128", "groups = [[0, 999]]", 1), "chip rank 999 does not exist"),
    (MIX.replace("group_size = 128", "groups = [[0, 1], [1, 2]]", 1),
     "job 'a': chip rank 1 appears twice (groups 0 and 1)"),
])
def test_mix_spec_errors_are_one_line(tmp_path, body, words):
    p = tmp_path / "mix.toml"
    p.write_text(body)
    res = run("mix", p, "--fabric", "jalapeno-rack")
    assert res.exit_code == 2, res.output
    err = [ln for ln in res.output.splitlines() if ln.startswith("Error")]
    assert len(err) == 1 and words in err[0], res.output


def test_mix_efficiency_help_says_the_default_is_the_familys(tmp_path):
    """Without --efficiency a mix job costs what price says on the fabric (its family's efficiency),
    and --help says so (it used to say "Default 1.")."""
    help_text = " ".join(run("mix", "--help").output.split())
    assert "Default 1." not in help_text and "fabric family's figure" in help_text
    p = tmp_path / "mix.toml"
    p.write_text('[[job]]\nname = "a"\ncollective = "all-reduce"\nsize = "64MiB"\ngroup_size = 8\n')
    d = json.loads(run("mix", p, "--fabric", "mi355x", "--json").output)
    G = build("mi355x")
    assert d["makespan_s"] == pytest.approx(price(G, "all-reduce", groups=by_size(G, 8), size_bytes=2**26).time_s,
                                            rel=1e-9)
