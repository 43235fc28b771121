"""DeepEP's measured EP8 dispatch / combine (tests/data/moe/deepep.toml) priced through --moe.

DeepEP's GB/s (its tests/elastic/test_ep.py) is what a rank receives -- one copy per
(token, rank), its own included -- times the bytes of a received token, over the kernel
time.  So the model's figure is the same received bytes over the model's time, with one
copy per (token, destination rank) as DeepEP's kernels send them (``dedup=rank``).
"""
from __future__ import annotations

from math import comb

import numpy as np
import pytest

from fabricsim.collectives import by_size, price
from fabricsim.collectives.traffic import MoESpec, moe_traffic
from fabricsim.fabrics import build
from repo_paths import DATA

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

DEEPEP = tomllib.loads((DATA / "moe" / "deepep.toml").read_text())
# bytes a received token carries in DeepEP's accounting (test_ep.py): fp8 hidden + 1 fp32 scale
# per 128 elements + 8 int64 top-k ids + 8 fp32 weights; bf16 combine: hidden x 2 + the same ids / weights
EXTRA_FP8 = 7168 // 128 * 4 + 8 * 8 + 8 * 4          # 224 + 64 + 32 = 320 B
EXTRA_BF16 = 8 * 8 + 8 * 4                            # 96 B


