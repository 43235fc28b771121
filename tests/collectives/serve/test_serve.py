"""fabricsim serve: closed forms on a toy model, sensitivity to the chip / network / failures,
the KV-cache bound, the library per collective, JSON schema and one-line bad input."""
from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.collectives.jobs.models import Model, load_model
from fabricsim.collectives.serve import (Arch, ChipConstants, NetworkPricer, acceptance_length, arch_of,
                                         expected_distinct, kv_capacity, serve, step_terms,
                                         weights_per_chip_bytes)
from fabricsim.fabrics import build
from fabricsim.fabrics.accelerators import Accelerator
from fabricsim.topo.errors import BadInput
from fabricsim.topo.failures import apply_failures

# a toy chip: round numbers so every term is checkable by hand
CHIP = Accelerator(name="toy", description="toy", flops_per_s={"fp4": 4e15, "fp8": 2e15, "bf16": 1e15},
                   hbm_bytes=100e9, hbm_Bps=4e12, tdp_w=1000.0, usd_per_chip_hour=2.0)
CONSTS = ChipConstants(compute_efficiency=0.5, hbm_efficiency=0.8, hbm_usable=0.9, launch_us=1.0,
                       attention_kernels=6, mlp_kernels=4, moe_kernels=7, head_kernels=3)


def toy_arch(**kw) -> Arch:
    """One dense layer: GQA 4 heads / 2 KV heads of 64, hidden 256, MLP 1024, vocab 1000."""
    m = Model(name="toy", layers=1, first_dense=1, hidden=256, heads=4, kv_heads=2)
    base = dict(model=m, attention="gqa", head_dim=64, moe_intermediate=0, dense_intermediate=1024, vocab=1000,
                expert_bytes_per_param=0.5, other_bytes_per_param=1.0, expert_precision="fp4",
                attention_precision="fp8", kv_bytes=1.0)
    return Arch(**(base | kw))


def toy_moe() -> Arch:
    """One MoE layer: 16 experts top-2, expert width 512, no shared expert."""
    m = Model(name="toymoe", layers=1, first_dense=0, hidden=256, heads=4, kv_heads=2, experts=16, top_k=2)
    return Arch(model=m, attention="gqa", head_dim=64, moe_intermediate=512, dense_intermediate=0, vocab=1000,
                expert_bytes_per_param=0.5, other_bytes_per_param=1.0, expert_precision="fp4",
                attention_precision="fp8", kv_bytes=1.0)


def test_dense_layer_closed_form():
    a = toy_arch()
    S, L = 4, 1000
    st = step_terms(a, CHIP, CONSTS, {"tp": 1}, phase="decode", sequences=S, context=L)
    layer = next(t for t in st.layers if t.kind == "dense")
    attn = 256 * (4 + 2 * 2) * 64 + 4 * 64 * 256          # q, k, v, o
    mlp = 3 * 256 * 1024
    f_attn = S * (2 * attn + 4 * 4 * 64 * L)
    f_mlp = S * 2 * mlp
    kv = S * L * 2 * 2 * 64 * 1.0
    assert layer.flops == f_attn + f_mlp
    assert layer.weight_bytes == attn + mlp and layer.kv_bytes == kv
    c_attn, c_mlp = f_attn / (2e15 * 0.5), f_mlp / (2e15 * 0.5)
    m_attn, m_mlp = (attn + kv) / (4e12 * 0.8), mlp / (4e12 * 0.8)
    assert layer.compute_s == pytest.approx(c_attn + c_mlp, rel=1e-12)
    assert layer.memory_s == pytest.approx(m_attn + m_mlp, rel=1e-12)
    assert layer.launch_s == pytest.approx((6 + 4) * 1e-6)
    assert layer.network_s == 0.0
    assert layer.time_s == pytest.approx(max(c_attn, m_attn) + max(c_mlp, m_mlp) + 10e-6, rel=1e-12)
    assert layer.bound == "launch"          # 10 kernels x 1 us outweigh 0.7 us of reads
    head = next(t for t in st.layers if t.kind == "head")
    assert head.time_s == pytest.approx(max(S * 2 * 256 * 1000 / 1e15, 256 * 1000 / 3.2e12) + 3e-6, rel=1e-12)
    assert st.time_s == pytest.approx(layer.time_s + head.time_s, rel=1e-12)


