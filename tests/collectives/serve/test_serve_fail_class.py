"""serve --fail-class: every domain of a failure class priced at the healthy peak point, folded by the symmetries
verified for the point's collectives; folded == every domain priced == serve --fail of each domain."""
from __future__ import annotations

import json

from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.collectives.serve import serve_failed, serve_failure_class
from fabricsim.fabrics import build

KW = dict(mesh="tp=8", concurrency=8, isl=1024, osl=128)


def test_fold_agrees_with_every_domain_and_with_serve_fail():
    G = build("jalapeno-rack")
    folded = serve_failure_class(G, "gpt-oss-120b", "local-switch", **KW)
    every = serve_failure_class(G, "gpt-oss-120b", "local-switch", fold=False, **KW)
    assert folded.domains == every.domains == 6
    assert len(every.rows) == 6 and len(folded.rows) < 6 and sum(r.size for r in folded.rows) == 6
    assert folded.generators and "orbit" in folded.folded
    after = {r.point.tokens_per_s_per_kw for r in every.rows}
    assert {r.point.tokens_per_s_per_kw for r in folded.rows} == after
    one = serve_failed(G, "gpt-oss-120b", [every.rows[0].spec], **KW)
    assert one.peak_after.tokens_per_s_per_kw == every.rows[0].point.tokens_per_s_per_kw
    assert folded.rows[0].point.tokens_per_s_per_kw < folded.before.peak.tokens_per_s_per_kw   # a switch costs


def test_fold_agrees_with_members_of_the_orbit_on_the_pod_moe():
    """DeepSeek R1 on a 2-rack pod, tp=8 x ep=32 (uniform MoE traffic): 64 rail switches fold to few orbits, and
    members of an orbit other than its representative price as it does (serve --fail of each)."""
    G = build("jalapeno-pod", racks=2)
    kw = dict(mesh="tp=8,ep=32", concurrency=256, isl=256, osl=16)
    folded = serve_failure_class(G, "deepseek-r1", "rail-switch", **kw)
    assert folded.domains == 64 and len(folded.rows) < 8
    rep = folded.rows[0]
    for spec in ("rail-switch:rail5/sw6", "rail-switch:rail3/sw7"):
        one = serve_failed(G, "deepseek-r1", [spec], **kw)
        assert one.peak_after.tokens_per_s_per_kw == rep.point.tokens_per_s_per_kw, spec


def test_a_class_that_removes_chips_is_listed_not_priced():
    r = serve_failure_class(build("jalapeno-rack"), "gpt-oss-120b", "tray", **KW)
    assert r.domains == 16 and all(row.point is None and "removes chips" in row.note for row in r.rows)
    assert "could be priced" in r.summary()
    assert r.as_dict()["orbits"][0]["tokens_per_s_per_kw_after"] is None


def test_cli_fail_class_json_and_refusals():
    args = ["serve", "--model", "gpt-oss-120b", "--fabric", "jalapeno-rack", "--mesh", "tp=8", "--concurrency", "8",
            "--isl", "1024", "--osl", "128"]
    res = CliRunner().invoke(main, [*args, "--fail-class", "local-switch", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["failure_class"] == "local-switch" and d["domains"] == 6
    assert sum(o["domains"] for o in d["orbits"]) == 6 and d["orbits"][0]["tokens_per_s_per_kw_after"] > 0
    both = CliRunner().invoke(main, [*args, "--fail-class", "local-switch", "--fail", "local-switch:r00/lsw0"])
    assert both.exit_code == 2 and "not both" in both.output
    for extra, says in ((["--no-fold"], "--no-fold goes with --fail-class"),
                        (["--fail-class", "local-switch", "--plot", "f.png"], "--plot draws the healthy")):
        res = CliRunner().invoke(main, [*args, *extra])
        assert res.exit_code == 2 and says in res.output, res.output
    bad = CliRunner().invoke(main, [*args, "--fail-class", "bogus"])
    assert bad.exit_code == 2 and "--fail-class" in bad.output and "local-switch" in bad.output
