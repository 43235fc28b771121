"""The jalapeno-ce library: named only (auto keeps NCCL on Tomahawk), priced through the solver."""
import pytest

from fabricsim.collectives.jobs.models import load_model
from fabricsim.collectives.serve import NetworkPricer, library, serve
from fabricsim.collectives.serve.network import _libs_for
from fabricsim.fabrics import build


def test_auto_does_not_pick_a_what_if_library():
    assert [lib.name for lib in _libs_for("all-reduce", "auto", {"tomahawk-ethernet"})] == ["nccl"]
    assert [lib.name for lib in _libs_for("all-reduce", "jalapeno-ce", {"tomahawk-ethernet"})] == ["jalapeno-ce"]
    assert not library("jalapeno-ce").auto and library("trtllm").auto


def test_named_library_prices_one_shot_at_its_step_latency():
    G = build("jalapeno-rack")
    P = NetworkPricer(G, load_model("deepseek-r1"))
    ce = P.layer("dense", {"tp": 8}, 1, "jalapeno-ce")
    nccl = P.layer("dense", {"tp": 8}, 1, "nccl")
    assert ce.libraries() == {"all-reduce": "jalapeno-ce"} and nccl.libraries() == {"all-reduce": "nccl"}
    assert ce.time_s < nccl.time_s
    # a 14 KB all-reduce: one step of the library's latency + the path (two TH6-class hops' worth at most)
    per = ce.collectives[0].time_s
    lib = library("jalapeno-ce")
    assert lib.step_latency_us * 1e-6 < per < 2 * (lib.step_latency_us + 1.5) * 1e-6


def test_serve_names_the_library_per_point():
    G = build("jalapeno-rack")
    r = serve(G, "deepseek-r1", mesh="tp=8", concurrency=1, library="jalapeno-ce")
    assert r.points[0].library == "all-reduce=jalapeno-ce"
    base = serve(G, "deepseek-r1", mesh="tp=8", concurrency=1)
    assert r.points[0].tpot_s < base.points[0].tpot_s
