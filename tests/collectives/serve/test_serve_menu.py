"""serve's published-run menu (--menu inferencex) and the concurrency cap (--max-concurrency)."""
import pytest

from fabricsim.collectives.serve import serve
from fabricsim.collectives.serve.menu import MENUS, menu_runs, per_worker
from fabricsim.fabrics import build
from fabricsim.topo.errors import BadInput


def test_per_worker_closed_form():
    # ceil(conc / workers), to the nearest multiple of the TP groups, at least one per group
    assert per_worker(5, 4, {"tp": 8}) == 2
    assert per_worker(5, 5, {"tp": 4}) == 1
    assert per_worker(666, 1, {"tp": 1, "ep": 32}) == 672          # 666 / 32 = 20.8 -> 21 x 32
    assert per_worker(3228, 3, {"tp": 1, "ep": 4}) == 1076         # ceil(3228 / 3) = 1076 = 269 x 4
    assert per_worker(1, 1, {"tp": 1, "ep": 16}) == 16


def test_menu_lists_the_published_runs():
    entry, runs = menu_runs("inferencex", "gpt-oss-120b", "gb200", 0)
    assert "gptoss-fp4-gb200-dynamo-trt" in entry
    assert ({"tp": 8}, 1) in runs and ({"tp": 1, "ep": 2}, 512) in runs
    assert max(c for _, c in runs) == 512
    _, mtp = menu_runs("inferencex", "deepseek-r1", "gb300", 3)
    _, stp = menu_runs("inferencex", "deepseek-r1", "gb300", 0)
    assert mtp != stp


def test_menu_refuses_what_it_does_not_list():
    with pytest.raises(BadInput, match="no runs of gpt-oss-120b on jalapeno.*it has: deepseek-r1 on gb300"):
        menu_runs("inferencex", "gpt-oss-120b", "jalapeno", 0)
    with pytest.raises(BadInput, match="choose one of: search, inferencex"):
        menu_runs("mlperf", "gpt-oss-120b", "gb200", 0)
    assert MENUS == ("search", "inferencex")


def test_serve_on_the_menu_prices_only_its_runs():
    G = build("nvl72", accelerator="gb200")
    r = serve(G, "gpt-oss-120b", menu="inferencex")
    _, runs = menu_runs("inferencex", "gpt-oss-120b", "gb200", 0)
    assert [p.concurrency for p in r.points] == sorted({c for _, c in runs})
    for p in list(r.points) + list(r.frontier):
        assert (p.mesh, p.concurrency) in runs
    assert r.min_tbt_s == min(p.tpot_s for p in list(r.points) + list(r.frontier))
    assert r.min_tbt_point.tpot_s == r.min_tbt_s
    assert any("menu inferencex" in n for n in r.notes)


def test_menu_excludes_mesh_and_concurrency():
    G = build("nvl72", accelerator="gb200")
    for kw in ({"mesh": "tp=8"}, {"concurrency": 4}):
        with pytest.raises(BadInput, match="--menu inferencex takes its meshes"):
            serve(G, "gpt-oss-120b", menu="inferencex", **kw)
    with pytest.raises(BadInput, match="--menu 'mlperf'"):
        serve(G, "gpt-oss-120b", menu="mlperf")


def test_max_concurrency_caps_the_sweep():
    G = build("jalapeno-rack")
    r = serve(G, "gpt-oss-120b", mesh="tp=1", max_concurrency=12)
    assert [p.concurrency for p in r.points] == [1, 2, 4, 8]
    full = serve(G, "gpt-oss-120b", mesh="tp=1", max_concurrency=64)
    assert full.points[:4] == r.points           # the same points below the cap
    assert full.peak_tps_per_kw > r.peak_tps_per_kw
    for bad in (0, -3, True, 2.5):
        with pytest.raises(BadInput, match="--max-concurrency"):
            serve(G, "gpt-oss-120b", mesh="tp=1", max_concurrency=bad)


def test_cli_menu_and_cap(tmp_path):
    import json

    from click.testing import CliRunner

    from fabricsim.cli import main
    res = CliRunner().invoke(main, ["serve", "--model", "gpt-oss-120b", "--fabric", "jalapeno-rack", "--mesh", "tp=1",
                                    "--max-concurrency", "4", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert [p["concurrency"] for p in d["points"]] == [1, 2, 4]
    bad = CliRunner().invoke(main, ["serve", "--model", "gpt-oss-120b", "--fabric", "jalapeno-rack", "--menu", "x"])
    assert bad.exit_code == 2 and "--menu" in bad.output
