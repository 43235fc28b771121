"""Kernel counts per layer: attention by type (GQA / MLA), MoE routed path plus each shared expert."""
from dataclasses import replace

import pytest

from fabricsim.collectives.jobs.models import load_model
from fabricsim.collectives.serve import arch_of, chip_constants, step_terms
from fabricsim.topo.accelerators import accelerator


@pytest.mark.parametrize("name", ["deepseek-r1", "kimi-k2", "gpt-oss-120b"])
def test_launch_term_is_kernels_times_cost(name):
    arch, acc, c = arch_of(load_model(name)), accelerator("gb300"), chip_constants()
    c = replace(c, launch_us=1.5)
    s = step_terms(arch, acc, c, {"tp": 8}, phase="decode", sequences=1, context=4096)
    att = c.mla_attention_kernels if arch.attention == "mla" else c.attention_kernels
    want = {"dense": att + c.mlp_kernels, "moe": att + c.moe_kernels + arch.model.shared * c.shared_expert_kernels,
            "head": c.head_kernels}
    for t in s.layers:
        assert t.launch_s == pytest.approx(want[t.kind] * 1.5e-6, rel=1e-12), t.kind
    # one more kernel per shared expert adds launch_us per MoE layer, nothing else
    more = step_terms(arch, acc, replace(c, shared_expert_kernels=c.shared_expert_kernels + 1), {"tp": 8},
                      phase="decode", sequences=1, context=4096)
    moe = arch.model.moe_layers
    assert more.time_s - s.time_s == pytest.approx(moe * arch.model.shared * 1.5e-6, rel=1e-9, abs=1e-15)


def test_mla_count_defaults_to_the_gqa_one():
    c = replace(chip_constants(), mla_attention_kernels=None)
    assert c.attention_kernels_for("mla") == c.attention_kernels == c.attention_kernels_for("gqa")
    assert chip_constants().attention_kernels_for("mla") == chip_constants().mla_attention_kernels