@pytest.mark.parametrize("fabric", ["hgx-b200", "nvl72"])
def test_deepep_sm100_ep8_within_15_percent(fabric):
    m = DEEPEP["v2_sm100_ep8_64sm"]
    ep, hidden, k, E = m["ep"], m["hidden"], m["topk"], m["experts"]
    tokens = sum(m["tokens_per_rank"] - r for r in range(ep))     # test_ep.py: rank r holds num_tokens - r
    reach = 1 - comb(E - E // ep, k) / comb(E, k)                 # a token reaches a given rank (uniform router)
    received = tokens * reach                                     # tokens each rank receives, its own included
    G = build(fabric)
    g = by_size(G, ep)[:1]
    for dtype, per_token, measured in (("fp8", hidden + EXTRA_FP8, m["dispatch_GBps"]),
                                       ("bf16", 2 * hidden + EXTRA_BF16, m["combine_GBps"])):
        width = {"fp8": 1, "bf16": 2}[dtype]
        spec = MoESpec.parse(f"experts={E},top_k={k},tokens={tokens},hidden={per_token // width},dtype={dtype},"
                             f"skew=balanced")
        T = moe_traffic(spec, ep).matrix
        r = price(G, "all-to-all", groups=g, traffic=T, algorithm="direct")
        model_GBps = received * per_token / r.time_s / 1e9
        assert model_GBps == pytest.approx(measured, rel=0.15), (fabric, dtype, model_GBps, measured)


def test_counting_a_copy_per_expert_would_miss_deepep_by_far():
    """dedup=expert (a plain all-to-all-v) sends 1.51x the bytes: its time misses DeepEP's by > 25%."""
    m = DEEPEP["v2_sm100_ep8_64sm"]
    ep, hidden, k, E = m["ep"], m["hidden"], m["topk"], m["experts"]
    tokens = sum(m["tokens_per_rank"] - r for r in range(ep))
    received = tokens * (1 - comb(E - E // ep, k) / comb(E, k))
    G = build("hgx-b200")
    spec = MoESpec.parse(f"experts={E},top_k={k},tokens={tokens},hidden={hidden + EXTRA_FP8},dtype=fp8,"
                         f"skew=balanced,dedup=expert")
    r = price(G, "all-to-all", groups=by_size(G, ep)[:1], traffic=moe_traffic(spec, ep).matrix, algorithm="direct")
    measured_time = received * (hidden + EXTRA_FP8) / (m["dispatch_GBps"] * 1e9)
    assert r.time_s > 1.25 * measured_time


@pytest.mark.parametrize("key", ["v2_sm90_ep8x2_12sm", "v2_sm90_ep8x4_6sm"])
def test_deepep_sm90_internode_with_node_dedup_within_25_percent(key):
    """DeepEP V2's scale-out figure counts one token per (token, destination node), the source's own node
    included (test_ep.py: ``num_scaleout_send_tokens``), over the kernel time: its internode kernels send a
    token once per node over RDMA and forward it inside the node.  Priced with ``dedup=node`` on H100 nodes
    with one 400G CX7 per GPU (rail-cluster) and contiguous experts, as test_ep.py places them; with one
    copy per rank (``dedup=rank``) the same figure is off by more than 40%."""
    m = DEEPEP[key]
    ep, nodes, hidden, k, E = m["ep"], m["nodes"], m["hidden"], m["topk"], m["experts"]
    tokens = sum(m["tokens_per_rank"] - r for r in range(ep))
    p_node = 1 - comb(E - E // nodes, k) / comb(E, k)            # a token needs a given node (uniform router)
    sent = m["tokens_per_rank"] * nodes * p_node                  # rank 0's (token, node) copies, its node included
    G = build("rail-cluster", nodes=nodes, gpu="h100")
    g = by_size(G, ep)[:1]
    for dtype, per_token, measured, phase in (("fp8", hidden + EXTRA_FP8, m["dispatch_GBps"], "dispatch"),
                                              ("bf16", 2 * hidden + EXTRA_BF16, m["combine_GBps"], "combine")):
        width = {"fp8": 1, "bf16": 2}[dtype]
        model = {}
        for dedup in ("node", "rank"):
            spec = MoESpec.parse(f"experts={E},top_k={k},tokens={tokens},hidden={per_token // width},dtype={dtype},"
                                 f"skew=balanced,placement=contiguous,phase={phase},dedup={dedup}")
            r = price(G, "all-to-all", groups=g, traffic=moe_traffic(spec, ep).matrix, algorithm="direct")
            model[dedup] = sent * per_token / r.time_s / 1e9
        assert model["node"] == pytest.approx(measured, rel=0.25), (key, phase, model, measured)
        assert model["rank"] < 0.6 * measured, (key, phase, model, measured)


@pytest.mark.parametrize("key", ["v1_h800_internode_ep16", "v1_h800_internode_ep32", "v1_h800_internode_ep64"])
def test_deepep_v1_h800_internode_within_35_percent(key):
    """DeepEP V1's internode table ran on H800 nodes (NVLink cut to ~160 GB/s measured, 400 GB/s bidir spec)
    with one CX7 per GPU; test_internode.py counts one RDMA token per (token, node), its own node included,
    of hidden x (1 + 4/128) fp8 bytes (bf16 combine: hidden x 2), 4,096 tokens per rank, groups = nodes and
    top-min(nodes, 4) groups (the limit binds at 8 nodes: a token reaches at most 4).  On H800 nodes the
    forwarding inside the node is what binds at 2 nodes; priced on H100 nodes the same job comes out more
    than twice as fast."""
    from fabricsim.collectives.traffic.moe import _miss
    m = DEEPEP[key]
    ep, nodes, hidden, k, E = m["ep"], m["nodes"], m["hidden"], m["topk"], m["experts"]
    route = f"groups={nodes},topk_groups={min(nodes, m['topk_groups'])}"     # test_internode.py: a group per node
    p_node = 1 - _miss(MoESpec.parse(f"experts={E},top_k={k},tokens=1,hidden=1,{route}"), np.arange(E // nodes))
    sent = m["tokens_per_rank"] * nodes * p_node
    model = {}
    for gpu in ("h800", "h100"):
        G = build("rail-cluster", nodes=nodes, gpu=gpu)
        for dtype, per_token, phase in (("fp8", int(hidden * (1 + 4 / 128)), "dispatch"), ("bf16", 2 * hidden, "combine")):
            width = {"fp8": 1, "bf16": 2}[dtype]
            spec = MoESpec.parse(f"experts={E},top_k={k},tokens={m['tokens_per_rank'] * ep},hidden={per_token // width},"
                                 f"dtype={dtype},skew=balanced,placement=contiguous,phase={phase},dedup=node,{route}")
            r = price(G, "all-to-all", groups=by_size(G, ep)[:1], traffic=moe_traffic(spec, ep).matrix,
                      algorithm="direct")
            model[gpu, phase] = sent * per_token / r.time_s / 1e9
    assert model["h800", "dispatch"] == pytest.approx(m["dispatch_GBps"], rel=0.35), model
    assert model["h800", "combine"] == pytest.approx(m["combine_GBps"], rel=0.35), model
    if nodes == 2:
        assert model["h100", "dispatch"] > 2 * m["dispatch_GBps"]
