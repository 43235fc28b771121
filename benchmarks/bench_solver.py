"""Benchmark of fabricsim.topo.solver on synthetic problems shaped like the real ones.

Run ``python benchmarks/bench_solver.py [CASE ...] [--compare-to REF]``: every case
runs in its own subprocess (so the peak RSS column is that case's own) and one
table is printed.  ``--compare-to main`` also runs each case on the solver of git
revision ``main`` (its ``topo/solver.py`` or ``topo/solver/`` and its kernels, loaded
as a temporary package) in the same run and prints the speed-up and the largest
relative difference of the results (rates or finish times).  ``jit s`` is the one-off load of the
solver's compiled filling in that process (numba, when installed; a compile
the first time on a machine), timed apart from ``solve s``; the summary gives
the speed-up with and without it.  ``--repeat N`` runs each side N times, alternating, and compares the
fastest of each.  ``--help`` lists the cases.

Cases
-----
pod-a2a
    2,048 chips in 16 racks, all-to-all (4.19 M flows).  Pieces per chip:
    up-local / down-local (6 links of 100 GB/s each), up-global / down-global
    (4 links of 50 GB/s each); per rack an up and a down spine piece (64 ample
    links each).  Intra-rack flows use [up-local(s), down-local(d)], inter-rack
    flows [up-global(s), rackup(R), rackdown(R'), down-global(d)].  Closed
    form: the 1,920 inter-rack flows of a chip share its 200 GB/s global
    uplinks, so the phase takes S x 1920 / 200e9.
asym-levels
    1 M random flows over 4,096 chips whose up/down pieces spread over 4 links
    of random capacities (many distinct values) plus one of 256 spine pieces:
    thousands of distinct bottleneck levels.  No closed form: the result is
    checked with :func:`check_maxmin`.
asym-events
    100 k flows of asym-levels' shape, equal sizes and weights, through
    :func:`simulate`: every level finishes at its own time (events ~ levels),
    fastest first, so each event re-solves almost nothing.
asym-mixed
    2,000 such flows with mixed sizes and weights through :func:`simulate`:
    finishing flows froze at middling levels, so events redo many rounds.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp

HERE = os.path.dirname(os.path.abspath(__file__))
GB = 1e9
SIZE_BYTES = 1e6  # one message per flow; times scale linearly with it


def _solver(ref: str | None):
    """This checkout's solver, or the one of git revision ``ref`` as a temporary package.

    The ref's ``topo/solver.py`` (or its package ``topo/solver/``) and its compiled kernels
    ``topo/_solver_kernels.py`` are copied once per commit into a package in the temporary
    directory, so its relative imports resolve as in the checkout and numba's cache of its
    kernels serves every run after the first; ``errors`` comes from this checkout.
    """
    if ref is None:
        from fabricsim.topo import solver
        return solver

    def git(*args):
        return subprocess.run(["git", "-C", HERE, *args], check=True, capture_output=True,
                              text=True).stdout

    sha = git("rev-parse", "--verify", f"{ref}^{{commit}}").strip()[:12]
    name = f"bench_old_solver_{sha}"
    root = os.path.join(tempfile.gettempdir(), name)
    if not os.path.isdir(os.path.join(root, name)):
        tmp = tempfile.mkdtemp(prefix=name + "_", dir=tempfile.gettempdir())
        files = git("ls-tree", "-r", "--full-tree", "--name-only", sha, "topo/solver.py", "topo/solver",
                    "topo/_solver_kernels.py").split()
        for f in files + ["topo/__init__.py"]:
            src = "" if f == "topo/__init__.py" else git("show", f"{sha}:{f}")
            src = src.replace("from .errors import", "from fabricsim.topo.errors import")
            src = src.replace("from ..errors import", "from fabricsim.topo.errors import")
            path = os.path.join(tmp, name, os.path.relpath(f, "topo"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as fh:
                fh.write(src)
        try:
            os.rename(tmp, root)   # whole or not at all (another run may have made it first)
        except OSError:
            pass
    sys.path.insert(0, root)
    return importlib.import_module(f"{name}.solver")


def build_pod_a2a(chips: int = 2048, racks: int = 16):
    per_rack = chips // racks
    # Link ids: up-local, down-local (6 per chip), up-global, down-global (4 per chip),
    # rack-up and rack-down spine links (64 per rack).
    n_loc, n_glb, n_sp = 6, 4, 64
    up_loc, dn_loc = 0, chips * n_loc
    up_glb = 2 * chips * n_loc
    dn_glb = up_glb + chips * n_glb
    sp_up = dn_glb + chips * n_glb
    sp_dn = sp_up + racks * n_sp
    n_links = sp_dn + racks * n_sp
    cap = np.empty(n_links)
    cap[:up_glb] = 100 * GB
    cap[up_glb:sp_up] = 50 * GB
    cap[sp_up:] = 1e6 * GB  # ample: never the bottleneck

    # Piece ids: up-local(c), down-local(c), up-global(c), down-global(c), rackup(R), rackdown(R).
    p_ul, p_dl, p_ug, p_dg = 0, chips, 2 * chips, 3 * chips
    p_ru, p_rd = 4 * chips, 4 * chips + racks
    n_pieces = 4 * chips + 2 * racks
    c = np.arange(chips)
    r = np.arange(racks)
    piece_rows = [np.repeat(p_ul + c, n_loc), np.repeat(p_dl + c, n_loc),
                  np.repeat(p_ug + c, n_glb), np.repeat(p_dg + c, n_glb),
                  np.repeat(p_ru + r, n_sp), np.repeat(p_rd + r, n_sp)]
    piece_cols = [up_loc + np.arange(chips * n_loc), dn_loc + np.arange(chips * n_loc),
                  up_glb + np.arange(chips * n_glb), dn_glb + np.arange(chips * n_glb),
                  sp_up + np.arange(racks * n_sp), sp_dn + np.arange(racks * n_sp)]
    rows = np.concatenate(piece_rows)
    vals = np.concatenate([np.full(chips * n_loc, 1 / n_loc)] * 2
                          + [np.full(chips * n_glb, 1 / n_glb)] * 2
                          + [np.full(racks * n_sp, 1 / n_sp)] * 2)
    piece_link = sp.csr_array((vals, (rows, np.concatenate(piece_cols))),
                              shape=(n_pieces, n_links))

    # All ordered pairs s != d (int32 throughout: 4 M pairs): d runs over
    # 0..chips-2, skipping s.  Intra-rack rows first (2 pieces), then inter-rack (4).
    s = np.repeat(c.astype(np.int32), chips - 1)
    j = np.tile(np.arange(chips - 1, dtype=np.int32), chips)
    d = j + (j >= s)
    del j
    intra = (s // per_rack) == (d // per_rack)
    n_in = int(intra.sum())
    n_out = s.size - n_in
    indices = np.empty(2 * n_in + 4 * n_out, dtype=np.int32)
    rows_in = indices[:2 * n_in].reshape(n_in, 2)
    rows_in[:, 0] = s[intra] + p_ul
    rows_in[:, 1] = d[intra] + p_dl
    # Columns sorted within each row: up-global < down-global < rackup < rackdown.
    rows_out = indices[2 * n_in:].reshape(n_out, 4)
    so, do = s[~intra], d[~intra]
    del s, d, intra
    rows_out[:, 0] = so + p_ug
    rows_out[:, 1] = do + p_dg
    rows_out[:, 2] = so // per_rack + p_ru
    rows_out[:, 3] = do // per_rack + p_rd
    indptr = np.concatenate([np.arange(0, 2 * n_in, 2, dtype=np.int32),
                             np.arange(2 * n_in, indices.size + 1, 4, dtype=np.int32)])
    flow_piece = sp.csr_array((np.ones(indices.size), indices, indptr),
                              shape=(n_in + n_out, n_pieces))
    size = np.full(flow_piece.shape[0], SIZE_BYTES)
    inter_per_chip = chips - per_rack
    closed_s = SIZE_BYTES * inter_per_chip / (n_glb * 50 * GB)
    return flow_piece, piece_link, cap, size, closed_s


def build_asym(n_flows: int, chips: int = 4096, n_spine: int = 256, seed: int = 1):
    rng = np.random.default_rng(seed)
    fan = 4
    # Chip links 10.00..99.99 GB/s in 0.01 GB/s steps: ~9,000 distinct values.
    n_chip_links = 2 * chips * fan
    n_links = n_chip_links + n_spine * 8
    cap = np.empty(n_links)
    cap[:n_chip_links] = rng.integers(1000, 10000, n_chip_links) * 0.01 * GB
    cap[n_chip_links:] = rng.integers(1000, 10000, n_spine * 8) * 1.0 * GB
    n_pieces = 2 * chips + n_spine
    rows = np.concatenate([np.repeat(np.arange(2 * chips), fan),
                           2 * chips + np.repeat(np.arange(n_spine), 8)])
    cols = np.arange(n_links)
    # Uneven ECMP hashing: random split of each piece over its links.
    vals = rng.uniform(0.5, 1.5, n_links)
    piece_link = sp.csr_array((vals, (rows, cols)), shape=(n_pieces, n_links))
    piece_link = sp.csr_array(piece_link / (piece_link @ np.ones(n_links))[:, None])
    s = rng.integers(0, chips, n_flows)
    d = (s + rng.integers(1, chips, n_flows)) % chips
    spine = 2 * chips + rng.integers(0, n_spine, n_flows)
    cols = np.sort(np.stack([s, chips + d, spine], axis=1), axis=1)
    flow_piece = sp.csr_array((np.ones(cols.size), cols.ravel(),
                               np.arange(0, cols.size + 1, 3)), shape=(n_flows, n_pieces))
    weights = rng.choice([1.0, 2.0, 4.0], n_flows)
    size = rng.choice([1.0, 2.0, 4.0], n_flows) * SIZE_BYTES
    return flow_piece, piece_link, cap, size, weights


def run_case(name: str, ref: str | None = None, out: str | None = None) -> dict:
    solver = _solver(ref)
    check_maxmin, maxmin_rates, simulate = solver.check_maxmin, solver.maxmin_rates, solver.simulate
    # The compiled filling (numba, when installed) costs a one-off load per process
    # (a compile the first time on a machine): timed here, apart from the solve.
    # pod-a2a (2 levels) never reaches the kernel, so its process does not load it.
    tl = time.perf_counter()
    kernel = name != "pod-a2a" and bool(getattr(solver, "_warm_up", lambda: False)())
    load_s = time.perf_counter() - tl if kernel else 0.0
    t0 = time.perf_counter()
    if name == "pod-a2a":
        fp, pl, cap, size, closed_s = build_pod_a2a()
        t1 = time.perf_counter()
        res = simulate(fp, pl, cap, size)
        t2 = time.perf_counter()
        events, levels, answer = res.events, res.n_levels, res.finish_s
        rel = res.time_s / closed_s - 1
        verdict = f"time {res.time_s * 1e3:.4f} ms vs closed form {closed_s * 1e3:.4f} ms ({rel:+.1e})"
    elif name == "asym-levels":
        fp, pl, cap, size, w = build_asym(1_000_000)
        t1 = time.perf_counter()
        r = maxmin_rates(fp, pl, cap, weights=w)
        t2 = time.perf_counter()
        events, levels, answer = "-", r.n_levels, r.rate_Bps
        tc = time.perf_counter()
        bad = check_maxmin(fp, pl, cap, r.rate_Bps, weights=w)
        verdict = f"check_maxmin: {len(bad)} findings ({time.perf_counter() - tc:.1f} s)"
    elif name in ("asym-events", "asym-mixed"):
        n = 100_000 if name == "asym-events" else 2_000
        fp, pl, cap, size, w = build_asym(n)
        if name == "asym-events":
            size, w = np.full(n, SIZE_BYTES), None
        t1 = time.perf_counter()
        res = simulate(fp, pl, cap, size, weights=w)
        t2 = time.perf_counter()
        events, levels, answer = res.events, res.n_levels, res.finish_s
        bound = res.time_s / res.bound_s
        bad = check_maxmin(fp, pl, cap, res.first_rates_Bps, weights=w)
        verdict = f"time / bound {bound:.4f}; first rates: {len(bad)} check_maxmin findings"
    else:
        raise ValueError(f"unknown case {name!r}; choose one of: {', '.join(CASES)}")
    if out:
        np.save(out, answer)
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"case": name, "flows": fp.shape[0], "nnz": fp.nnz + pl.nnz, "pieces": fp.shape[1],
            "build_s": t1 - t0, "solve_s": t2 - t1, "load_s": load_s, "events": events,
            "levels": levels,
            "rss_gib": rss_kib / 1024**2, "result": verdict}


CASES = {
    "pod-a2a": "2,048-chip pod all-to-all through simulate (4.19 M flows, closed form)",
    "asym-levels": "1 M flows, random capacities, maxmin_rates: thousands of levels",
    "asym-events": "100 k flows, equal sizes, simulate: events ~ levels",
    "asym-mixed": "2,000 flows, mixed sizes and weights, simulate: events redo many rounds",
}


def _child(name: str, ref: str | None, out: str | None) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--case", name]
    if ref:
        cmd += ["--solver-ref", ref]
    if out:
        cmd += ["--out", out]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def _row(r: dict, solver: str) -> str:
    return (f"{r['case']:<12} {solver:<7} {r['flows']:>10,} {r['nnz']:>11,} {r['pieces']:>7,} "
            f"{r['build_s']:>8.2f} {r['solve_s']:>8.2f} {r['load_s']:>6.2f} {r['events']:>7} "
            f"{r['levels']:>7} "
            f"{r['rss_gib']:>8.2f}  {r['result']}")


def _parse(argv):
    ap = argparse.ArgumentParser(
        prog="bench_solver.py",
        description="Benchmark fabricsim.topo.solver on synthetic problems shaped like the real "
                    "ones; each case runs in its own process and prints one table row.",
        epilog="cases:\n" + "\n".join(f"  {k:<13}{v}" for k, v in CASES.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*", metavar="CASE", help="cases to run (default: all)")
    ap.add_argument("--compare-to", metavar="REF",
                    help="also run each case on the solver of git revision REF (e.g. main) and "
                         "print the speed-up and the largest relative difference of the results")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="with --compare-to: run each side N times, alternating, and compare the "
                         "fastest of each (a shared machine's load comes and goes)")
    ap.add_argument("--case", dest="one", metavar="CASE", help=argparse.SUPPRESS)  # child process
    ap.add_argument("--solver-ref", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    for c in args.cases + ([args.one] if args.one else []):
        if c not in CASES:
            ap.exit(2, f"bench_solver.py: unknown case {c!r}; choose from: {', '.join(CASES)}\n")
    return args


def _rel_diff(a: np.ndarray, b: np.ndarray) -> float:
    if a.shape != b.shape:
        return float("inf")
    scale = np.maximum(np.abs(a), np.abs(b))
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.where(scale > 0, np.abs(a - b) / scale, 0.0)
    return float(d.max()) if d.size else 0.0


def main(argv: list[str]) -> None:
    args = _parse(argv)
    if args.one:
        sys.stdout.write(json.dumps(run_case(args.one, args.solver_ref, args.out)) + "\n")
        return
    names = args.cases or list(CASES)
    head = (f"{'case':<12} {'solver':<7} {'flows':>10} {'nnz':>11} {'pieces':>7} {'build s':>8} "
            f"{'solve s':>8} {'jit s':>6} {'events':>7} {'levels':>7} {'RSS GiB':>8}  result")
    sys.stdout.write(head + "\n")
    ref = args.compare_to
    tmp = tempfile.mkdtemp(prefix="bench_solver_") if ref else None
    summary = []
    for name in names:
        new_out = os.path.join(tmp, f"{name}-new.npy") if ref else None
        r = _child(name, None, new_out)
        sys.stdout.write(_row(r, "this") + "\n")
        if ref:
            old_out = os.path.join(tmp, f"{name}-old.npy")
            o = _child(name, ref, old_out)
            sys.stdout.write(_row(o, ref[:7]) + "\n")
            for _ in range(max(args.repeat, 1) - 1):
                sys.stdout.flush()
                r2, o2 = _child(name, None, None), _child(name, ref, None)
                sys.stdout.write(_row(r2, "this") + "\n" + _row(o2, ref[:7]) + "\n")
                r = r2 if r2["solve_s"] < r["solve_s"] else r
                o = o2 if o2["solve_s"] < o["solve_s"] else o
            diff = _rel_diff(np.load(new_out), np.load(old_out))
            with_load = r["solve_s"] + r["load_s"]
            summary.append(f"{name:<12} {o['solve_s']:>8.2f} {r['solve_s']:>8.2f} "
                           f"{o['solve_s'] / r['solve_s']:>8.1f}x {r['load_s']:>6.2f} "
                           f"{(o['solve_s'] + o['load_s']) / with_load:>10.1f}x  {diff:.1e}")
        sys.stdout.flush()
    if ref:
        sys.stdout.write(f"\n{'case':<12} {ref[:8]:>8} {'this':>8} {'speed-up':>9} {'jit s':>6} "
                         f"{'with jit':>11}  max rel diff of results\n" + "\n".join(summary) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
