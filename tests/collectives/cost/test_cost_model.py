"""The protocol-aware step model: NVL72 against public measurements, invariants, families."""
import json
import math
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.collectives import ALGORITHMS, PriceOptions, by_size, price
from fabricsim.collectives.cost.family import FAMILIES, HERE, family_of, load_family
from fabricsim.fabrics import build
from fabricsim.topo.errors import BadInput

GiB = 2 ** 30
# CoreWeave GB200 NVL72 nccl-tests all_reduce_perf, 72 ranks, busbw GB/s (issue 13)
MEASURED_BUSBW = {4 * GiB: 839.2, 8 * GiB: 834.6}


@pytest.fixture(scope="module")
def nvl72():
    G = build("nvl72")
    return G, by_size(G, 72)


@pytest.mark.parametrize("size", sorted(MEASURED_BUSBW))
def test_nvl72_all_reduce_busbw_near_measurement(nvl72, size):
    G, g = nvl72
    r = price(G, "all-reduce", groups=g, size_bytes=size)
    assert (r.algorithm, r.protocol) == ("nvls", "simple")
    assert r.busbw_GBps == pytest.approx(MEASURED_BUSBW[size], rel=0.15)


def test_nvl72_8_byte_all_reduce_is_nvls_and_microseconds(nvl72):
    G, g = nvl72
    r = price(G, "all-reduce", groups=g, size_bytes=8)
    # NCCL's tuner on 72 ranks: NVLS's 25 us latency beats a ring's 142 LL steps (NCCL runs no
    # one-shot all-pairs all-reduce, so auto does not price one)
    assert (r.algorithm, r.protocol) == ("nvls", "simple")
    ring = price(G, "all-reduce", groups=g, size_bytes=8, algorithm="ring")
    assert ring.protocol == "ll" and ring.time_s > r.time_s
    assert 5e-6 <= r.time_s <= 100e-6
    # the ideal model has no protocol floor: the default is slower at 8 B
    assert r.time_s > price(G, "all-reduce", groups=g, size_bytes=8, protocol="ideal").time_s


def test_nvl72_time_monotone_in_size(nvl72):
    G, g = nvl72
    times = [price(G, "all-reduce", groups=g, size_bytes=8 * 4 ** k).time_s for k in range(16)]   # 8 B .. 8 GiB
    assert 8 * 4 ** 15 == 8 * GiB
    assert all(b >= a for a, b in zip(times, times[1:]))


@pytest.mark.parametrize("protocol", ["ll", "ll128", "simple"])
@pytest.mark.parametrize("algorithm", ["ring", "direct", "nvls"])
@pytest.mark.parametrize("size", [2 ** 12, 2 ** 24, 2 ** 32])
def test_busbw_never_above_the_protocol_fraction_of_the_hardware(nvl72, protocol, algorithm, size):
    G, g = nvl72
    fam = family_of(G)
    if protocol not in fam.protocols_for(algorithm):
        with pytest.raises(BadInput, match="not available"):
            price(G, "all-reduce", groups=g, size_bytes=size, algorithm=algorithm, protocol=protocol)
        return
    r = price(G, "all-reduce", groups=g, size_bytes=size, algorithm=algorithm, protocol=protocol)
    hw = price(G, "all-reduce", groups=g, size_bytes=size, algorithm=algorithm, protocol="ideal")
    carry_GBps = size / hw.bandwidth_time_s / 1e9          # what the links carry at raw line rate
    assert r.algbw_GBps <= fam.bw_fraction[protocol] * carry_GBps * (1 + 1e-12)
    # and exactly the fraction x efficiency of it in the bandwidth part, on the channels NCCL
    # opens for this size (NVLS keeps its channels; its delivered fraction goes with the group size)
    n = len(g[0])
    extra = fam.in_network_for(n) if algorithm == "nvls" else \
        fam.channels_for(algorithm, protocol, size, n) / fam.channels
    assert r.bandwidth_time_s == pytest.approx(
        hw.bandwidth_time_s / (fam.bw_fraction[protocol] * fam.efficiency * extra), rel=1e-12)


def test_in_network_bound_is_the_family_s_on_any_reducing_fabric():
    """Same mechanism off NVLink: Helios with reducing switches prices NVLS at its family's bound."""
    G = build("helios")
    for _, d in G.nodes(data=True):
        if d["kind"] == "switch":
            d["reduces"] = True
    g = by_size(G, 72)
    fam = family_of(G)
    assert fam.name == "ualink"
    r = price(G, "all-reduce", groups=g, size_bytes=GiB, algorithm="nvls", protocol="simple")
    ideal = price(G, "all-reduce", groups=g, size_bytes=GiB, algorithm="nvls", protocol="ideal")
    assert r.bandwidth_time_s == pytest.approx(ideal.bandwidth_time_s / (fam.efficiency * fam.in_network_efficiency),
                                               rel=1e-12)
    G.graph["family"] = "nvlink5"
    r5 = price(G, "all-reduce", groups=g, size_bytes=GiB, algorithm="nvls", protocol="simple")
    f5 = load_family("nvlink5")
    assert r5.bandwidth_time_s == pytest.approx(ideal.bandwidth_time_s / (f5.efficiency * f5.in_network_efficiency),
                                                rel=1e-12)


