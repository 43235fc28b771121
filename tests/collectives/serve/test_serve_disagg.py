"""serve --disaggregate: closed forms on a one-layer toy over 2 + 2 chips of a 4-chip ring (KV bytes,
transfer time = bytes / bottleneck + latency, TTFT composition, the closed-loop throughput bound),
sensitivity to a link between the pools and to a failure on it, one-line bad input."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from fabricsim.cli import main
from fabricsim.collectives.jobs.models import Model
from fabricsim.collectives.serve import Arch, ChipConstants, serve, serve_failed
from fabricsim.collectives.serve.disagg import kv_traffic, parse_disaggregate
from fabricsim.fabrics import build
from fabricsim.fabrics.accelerators import Accelerator
from fabricsim.topo.errors import BadInput

CHIP = Accelerator(name="toy", description="toy", flops_per_s={"fp4": 4e15, "fp8": 2e15, "bf16": 1e15},
                   hbm_bytes=100e9, hbm_Bps=4e12, tdp_w=1000.0, usd_per_chip_hour=2.0)
ISL, OSL = 4096, 64
POOLS = {"prefill": 2, "decode": 2, "protocol": "ideal", "prefill_mesh": "tp=2"}


def toy() -> Arch:
    """One dense layer: GQA 4 heads / 2 KV heads of 64, hidden 256, KV at 1 byte per element."""
    m = Model(name="toy", layers=1, first_dense=1, hidden=256, heads=4, kv_heads=2)
    return Arch(model=m, attention="gqa", head_dim=64, moe_intermediate=0, dense_intermediate=1024, vocab=1000,
                expert_bytes_per_param=0.5, other_bytes_per_param=1.0, expert_precision="fp4",
                attention_precision="fp8", kv_bytes=1.0)


def ring():
    return build("torus", dims="4x1x1")     # 4 chips in a ring, 100 GB/s per direction, 1 us per hop


def run(G, C=2, **kw):
    return serve(G, toy(), mesh="tp=2", concurrency=C, isl=ISL, osl=OSL, accelerator=CHIP,
                 disaggregate=kw.pop("disaggregate", POOLS), **kw)


def test_kv_bytes_and_traffic_closed_form():
    a = toy()
    kv = ISL * 2 * 2 * 64 * 1.0 * 1            # tokens x (K and V) x kv_heads x head_dim x bytes x layers
    assert a.kv_bytes_per_sequence(ISL) == kv
    M = kv_traffic(a, ISL, {"tp": 2}, {"tp": 2})
    # TP rank r of each side holds KV head r: prefill rank 0 -> decode rank 2, 1 -> 3, half each
    assert M[0, 2] == M[1, 3] == kv / 2 and M.sum() == kv
    # decode tp=1 (two replicas): the single prompt goes whole to decode rank 2, half from each prefill rank
    M1 = kv_traffic(a, ISL, {"tp": 2}, {"tp": 1, "dp": 2})
    assert M1[0, 2] == M1[1, 2] == kv / 2 and M1[:, 3].sum() == 0
    # MLA-like (one KV head): every decode TP rank needs the whole cache, each prefill rank sends half of it
    m1 = Arch(**{**a.__dict__, "model": Model(name="t1", layers=1, first_dense=1, hidden=256, heads=4, kv_heads=1)})
    M2 = kv_traffic(m1, ISL, {"tp": 2}, {"tp": 2})
    kv1 = m1.kv_bytes_per_sequence(ISL)
    assert (M2[:2, 2:] == kv1 / 2).all() and M2.sum() == 2 * kv1


def test_transfer_time_and_ttft_composition():
    p = run(ring()).points[0]
    d = p.disagg
    kv = ISL * 2 * 2 * 64
    # flows 0->2 and 1->3 (kv/2 each) are two hops either way round the ring; each splits evenly over both
    # ways, so links 0->3 and 1->2 each carry half of both = kv/2 bytes at 100 GB/s; latency = the ideal
    # model's 1 us per step + 2 hops x 1 us
    alone = (kv / 2) / 100e9 + 1e-6 + 2 * 1e-6
    assert d.kv_bytes_per_prompt == kv and d.kv_bytes_per_round == kv and d.prefill_groups == 1
    assert d.kv_transfer_alone_s == pytest.approx(alone, rel=1e-9)
    assert d.kv_transfer_s >= d.kv_transfer_alone_s
    assert d.queue_s == 0.0 and d.bound == "decode"
    assert p.ttft_s == pytest.approx(p.prefill.time_s + d.kv_transfer_s, rel=1e-12)
    assert p.tpot_s == pytest.approx(p.decode.time_s, rel=1e-12)       # no interleaved prefills
    r0 = p.prefill.time_s + d.kv_transfer_s + OSL * p.decode.time_s
    assert p.e2e_s == pytest.approx(r0, rel=1e-12)
    assert p.tokens_per_s == pytest.approx(2 * (ISL + OSL) / r0, rel=1e-12)
    assert p.chips == 4 and p.tokens_per_s_per_kw == pytest.approx(p.tokens_per_s / 4, rel=1e-12)
    assert p.as_dict()["disaggregate"]["kv_transfer_alone_ms"] == pytest.approx(alone * 1e3, rel=1e-9)


def test_prefill_pool_bound_queues():
    # at high concurrency the one prefill group (one prompt per step) bounds the request rate
    p = run(ring(), C=4096).points[0]
    d = p.disagg
    cap = 1 / max(p.prefill.time_s, d.kv_transfer_s)
    assert d.requests_per_s == pytest.approx(cap, rel=1e-12) and cap < d.decode_requests_per_s
    assert d.bound == "prefill" and p.bound.startswith("prefill-") and d.queue_s > 0
    assert p.e2e_s == pytest.approx(4096 / cap, rel=1e-12)
    assert p.ttft_s == pytest.approx(p.prefill.time_s + d.kv_transfer_s + d.queue_s, rel=1e-12)


def test_link_between_pools_and_failure_change_ttft():
    G = ring()
    base = run(G).points[0]
    H = G.copy()
    for u, v in (("c01.00.00", "c02.00.00"), ("c00.00.00", "c03.00.00")):   # the links joining the pools
        H[u][v]["capacity_gbps"] /= 4
    slow = run(H).points[0]
    assert slow.ttft_s > base.ttft_s and slow.disagg.kv_transfer_alone_s > base.disagg.kv_transfer_alone_s
    assert slow.tpot_s == pytest.approx(base.tpot_s, rel=1e-12)   # decode's all-reduce is on link 2--3 only
    f = serve_failed(G, toy(), ["link:c01.00.00--c02.00.00"], mesh="tp=2", concurrency=2, isl=ISL, osl=OSL,
                     accelerator=CHIP, disaggregate=POOLS)
    assert f.after[0].ttft_s > f.before.points[0].ttft_s
    assert f.after[0].disagg.prefill_mesh == f.before.points[0].disagg.prefill_mesh


def test_pools_must_fit_and_bad_specs():
    with pytest.raises(BadInput, match=r"prefill=3,decode=2 needs 5 chips; the fabric has 4"):
        run(ring(), disaggregate={"prefill": 3, "decode": 2})
    for spec in ("prefill=2", "prefill=x,decode=2", "decode=2,prefill=0", "prefill=1,decode=1,extra=2"):
        with pytest.raises(BadInput):
            parse_disaggregate(spec, 4)
    with pytest.raises(BadInput, match="protocol"):
        parse_disaggregate({"prefill": 1, "decode": 1, "protocol": "fast"}, 4)
    with pytest.raises(BadInput, match="covers 4 chips"):
        parse_disaggregate({"prefill": 2, "decode": 2, "prefill_mesh": "tp=4"}, 4)
    assert parse_disaggregate("prefill=1,decode=3", 4).decode == 3


def test_cli_disaggregate_json():
    res = CliRunner().invoke(main, ["serve", "--model", "gpt-oss-120b", "--fabric", "jalapeno-rack", "--mesh", "tp=8",
                                    "--concurrency", "8", "--isl", "1024", "--osl", "128",
                                    "--disaggregate", "prefill=8,decode=8", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)["points"][0]["disaggregate"]
    assert d["prefill_chips"] == 8 and d["decode_chips"] == 8 and d["kv_transfer_ms"] > 0
    bad = CliRunner().invoke(main, ["serve", "--model", "gpt-oss-120b", "--fabric", "jalapeno-rack",
                                    "--disaggregate", "prefill=100,decode=100"])
    assert bad.exit_code != 0 and "the fabric has 128" in bad.output and "--disaggregate" in bad.output


def test_prefill_mesh_search_takes_the_least_e2e():
    G = ring()
    free = {k: v for k, v in POOLS.items() if k != "prefill_mesh"}
    for C in (2, 4096):
        p = run(G, C=C, disaggregate=free).points[0]
        forced = [run(G, C=C, disaggregate=free | {"prefill_mesh": pm}).points[0] for pm in ("tp=2", "tp=1,dp=2")]
        assert p.e2e_s == pytest.approx(min(f.e2e_s for f in forced), rel=1e-12)
        assert p.disagg.prefill_mesh in ("tp=2", "tp=1,dp=2")
    # the decode batch is C rounded up to the decode pool's TP groups (tp=1 here: two replicas)
    q = serve(G, toy(), mesh="tp=1", concurrency=3, isl=ISL, osl=OSL, accelerator=CHIP, disaggregate=POOLS).points[0]
    assert q.mesh == {"tp": 1, "dp": 2} and q.disagg.decode_batch == 4 and q.decode.sequences == 4


def test_disaggregate_refuses_menu_and_a_mesh_that_does_not_divide_the_pool():
    with pytest.raises(BadInput, match="does not divide the 2-chip decode pool"):
        serve(ring(), toy(), mesh="tp=4", concurrency=2, isl=ISL, osl=OSL, accelerator=CHIP, disaggregate=POOLS)
    with pytest.raises(BadInput, match="drop --disaggregate"):
        serve(ring(), "gpt-oss-120b", menu="inferencex", accelerator=CHIP, disaggregate=POOLS)


def test_transfer_shares_links_with_the_decode_all_reduce():
    # the decode pool's TP all-reduce runs on link 2--3, which the transfer's 1->2->3 half also crosses:
    # priced together (mix), the transfer ends later the bigger the decode batch's all-reduce
    small, big = (run(ring(), C=C).points[0].disagg for C in (2, 4096))
    assert small.kv_transfer_alone_s == big.kv_transfer_alone_s
    assert big.kv_transfer_s > small.kv_transfer_s > small.kv_transfer_alone_s
    assert big.decode_layer_slowdown > 1.0
