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
