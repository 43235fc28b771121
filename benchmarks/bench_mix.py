"""Benchmark: concurrent jobs (``collectives.jobs.mix``) and MoE all-to-all-v pricing.

Prints, per case, wall seconds, shared max-min solves (events), the makespan and the
ratio that the case checks (1.0 where the mix must equal a closed form):

* ``lockstep``: two identical 64 MiB all-to-alls on jalapeno-rack's 128 chips (solved once
  with multiplicity 2) over the price of one of 128 MiB;
* ``no-lockstep``: the same with one job's members reversed (same flows, solved as 2 x 16,256);
* ``chain``: 58 MoE layers (dispatch fp8 then combine bf16, ``after`` each other) over the
  sum of their solo prices;
* ``contended``: a sampled MoE dispatch beside 16 ring all-reduces of 8 (many distinct finish
  times: one full max-min solve per event);
* ``moe-pod``: a sampled MoE dispatch (experts=256, top_k=8, 1,024 tokens) over the
  2,048-chip pod, priced alone (sparse: only the 8k copies are routed).

Not a test: run by hand.  Measured on the shared 2-core VM (other jobs running), 2026-12-03:
lockstep 0.03 s (1 solve, ratio 1.000000), no-lockstep 0.05 s (1 solve, ratio 1.000000),
chain 22.6 s (0 shared solves, ratio 1.000000: all of it is the two solo prices of the sampled
dispatch and combine matrices, ~1,000 solver events each), contended 42.7 s (1,087 solves,
~0.04 s each on ~8-16k flows), moe-pod 1.1 s (imbalance 11.8: 256 experts on 2,048 ranks).

    python benchmarks/bench_mix.py [--skip-slow]
"""
from __future__ import annotations

import argparse
import time

from fabricsim.collectives import by_size, price
from fabricsim.collectives.jobs import Job, mix
from fabricsim.collectives.traffic import MoESpec, moe_traffic
from fabricsim.fabrics import build

S = 2.0**26
MOE = "experts=256,top_k=8,tokens=1024,hidden=7168"


def _row(name, t0, r, ratio=None):
    extra = f"  ratio {ratio:.6f}" if ratio is not None else ""
    print(f"{name:12s} {time.perf_counter() - t0:8.2f} s  {r.events:6,d} solves  makespan {r.makespan_s * 1e6:10.2f} us"
          f"{extra}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-slow", action="store_true", help="Leave out the contended case.")
    args = ap.parse_args(argv)
    G = build("jalapeno-rack")
    g = by_size(G, 128)
    two = price(G, "all-to-all", groups=g, size_bytes=2 * S, algorithm="direct")

    t0 = time.perf_counter()
    r = mix(G, [Job("a", "all-to-all", g, S, algorithm="direct"), Job("b", "all-to-all", g, S, algorithm="direct")])
    _row("lockstep", t0, r, r.makespan_s / two.time_s)

    t0 = time.perf_counter()
    rev = [tuple(reversed(x)) for x in g]
    r = mix(G, [Job("a", "all-to-all", g, S, algorithm="direct"), Job("b", "all-to-all", rev, S, algorithm="direct")])
    _row("no-lockstep", t0, r, r.makespan_s / two.time_s)

    t0 = time.perf_counter()
    d = moe_traffic(MoESpec.parse(MOE + ",dtype=fp8"), 128).matrix
    c = moe_traffic(MoESpec.parse(MOE + ",dtype=bf16,phase=combine"), 128).matrix
    jobs, prev = [], ()
    for layer in range(58):
        jobs.append(Job(f"L{layer}.dispatch", "all-to-all", g, traffic=d, algorithm="direct", after=prev))
        jobs.append(Job(f"L{layer}.combine", "all-to-all", g, traffic=c, algorithm="direct",
                        after=(f"L{layer}.dispatch",)))
        prev = (f"L{layer}.combine",)
    r = mix(G, jobs)
    _row("chain", t0, r, r.makespan_s / sum(j.solo_s for j in r.jobs))

    if not args.skip_slow:
        t0 = time.perf_counter()
        r = mix(G, [Job("dispatch", "all-to-all", g, traffic=d, algorithm="direct"),
                    Job("tp", "all-reduce", by_size(G, 8), 2.0**24, algorithm="ring")])
        _row("contended", t0, r)

    P = build("jalapeno-pod", racks=16, leaf="switched")
    t0 = time.perf_counter()
    t = moe_traffic(MoESpec.parse(MOE), 2048)
    rp = price(P, "all-to-all", groups=by_size(P, 2048), traffic=t.matrix, algorithm="direct")
    print(f"{'moe-pod':12s} {time.perf_counter() - t0:8.2f} s  time {rp.time_s * 1e6:.2f} us  "
          f"imbalance {t.imbalance:.3g}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
