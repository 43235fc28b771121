"""NCCL topology dumps in: the shipped samples import, validate, audit and price like the catalog."""
import json
from pathlib import Path

from repo_paths import EXAMPLES
import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.collectives.placement import by_size
from fabricsim.collectives.price import price
from fabricsim.fabrics import build
from fabricsim.fabrics.nccl_topo import parse_nccl_topo, read_nccl_topo
from fabricsim.fabrics.userfile import load_fabric
from fabricsim.topo.auditing import audit
from fabricsim.topo.contract import validate
from fabricsim.topo.errors import BadInput

SAMPLES = EXAMPLES / "nccl_topo"
H100, GB200 = SAMPLES / "hgx_h100.xml", SAMPLES / "gb200_tray.xml"
GIB = 2**30


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _all_reduce(G, n, groups=None):
    return price(G, "all-reduce", groups=groups or by_size(G, n), size_bytes=GIB).time_s


@pytest.mark.parametrize("path, gpus, family", [(H100, 8, "nvlink4"), (GB200, 4, "nvlink5")])
def test_samples_import_validate_audit(path, gpus, family):
    G = read_nccl_topo(path)
    assert validate(G) == []
    assert sum(d["kind"] == "chip" for _, d in G.nodes(data=True)) == gpus
    assert G.graph["family"] == family
    assert json.loads(G.graph["families"]) == {"nvlink": family, "rail": "infiniband"}
    assert G.graph["source"] == str(path) and G.graph["name"] == path.stem and G.graph["inferred"]
    assert "PCIe" in G.graph["notes"]
    assert audit(G, hops=False, bisect=False).ok
    assert _all_reduce(G, gpus) > 0


def test_h100_sample_prices_as_the_catalog_node():
    G = read_nccl_topo(H100)
    assert [G.edges["gpu0", f"nvsw{j}"]["lanes"] // 2 for j in range(4)] == [5, 4, 4, 5]
    assert all(G.nodes[f"nvsw{j}"]["reduces"] for j in range(4))
    assert G.edges["gpu3", "rail3"]["capacity_gbps"] == 400.0
    assert _all_reduce(G, 8) == pytest.approx(_all_reduce(build("hgx-h100"), 8), rel=1e-9)


def test_gb200_tray_prices_as_a_tray_of_nvl72_and_notes_c2c():
    G = read_nccl_topo(GB200)
    assert "C2C" in G.graph["notes"] and "placeholder" in G.graph["inferred"]
    assert G.edges["gpu0", "nvsw0"]["capacity_gbps"] == 18 * 2 * 200.0
    assert _all_reduce(G, 4) == pytest.approx(_all_reduce(build("nvl72"), 4, [[0, 1, 2, 3]]), rel=1e-9)


def test_nodes_join_rail_optimized_like_the_catalog_cluster():
    G = read_nccl_topo(H100, nodes=2)
    R = build("rail-cluster", nodes=2)
    assert sorted(G["rail3"]) == sorted(R["rail3"])
    assert _all_reduce(G, 16) == pytest.approx(_all_reduce(R, 16), rel=1e-9)


def test_nic_rate_moves_the_price():
    a = read_nccl_topo(H100, nodes=2)
    b = read_nccl_topo(H100, nodes=2, nic_gbps=200.0)
    assert b.edges["n0/gpu0", "rail0"]["capacity_gbps"] == 200.0
    assert _all_reduce(b, 16) > _all_reduce(a, 16)


def test_cli_import_writes_a_fabric_every_command_takes(tmp_path):
    out = tmp_path / "node.json"
    r = run("import", "nccl-topo", str(H100), "-o", str(out))
    assert r.exit_code == 0, r.output
    assert validate(load_fabric(out)) == []
    assert run("audit", str(out)).exit_code == 0
    r = run("price", "all-reduce", "--fabric", str(out), "--size", "1GiB", "--json")
    assert r.exit_code == 0, r.output


def _write(tmp_path, text):
    p = tmp_path / "t.xml"
    p.write_text(text)
    return p


GPU = '<pci busid="0000:01:00.0" class="0x030200"><gpu dev="0" sm="90" rank="0">{}</gpu></pci>'
LINK = '<nvlink target="0000:05:00.0" count="18" tclass="0x068000"/>'


GPU75 = GPU.replace('sm="90"', 'sm="75"')
NOLINK = '<nvlink count="4" tclass="0x068000"/>'
NET = '<pci busid="2"><nic><net name="mlx5_0" dev="0"/></nic></pci>'


@pytest.mark.parametrize("text, names", [
    ("<system><cpu>", "not well-formed XML"),
    ("<topology/>", "<topology>"),
    ("<system><cpu/></system>", "no <gpu> element"),
    ('<system><pci busid="0000:01:00.0"><gpu dev="0"/></pci></system>', "<gpu dev=\"0\"> has no 'sm'"),
    ("<system>" + GPU75.format(LINK) + "</system>", "sm=75"),
    ("<system>" + GPU.format("") + "</system>", "has no <nvlink>"),
    ("<system>" + GPU.format(NOLINK) + "</system>", '<nvlink count="4"'),
    ("<system>" + GPU.format(LINK.replace("18", "x")) + "</system>", "count='x'"),
    ("<system>" + GPU.format(LINK) + NET + "</system>", "<net name=\"mlx5_0\"> has no 'speed'"),
])
def test_malformed_dumps_fail_in_one_line_naming_the_element(tmp_path, text, names):
    p = _write(tmp_path, text)
    with pytest.raises(BadInput) as exc:
        read_nccl_topo(p)
    msg = str(exc.value)
    assert "\n" not in msg and names in msg and str(p) in msg
    r = run("import", "nccl-topo", str(p), "-o", str(tmp_path / "x.json"))
    assert r.exit_code == 2 and names in r.output


def test_parse_pairs_each_gpu_with_its_nearest_nic():
    n = parse_nccl_topo(H100)
    assert [name for name, _ in n.nics] == [f"mlx5_{g}" for g in range(8)]
    assert {s for _, s in n.nics} == {400.0}


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_TEXT = H100.read_text()


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, len(_TEXT)), drop=st.integers(0, len(_TEXT)),
       junk=st.text(st.characters(blacklist_categories=("Cs",)), max_size=8))
def test_any_damaged_dump_imports_or_fails_in_one_line(tmp_path, cut, drop, junk):
    """Cut the sample short, or splice junk into it: a valid fabric or one BadInput line, never a traceback."""
    text = _TEXT[:cut] if cut < drop else _TEXT[:drop] + junk + _TEXT[drop + len(junk):]
    p = tmp_path / "d.xml"
    p.write_text(text, encoding="utf-8")
    try:
        G = read_nccl_topo(p)
    except BadInput as exc:
        assert "\n" not in str(exc) and str(p) in str(exc)
    else:
        assert validate(G) == []


def test_too_many_nodes_are_refused_before_building():
    from fabricsim.topo.errors import TooLarge
    with pytest.raises(TooLarge, match="copies of hgx_h100.xml"):
        read_nccl_topo(H100, nodes=60_000)
