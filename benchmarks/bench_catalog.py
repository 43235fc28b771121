"""Benchmark the catalog commands issue 16 asks to stay fast, with ratios measured in one run.

Each case is one ``fabricsim`` process (wall time and peak RSS of that process):

* ``virgo-a2a``: ``price all-to-all --fabric tpu8t-virgo --size 1GiB``: 134,400 chips,
  18.06 G flows, priced exactly by the twin fold (target: at most 30x ``ironwood-a2a``);
* ``ironwood-a2a``: ``price all-to-all --fabric ironwood --size 1GiB`` (the yardstick);
* ``list``, ``audit-maia`` (``audit maia200``), ``compare-all`` (``compare all-reduce
  --fabrics all --group-size 8 --count 1 --size 1MiB``).

Not a test: run by hand on a quiet machine (wall times on a shared 2-core VM vary by 2x).

    python benchmarks/bench_catalog.py [CASE ...]
"""
from __future__ import annotations

import re
import subprocess
import sys
import time

CASES = {
    "virgo-a2a": ["price", "all-to-all", "--fabric", "tpu8t-virgo", "--size", "1GiB"],
    "ironwood-a2a": ["price", "all-to-all", "--fabric", "ironwood", "--size", "1GiB"],
    "list": ["list"],
    "audit-maia": ["audit", "maia200"],
    "compare-all": ["compare", "all-reduce", "--fabrics", "all", "--group-size", "8", "--count", "1",
                    "--size", "1MiB"],
}
TARGET = ("virgo-a2a", "ironwood-a2a", 30.0)   # case, yardstick, at most this ratio


def run(name: str) -> dict:
    """Run one case as its own process: wall s, peak RSS MiB, exit code, the symmetry note."""
    cmd = [sys.executable, "-c", "import sys; from fabricsim.cli import main; sys.exit(main())"] + CASES[name]
    t0 = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "RSS_KB=%M"] + cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    rss = re.search(r"RSS_KB=(\d+)", proc.stderr)
    note = next((ln for ln in proc.stdout.splitlines() if "symmetry (exact)" in ln), "")
    head = next((ln for ln in proc.stdout.splitlines() if ln.startswith("time ")), "")
    return {"case": name, "wall_s": wall, "rss_MiB": int(rss.group(1)) / 1024 if rss else float("nan"),
            "exit": proc.returncode, "time": head, "note": note.strip()}


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print((__doc__ or "").strip())
        print("\nusage: python benchmarks/bench_catalog.py [CASE ...]   (default: every case)")
        print("cases: " + ", ".join(CASES))
        return 0
    names = argv or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        print(f"unknown case(s) {', '.join(unknown)}; choose from: {', '.join(CASES)}", file=sys.stderr)
        return 2
    rows = {n: run(n) for n in names}
    print(f"{'case':<14} {'wall s':>8} {'RSS MiB':>8} {'exit':>4}  result")
    for r in rows.values():
        print(f"{r['case']:<14} {r['wall_s']:>8.2f} {r['rss_MiB']:>8.0f} {r['exit']:>4}  {r['time']}")
        if r["note"]:
            print(f"{'':<14} {'':>8} {'':>8} {'':>4}  {r['note']}")
    case, base, limit = TARGET
    if case in rows and base in rows:
        ratio = rows[case]["wall_s"] / rows[base]["wall_s"]
        print(f"\n{case} / {base} = {ratio:.1f}x (target <= {limit:g}x): {'OK' if ratio <= limit else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