@pytest.mark.parametrize("layer_us", [0.0, 5.0, 16.9])
def test_a_fixed_time_per_layer_adds_to_every_transformer_layer_not_the_head(layer_us):
    """arch.toml's layer_us (Jalapeño's persistent kernel: no launches, a fixed cost per layer) adds exactly
    layer_us to each transformer layer's launch term and step time, and nothing to the head."""
    from dataclasses import replace
    for arch in (toy_arch(), toy_moe()):
        base = step_terms(arch, CHIP, CONSTS, {"tp": 1}, phase="decode", sequences=4, context=1000)
        fixed = step_terms(arch, CHIP, replace(CONSTS, layer_us=layer_us), {"tp": 1}, phase="decode", sequences=4,
                           context=1000)
        for b, f in zip(base.layers, fixed.layers):
            extra = 0.0 if b.kind == "head" else layer_us * 1e-6
            assert f.launch_s == pytest.approx(b.launch_s + extra, rel=1e-12, abs=1e-18)
            assert f.time_s == pytest.approx(b.time_s + extra, rel=1e-12, abs=1e-18)
        assert fixed.time_s == pytest.approx(base.time_s + arch.model.layers * layer_us * 1e-6, rel=1e-12)


def test_tp_shards_weights_and_gqa_kv():
    a = toy_arch()
    one = step_terms(a, CHIP, CONSTS, {"tp": 1}, phase="decode", sequences=4, context=1000).layers[0]
    two = step_terms(a, CHIP, CONSTS, {"tp": 2}, phase="decode", sequences=4, context=1000).layers[0]
    assert two.weight_bytes == pytest.approx(one.weight_bytes / 2)
    assert two.kv_bytes == pytest.approx(one.kv_bytes / 2)      # 2 KV heads split over tp=2
    four = step_terms(a, CHIP, CONSTS, {"tp": 4}, phase="decode", sequences=4, context=1000).layers[0]
    assert four.kv_bytes == pytest.approx(one.kv_bytes / 2)     # at most kv_heads ways


def test_moe_distinct_experts_closed_form():
    a = toy_moe()
    n, k = 16, 2
    for tokens in (1, 3, 8, 64):
        st = step_terms(a, CHIP, CONSTS, {"tp": 1}, phase="decode", sequences=tokens, context=100)
        moe = st.layers[0]
        attn = 256 * 8 * 64 + 4 * 64 * 256
        distinct = n * (1 - (1 - k / n) ** tokens)
        assert distinct == expected_distinct(n, k, tokens)
        assert moe.weight_bytes == pytest.approx(attn + distinct * 3 * 256 * 512 * 0.5, rel=1e-12)
        assert moe.flops == pytest.approx(tokens * (2 * attn + 4 * 4 * 64 * 100) + tokens * k * 2 * 3 * 256 * 512)
    assert expected_distinct(16, 2, 10_000) == pytest.approx(16)


def test_ep_spreads_experts_over_chips():
    a = toy_moe()
    # ep=4: 8 sequences over 4 TP groups (tp=1); 8 tokens route over the EP group's 16 experts, 4 per chip
    st = step_terms(a, CHIP, CONSTS, {"tp": 1, "ep": 4}, phase="decode", sequences=8, context=100)
    moe = st.layers[0]
    attn = 256 * 8 * 64 + 4 * 64 * 256
    assert moe.weight_bytes == pytest.approx(attn + expected_distinct(16, 2, 8) / 4 * 3 * 256 * 512 * 0.5)
    assert moe.flops == pytest.approx(2 * (2 * attn + 4 * 4 * 64 * 100) + 8 * 2 / 4 * 2 * 3 * 256 * 512)


