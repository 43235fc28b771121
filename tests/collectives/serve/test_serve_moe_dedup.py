"""Each library sends a MoE dispatch its own way: DeepEP's low-latency kernels one copy per (token, expert),
NCCL (DeepEP V2's normal kernels) one per (token, node) forwarded inside the node."""
import numpy as np
import pytest

from fabricsim.collectives.jobs.models import load_model
from fabricsim.collectives.jobs.step import layer_jobs, scaleup_run
from fabricsim.collectives.serve.network import LIBRARIES, NetworkPricer, library
from fabricsim.collectives.traffic import DEDUPS, MoESpec, moe_traffic
from fabricsim.fabrics import build


def test_every_library_names_a_copy_rule():
    assert {library(n).moe_dedup for n in LIBRARIES} <= set(DEDUPS)
    assert library("deepep-ll").moe_dedup == "expert" and library("nccl").moe_dedup == "node"


@pytest.mark.parametrize("fabric, kw, members, want", [
    ("rail-cluster", {"nodes": 4}, range(32), 8),          # HGX nodes of 8
    ("rail-cluster", {"nodes": 4}, range(4, 20), None),    # half a node, a node, half a node: uneven
    ("nvl72", {}, range(48), 48),                          # one NVLink domain
    ("torus", {}, range(8), None),                         # no scale-up domains
])
def test_scaleup_run(fabric, kw, members, want):
    assert scaleup_run(build(fabric, **kw), np.array(list(members))) == want


def _dispatch(G, library_name, ep, tokens):
    net = NetworkPricer(G, load_model("deepseek-r1")).layer("moe", {"tp": 1, "ep": ep}, tokens, library_name)
    return next(c for c in net.collectives if c.name == "dispatch")


def test_deepep_low_latency_sends_one_copy_per_expert():
    G, ep, tokens = build("nvl72"), 8, 8 * 128
    d = _dispatch(G, "deepep-ll", ep, tokens)
    assert d.library == "deepep-ll"
    groups = 72 // ep
    assert d.bytes_total == pytest.approx(groups * tokens / groups * 8 * 7168, rel=1e-12)   # tokens x top-8 x fp8


def test_nccl_across_nodes_sends_one_copy_per_node():
    G, ep, tokens = build("rail-cluster", nodes=4), 32, 32 * 256
    d = _dispatch(G, "nccl", ep, tokens)
    spec = MoESpec(experts=256, top_k=8, tokens=tokens, hidden=7168, skew="balanced", dedup="node", node_ranks=8)
    assert d.bytes_total == pytest.approx(moe_traffic(spec, ep).bytes_total, rel=1e-12)
    # and it is cheaper than the same dispatch with one copy per rank across InfiniBand
    rank = layer_jobs(G, load_model("deepseek-r1"), "moe", mesh={"tp": 1, "ep": ep}, tokens=tokens)[0]
    node = layer_jobs(G, load_model("deepseek-r1"), "moe", mesh={"tp": 1, "ep": ep}, tokens=tokens, dedup="node")[0]
    nd = np.arange(ep) // 8
    cross = lambda m: m[nd[:, None] != nd[None, :]].sum()
    assert cross(node.traffic) < 0.6 * cross(rank.traffic)


def test_inside_one_domain_node_is_rank():
    G, m = build("nvl72"), load_model("deepseek-r1")
    a = layer_jobs(G, m, "moe", mesh={"tp": 1, "ep": 8}, tokens=1024)
    b = layer_jobs(G, m, "moe", mesh={"tp": 1, "ep": 8}, tokens=1024, dedup="node")
    for x, y in zip(a, b):
        np.testing.assert_allclose(y.traffic, x.traffic, rtol=1e-12)


def test_step_takes_the_copy_rule():
    from fabricsim.collectives.jobs.step import step
    m = load_model("deepseek-r1")
    multi = build("rail-cluster", nodes=4)
    t = {d: step(multi, m, mesh="ep=32", batch=4096, dedup=d).time_s for d in ("rank", "node", "expert")}
    assert t["node"] < t["rank"] < t["expert"]
    one = build("nvl72")
    assert step(one, m, mesh="ep=8", batch=512, dedup="node").time_s == step(one, m, mesh="ep=8", batch=512).time_s
    from fabricsim.topo.errors import BadInput
    with pytest.raises(BadInput) as e:
        step(one, m, mesh="ep=8", batch=512, dedup="nodes")
    assert e.value.param == "dedup"


def test_fail_class_folds_the_traffic_each_library_sends():
    """The symmetry fold checks the MoE matrix the library sends: NCCL's per-node forwarding is not uniform
    over the pairs of two HGX nodes, so the fold is refused; DeepEP's per-expert copies are, so it folds."""
    from fabricsim.collectives.serve import serve_failure_class
    G = build("rail-cluster", nodes=2)
    kw = dict(mesh="tp=1,ep=16", concurrency=64, isl=1024, osl=128)
    nccl = serve_failure_class(G, "deepseek-r1", "leaf-switch", library="nccl", **kw)
    assert nccl.folded.startswith("none") and "not uniform" in nccl.folded
    ll = serve_failure_class(G, "deepseek-r1", "leaf-switch", library="deepep-ll", **kw)
    assert "orbit" in ll.folded
