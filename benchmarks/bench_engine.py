"""Benchmark the engine and the CLI against the targets in issues 4 and 5.

Each case runs in its own process (so peak RSS is the case's own) and prints one row:
case, flows, non-zeros (flow x piece + piece x link), build s (fabric + routes), solve s,
events, levels, peak RSS, and the result against its closed form.  Not a test: run it
by hand on a quiet machine (wall times on a shared 2-core VM vary by 2x; first-touch
page faults on this VM cost up to ~2 s per GB).

    python benchmarks/bench_engine.py [--skip-big] [CASE ...]

``--skip-big`` leaves out the per-flow 9,216-chip torus (~18 GiB, over a minute) and its
optical-switch failure (over a minute).

    python benchmarks/bench_engine.py --before /path/to/main/checkout [--repeat 3]

prices the pod 2,048 all-to-all and the Ironwood all-to-all through the CLI with the
checkout given (the code before a change) and with this tree, alternating, and prints
each one's process CPU time (user + sys of the child, best of ``--repeat``) and the ratio:
the price engine's cost must not grow (issue 13: within 10%).
"""
from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
import time

CASES = {
    "pod-a2a": "jalapeno-pod 2,048-chip all-to-all solved as symmetry classes (what price does)",
    "pod-a2a-per-flow": "the same with every flow routed (price --per-flow)",
    "pod-a2a-static": "jalapeno-pod with static leaf relay, symmetry classes",
    "torus-9216-bound": "ironwood 9,216-chip all-to-all, link-load bound over classes",
    "torus-9216-flow": "ironwood all-to-all, flow-level over classes",
    "torus-9216-flow-per-flow": "ironwood all-to-all, every flow routed (~18 GiB; big)",
    "torus-9216-ocs-bound": "ironwood with one optical switch down, bound (big)",
    "asym-torus": "default torus, a third of the links lose lanes (seeded): many levels, per flow",
    "cli-price-pod": "`fabricsim price all-to-all --fabric jalapeno-pod` as a process",
    "cli-price-ironwood": "`fabricsim price all-to-all --fabric ironwood --algorithm direct` as a process",
    "cli-compare-catalog": "`fabricsim compare all-reduce` over every catalog fabric as a process",
}
BIG = {"torus-9216-flow-per-flow", "torus-9216-ocs-bound"}


def _all_pairs(n):
    import numpy as np
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    return i.astype(np.int64), j.astype(np.int64)


def _flow_case(fabric, params, *, bound_only=False, degrade=None):
    import numpy as np
    from fabricsim.fabrics import build
    from fabricsim.topo import routing, solver
    t0 = time.perf_counter()
    G = build(fabric, **params)
    if degrade:
        degrade(G)
    n = sum(1 for _, d in G.nodes(data=True) if d["kind"] == "chip")
    s, d = _all_pairs(n)
    r = routing.route(G, s, d)
    del s, d
    t1 = time.perf_counter()
    cap = r.links.capacity_Bps
    P, Q = r.flow_piece, r.piece_link
    size = np.full(P.shape[0], float(2 ** 30) / n)          # an all-to-all of S = 1 GiB per rank
    row = {"flows": P.shape[0], "nnz": int(P.nnz + Q.nnz), "build_s": t1 - t0}
    if bound_only:
        b = solver.link_load_bound(P, Q, cap, size)
        row.update(solve_s=time.perf_counter() - t1, events="-", levels="-", time_s=b.time_s)
    else:
        res = solver.simulate(P, Q, cap, size)
        row.update(solve_s=time.perf_counter() - t1, events=res.events, levels=res.n_levels, time_s=res.time_s)
    return row


