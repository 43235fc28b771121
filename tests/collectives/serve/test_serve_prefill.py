"""Prefill GEMMs run at arch.toml's prefill efficiency, decode ones at the compute efficiency."""
from dataclasses import replace

import pytest

from fabricsim.collectives.jobs.models import load_model
from fabricsim.collectives.serve import arch_of, chip_constants, step_terms
from fabricsim.topo.accelerators import accelerator


def test_prefill_compute_scales_with_its_own_efficiency():
    arch, acc = arch_of(load_model("deepseek-r1")), accelerator("gb300")
    c = replace(chip_constants(), prefill_compute_efficiency=0.2, compute_efficiency=0.8, launch_us=0.0)
    half = replace(c, prefill_compute_efficiency=0.1)
    a = step_terms(arch, acc, c, {"tp": 8}, phase="prefill", sequences=8192, context=8192)
    b = step_terms(arch, acc, half, {"tp": 8}, phase="prefill", sequences=8192, context=8192)
    for x, y in zip(a.layers, b.layers):
        assert y.compute_s == pytest.approx(2 * x.compute_s, rel=1e-12)
        assert y.memory_s == x.memory_s
    # decode ignores it
    d1 = step_terms(arch, acc, c, {"tp": 8}, phase="decode", sequences=64, context=8704)
    d2 = step_terms(arch, acc, half, {"tp": 8}, phase="decode", sequences=64, context=8704)
    assert d1.time_s == d2.time_s


def test_defaults_and_fallback():
    c = chip_constants()
    assert c.compute_efficiency_for("prefill") == pytest.approx(73.7e3 * (1 - 0.563) / 8 * 2 * 37e9 / 1978.9e12,
                                                                abs=5e-4)
    assert c.compute_efficiency_for("decode") == c.compute_efficiency
    assert replace(c, prefill_compute_efficiency=None).compute_efficiency_for("prefill") == c.compute_efficiency


@pytest.mark.parametrize("phase, seqs, ctx", [("decode", 64, 4096), ("prefill", 8192, 8192)])
@pytest.mark.parametrize("model, chip", [("deepseek-r1", "gb300"), ("gpt-oss-120b", "gb200"), ("kimi-k2", "h100")])
def test_attention_core_runs_at_the_kv_caches_precision(phase, seqs, ctx, model, chip):
    """Scores and values over the cache run on its elements (FlashMLA: BF16 on a BF16 cache; an FP8 cache runs FP8
    attention): a BF16 cache moves each layer's compute by exactly its context FLOPs x (1/bf16 - 1/fp8 rate) / eff,
    and the projections stay at the attention weights' precision."""
    arch, acc, c = arch_of(load_model(model)), accelerator(chip), chip_constants()
    fp8, bf16 = replace(arch, kv_bytes=1.0), replace(arch, kv_bytes=2.0)
    assert (fp8.kv_precision, bf16.kv_precision, replace(arch, kv_bytes=0.5).kv_precision) == ("fp8", "bf16", "fp4")
    mesh = {"tp": 8}
    a = step_terms(fp8, acc, c, mesh, phase=phase, sequences=seqs, context=ctx)
    b = step_terms(bf16, acc, c, mesh, phase=phase, sequences=seqs, context=ctx)
    eff = c.compute_efficiency_for(phase)
    r8, r16 = acc.flops("fp8"), acc.flops("bf16")
    # decode: one token per sequence; prefill: the prompt's tokens; each TP rank one tp-th of the heads
    per_layer_ctx = arch.context_flops_per_token(ctx, phase) / arch.model.layers * seqs / mesh["tp"]
    for x, y in zip(a.layers, b.layers):
        if x.kind == "head":
            assert y.compute_s == x.compute_s
        else:
            assert y.compute_s - x.compute_s == pytest.approx(per_layer_ctx * (1 / r16 - 1 / r8) / eff, rel=1e-9)
