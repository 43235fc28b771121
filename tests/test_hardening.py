"""Regression tests for the fuzz findings of issue 16: every case is refused in one line.

Each test names the finding it pins.  ``refused`` checks the contract the CLI keeps for bad
input: exit 1 or 2, exactly one ``Error:`` line, no traceback, no exception escaping.
"""
import json
import time

import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.fabrics import build
from fabricsim.topo import builders
from fabricsim.topo.errors import TooLarge


def invoke(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def refused(*args, match: str = "", codes=(1, 2)):
    """Run the CLI; assert a clean one-line refusal whose message contains ``match``."""
    t0 = time.perf_counter()
    res = invoke(*args)
    out = res.output
    assert res.exit_code in codes, (res.exit_code, out[-500:], res.exception)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in out
    errors = [line for line in out.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, out
    assert match in errors[0], errors[0]
    assert time.perf_counter() - t0 < 30, "a refusal must not do the work first"
    return errors[0]


# --------------------------------------------------------------------------- size caps (hangs)
@pytest.mark.parametrize("fabric, sets, count", [
    ("jalapeno-pod", ["racks=2000"], "276,064 nodes"),
    ("jalapeno-pod", ["racks=99999999"], "nodes"),
    ("torus", ["dims=2000x2000"], "4,000,000 nodes and 8,000,000 links"),
    ("ironwood", ["dims=400x400x400"], "64,000,000 nodes"),
    ("jalapeno-rack", ["trays=99999999"], "799,999,998 nodes"),
    ("jalapeno-rack", ["chips_per_tray=99999999"], "1,599,999,990 nodes"),
    ("torus", ["dims=2x99999999999999999999"], "~10^20 nodes"),
])
def test_oversized_fabric_is_refused_with_its_estimate(fabric, sets, count):
    args = ["audit", fabric] + [x for s in sets for x in ("--set", s)]
    msg = refused(*args, match=count)
    assert "GiB" in msg and f"{builders.MAX_LINKS:,} links" in msg


def test_size_estimate_matches_the_built_graph():
    # the closed-form counts the cap uses are the real ones, at sizes that are built
    for name, kw, what in [("torus", {"dims": "4x4x2"}, "torus"), ("jalapeno-pod", {"racks": 2}, "pod"),
                           ("jalapeno-rack", {"trays": 3}, "rack"), ("boardfly", {"groups": 3}, "boardfly")]:
        G = build(name, **kw)
        old = builders.MAX_NODES, builders.MAX_LINKS
        try:
            builders.MAX_NODES, builders.MAX_LINKS = G.number_of_nodes() - 1, G.number_of_edges() - 1
            with pytest.raises(TooLarge, match=f"{G.number_of_nodes():,} nodes and {G.number_of_edges():,} links"):
                build(name, **kw)
            builders.MAX_NODES, builders.MAX_LINKS = G.number_of_nodes(), G.number_of_edges()
            assert build(name, **kw).number_of_edges() == G.number_of_edges()
        finally:
            builders.MAX_NODES, builders.MAX_LINKS = old


@pytest.mark.parametrize("builder, kw, count", [
    ("switched_domain", dict(chips=10**6, planes=18), "18,000,000 links"),
    ("leaf_spine", dict(leaves=10**4, chips_per_leaf=10**3, spines=4), "10,040,000 links"),
    ("full_mesh", dict(chips=10**5), "4,999,950,000 links"),
    ("dragonfly", dict(p=64, a=128, h=64), "nodes"),
])
def test_generic_builders_refuse_oversized_shapes(builder, kw, count):
    with pytest.raises(TooLarge, match=count):
        builders.BUILDERS[builder](**kw)


def test_toml_recipe_with_a_huge_torus_is_refused(tmp_path):
    p = tmp_path / "big.toml"
    p.write_text('builder = "torus"\n[params]\ndims = [4, 4]\n')
    refused("audit", p, "--set", "dims=100000x100000", match="10,000,000,000 nodes")
    p.write_text('builder = "torus"\n[params]\ndims = [100000, 100000]\n')
    refused("audit", p, match="10,000,000,000 nodes")


# --------------------------------------------------------------------------- link rates
@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e400", "0", "-5", "1e-300"])
@pytest.mark.parametrize("fabric", ["torus", "boardfly", "ironwood"])
def test_bad_link_rates_are_refused_at_parsing(fabric, value):
    refused("audit", fabric, "--set", f"link_GBps={value}", match="link_GBps")


def test_link_rate_message_gives_the_valid_range():
    msg = refused("audit", "torus", "--set", "link_GBps=1e-300", match="0.000125 .. 1.25e+06 GB/s")
    assert "finite" in msg


@pytest.mark.parametrize("kw", [dict(lane_gbps=float("inf")), dict(lane_gbps=float("nan")),
                                dict(link_gbps=1e-300), dict(latency_ns=float("inf")),
                                dict(latency_ns=float("nan")), dict(latency_ns=-1.0)])
def test_generic_torus_refuses_non_finite_figures(kw):
    with pytest.raises(ValueError, match="lane_gbps|link_gbps|latency_ns"):
        builders.torus((4, 4), **kw)


def test_toml_recipe_with_infinite_lane_rate_is_refused(tmp_path):
    p = tmp_path / "inf.toml"
    p.write_text('builder = "torus"\n[params]\ndims = [4, 4]\nlane_gbps = inf\n')
    refused("audit", p, match="lane_gbps")
