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