def _class_case(fabric, params, *, bound_only=False):
    """All-to-all over every chip solved as symmetry classes (what price does by default)."""
    import numpy as np
    from fabricsim.fabrics import build
    from fabricsim.topo import routing, solver, symmetry
    t0 = time.perf_counter()
    G = build(fabric, **params)
    lt = routing.link_table(G)
    n = sum(1 for _, d in G.nodes(data=True) if d["kind"] == "chip")
    rows = np.arange(n)[None, :]
    q = symmetry.translation_quotient(G, rows, links=lt) or symmetry.twin_quotient(G, rows, links=lt)
    t1 = time.perf_counter()
    P, Q, cap = q.routes.flow_piece, q.piece_orbit, q.orbit_capacity(lt.capacity_Bps)
    size = np.full(q.n_classes, float(2 ** 30) / n)
    row = {"flows": q.n_flows, "nnz": int(P.nnz + Q.nnz), "build_s": t1 - t0,
           "note": q.describe()}
    if bound_only:
        b = solver.link_load_bound(P, Q, cap, size, multiplicity=q.multiplicity)
        row.update(solve_s=time.perf_counter() - t1, events="-", levels="-", time_s=b.time_s)
    else:
        res = solver.simulate(P, Q, cap, size, multiplicity=q.multiplicity)
        row.update(solve_s=time.perf_counter() - t1, events=res.events, levels=res.n_levels, time_s=res.time_s)
    return row


def _torus_closed_form(dims, link_GBps):
    """All-to-all on a torus under DOR: the busiest dimension's ring links pace it.

    Per ring of k chips (k even), the shorter-arc traffic per direction on one link is
    k^2/8 flows' worth of lines ... computed by walking one ring exactly."""
    import numpy as np
    n = int(np.prod(dims))
    worst = 0.0
    for k in dims:
        # load on link (0 -> 1) of one ring: pairs (a, b) whose + arc crosses it, ties split
        load = 0.0
        for a in range(k):
            for b in range(k):
                dist = (b - a) % k
                if dist == 0:
                    continue
                share = 1.0 if dist < k - dist else (0.5 if dist == k - dist else 0.0)
                if share and (0 - a) % k < dist:
                    load += share
        # every chip pair whose coordinates differ in this dimension rides one of the
        # rings of this dimension: (n / k) lines x (n / k) choices of the other coordinates
        worst = max(worst, load * (n / k))
    return worst * (2 ** 30 / n) / (link_GBps * 1e9)


def _cli_price(args, flows, closed):
    """`fabricsim price all-to-all ... --size 1GiB --json` in a fresh process: its wall time and answer."""
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "fabricsim.cli", "price", "all-to-all", *args, "--size", "1GiB",
                          "--json"], capture_output=True, text=True, check=True)
    rep = json.loads(out.stdout)
    return {"flows": flows, "nnz": "-", "build_s": "-", "solve_s": time.perf_counter() - t, "events": "-",
            "levels": "-", "time_s": rep["bandwidth_time_s"], "closed": closed, "note": "process wall",
            "algorithm": rep["algorithm"]}


