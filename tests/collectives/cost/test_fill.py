"""The step model's pipeline-fill term (collectives/cost/step_model.py, families' [fill] tables)."""
import dataclasses

import pytest

from fabricsim.collectives import price
from fabricsim.collectives.cost import family as fam_mod
from fabricsim.collectives.cost.family import family_of, load_family
from fabricsim.collectives.cost.nccl_tests import parse_log
from fabricsim.fabrics import build
from fabricsim.fabrics.registry import parse_params
from fabricsim.topo.errors import BadInput

from repo_paths import DATA, EXAMPLES

MiB, GiB = 2 ** 20, 2 ** 30
DATA = DATA / "nccl"


@pytest.fixture(scope="module")
def h200():
    G = build("hgx-h100", **parse_params("hgx-h100", {"generation": "h200"}))
    return G, [tuple(range(8))]


def _fill_s(r, G, size):
    return r.bandwidth_time_s * family_of(G).fill_bytes(size, r.channels) / size


def test_fill_is_a_share_of_the_transfer_then_a_constant_time(h200):
    """Below channels x steps x slot / fraction the fill is fraction x the transfer; above, the slots' worth."""
    G, g = h200
    fam = family_of(G)
    cap = fam.channels * fam.fill_steps * fam.fill_slot_bytes
    assert (fam.fill_fraction, fam.fill_steps, cap) == (0.4, 8, 16 * MiB)
    r = price(G, "all-reduce", groups=g, size_bytes=8 * MiB, algorithm="nvls")
    assert r.base_latency_s == pytest.approx(fam.launch_us * 1e-6 + 0.4 * r.bandwidth_time_s, rel=1e-12)
    big = [price(G, "all-reduce", groups=g, size_bytes=s, algorithm="nvls") for s in (GiB, 4 * GiB)]
    fills = [b.base_latency_s - fam.launch_us * 1e-6 for b in big]
    # beyond the cap the fill is the slots' bytes at the call's rate: the same time at every size
    assert fills[0] == pytest.approx(fills[1], rel=1e-9)
    assert fills[0] == pytest.approx(big[0].bandwidth_time_s * cap / GiB, rel=1e-12)


def test_fill_changes_with_its_constants(h200, monkeypatch):
    """The answer follows the family file: no fill term, no fill time."""
    G, g = h200
    with_fill = price(G, "all-reduce", groups=g, size_bytes=16 * MiB, algorithm="nvls")
    orig = fam_mod.load_family

    def no_fill(name):
        return dataclasses.replace(orig(name), fill_fraction=0.0)

    monkeypatch.setattr(fam_mod, "load_family", no_fill)
    without = price(G, "all-reduce", groups=g, size_bytes=16 * MiB, algorithm="nvls")
    assert with_fill.time_s - without.time_s == pytest.approx(0.4 * without.bandwidth_time_s, rel=1e-9)
    assert not any("pipeline fill" in n for n in without.notes)
    assert any("pipeline fill" in n for n in with_fill.notes)


def test_no_fill_on_all_to_all_calibrated_base_or_ideal(h200):
    G, g = h200
    fam = family_of(G)
    a2a = price(G, "all-to-all", groups=g, size_bytes=16 * MiB)
    assert not any("pipeline fill" in n for n in a2a.notes)
    ideal = price(G, "all-reduce", groups=g, size_bytes=16 * MiB, protocol="ideal")
    assert ideal.base_latency_s == 0.0

    class _Cal:
        def lookup(self, *a):
            return {"base_latency_us": 50.0}

    cal = price(G, "all-reduce", groups=g, size_bytes=16 * MiB, algorithm="ring", protocol="simple",
                calibration=_Cal())
    assert cal.base_latency_s == pytest.approx(50e-6, rel=1e-12)
    assert fam.fill_fraction > 0


def test_no_fill_on_a_rate_nccls_ll_cap_sets():
    """llMaxBw is NCCL's measured LL rate: where it binds, no fill is added on top (A100 ring LL at 1 MiB)."""
    G = build("hgx-a100")
    g = [tuple(range(8))]
    fam = family_of(G)
    r = price(G, "all-reduce", groups=g, size_bytes=MiB, algorithm="ring", protocol="ll")
    assert r.base_latency_s == pytest.approx((fam.launch_us + fam.base_latency_us("ring", "ll")) * 1e-6, rel=1e-12)
    s = price(G, "all-reduce", groups=g, size_bytes=MiB, algorithm="ring", protocol="simple")
    assert s.base_latency_s > (fam.launch_us + fam.base_latency_us("ring", "simple")) * 1e-6


