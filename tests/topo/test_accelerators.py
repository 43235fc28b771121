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


# --------------------------------------------------------------------------- every fabric names its chips
import math
import re
from pathlib import Path

from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.fabrics.accelerators import accelerator_names
from fabricsim.fabrics.registry import FABRICS

# big catalog fabrics at a small size: the accelerator does not depend on the size
SMALL = {"ironwood": {"dims": "4x4x4"}, "tpu8t": {"dims": "4x4x4"}, "tpu8t-virgo": {"superpods": 1},
         "torus": {"dims": "4x4x4"}, "maia200": {"accelerators": 256}, "jalapeno-pod": {"racks": 2}}
# every chip generation a catalog fabric can be built with -> the accelerator it must name
VARIANTS = [("nvl72", {"generation": "gb300"}, "gb300"), ("nvl72", {"generation": "vera-rubin"}, "rubin"),
            ("nvl72-cluster", {"generation": "gb300"}, "gb300"), ("hgx-h100", {"generation": "h200"}, "h200"),
            ("mi355x", {"generation": "mi300x"}, "mi300x"), ("instinct-node", {"generation": "mi325x"}, "mi325x")]
VARIANTS += [("rail-cluster", {"gpu": g}, g)
             for g in ("a100", "h100", "h200", "h800", "b200", "b300", "mi300x", "mi325x", "mi355x")]
VARIANTS += [("hgx-h100", {"generation": "h800"}, "h800")]


def _chip_models(G):
    return {str(d["model"]).split("+")[0] for _, d in G.nodes(data=True) if d["kind"] == "chip"}


@pytest.mark.parametrize("name", sorted(FABRICS))
def test_every_catalog_fabric_names_an_accelerator_that_serves_its_chips(name):
    G = build(name, **SMALL.get(name, {}))
    acc = accelerator_of(G)
    assert G.graph["accelerator"] == acc.name                 # the builder says it, not a guess
    assert _chip_models(G) <= set(acc.chip_models), (name, acc.name)   # and it is the chips' entry


@pytest.mark.parametrize("name, params, want", VARIANTS, ids=lambda v: v if isinstance(v, str) else None)
def test_each_chip_generation_names_its_own_accelerator(name, params, want):
    G = build(name, **params)
    assert accelerator_of(G).name == want
    assert _chip_models(G) <= set(accelerator(want).chip_models)


def test_a_shared_device_model_is_ambiguous_without_the_graph_attribute():
    G = build("hgx-b200")
    del G.graph["accelerator"]
    with pytest.raises(BadInput, match="gb200, b200|b200, gb200") as e:
        accelerator_of(G)                    # "blackwell-gpu" is both GB200 and B200
    assert "\n" not in str(e.value) and "accelerator=NAME" in str(e.value)
    H = build("hgx-h100")
    del H.graph["accelerator"]
    assert accelerator_of(H).name == "h100"  # "h100-sxm+cx7": a GPU with its NIC is its GPU


def test_cli_set_accelerator_bad_value_is_one_line_naming_the_choices():
    res = CliRunner().invoke(main, ["audit", "nvl72", "--set", "accelerator=x"])
    errors = [line for line in res.output.splitlines() if line.startswith("Error:")]
    assert res.exit_code == 2 and len(errors) == 1, res.output
    assert "accelerator='x'" in errors[0] and "gb200" in errors[0] and "gb300" in errors[0]
    ok = CliRunner().invoke(main, ["audit", "nvl72", "--set", "accelerator=gb300"])
    assert ok.exit_code == 0, ok.output


# --------------------------------------------------------------------------- the catalog's figures
def test_every_entry_has_package_tdp_and_a_memory():
    for name in accelerator_names():
        a = accelerator(name)
        assert math.isfinite(a.tdp_w) and a.tdp_w > 0, name
        # a chip keeps its weights in HBM, or (Groq) in SRAM it reads at a published rate
        assert (math.isfinite(a.hbm_bytes) and math.isfinite(a.hbm_Bps)) or \
            (a.sram_bytes > 0 and math.isfinite(a.sram_Bps)), name
        assert a.chip_models and a.sources, name
        assert math.isnan(a.usd_per_chip_hour) or a.usd_per_chip_hour > 0, name   # a price only where sourced


def test_every_figure_in_the_toml_carries_a_label():
    text = Path(accelerators_toml()).read_text()
    for line in text.splitlines():
        if re.match(r"\s*\w+\s*=\s*[-+0-9.]", line):       # a numeric figure
            assert re.search(r"#\s*(F2?|D|I):", line), line


def accelerators_toml():
    import fabricsim.topo.accelerators as m
    return Path(m.__file__).with_name("accelerators.toml")


def test_dense_not_sparse():
    # NVIDIA quotes 2:4 sparse figures; the catalog holds half of them
    assert accelerator("h100").flops("fp8") == pytest.approx(3958e12 / 2, rel=1e-3)
    assert accelerator("h100").flops("bf16") == pytest.approx(1979e12 / 2, rel=1e-3)
    assert accelerator("b200").flops("fp4") == 18e15 / 2        # HGX B200: 144 PF sparse / 8
    assert accelerator("a100").flops("bf16") == 312e12          # A100: 624 TF sparse
    assert accelerator("mi300x").flops("fp8") == 2614.9e12      # AMD: 5,229.8 TF with sparsity


@pytest.mark.parametrize("name", ["gb200", "b200", "mi455x"])   # NVIDIA and AMD rack tables
def test_fp8_is_half_fp4_where_the_vendor_says_so(name):
    a = accelerator(name)
    assert a.flops("fp8") == pytest.approx(a.flops("fp4") / 2)


@pytest.mark.parametrize("name", ["gb300", "b300", "jalapeno"])
def test_fp8_is_not_half_fp4_where_only_fp4_was_raised(name):
    a = accelerator(name)
    assert a.flops("fp8") < a.flops("fp4") / 2.5


def test_chips_without_a_narrow_precision_run_at_the_next_wider():
    assert accelerator("h100").flops("fp4") == accelerator("h100").flops("fp8")      # Hopper: no FP4
    assert accelerator("a100").flops("fp4") == accelerator("a100").flops("bf16")     # Ampere: no FP8/FP4
    assert accelerator("ironwood").flops("fp4") == 4614e12                           # no FP4 published


def test_groq_is_sram_resident():
    g = accelerator("groq3-lpu")
    assert math.isnan(g.hbm_bytes) and math.isnan(g.hbm_Bps)
    assert g.sram_bytes == 500e6 and g.sram_Bps == 150e12
    assert g.sram_bytes * 256 == 128e9       # 128 GB of SRAM per 256-chip LPX rack (NVIDIA)


# --------------------------------------------------------------------------- a user fabric file
def test_user_fabric_file_names_its_accelerator(tmp_path):
    from fabricsim.fabrics.userfile import export_fabric, load_fabric
    p = tmp_path / "t.toml"
    p.write_text('accelerator = "ironwood"\nbuilder = "torus"\n[params]\ndims = [4, 4]\n')
    G = load_fabric(p)
    assert accelerator_of(G).name == "ironwood"
    back = load_fabric(export_fabric(G, tmp_path / "t.json"))
    assert accelerator_of(back).name == "ironwood"        # survives export and reload
    p.write_text('accelerator = "ironwod"\nbuilder = "torus"\n[params]\ndims = [4, 4]\n')
    with pytest.raises(BadInput, match="ironwod.*ironwood") as e:
        load_fabric(p)
    assert "\n" not in str(e.value)