def test_network_term_is_the_solvers_price():
    G = build("hgx-h100")
    a = toy_arch()
    P = NetworkPricer(G, a.model)
    st = step_terms(a, CHIP, CONSTS, {"tp": 8}, phase="decode", sequences=8, context=100, pricer=P,
                    library="nccl")
    layer = st.layers[0]
    net = P.layer("dense", {"tp": 8}, 8, "nccl")
    assert layer.network_s == net.time_s > 0
    # attention and MLP all-reduces, one after the other: the layer's network is their sum
    assert [c.name for c in net.collectives] == ["attn-allreduce", "mlp-allreduce"]
    assert net.time_s == pytest.approx(sum(c.time_s for c in net.collectives))
    assert layer.time_s == pytest.approx(sum(
        max(c, m) for c, m in _blocks(a, 8, 8)) + net.time_s + 10e-6, rel=1e-9)


def _blocks(a, S, tp):
    """(compute, memory) of the toy dense layer's two blocks at tp (8 tokens over one TP group)."""
    attn = 256 * 8 * 64 + 4 * 64 * 256
    mlp = 3 * 256 * 1024
    kv = S * 100 * 2 * 2 * 64 / min(tp, 2)
    return [(S * (2 * attn + 4 * 4 * 64 * 100) / tp / 1e15, (attn / tp + kv) / 3.2e12),
            (S * 2 * mlp / tp / 1e15, mlp / tp / 3.2e12)]


def test_libraries_priced_through_the_solver():
    G = build("nvl72")
    m = load_model("deepseek-r1")
    P = NetworkPricer(G, m)
    nccl = P.layer("moe", {"tp": 8, "ep": 9}, 72, "nccl")
    auto = P.layer("moe", {"tp": 8, "ep": 9}, 72, "auto")
    assert auto.time_s <= nccl.time_s
    libs = auto.libraries()
    assert libs["all-reduce"] == "trtllm" and libs["all-to-all"] == "deepep-ll"
    assert set(nccl.libraries().values()) == {"nccl"}
    # a faster link rate makes the library's collectives faster: it runs on the same solver
    H = G.copy()
    for u, v, d in H.edges(data=True):
        d["capacity_gbps"] *= 2
    fast = NetworkPricer(H, m).layer("moe", {"tp": 8, "ep": 9}, 72, "trtllm")
    slow = P.layer("moe", {"tp": 8, "ep": 9}, 72, "trtllm")
    assert fast.time_s < slow.time_s
    # on a fabric without NVLink, auto does not use NVIDIA's kernels; Jalapeño runs its own collective engine
    # where it has the collective (all-reduce, all-to-all), NCCL's model for the rest
    J = NetworkPricer(build("jalapeno-rack"), m).layer("moe", {"tp": 8, "ep": 16}, 16, "auto")
    libs = J.libraries()
    assert libs["all-reduce"] == libs["all-to-all"] == "jalapeno-ce" and set(libs.values()) <= {"jalapeno-ce", "nccl"}


def test_a_chips_own_library_is_not_offered_to_other_chips_on_the_same_fabric_family():
    """jalapeno-ce runs on Tomahawk Ethernet with Jalapeño chips: Maia 200's Ethernet fabric keeps NCCL's model."""
    from fabricsim.collectives.serve.network import _libs_for
    maia = NetworkPricer(build("maia200"), load_model("gpt-oss-120b"))
    jal = NetworkPricer(build("jalapeno-rack"), load_model("gpt-oss-120b"))
    assert "tomahawk-ethernet" in maia.families and maia.chip != "jalapeno"
    assert [lib.name for lib in _libs_for("all-reduce", "auto", maia.families, maia.chip)] == ["nccl"]
    assert "jalapeno-ce" in [lib.name for lib in _libs_for("all-reduce", "auto", jal.families, jal.chip)]


def test_hbm_bandwidth_link_rate_and_failure_change_the_answer():
    G = build("jalapeno-rack")
    a = arch_of("gpt-oss-120b")
    base = serve(G, "gpt-oss-120b", mesh="tp=8", concurrency=8, accelerator=CHIP)
    faster = serve(G, "gpt-oss-120b", mesh="tp=8", concurrency=8,
                   accelerator=Accelerator(**{**CHIP.__dict__, "hbm_Bps": 8e12}))
    assert faster.points[0].tpot_s < base.points[0].tpot_s
    H = G.copy()
    for u, v, d in H.edges(data=True):
        d["capacity_gbps"] /= 4
    slow_links = serve(H, "gpt-oss-120b", mesh="tp=8", concurrency=8, accelerator=CHIP)
    assert slow_links.points[0].tpot_s > base.points[0].tpot_s
    D, _ = apply_failures(G, ["node:r00/lsw0"])
    failed = serve(D, "gpt-oss-120b", mesh="tp=8", concurrency=8, accelerator=CHIP)
    # decode all-reduces are latency-bound; the prefill's 8k-token all-reduces lose a sixth of the rack's switches
    assert failed.points[0].ttft_s > base.points[0].ttft_s and failed.points[0].e2e_s > base.points[0].e2e_s
    assert weights_per_chip_bytes(a, {"tp": 8}) < weights_per_chip_bytes(a, {"tp": 1})


