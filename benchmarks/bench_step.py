"""Benchmark `fabricsim step` (issue 15): whole processes, wall time, peak RSS and the answer.

Each case runs ``python -m fabricsim.cli step ... --json`` in a fresh process (through a
per-case runner, so the peak RSS is that process's own) and prints one row: case,
process wall seconds, peak RSS, communication per step and per token, tokens/s bound
by communication, and a closed-form check of the MoE bytes (dispatch = MoE layers x
tokens x expected ranks per token x hidden x 1 B fp8, one copy per (token, rank) with
ep x (1 - C(E - E/ep, top_k) / C(E, top_k)) ranks per token; combine = twice that; a
sampled skew is only checked against one copy per (token, expert)).  The table below
was measured before dispatch counted one copy per (token, rank).  Not a test: run it by hand
on a quiet machine (wall times on the shared 2-core VM vary).

    python benchmarks/bench_step.py [CASE ...]

Measured on the project's 2-core VM (shared, under load), one run:

    case               wall s peak GiB    step us  us/token     tokens/s  MoE  bytes = closed form
    rack-decode          1.43     0.06    3,224.6    3.1490      317,563   58  yes
    pod-decode-ep        2.71     0.10    3,709.5    0.2264    4,416,797   58  yes
    pod-decode-tp-ep     3.16     0.11    2,346.8    0.1432    6,981,285   58  yes
    pod-prefill-kimi     1.10     0.10    3,745.4    0.0572   17,497,723   60  yes
    rack-decode-zipf     1.95     0.07    4,071.5    3.9761      251,505   58  yes

rack-decode is issue 15's done-when step; pod-decode-* are the 2,048-chip pod decode step
(pure EP with DP attention, and TP8 attention with EP256).  Each MoE layer kind is priced
once (two or five collectives in one mix), so a whole step costs a few collective prices.
"""
from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
import time

# case -> (step arguments, MoE layers, tokens, top_k, hidden, experts, ep)
CASES = {
    "rack-decode": (["--model", "deepseek-r1", "--fabric", "jalapeno-rack", "--mesh", "ep=128", "--phase", "decode",
                     "--batch", "1024"], 58, 1024, 8, 7168, 256, 128),
    "pod-decode-ep": (["--model", "deepseek-r1", "--fabric", "jalapeno-pod", "--mesh", "ep=256,dp=8", "--phase",
                       "decode", "--batch", "16384"], 58, 16384, 8, 7168, 256, 256),
    "pod-decode-tp-ep": (["--model", "deepseek-r1", "--fabric", "jalapeno-pod", "--mesh", "tp=8,ep=256", "--phase",
                          "decode", "--batch", "16384"], 58, 16384, 8, 7168, 256, 256),
    "pod-prefill-kimi": (["--model", "kimi-k2", "--fabric", "jalapeno-pod", "--mesh", "ep=128,dp=16", "--phase",
                          "prefill", "--batch", "16", "--seq", "4096"], 60, 16 * 4096, 8, 7168, 384, 128),
    "rack-decode-zipf": (["--model", "deepseek-r1", "--fabric", "jalapeno-rack", "--mesh", "ep=128", "--phase",
                          "decode", "--batch", "1024", "--skew", "zipf:1.2"], 58, 1024, 8, 7168, 256, 128),
}


def run_case(name: str) -> dict:
    args, moe_layers, tokens, top_k, hidden, experts, ep = CASES[name]
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "fabricsim.cli", "step", *args, "--json"], capture_output=True,
                         text=True, check=True)
    wall = time.perf_counter() - t
    r = json.loads(out.stdout)
    sums = {"dispatch": 0.0, "combine": 0.0}
    for layer in r["layers"]:
        for c in layer["collectives"]:
            if c["name"] in sums:
                sums[c["name"]] += c["bytes_total"]
    per_expert = moe_layers * tokens * top_k * hidden
    want = moe_layers * tokens * ep * (1 - math.comb(experts - experts // ep, top_k) / math.comb(experts, top_k)) \
        * hidden
    sampled = "--skew" in args
    return {"wall_s": wall, "peak_rss_GiB": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2 ** 20,
            "time_s": r["time_s"], "per_token_s": r["time_per_token_s"], "tokens_per_s": r["tokens_per_s_comm_bound"],
            "bytes_ok": (sums["dispatch"] <= per_expert if sampled else math.isclose(sums["dispatch"], want,
                                                                                    rel_tol=1e-12))
            and sums["combine"] == 2 * sums["dispatch"],
            "moe_layers": sum(1 for layer in r["layers"] if layer["kind"] == "moe")}


def main(argv) -> int:
    if argv[1:2] in (["-h"], ["--help"]):
        print((__doc__ or "").strip())
        print("\nusage: python benchmarks/bench_step.py [CASE ...]   (default: every case)")
        print("cases: " + ", ".join(CASES))
        return 0
    if len(argv) > 2 and argv[1] == "--case":
        print(json.dumps(run_case(argv[2])))
        return 0
    chosen = argv[1:] or list(CASES)
    unknown = [c for c in chosen if c not in CASES]
    if unknown:
        raise SystemExit(f"unknown case {unknown[0]!r}; choose one of: {', '.join(CASES)}")
    print(f"{'case':<18} {'wall s':>6} {'peak GiB':>8} {'step us':>10} {'us/token':>9} {'tokens/s':>12} "
          f"{'MoE':>4}  bytes = closed form   command")
    for case in chosen:
        out = subprocess.run([sys.executable, __file__, "--case", case], capture_output=True, text=True)
        if out.returncode:
            print(f"{case:<18} FAILED: {(out.stderr.strip().splitlines() or ['?'])[-1]}")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{case:<18} {r['wall_s']:>6.2f} {r['peak_rss_GiB']:>8.2f} {r['time_s'] * 1e6:>10,.1f} "
              f"{r['per_token_s'] * 1e6:>9.4f} {r['tokens_per_s']:>12,.0f} {r['moe_layers']:>4}  "
              f"{'yes' if r['bytes_ok'] else 'NO':<20} fabricsim step {' '.join(CASES[case][0])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