def run_case(name):
    if name == "pod-a2a":
        row = _class_case("jalapeno-pod", {})
        row["closed"] = 1920 / 2048 * 2 ** 30 / 200e9
    elif name == "pod-a2a-per-flow":
        row = _flow_case("jalapeno-pod", {})
        row["closed"] = 1920 / 2048 * 2 ** 30 / 200e9
        row["note"] = "every flow routed (price --per-flow)"
    elif name == "pod-a2a-static":
        row = _class_case("jalapeno-pod", {"leaf": "static"})
        row["closed"] = 1920 / 2048 * 2 ** 30 / 200e9
    elif name in ("torus-9216-bound", "torus-9216-flow"):
        row = _class_case("ironwood", {}, bound_only=name.endswith("bound"))
        row["closed"] = _torus_closed_form((16, 24, 24), 100.0)     # the graph's raw ICI rate
    elif name == "torus-9216-flow-per-flow":
        row = _flow_case("ironwood", {})
        row["closed"] = _torus_closed_form((16, 24, 24), 100.0)
        row["note"] = "every flow routed (price --per-flow)"
    elif name == "torus-9216-ocs-bound":
        # one optical switch down (144 links): the intact classes less the flows it touches
        from fabricsim.collectives import by_size, price
        from fabricsim.fabrics import build
        from fabricsim.topo.failures import apply_failures
        t0 = time.perf_counter()
        G = build("ironwood")
        H = apply_failures(G, ["ocs:3"])[0]
        t1 = time.perf_counter()
        r = price(H, "all-to-all", groups=by_size(H, 9216), size_bytes=2 ** 30, algorithm="direct",
                  bound_only=True, reference=G)
        touched = next(n for n in r.notes if "touch" in n)
        row = {"flows": 9216 * 9215, "nnz": "-", "build_s": t1 - t0, "solve_s": time.perf_counter() - t1,
               "events": "-", "levels": "-", "time_s": r.bandwidth_time_s, "closed": None,
               "note": touched.split("less the ")[1].split(" flows")[0] + " flows rerouted"}
    elif name == "asym-torus":
        import numpy as np

        def degrade(G):
            # a third of the links lose 1-3 of their 4 lanes (seeded): thousands of levels
            rng = np.random.default_rng(7)
            for u, v, e in G.edges(data=True):
                if rng.random() < 0.33:
                    e["lanes"] = int(e["lanes"] - rng.integers(1, e["lanes"]))
                    e["capacity_gbps"] = e["lanes"] * e["lane_gbps"]
                    e["port_gbps"] = e["capacity_gbps"]
        row = _flow_case("torus", {}, degrade=degrade)
        row["closed"] = None
    elif name == "cli-price-pod":
        # the default step model: the tomahawk-ethernet family delivers 0.977 of line rate
        row = _cli_price(["--fabric", "jalapeno-pod", "--group-size", "2048"], 2048 * 2047,
                         1920 / 2048 * 2 ** 30 / (200e9 * 0.977))
        row["note"] += ", auto picked " + row.pop("algorithm")
    elif name == "cli-price-ironwood":
        # raw 100 GB/s links x the tpu-ici family's efficiency 0.9 = the 90 GB/s usable
        row = _cli_price(["--fabric", "ironwood", "--algorithm", "direct"], 9216 * 9215,
                         _torus_closed_form((16, 24, 24), 90.0))
        row["note"] += ", flow-level"
        row.pop("algorithm")
    elif name == "cli-compare-catalog":
        from fabricsim.fabrics import FABRICS
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "fabricsim.cli", "compare", "all-reduce", "--fabrics",
                        ",".join(sorted(FABRICS)), "--group-size", "64", "--count", "1", "--size", "64MiB"],
                       capture_output=True, text=True, check=True)
        row = {"flows": "-", "nnz": "-", "build_s": "-", "solve_s": time.perf_counter() - t, "events": "-",
               "levels": "-", "time_s": None, "closed": None, "note": "process wall, 7 fabrics"}
    else:
        raise SystemExit(f"unknown case {name!r}; choose one of: {', '.join(CASES)}")
    row["peak_rss_GiB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2 ** 20
    row["peak_rss_GiB"] = max(row["peak_rss_GiB"], kids)
    return row


BEFORE_AFTER = {
    "pod 2,048 all-to-all": ["--fabric", "jalapeno-pod", "--group-size", "2048"],
    "ironwood all-to-all": ["--fabric", "ironwood", "--algorithm", "direct"],
}


def _cpu_price(pkg_path, args):
    """One CLI price in a fresh process importing fabricsim from ``pkg_path``: (CPU s, wall s, report)."""
    import os
    env = dict(os.environ, PYTHONPATH=pkg_path)
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "fabricsim.cli", "price", "all-to-all", *args, "--size", "1GiB",
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd="/")
    out, err = proc.communicate()
    wall = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"{pkg_path}: {err.strip().splitlines()[-1]}")
    return None, wall, json.loads(out)


