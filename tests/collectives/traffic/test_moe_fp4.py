"""The 4-bit block formats as MoE dispatch elements: bytes per element with their scales."""
import numpy as np
import pytest

from fabricsim.collectives.jobs.models import load_model
from fabricsim.collectives.jobs.step import layer_jobs
from fabricsim.collectives.traffic import DTYPE_BYTES, MoESpec, moe_traffic
from fabricsim.fabrics import build


@pytest.mark.parametrize("dtype, bits", [("nvfp4", 4 + 8 / 16), ("mxfp4", 4 + 8 / 32)])
def test_block_formats_count_their_scales(dtype, bits):
    assert DTYPE_BYTES[dtype] == bits / 8


@pytest.mark.parametrize("dtype", ["nvfp4", "mxfp4", "bf16"])
def test_traffic_scales_with_the_element_size(dtype):
    base = moe_traffic(MoESpec.parse("experts=256,top_k=8,tokens=512,hidden=7168,dtype=fp8"), 16)
    other = moe_traffic(MoESpec.parse(f"experts=256,top_k=8,tokens=512,hidden=7168,dtype={dtype}"), 16)
    np.testing.assert_allclose(other.matrix, base.matrix * DTYPE_BYTES[dtype], rtol=1e-12)
    assert other.bytes_network == pytest.approx(base.bytes_network * DTYPE_BYTES[dtype], rel=1e-12)


def test_nvfp4_dispatch_in_a_layer():
    G, m = build("nvl72"), load_model("deepseek-r1")
    jobs = {dt: layer_jobs(G, m, "moe", mesh={"tp": 1, "ep": 8}, tokens=1024, dispatch_dtype=dt) for dt in
            ("fp8", "nvfp4")}
    fp8 = {j.name: j for j in jobs["fp8"]}
    for j in jobs["nvfp4"]:
        if "dispatch" in j.name:      # dispatch carries nvfp4 elements; combine stays bf16
            assert j.bytes_total == pytest.approx(fp8[j.name].bytes_total * 0.5625, rel=1e-12)
        else:
            assert j.bytes_total == fp8[j.name].bytes_total
