"""The roofline catalog: lookup, precision fallback, which accelerator a fabric's chips are."""
import pytest

from fabricsim.fabrics import build
from fabricsim.fabrics.accelerators import accelerator, accelerator_of
from fabricsim.topo.errors import BadInput


def test_jalapeno_figures_and_fallback():
    a = accelerator("jalapeno")
    assert a.flops("fp4") == 13.4e15
    assert a.flops("fp8") == 3.4e15
    assert a.hbm_bytes == 216 * 2**30
    with pytest.raises(BadInput, match="bf16 or wider"):
        a.flops("bf16")          # no bf16 figure is published for Jalapeño


def test_unknown_names_the_choices():
    with pytest.raises(BadInput, match="jalapeno"):
        accelerator("jalapeño")
    with pytest.raises(BadInput, match="precision"):
        accelerator("jalapeno").flops("fp16")


def test_fabric_chips_map_to_their_accelerator():
    G = build("jalapeno-rack")
    assert accelerator_of(G).name == "jalapeno"
    G.graph["accelerator"] = "nope"
    with pytest.raises(BadInput):
        accelerator_of(G)


def test_gb200_and_gb300_dense_figures():
    gb200, gb300 = accelerator("gb200"), accelerator("gb300")
    assert gb200.flops("fp4") == 10e15          # seed 003 table: FP4 dense 10 PF per package (20 PF sparse)
    assert gb200.flops("fp8") == gb200.flops("fp4") / 2   # Blackwell: FP8 is half of FP4 (NVIDIA spec)
    assert gb300.flops("fp4") == 15e15          # seed 003 table: 1.08 EF dense per NVL72 rack / 72
    assert gb300.flops("fp8") == gb200.flops("fp8")       # Blackwell Ultra raised only FP4
    assert (gb200.tdp_w, gb300.tdp_w) == (1200.0, 1400.0)  # seed 003 §1.4 InferenceX normalisation
    assert gb300.hbm_bytes > gb200.hbm_bytes and gb300.hbm_Bps == gb200.hbm_Bps


def test_nvl72_accelerator_parameter():
    assert accelerator_of(build("nvl72")).name == "gb200"
    G = build("nvl72", accelerator="gb300")
    assert accelerator_of(G).name == "gb300"
    assert {d["model"] for _, d in G.nodes(data=True) if d["kind"] == "chip"} == {"blackwell-ultra-gpu"}
    assert accelerator_of(build("nvl72", generation="gb300")).name == "gb300"
    assert accelerator_of(build("nvl72", generation="gb300", accelerator="gb200")).name == "gb200"


def test_nvl72_bad_accelerator_is_one_line_naming_the_choices():
    with pytest.raises(BadInput) as e:
        build("nvl72", accelerator="x")
    msg = str(e.value)
    assert "\n" not in msg and "accelerator='x'" in msg and "gb300" in msg
    with pytest.raises(BadInput, match="vera-rubin"):
        build("nvl72", accelerator="rubin")     # Rubin ships only in the NVLink6 rack
