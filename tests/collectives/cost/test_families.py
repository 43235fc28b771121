"""Every catalog fabric names its family; the Infinity Fabric and Groq C2C families price as their files say."""
from __future__ import annotations

import json

import networkx as nx
import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.collectives import by_size, price
from fabricsim.collectives.cost.family import DEFAULT_FAMILY, FAMILIES, family_of, load_family
from fabricsim.fabrics import FABRICS, build

# what each catalog builder sets (small parameters where the default is large)
WANT = {
    "jalapeno-rack": ("tomahawk-ethernet", {}),
    "jalapeno-pod": ("tomahawk-ethernet", {"racks": 2}),
    "nvl72": ("nvlink5", {}),
    "torus": ("tpu-ici", {}),
    "ironwood": ("tpu-ici", {"dims": (4, 4, 8)}),
    "boardfly": ("tpu-ici", {}),
    "helios": ("ualink", {}),
    "maia200": ("tomahawk-ethernet", {"accelerators": 256}),
    "groq-lpx": ("groq-c2c", {}),
    "tpu8t": ("tpu-ici", {"dims": (4, 4, 8)}),
    "tpu8t-virgo": ("tomahawk-ethernet", {"superpods": 1}),
    "mi355x": ("infinity-fabric", {}),
    "hgx-a100": ("nvlink3", {}),
    "hgx-h100": ("nvlink4", {}),
    "hgx-b200": ("nvlink5", {}),
    "hgx-b300": ("nvlink5", {}),
    "instinct-node": ("infinity-fabric", {}),
    "rail-cluster": ("nvlink4", {}),
    "nvl72-cluster": ("nvlink5", {}),
}
LINK_GBps = 76.8           # MI355X xGMI per link per direction (fabrics/instinct.py)


def test_every_catalog_fabric_sets_its_family_explicitly():
    assert set(WANT) == set(FABRICS)
    assert {"infinity-fabric", "groq-c2c"} <= set(FAMILIES)
    for name, (fam, kw) in WANT.items():
        G = build(name, **kw)
        assert G.graph.get("family") == fam, name          # set by the builder, not inferred
        assert family_of(G).name == fam
    assert build("mi355x", generation="mi300x").graph["family"] == "infinity-fabric"
    assert build("groq-lpx", inter="dragonfly").graph["family"] == "groq-c2c"


def test_tiers_infer_the_new_families_for_user_graphs():
    def user(tier):
        G = nx.Graph()
        G.add_edge("a", "b", tier=tier)
        return G
    assert family_of(user("xgmi")).name == "infinity-fabric"
    # "c2c" is a generic name (NVLink-C2C, die-to-die): not taken as Groq's
    assert family_of(user("c2c")).name == DEFAULT_FAMILY
    assert family_of(user("maia-t0")).name == DEFAULT_FAMILY


def test_family_files_are_what_the_families_claim():
    inf = load_family("infinity-fabric")
    assert inf.efficiency == 0.75                           # AMD: ~48 of 64 GB/s usable
    assert set(inf.protocols_for("direct")) == {"ll", "ll128", "simple"}
    assert inf.base_latency_us("ring", "simple") == 17.0 and inf.step_latency_us("ring", "ll") == 0.8
    groq = load_family("groq-c2c")
    for algo in groq.algorithms:
        assert groq.protocols_for(algo) == ("simple",)
    assert groq.bw_fraction == {"simple": 1.0}
    assert groq.efficiency == pytest.approx(2.5e12 / (96 * 112e9 * 2 / 8), abs=5e-3)


@pytest.mark.parametrize("collective", ["all-reduce", "all-to-all"])
def test_mi355x_prices_direct_with_a_family_protocol_under_the_links(collective):
    res = CliRunner().invoke(main, ["price", collective, "--fabric", "mi355x", "--size", "1GiB", "--json"])
    assert res.exit_code == 0, res.output
    js = json.loads(res.output)
    fam = load_family("infinity-fabric")
    assert js["algorithm"] == "direct" and js["protocol"] in fam.protocols_for("direct")
    frac = fam.bw_fraction[js["protocol"]]
    assert js["busbw_GBps"] <= frac * 7 * LINK_GBps
    # bandwidth-bound at 1 GiB: within 3% of what the family delivers of the seven links (the
    # per-call launch and latencies are the rest)
    assert js["busbw_GBps"] <= fam.efficiency * frac * 7 * LINK_GBps * (1 + 1e-9)
    assert js["busbw_GBps"] >= 0.97 * fam.efficiency * frac * 7 * LINK_GBps


def test_mi355x_protocol_follows_the_family_with_size():
    G = build("mi355x")
    g = by_size(G, 8)
    small, large = price(G, "all-reduce", groups=g, size_bytes=8), price(G, "all-reduce", groups=g, size_bytes=2**30)
    fam = family_of(G)
    # 8 B: a low-latency protocol (RCCL gives LL and LL128 the same latencies; LL128's rate breaks the tie)
    assert small.protocol in ("ll", "ll128") and large.protocol == "simple"
    assert fam.base_latency_us("direct", small.protocol) == min(
        fam.base_latency_us("direct", p) for p in fam.protocols_for("direct"))
    # 8 B: latency-bound, the family's base latency once plus two direct steps at least
    assert small.time_s >= (fam.base_latency_us("direct", "ll") + 2 * fam.step_latency_us("direct", "ll")) * 1e-6
    # the family is what prices it: the same graph under another family gives another answer
    H = G.copy()
    H.graph["family"] = "tomahawk-ethernet"
    assert price(H, "all-reduce", groups=g, size_bytes=2**30).time_s != pytest.approx(large.time_s, rel=1e-3)


@pytest.mark.parametrize("collective", ["all-reduce", "all-to-all"])
def test_groq_lpx_prices_with_its_one_protocol(collective):
    G = build("groq-lpx")
    r = price(G, collective, groups=by_size(G, 256), size_bytes=2**26)
    assert r.protocol == "simple" and r.time_s > 0 and not r.partial
    fam = family_of(G)
    assert r.time_s >= fam.base_latency_us(r.algorithm, "simple") * 1e-6
    # no chip sends faster than its 96 links deliver
    n = 256
    per_chip_Bps = 96 * 112e9 / 8 * fam.efficiency
    sent = 2 * (n - 1) / n * 2**26 if collective == "all-reduce" else (n - 1) / n * 2**26
    assert r.time_s >= sent / per_chip_Bps


def test_groq_lpx_refuses_nccl_protocols_in_one_line():
    res = CliRunner().invoke(main, ["price", "all-reduce", "--fabric", "groq-lpx", "--size", "1MiB",
                                    "--protocol", "ll"])
    assert res.exit_code == 2
    assert "not available" in res.output and "groq-c2c family, which runs simple there; choose auto, ideal, simple" in res.output