def test_ll_moves_half_the_data_rate_of_simple(nvl72):
    G, g = nvl72
    kw = dict(groups=g, size_bytes=GiB, algorithm="ring")
    ll, simple = price(G, "all-reduce", protocol="ll", **kw), price(G, "all-reduce", protocol="simple", **kw)
    assert ll.bandwidth_time_s == pytest.approx(2 * simple.bandwidth_time_s, rel=1e-12)
    assert (ll.protocol, simple.protocol) == ("ll", "simple")


def test_nccl_families_add_step_latency_and_transfer_as_nccls_tuner(nvl72):
    """NCCL's tuner: time = latency + bytes / bandwidth, at every size (no overlap of the two), plus
    the family's pipeline fill (tests/collectives/cost/test_fill.py)."""
    G, g = nvl72
    fam = family_of(G)
    assert fam.time_model == "additive"
    base = (fam.launch_us + fam.base_latency_us("ring", "simple")) * 1e-6
    for size in (2 ** 10, 2 ** 24, 8 * GiB):
        r = price(G, "all-reduce", groups=g, size_bytes=size, algorithm="ring", protocol="simple")
        ph = r.phases[0]
        fill = r.bandwidth_time_s * fam.fill_bytes(size, r.channels) / size
        assert r.time_s == pytest.approx(base + fill + ph.repeat * (ph.step_latency_s + ph.step_bandwidth_s),
                                         rel=1e-12)
    bw = [price(G, "all-reduce", groups=g, size_bytes=s, algorithm="ring", protocol="simple").busbw_GBps
          for s in (2 ** 20, 2 ** 24, 2 ** 28, 2 ** 32)]
    assert bw == sorted(bw) and bw[0] < bw[-1]


def test_pipelined_families_hide_latency_then_transfer():
    """A compiler-scheduled family (tpu-ici) overlaps chunks: latency-bound small, bandwidth-bound large."""
    G = build("torus", dims="4x4")
    g = by_size(G, 4)
    fam = family_of(G)
    assert fam.time_model == "pipelined" and fam.launch_us == 0
    base = fam.base_latency_us("ring", "simple") * 1e-6
    small = price(G, "all-reduce", groups=g, size_bytes=2 ** 10, algorithm="ring", protocol="simple")
    ph = small.phases[0]
    # one chunk per step: the latency of 2(n-1) steps, the transfer hidden under it
    assert small.time_s == pytest.approx(base + ph.repeat * ph.step_latency_s, rel=1e-12)
    big = price(G, "all-reduce", groups=g, size_bytes=8 * GiB, algorithm="ring", protocol="simple")
    assert big.time_s == pytest.approx(base + big.bandwidth_time_s, rel=1e-12)


def test_ironwood_is_raw_100_GBps_and_the_efficiency_applies_once():
    G = build("ironwood", dims=(4, 4, 8))
    assert {e["capacity_gbps"] / e["lanes"] * 4 / 8 for *_, e in G.edges(data=True)} == {100.0}
    g = by_size(G, 128)
    kw = dict(groups=g, size_bytes=GiB, algorithm="torus-rings")
    ideal = price(G, "all-reduce", protocol="ideal", **kw)
    default = price(G, "all-reduce", **kw)
    assert default.protocol == "simple" and family_of(G).efficiency == 0.9
    assert default.bandwidth_time_s == pytest.approx(ideal.bandwidth_time_s / 0.9, rel=1e-12)
    # a user efficiency replaces the family's (it is not applied on top)
    mine = price(G, "all-reduce", efficiency=0.9, **kw)
    assert mine.bandwidth_time_s == pytest.approx(default.bandwidth_time_s, rel=1e-12)


class _Cal:
    """A calibration by the contract (collectives/cost/calibration.py): lookup -> merged params."""

    def __init__(self, **params):
        self.params = params

    def lookup(self, collective, algorithm, protocol):
        return dict(self.params)


