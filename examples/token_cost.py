"""DeepSeek-R1 decode: communication per generated token on the Jalapeño pod, NVL72 and a TPU torus.

One decode step of DeepSeek-R1 (61 layers: 3 dense, 58 MoE with 256 routed experts,
top-8, one shared expert) priced by :func:`fabricsim.collectives.jobs.step.step` at
equal chip counts.  Assumptions (the "Token cost" section of docs/guide.md has the whole model):

* Pure expert parallelism with data-parallel attention (DeepSeek's decode layout):
  mesh ``ep=N`` (N <= 256 experts), ``ep=256,dp=N/256`` beyond.  No TP, so the dense
  layers and the replicated shared expert need no traffic; each MoE layer is a
  dispatch (fp8, 1 B per element) then a combine (bf16) all-to-all over each EP group.
* 32 sequences per chip (decode batch = 32 x N), one new token each; the router is
  balanced (the expectation of a uniform router).
* Compute is not modelled: the figures are the communication-only bound.
* Matching chip counts: 64 chips everywhere (the pod's and NVL72's first 64 ranks,
  the pod's all in one rack; a 4x4x4 torus); 256 and 1,024 chips on the pod (2 and 8
  racks) and on 4x8x8 and 8x8x16 tori.  NVL72 has 72 GPUs: it has no 256-chip point.

    python examples/token_cost.py [OUTDIR]      # writes OUTDIR/token_cost.png
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from fabricsim.collectives.jobs.step import step
from fabricsim.fabrics import build

MODEL = "deepseek-r1"
PER_CHIP = 32                       # decode sequences per chip
# chip count -> {fabric label: (catalog name, build parameters)}
POINTS = {
    64: {"Jalapeño pod": ("jalapeno-pod", {}), "NVL72": ("nvl72", {}), "TPU torus": ("torus", {"dims": (4, 4, 4)})},
    256: {"Jalapeño pod": ("jalapeno-pod", {}), "TPU torus": ("torus", {"dims": (4, 8, 8)})},
    1024: {"Jalapeño pod": ("jalapeno-pod", {}), "TPU torus": ("torus", {"dims": (8, 8, 16)})},
}
COLORS = {"Jalapeño pod": "#4c78a8", "NVL72": "#54a24b", "TPU torus": "#f58518"}


def mesh_for(chips: int) -> str:
    return f"ep={chips}" if chips <= 256 else f"ep=256,dp={chips // 256}"


def results() -> list[dict]:
    graphs: dict = {}
    rows = []
    for chips, fabrics in POINTS.items():
        for label, (name, params) in fabrics.items():
            key = (name, tuple(sorted(params.items())))
            if key not in graphs:
                graphs[key] = build(name, **params)     # the pod is built once for every count
            G = graphs[key]
            r = step(G, MODEL, mesh=mesh_for(chips), phase="decode", batch=PER_CHIP * chips)
            rows.append({"chips": chips, "label": label, "fabric": r.fabric, "result": r})
    return rows


def print_table(rows: list[dict]) -> None:
    print(f"{MODEL} decode, {PER_CHIP} sequences per chip, communication only (fabricsim step)\n")
    print(f"{'chips':>5}  {'fabric':<13} {'mesh':<12} {'tokens':>7}  {'step us':>9}  {'us/token':>8}  "
          f"{'tokens/s':>11}  {'dispatch us':>11}  {'combine us':>10}  algorithm")
    for row in rows:
        r = row["result"]
        moe = next(layer for layer in r.layers if layer.kind == "moe")
        d, c = moe.collectives
        print(f"{row['chips']:>5}  {row['label']:<13} {mesh_for(row['chips']):<12} {r.tokens:>7,}  "
              f"{r.comm_s * 1e6:>9,.1f}  {r.comm_s / r.tokens * 1e6:>8.4f}  {r.tokens_per_s_comm_bound:>11,.0f}  "
              f"{d.time_s * 1e6:>11.2f}  {c.time_s * 1e6:>10.2f}  {d.algorithm}")
    print("\nper layer: dispatch then combine of each of the 58 MoE layers (the 3 dense layers need no traffic);"
          "\nus/token = communication per step / tokens per step")


def figure(rows: list[dict], path: Path) -> Path:
    fig = Figure(figsize=(11.0, 4.6), dpi=110)
    ax = fig.subplots()
    counts = list(POINTS)
    labels = list(COLORS)
    width = 0.8 / len(labels)
    for i, label in enumerate(labels):
        for j, chips in enumerate(counts):
            row = next((r for r in rows if r["chips"] == chips and r["label"] == label), None)
            x = j + (i - (len(labels) - 1) / 2) * width
            if row is None:
                ax.text(x, 0, f"{label}:\nn/a", ha="center", va="bottom", fontsize=7, color="#555555")
                continue
            r = row["result"]
            by = r.by_collective()
            d = by["dispatch"]["attributed_s"] / r.tokens * 1e6
            c = by["combine"]["attributed_s"] / r.tokens * 1e6
            ax.bar(x, d, width, color=COLORS[label], label=label if j == 0 else None)
            ax.bar(x, c, width, bottom=d, color=COLORS[label], alpha=0.55, hatch="//", edgecolor="white")
            ax.text(x, d + c, f"{d + c:.3f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(counts)), [f"{n:,} chips\n({mesh_for(n)})" for n in counts], fontsize=9)
    ax.set_ylabel("communication per token (us)")
    ax.set_title(f"DeepSeek-R1 decode, {PER_CHIP} sequences per chip: dispatch (solid, fp8) + combine "
                 f"(hatched, bf16), 58 MoE layers", fontsize=10)
    ax.legend(fontsize=8, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.savefig(path, facecolor="white", bbox_inches="tight")
    return path


def main(outdir: str = "out") -> Path:
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    rows = results()
    print_table(rows)
    path = figure(rows, out / "token_cost.png")
    print(f"\nwrote {path}")
    return path


if __name__ == "__main__":
    main(*sys.argv[1:2])