def test_point_arithmetic():
    r = serve(build("jalapeno-rack"), "gpt-oss-120b", mesh="tp=8", concurrency=4, accelerator=CHIP)
    p = r.points[0]
    isl, osl = 8192, 1024
    e2e = 4 * p.prefill.time_s + osl * p.decode.time_s
    assert p.e2e_s == pytest.approx(e2e) and p.ttft_s == p.prefill.time_s
    assert p.tpot_s == pytest.approx((e2e - p.ttft_s) / osl)
    assert p.tokens_per_s_per_chip == pytest.approx(4 * (isl + osl) / e2e / 8)
    assert p.tokens_per_s_per_kw == pytest.approx(p.tokens_per_s_per_chip)          # 1 kW chip
    assert p.usd_per_mtok == pytest.approx(8 * 2.0 / 3600 / (4 * (isl + osl) / e2e) * 1e6)


def test_kv_cache_bounds_concurrency():
    a = toy_arch()
    mesh = {"tp": 2}
    free = 100e9 * 0.9 - weights_per_chip_bytes(a, mesh)
    per_seq = 1000 * 2 * 2 * 64 / 2          # L x (2 x kv_heads x head_dim) / kv shard
    assert kv_capacity(a, CHIP, CONSTS, mesh, 1000) == int(free // per_seq)
    tiny = Accelerator(**{**CHIP.__dict__, "hbm_bytes": 70e9})
    r = arch_of("gpt-oss-120b")
    limit = kv_capacity(r, tiny, CONSTS, {"tp": 1}, 9216)
    assert weights_per_chip_bytes(r, {"tp": 1}) > 70e9 * 0.9 and limit == 0   # ~65 GB of weights > 63 GB usable
    with pytest.raises(BadInput, match="KV"):
        serve(build("jalapeno-rack"), "gpt-oss-120b", mesh="tp=1", accelerator=tiny)
    big = serve(build("jalapeno-rack"), "gpt-oss-120b", mesh="tp=8", accelerator=CHIP)
    with pytest.raises(BadInput, match="exceeds the KV-cache limit"):
        serve(build("jalapeno-rack"), "gpt-oss-120b", mesh="tp=8", concurrency=big.kv_limit + 1, accelerator=CHIP)


def test_mtp_acceptance_and_two_microbatch():
    assert acceptance_length(0, 0.85) == 1.0
    assert acceptance_length(1, 0.85) == pytest.approx(1.85)
    assert acceptance_length(2, 0.5) == pytest.approx(1.75)
    a = arch_of("deepseek-r1")
    st = step_terms(a, CHIP, CONSTS, {"tp": 8}, phase="decode", sequences=2, context=1000, mtp=1)
    assert st.tokens == 4 and [t.kind for t in st.layers][-1] == "mtp"
    with pytest.raises(BadInput, match="multi-token"):
        step_terms(arch_of("kimi-k2"), CHIP, CONSTS, {"tp": 8}, phase="decode", sequences=2, context=10, mtp=1)
    one = step_terms(toy_arch(), CHIP, CONSTS, {"tp": 1}, phase="decode", sequences=4, context=1000)
    two = step_terms(toy_arch(), CHIP, CONSTS, {"tp": 1}, phase="decode", sequences=4, context=1000,
                     overlap="two-microbatch")
    # memory-bound without network: two halves each read the weights, so the overlap costs time here
    assert two.layers[0].time_s > one.layers[0].time_s
    with pytest.raises(BadInput, match="even batch"):
        step_terms(toy_arch(), CHIP, CONSTS, {"tp": 1}, phase="decode", sequences=3, context=10,
                   overlap="two-microbatch")


def test_json_schema_and_summary():
    res = CliRunner().invoke(main, ["serve", "--model", "gpt-oss-120b", "--fabric", "jalapeno-rack",
                                    "--mesh", "tp=8", "--concurrency", "8", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert set(d) == {"fabric", "model", "points", "min_tbt_ms", "peak_tps_per_kw", "e2e_latency_s"}
    assert set(d["points"][0]) == {"concurrency", "mesh", "library", "tpot_ms", "ttft_ms", "e2e_s",
                                   "tokens_per_s_per_user", "tokens_per_s_per_chip", "tokens_per_s_per_kw",
                                   "usd_per_mtok", "bound"}
    assert d["points"][0]["mesh"] == "tp=8" and d["points"][0]["concurrency"] == 8
    assert math.isclose(d["min_tbt_ms"], d["points"][0]["tpot_ms"])


def test_fabrics_side_by_side_with_per_fabric_set():
    res = CliRunner().invoke(main, ["serve", "--model", "gpt-oss-120b", "--fabrics", "jalapeno-rack,nvl72",
                                    "--set", "nvl72:accelerator=gb300", "--mesh", "tp=8", "--concurrency", "8",
                                    "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert [x["fabric"] for x in d] == ["jalapeno-rack", "nvl72"]
    gb300 = serve(build("nvl72", accelerator="gb300"), "gpt-oss-120b", mesh="tp=8", concurrency=8)
    assert d[1]["points"][0]["tpot_ms"] == pytest.approx(gb300.points[0].tpot_s * 1e3, rel=1e-12)


@pytest.mark.parametrize("args, needle", [
    (["--model", "nope", "--fabric", "jalapeno-rack"], "unknown model 'nope'"),
    (["--model", "gpt-oss-120b", "--fabric", "jalapeno-rack", "--mesh", "tp=3"], "tp=3 must divide"),
    (["--model", "gpt-oss-120b", "--fabric", "jalapeno-rack", "--mesh", "pp=2"], "mesh dimension 'pp'"),
    (["--model", "gpt-oss-120b", "--fabric", "jalapeno-rack", "--concurrency", "0"], "concurrency"),
    (["--model", "gpt-oss-120b", "--fabric", "jalapeno-rack", "--library", "mpi"], "mpi"),
    (["--model", "gpt-oss-120b", "--fabric", "jalapeno-rack", "--mtp", "1"], "multi-token"),
])
def test_bad_input_is_one_line(args, needle):
    res = CliRunner().invoke(main, ["serve", *args])
    assert res.exit_code == 2, res.output
    last = res.output.strip().splitlines()[-1]
    assert needle in last and "Traceback" not in res.output


def test_fail_reprices_each_point_on_the_degraded_fabric():
    from fabricsim.collectives.serve import serve_failed
    G = build("jalapeno-rack")
    r = serve_failed(G, "gpt-oss-120b", ["node:r00/lsw0"], mesh="tp=8", concurrency=8, accelerator=CHIP)
    b, a = r.before.points[0], r.after[0]
    D, _ = apply_failures(G, ["node:r00/lsw0"])
    direct = serve(D, "gpt-oss-120b", mesh="tp=8", concurrency=8, accelerator=CHIP).points[0]
    assert a.e2e_s == pytest.approx(direct.e2e_s, rel=1e-12) and a.e2e_s > b.e2e_s
    assert a.tokens_per_s_per_kw < b.tokens_per_s_per_kw and r.failures == ("node:r00/lsw0",)
    d = r.as_dict()["points"][0]
    assert d["tokens_per_s_lost"] == pytest.approx(b.tokens_per_s - a.tokens_per_s) and d["tokens_per_s_lost"] > 0
    with pytest.raises(BadInput, match="removes chips"):
        serve_failed(G, "gpt-oss-120b", ["node:r00/xpu000"], mesh="tp=8", concurrency=8, accelerator=CHIP)
    res = CliRunner().invoke(main, ["serve", "--model", "gpt-oss-120b", "--fabric", "jalapeno-rack", "--mesh", "tp=8",
                                    "--concurrency", "8", "--fail", "node:r00/lsw0", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["failures"] == ["node:r00/lsw0"]