def test_calibration_replaces_family_efficiency_and_latencies(nvl72):
    G, g = nvl72
    kw = dict(groups=g, size_bytes=GiB, algorithm="ring", protocol="simple")
    default = price(G, "all-reduce", **kw)
    cal = price(G, "all-reduce", calibration=_Cal(efficiency=0.401, base_latency_us=100.0), **kw)
    assert cal.bandwidth_time_s == pytest.approx(2 * default.bandwidth_time_s, rel=1e-12)
    small = dict(kw, size_bytes=1024)
    d0 = price(G, "all-reduce", **small)
    d1 = price(G, "all-reduce", calibration=_Cal(base_latency_us=100.0, step_latency_us=0.0), **small)
    steps = d0.phases[0].repeat
    step_s = family_of(G).step_latency_us("ring", "simple") * 1e-6
    base_s = family_of(G).base_latency_us("ring", "simple") * 1e-6
    launch_s = family_of(G).launch_us * 1e-6     # a calibrated base latency stands for the launch too
    fill_s = d0.bandwidth_time_s * family_of(G).fill_bytes(1024, d0.channels) / 1024    # and for the fill
    assert d1.time_s - d0.time_s == pytest.approx(100e-6 - base_s - launch_s - fill_s - steps * step_s, rel=1e-9)
    # on NVLS a calibrated efficiency is all the in-network kernels deliver: the family's bound is not applied on top
    nv = dict(kw, algorithm="nvls")
    ideal = price(G, "all-reduce", **dict(nv, protocol="ideal"))
    assert price(G, "all-reduce", calibration=_Cal(efficiency=0.47), **nv).bandwidth_time_s == pytest.approx(
        ideal.bandwidth_time_s / 0.47, rel=1e-12)
    assert price(G, "all-reduce", efficiency=0.47, **nv).bandwidth_time_s == pytest.approx(
        ideal.bandwidth_time_s / 0.47, rel=1e-12)
    # legacy step_overhead_ns overrides the calibration's step latency
    d2 = price(G, "all-reduce", calibration=_Cal(step_latency_us=50.0), step_overhead_ns=0.0, **small)
    d3 = price(G, "all-reduce", calibration=_Cal(step_latency_us=0.0), **small)
    assert d2.time_s == pytest.approx(d3.time_s, rel=1e-12)


def test_price_options_is_the_same_price_as_keywords(nvl72):
    G, g = nvl72
    opts = PriceOptions(size_bytes=GiB, algorithm="ring", protocol="ll128")
    a = price(G, "all-reduce", groups=g, options=opts)
    b = price(G, "all-reduce", groups=g, size_bytes=GiB, algorithm="ring", protocol="ll128")
    assert a.time_s == b.time_s and a.protocol == "ll128"
    with pytest.raises(Exception):
        opts.protocol = "ll"          # frozen
    with pytest.raises(BadInput, match="protocol 'fast'; choose one of: auto, ll, ll128, simple, ideal"):
        price(G, "all-reduce", groups=g, size_bytes=GiB, protocol="fast")


def test_protocol_not_on_the_family_is_one_line():
    G = build("torus", dims="4x4")
    with pytest.raises(BadInput, match="not available .* tpu-ici family, which runs simple there; choose auto, ideal, simple"):
        price(G, "all-reduce", groups=by_size(G, 16), size_bytes=GiB, protocol="ll")
    res = CliRunner().invoke(main, ["price", "all-reduce", "--fabric", "torus", "--set", "dims=4x4",
                                    "--size", "1GiB", "--protocol", "ll"])
    assert res.exit_code == 2 and "tpu-ici" in res.output and "Traceback" not in res.output


def test_method_names_the_fast_path_and_the_refusals(nvl72):
    G, g = nvl72
    nv = price(G, "all-reduce", groups=g, size_bytes=GiB, algorithm="nvls")
    assert nv.method["path"] == "in-network"
    T = build("torus", dims="4x4x4")
    tg = by_size(T, 64)
    t = price(T, "all-to-all", groups=tg, size_bytes=GiB, algorithm="direct")
    assert t.method["path"] == "translations" and 0 < t.method["quotient_size"] < t.method["flows"]
    pf = price(T, "all-to-all", groups=tg, size_bytes=GiB, algorithm="direct", symmetry=False)
    assert pf.method["path"] == "per-flow" and pf.method["refused"][0]["method"] == "symmetry"
    ring = price(G, "all-reduce", groups=g, size_bytes=GiB, algorithm="ring")
    assert any("ordered pattern" in x["reason"] for x in ring.method["refused"])
    assert json.loads(json.dumps(ring.as_dict()))["method"]["path"] == ring.method["path"]