def before_after(before: str, repeat: int = 3) -> None:
    """Process CPU time of the same prices before (a checkout) and after (this tree), in one run."""
    import os
    import tempfile
    from pathlib import Path
    here = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        pkgs = {}
        for label, root in (("before", Path(before).resolve()), ("after", here)):
            d = Path(tmp) / label
            d.mkdir()
            os.symlink(root, d / "fabricsim")          # the repo root is the package
            pkgs[label] = str(d)
        print(f"{'case':<24}{'before CPU s':>14}{'after CPU s':>13}{'ratio':>8}  latency before -> after")
        for case, args in BEFORE_AFTER.items():
            best = {"before": math.inf, "after": math.inf}
            rep = {}
            for _ in range(repeat):
                for label in ("before", "after"):
                    t0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    _, _, r = _cpu_price(pkgs[label], args)
                    t1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    cpu = (t1.ru_utime - t0.ru_utime) + (t1.ru_stime - t0.ru_stime)
                    best[label] = min(best[label], cpu)
                    rep[label] = r
            print(f"{case:<24}{best['before']:>14.2f}{best['after']:>13.2f}{best['after'] / best['before']:>8.3f}  "
                  f"{rep['before']['latency_s'] * 1e6:,.1f} us -> {rep['after']['latency_s'] * 1e6:,.1f} us "
                  f"({rep['after'].get('algorithm')}/{rep['after'].get('protocol')})")


def _parse(argv):
    import argparse
    ap = argparse.ArgumentParser(
        prog="bench_engine.py",
        description="Benchmark the engine and the CLI; each case runs in its own process and prints "
                    "one table row (flows, non-zeros, build/solve s, events, levels, peak RSS, result "
                    "vs closed form).",
        epilog="cases:\n" + "\n".join(f"  {k:<26}{v}" for k, v in CASES.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*", metavar="CASE", help="cases to run (default: all)")
    ap.add_argument("--skip-big", action="store_true",
                    help=f"leave out {', '.join(sorted(BIG))} when running every case")
    ap.add_argument("--case", dest="one", metavar="CASE", help=argparse.SUPPRESS)  # child process
    ap.add_argument("--before", metavar="CHECKOUT", help="instead of the cases: price the pod 2,048 and Ironwood "
                    "all-to-alls as whole processes with CHECKOUT's fabricsim and with this tree's, in one run")
    ap.add_argument("--repeat", type=int, default=3, help="with --before: runs per side (best of; default 3)")
    args = ap.parse_args(argv)
    for c in args.cases + ([args.one] if args.one else []):
        if c not in CASES:
            ap.exit(2, f"bench_engine.py: unknown case {c!r}; choose from: {', '.join(CASES)}\n")
    return args


def main(argv):
    args = _parse(argv[1:])
    if args.before:
        before_after(args.before, args.repeat)
        return 0
    if args.one:
        print(json.dumps(run_case(args.one)))
        return 0
    skip_big, chosen = args.skip_big, args.cases
    header = f"{'case':<22}{'flows':>12}{'nnz':>13}{'build s':>9}{'solve s':>9}{'events':>8}{'levels':>8}" \
             f"{'RSS GiB':>9}  result"
    print(header)
    print("-" * len(header))
    for case in chosen or CASES:
        if skip_big and case in BIG and not chosen:
            continue
        t = time.perf_counter()
        out = subprocess.run([sys.executable, __file__, "--case", case], capture_output=True, text=True)
        wall = time.perf_counter() - t
        if out.returncode:
            print(f"{case:<22} FAILED: {out.stderr.strip().splitlines()[-1]}")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        res = "-"
        if r.get("time_s") is not None and r.get("closed"):
            res = f"{r['time_s'] * 1e3:.4f} ms vs closed form {r['closed'] * 1e3:.4f} ms " \
                  f"(rel {abs(r['time_s'] / r['closed'] - 1):.1e})"
        elif r.get("time_s") is not None:
            res = f"{r['time_s'] * 1e3:.4f} ms"
        if r.get("note"):
            res += f"; {r['note']}"

        def f(x, fmt):
            return format(x, fmt) if isinstance(x, (int, float)) else str(x)
        print(f"{case:<22}{f(r['flows'], ',d'):>12}{f(r['nnz'], ',d'):>13}{f(r['build_s'], '.2f'):>9}"
              f"{f(r['solve_s'], '.2f'):>9}{f(r['events'], 'd'):>8}{f(r['levels'], 'd'):>8}"
              f"{r['peak_rss_GiB']:>9.2f}  {res}  [process {wall:.1f} s]")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
