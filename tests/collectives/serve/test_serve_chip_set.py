"""serve --chip-set: a run's chip constants overridden, checked, carried into --fail, and named in the notes."""
import json
from dataclasses import replace

import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.collectives.serve import chip_constants, serve, serve_failed
from fabricsim.collectives.serve.arch import CONSTANT_KEYS
from fabricsim.fabrics import build
from fabricsim.topo.errors import BadInput

KW = dict(isl=1024, osl=128, mesh="tp=8", concurrency=64)


@pytest.fixture(scope="module")
def rack():
    return build("jalapeno-rack")


def test_overrides_replace_only_what_is_named():
    base = chip_constants("jalapeno")
    for given in ({"prefill_compute_efficiency": 0.3}, ["prefill_compute_efficiency=0.3"],
                  "prefill_compute_efficiency=0.3"):
        c = chip_constants("jalapeno", given)
        assert c == replace(base, prefill_compute_efficiency=0.3)
    assert chip_constants("gb300", {"moe_kernels": "11"}).moe_kernels == 11
    assert chip_constants("gb300", {"launch_us": 0}).launch_us == 0.0


@pytest.mark.parametrize("given, words", [
    ({"prefill_eff": 0.3}, ["'prefill_eff' is unknown", "prefill_compute_efficiency"]),
    ({"compute_efficiency": 0}, ["[1e-06, 1]"]),
    ({"prefill_compute_efficiency": "5e-324"}, ["[1e-06, 1]"]),     # a denormal made every time inf
    ({"hbm_efficiency": 1.5}, ["[1e-06, 1]"]),
    ({"hbm_usable": "nan"}, ["[1e-06, 1]"]),
    ({"launch_us": -1}, ["microseconds"]),
    ({"layer_us": "inf"}, ["microseconds"]),
    ({"moe_kernels": 2.5}, ["whole number"]),
    ({"head_kernels": "x"}, ["whole number"]),
    (["prefill_compute_efficiency"], ["not KEY=VALUE"]),
    (["=0.3"], ["not KEY=VALUE"]),
])
def test_bad_overrides_are_refused_by_name(given, words):
    with pytest.raises(BadInput) as e:
        chip_constants("gb300", given)
    assert e.value.param == "constants"
    for w in words:
        assert w in str(e.value)


def test_every_key_is_a_constant():
    fields = set(chip_constants().__dataclass_fields__)
    assert set(CONSTANT_KEYS) <= fields
    # what is left out is not a user knob of this kind: none
    assert fields - set(CONSTANT_KEYS) == set()


def test_prefill_bound_throughput_follows_the_efficiency(rack):
    """Prefill compute scales as 1 / efficiency exactly (FLOPs / (peak x e)), decode does not move, throughput
    rises, and the notes name the override."""
    a = serve(rack, "deepseek-r1", **KW)
    b = serve(rack, "deepseek-r1", constants={"prefill_compute_efficiency": 0.302}, **KW)
    pa, pb = a.peak, b.peak
    assert pb.decode.time_s == pa.decode.time_s
    ca = sum(t.compute_s * t.count for t in pa.prefill.layers)
    cb = sum(t.compute_s * t.count for t in pb.prefill.layers)
    assert cb == pytest.approx(ca * 0.151 / 0.302, rel=1e-12)
    assert pb.tokens_per_s_per_kw > pa.tokens_per_s_per_kw
    assert not any("overridden" in n for n in a.notes)
    assert any("prefill_compute_efficiency 0.151 -> 0.302" in n for n in b.notes)
    assert b.constants.prefill_compute_efficiency == 0.302 and a.constants == chip_constants("jalapeno")


def test_launch_override_moves_min_tbt_by_its_kernels(rack):
    """Jalapeño's fitted per-layer cost: setting it to 0 takes exactly layers x 16.9 us off a decode step."""
    a = serve(rack, "gpt-oss-120b", **KW)
    b = serve(rack, "gpt-oss-120b", constants={"layer_us": 0}, **KW)
    layers = 36
    assert a.peak.decode.time_s - b.peak.decode.time_s == pytest.approx(layers * 16.9e-6, rel=1e-9)


def test_fail_reprices_with_the_same_constants(rack):
    r = serve_failed(rack, "deepseek-r1", ["node:r00/lsw0"], constants={"prefill_compute_efficiency": 0.302}, **KW)
    plain = serve_failed(rack, "deepseek-r1", ["node:r00/lsw0"], **KW)
    assert r.before.constants.prefill_compute_efficiency == 0.302
    # the degraded point keeps the override: its prefill compute is the healthy override's, not the catalog's
    ca = sum(t.compute_s * t.count for t in r.after[0].prefill.layers)
    cb = sum(t.compute_s * t.count for t in r.before.points[0].prefill.layers)
    assert ca == pytest.approx(cb, rel=1e-12)
    assert r.after[0].tokens_per_s_per_kw > plain.after[0].tokens_per_s_per_kw


def test_cli_chip_set(tmp_path):
    run = CliRunner().invoke
    args = ["serve", "--model", "deepseek-r1", "--fabric", "jalapeno-rack", "--isl", "1024", "--osl", "128",
            "--mesh", "tp=8", "--concurrency", "64"]
    r = run(main, [*args, "--chip-set", "prefill_compute_efficiency=0.302", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    base = json.loads(run(main, [*args, "--json"]).output)
    assert d["peak_tps_per_kw"] > base["peak_tps_per_kw"]
    r = run(main, [*args, "--chip-set", "prefill_compute_efficiency=0.302"])
    assert "chip constants overridden" in r.output
    bad = run(main, [*args, "--chip-set", "prefill_eff=0.3"])
    assert bad.exit_code == 2
    line = [x for x in bad.output.splitlines() if x.startswith("Error:")]
    assert len(line) == 1 and "--chip-set" in line[0] and "prefill_compute_efficiency" in line[0]
    assert "Traceback" not in bad.output


def test_two_microbatch_says_it_is_an_upper_bound(rack):
    a = serve(rack, "deepseek-r1", overlap="two-microbatch", **KW)
    b = serve(rack, "deepseek-r1", **KW)
    assert any("upper bound" in n and "two-microbatch" in n for n in a.notes)
    assert not any("two-microbatch overlap" in n for n in b.notes)
