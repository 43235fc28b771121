"""The jalapeno-ce library: Jalapeño's own collective engine, auto on Tomahawk Ethernet with Jalapeño chips only,
priced through the solver."""
import pytest

from fabricsim.collectives.jobs.models import load_model
from fabricsim.collectives.serve import NetworkPricer, library, serve
from fabricsim.collectives.serve.network import _libs_for
from fabricsim.fabrics import build


def test_auto_picks_a_chips_own_library_only_on_that_chip():
    fam = {"tomahawk-ethernet"}
    assert [lib.name for lib in _libs_for("all-reduce", "auto", fam)] == ["nccl"]          # chip unknown
    assert [lib.name for lib in _libs_for("all-reduce", "auto", fam, "tpu8t")] == ["nccl"]
    assert [lib.name for lib in _libs_for("all-reduce", "auto", fam, "jalapeno")] == ["nccl", "jalapeno-ce"]
    assert [lib.name for lib in _libs_for("all-reduce", "jalapeno-ce", fam)] == ["jalapeno-ce"]
    assert library("jalapeno-ce").chips == ("jalapeno",) and library("trtllm").auto


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
    auto = serve(G, "deepseek-r1", mesh="tp=8", concurrency=1)
    assert auto.points[0].library == "all-reduce=jalapeno-ce" and auto.points[0].tpot_s == r.points[0].tpot_s
    nccl = serve(G, "deepseek-r1", mesh="tp=8", concurrency=1, library="nccl")
    assert nccl.points[0].library == "all-reduce=nccl" and r.points[0].tpot_s < nccl.points[0].tpot_s
