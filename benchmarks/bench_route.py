"""Benchmark of routing: the stabilizer fold of a degraded torus, and ECMP on the generic fabrics.

Run ``python benchmarks/bench_route.py [CASE ...] [--repeat N] [--compare-to REF]``.
Every case runs in its own subprocess (so its peak RSS is its own) and one table is
printed: wall seconds (the fastest of ``--repeat`` runs), peak RSS and the size of
what the routing hands the solver.  ``--compare-to REF`` also runs each case on the
code of git revision ``REF`` (a temporary worktree imported ahead of this checkout),
alternating with this checkout's runs, and prints the speed-up.  ``--help`` lists the
cases; the default runs all but ``whatif``.

Cases
-----
ironwood
    ``routing.torus.fold_stabilizer`` of the 9,216-chip all-to-all on Ironwood
    (16x24x24) with ``link:c00.00.00--c01.00.00`` failed: 84.9 M flows folded into
    10.8 M representatives, routed by dimension order, ~6 k of them (those whose
    path crossed the failed link) by ECMP.  Columns: classes, pieces, piece_link
    non-zeros, flow_piece non-zeros, piece_orbit non-zeros.
torus12, torus8
    The same on ``build("torus", dims="12x12x12")`` and ``"8x8x8"``.
ecmp
    ``routing.route`` of an all-to-all among the first 512 chips (all of them when
    fewer) of every ECMP fabric of the catalog whose routes leave the factored fast
    paths (boardfly, groq-lpx, maia200, mi355x) and of nvl72, helios, jalapeno-pod.
compare
    The README's ``fabricsim compare all-reduce --fabrics
    jalapeno-rack,nvl72,torus,boardfly,helios --group-size 64 --count 1 --size 64MiB``,
    a whole process.
whatif
    ``fabricsim whatif all-to-all --fabric ironwood --size 1GiB --algorithm direct
    --fail link:c00.00.00--c01.00.00``, a whole process (the issue's figure: routing
    plus the solver; not run by default).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CASES = ("ironwood", "torus12", "torus8", "ecmp", "compare", "whatif")
DEFAULT = ("ironwood", "torus12", "torus8", "ecmp", "compare")
ECMP_FABRICS = ("boardfly", "groq-lpx", "maia200", "mi355x", "nvl72", "helios", "jalapeno-pod")
FAIL = "link:c00.00.00--c01.00.00"


def _fold(fabric: str, params: dict) -> dict:
    import numpy as np

    from fabricsim.fabrics import build
    from fabricsim.topo.failures import apply_failures
    from fabricsim.topo.routing import link_table
    from fabricsim.topo.routing.torus import fold_stabilizer
    H = apply_failures(build(fabric, **params), [FAIL])[0]
    lt = link_table(H)
    n = sum(1 for _, a in H.nodes(data=True) if a.get("kind") == "chip")
    t = time.perf_counter()
    q = fold_stabilizer(H, np.arange(n)[None, :], links=lt).quotient
    wall = time.perf_counter() - t
    r = q.routes
    return {"wall_s": wall, "classes": q.n_classes, "pieces": r.piece_link.shape[0], "nnz_pl": r.piece_link.nnz,
            "nnz_fp": r.flow_piece.nnz, "nnz_orbit": q.piece_orbit.nnz}


def _ecmp() -> dict:
    import numpy as np

    from fabricsim.fabrics import build
    from fabricsim.topo.routing import link_table, route
    out, total = {}, 0.0
    for name in ECMP_FABRICS:
        G = build(name)
        lt = link_table(G)
        n = min(512, sum(1 for _, a in G.nodes(data=True) if a.get("kind") == "chip"))
        s, d = np.nonzero(~np.eye(n, dtype=bool))
        t = time.perf_counter()
        r = route(G, s, d, links=lt)
        wall = time.perf_counter() - t
        total += wall
        out[name] = {"wall_s": round(wall, 3), "nnz": int(r.flow_piece.nnz + r.piece_link.nnz)}
    return {"wall_s": total, "fabrics": out}


def _cli(*args: str) -> dict:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "fabricsim.cli", *args], check=True, capture_output=True)
    return {"wall_s": time.perf_counter() - t}


def _one(case: str) -> dict:
    if case == "ironwood":
        got = _fold("ironwood", {})
    elif case == "torus12":
        got = _fold("torus", {"dims": "12x12x12"})
    elif case == "torus8":
        got = _fold("torus", {"dims": "8x8x8"})
    elif case == "ecmp":
        got = _ecmp()
    elif case == "compare":
        got = _cli("compare", "all-reduce", "--fabrics", "jalapeno-rack,nvl72,torus,boardfly,helios",
                   "--group-size", "64", "--count", "1", "--size", "64MiB")
    elif case == "whatif":
        got = _cli("whatif", "all-to-all", "--fabric", "ironwood", "--size", "1GiB", "--algorithm", "direct",
                   "--fail", FAIL)
    else:
        raise SystemExit(f"unknown case {case!r}; choose from {', '.join(CASES)}")
    self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    got["rss_gib"] = max(self_rss, kids_rss) / 2**20
    return got


def _run(case: str, shim: str | None) -> dict:
    env = dict(os.environ)
    if shim is not None:
        env["PYTHONPATH"] = shim + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", case], env=env,
                         capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"case {case}: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _checkout(ref: str) -> tuple[str, str]:
    """A detached worktree of ``ref`` and a directory that imports it as ``fabricsim``."""
    tmp = tempfile.mkdtemp(prefix="bench_route_")
    tree = os.path.join(tmp, "tree")
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", tree, ref], check=True, capture_output=True)
    shim = os.path.join(tmp, "shim")
    os.makedirs(shim)
    os.symlink(tree, os.path.join(shim, "fabricsim"))
    return tmp, shim


def _cells(r: dict) -> str:
    extra = ""
    if "classes" in r:
        extra = (f"classes {r['classes']:,}  pieces {r['pieces']:,}  piece_link nnz {r['nnz_pl']:,}  "
                 f"flow_piece nnz {r['nnz_fp']:,}  piece_orbit nnz {r['nnz_orbit']:,}")
    elif "fabrics" in r:
        extra = "  ".join(f"{k} {v['wall_s']:.2f}s" for k, v in r["fabrics"].items())
    return f"{r['wall_s']:8.2f} s  {r['rss_gib']:5.2f} GiB  {extra}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="bench_route.py", description=__doc__.split("\n\n")[0],
                                 epilog="cases: " + ", ".join(CASES))
    ap.add_argument("cases", nargs="*", help=f"cases to run (default: {' '.join(DEFAULT)})")
    ap.add_argument("--repeat", type=int, default=1, help="runs per side; the fastest counts")
    ap.add_argument("--compare-to", metavar="REF", help="also run the code of git revision REF (same run)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(_one(args.one)))
        return 0
    cases = args.cases or list(DEFAULT)
    for c in cases:
        if c not in CASES:
            ap.error(f"unknown case {c!r}; choose from {', '.join(CASES)}")
    tmp = shim = None
    if args.compare_to:
        tmp, shim = _checkout(args.compare_to)
    try:
        for case in cases:
            best, ref = None, None
            for _ in range(args.repeat):
                if shim is not None:
                    r = _run(case, shim)
                    ref = r if ref is None or r["wall_s"] < ref["wall_s"] else ref
                r = _run(case, None)
                best = r if best is None or r["wall_s"] < best["wall_s"] else best
            print(f"{case:9s} this  {_cells(best)}", flush=True)
            if ref is not None:
                print(f"{'':9s} {args.compare_to[:10]:5s} {_cells(ref)}", flush=True)
                print(f"{'':9s} speed-up x{ref['wall_s'] / best['wall_s']:.2f}", flush=True)
    finally:
        if tmp is not None:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", os.path.join(tmp, "tree")],
                           capture_output=True)
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