def test_cli_explain_and_protocol_in_text_and_json():
    args = ["price", "all-to-all", "--fabric", "torus", "--set", "dims=4x4x4", "--size", "1GiB",
            "--algorithm", "direct"]
    res = CliRunner().invoke(main, args + ["--explain"])
    assert res.exit_code == 0, res.output
    assert "protocol simple" in res.output and "method: translations" in res.output
    assert "exact max-min rates" in res.output
    js = json.loads(CliRunner().invoke(main, args + ["--json", "--protocol", "ideal"]).output)
    assert js["protocol"] == "ideal" and js["method"]["path"] == "translations"
    # the bound says so: the path is the same fold, the rates are not max-min
    res = CliRunner().invoke(main, args + ["--explain", "--bound-only"])
    assert res.exit_code == 0, res.output
    assert "method: translations" in res.output and "link-load bound, not max-min rates" in res.output


def test_family_files_cite_every_figure():
    assert set(FAMILIES) >= {"nvlink5", "nvlink6", "tomahawk-ethernet", "tpu-ici", "ualink"}
    for path in sorted(Path(HERE).glob("*.toml")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            code = line.split("#", 1)[0]
            if "=" not in code or code.strip().startswith("[") or code.split("=", 1)[0].strip() in (
                    "family", "description", "protocols"):
                continue
            comment = line.split("#", 1)[1] if "#" in line else ""
            j = i - 1
            while not comment.strip() and j >= 0 and lines[j].startswith("#"):
                # a block comment above the line: the whole contiguous block
                while j >= 0 and lines[j].startswith("#"):
                    comment = lines[j] + comment
                    j -= 1
            assert re.search(r"\b[FDI]\b|derived from measurement", comment), f"{path.name}:{i + 1}: {line}"
        fam = load_family(path.stem)
        assert 0 < fam.efficiency <= 1 and 0 < fam.in_network_efficiency <= 1
        for algo, spec in fam.algorithms.items():
            assert any(algo in a for a in ALGORITHMS.values()), (path.name, algo)
            for p in spec["protocols"]:
                assert 0 < fam.bw_fraction[p] <= 1 and fam.chunk_bytes[p] > 0
                assert fam.base_latency_us(algo, p) >= 0 and fam.step_latency_us(algo, p) >= 0


def test_catalog_fabrics_name_their_family():
    want = {"nvl72": "nvlink5", "jalapeno-rack": "tomahawk-ethernet", "helios": "ualink", "torus": "tpu-ici"}
    for name, fam in want.items():
        assert build(name).graph["family"] == fam
    assert build("nvl72", generation="vera-rubin").graph["family"] == "nvlink6"


def test_toml_readers_fall_back_to_tomli(monkeypatch):
    """Python 3.10 has no tomllib: the readers import the tomli backport pyproject declares."""
    import importlib
    import sys
    pytest.importorskip("tomli")
    import fabricsim.collectives.cost.family as family_mod
    import fabricsim.fabrics.userfile as userfile
    monkeypatch.setitem(sys.modules, "tomllib", None)       # import tomllib -> ModuleNotFoundError
    try:
        for mod in (userfile, family_mod):
            importlib.reload(mod)
            assert mod.tomllib.__name__ == "tomli"
        family_mod.load_family.cache_clear()
        assert family_mod.load_family("nvlink5").efficiency == 0.802
    finally:
        monkeypatch.undo()
        for mod in (userfile, family_mod):
            importlib.reload(mod)


def test_sweep_ships_a_picklable_calibration():
    import pickle
    from types import MappingProxyType

    from fabricsim.collectives.engine import CalibrationTable
    from fabricsim.collectives.whatif import LocalRunner, sweep

    class Proxy:                       # like a Calibration holding read-only mappings
        flat = MappingProxyType({"efficiency": 0.5})
        sections = MappingProxyType({"all-reduce.ring": MappingProxyType({"step_latency_us": 2.0})})
        path = "cal.toml"

        def lookup(self, c, a, p):
            return CalibrationTable.of(self).lookup(c, a, p)

    t = CalibrationTable.of(Proxy())
    assert pickle.loads(pickle.dumps(t)).lookup("all-reduce", "ring", "simple") == {"efficiency": 0.5,
                                                                                     "step_latency_us": 2.0}
    assert t.lookup("all-gather", "ring", "simple") == {"efficiency": 0.5}
    kw = dict(collective="all-reduce", size_bytes=GiB, group_size=8, algorithm="ring", protocol="simple")
    one = sweep("jalapeno-rack", None, "local-switch", calibration=Proxy(), **kw)
    two = sweep("jalapeno-rack", None, "local-switch", calibration=Proxy(), runner=LocalRunner(2), **kw)
    base = sweep("jalapeno-rack", None, "local-switch", **kw)
    assert one.baseline.bandwidth_time_s == pytest.approx(base.baseline.bandwidth_time_s * 0.977 / 0.5, rel=1e-12)
    assert sorted(s["slowdown"] for s in two.scenarios) == sorted(s["slowdown"] for s in one.scenarios)