def test_bad_fill_table_is_one_line_bad_input(tmp_path, monkeypatch):
    text = (fam_mod.HERE / "nvlink4.toml").read_text(encoding="utf-8").replace("fraction = 0.4 ", "fraction = 1.5 ")
    (tmp_path / "nvlink4.toml").write_text(text, encoding="utf-8")
    monkeypatch.setattr(fam_mod, "HERE", tmp_path)
    fam_mod.load_family.cache_clear()
    try:
        with pytest.raises(BadInput, match=r"\[fill\] fraction 1.5"):
            load_family("nvlink4")
    finally:
        monkeypatch.undo()
        fam_mod.load_family.cache_clear()


def test_h200_mid_sizes_within_the_issue_bound():
    """The mechanism's point: H200 NVLS (NCCL 2.26) busbw within 25% from 2 to 64 MiB (was +33.5% at 8 MiB)."""
    G = build("hgx-h100", **parse_params("hgx-h100", {"generation": "h200"}))
    pts = [p for p in parse_log(DATA / "h200_8gpu_azure_nvls_nccl2.26.log")[0].points
           if p.in_place and 2 * MiB <= p.size_bytes <= 64 * MiB]
    assert len(pts) >= 6
    for p in pts:
        r = price(G, "all-reduce", groups=[tuple(range(8))], size_bytes=p.size_bytes, algorithm="nvls")
        assert abs(r.busbw_GBps / p.busbw_GBps - 1) <= 0.25, p.size_bytes


# ------------------------------------------------------------------ NCCL's multi-node protocol rows

def test_network_families_carry_nccls_tree_and_ll_rows():
    ib = load_family("infiniband")
    assert ib.bw_fraction_for("tree", "ll") == pytest.approx(1 / 3.8, abs=5e-4)       # tuning.cc: Tree LL / 3.8
    assert ib.bw_fraction_for("tree", "ll128") == pytest.approx(120 / 128)
    assert ib.bw_fraction_for("ring", "ll") == 0.5 and ib.cap_GBps("ring", "ll") == 39.0   # llMaxBws Intel N2
    nv = load_family("nvlink4")
    assert nv.bw_fraction_for("tree", "ll") == 0.5 and nv.cap_GBps("tree", "ll") == 141.0   # one node: the GPU row


def test_a_call_across_nodes_runs_every_phase_at_the_networks_tree_ll_rate():
    """NCCL's tuner prices the whole tree (its NVLink chain too) at busBw / 3.8 once it spans nodes."""
    G = build("rail-cluster", **parse_params("rail-cluster", {"gpu": "h100"}))
    g = [tuple(range(16))]
    kw = dict(groups=g, size_bytes=MiB, algorithm="tree")
    ll, simple = (price(G, "all-reduce", protocol=p, **kw) for p in ("ll", "simple"))
    assert len(ll.phases) == 2
    for a, b in zip(ll.phases, simple.phases):
        assert a.rate_scale / b.rate_scale >= 3.8 * (1 - 1e-9)
    # one node: the NVLink family's LL (half of Simple's rate, or its 141 GB/s cap), nothing of the network's
    H = build("hgx-h100")
    one = [price(H, "all-reduce", groups=[tuple(range(8))], size_bytes=MiB, algorithm="ring", protocol=p)
           for p in ("ll", "simple")]
    assert 2.0 <= one[0].phases[0].rate_scale / one[1].phases[0].rate_scale < 3.0


@pytest.mark.slow
def test_family_files_carry_the_fill_grids_least_mean():
    """The [fill] pair in the family files is what examples/validation.py --fit-fill finds on the fitted logs."""
    import sys
    sys.path.insert(0, str(EXAMPLES))
    try:
        import validation
    finally:
        sys.path.pop(0)
    mean, _, frac, slot = min(validation.fit_fill())
    for name in ("nvlink3", "nvlink4", "nvlink5", "nvlink6", "infinity-fabric", "ualink"):
        f = load_family(name)
        assert (f.fill_fraction, f.fill_slot_bytes) == (frac, slot), name
    assert mean < 10.0
