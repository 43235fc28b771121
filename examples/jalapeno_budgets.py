"""Jalapeño bandwidth closure and budgets: 614.4 Tb/s, differential pairs, optics.

Every number is read from :func:`fabricsim.topo.audit` on the catalog fabrics
(``jalapeno-rack`` and ``jalapeno-pod``); nothing is typed in here except the labels.

    python examples/jalapeno_budgets.py [OUTDIR]      # writes OUTDIR/jalapeno_budgets.png
"""
from __future__ import annotations

import sys
from pathlib import Path

from matplotlib.figure import Figure

from fabricsim.fabrics import build
from fabricsim.topo.auditing import audit


def rows_of() -> list[tuple[str, float, str]]:
    """(quantity, value, unit) for the table and the figure, all from the audits."""
    rack = audit(build("jalapeno-rack"), hops=False, bisect=False)
    pod = audit(build("jalapeno-pod"), hops=False, bisect=False)
    rt, pt = rack.totals, pod.totals
    per = pod.per_rack["0"]                      # rack 0 of the pod: every rack is the same
    leaf = next(f for f in pod.findings if f.where == "r00/gsw0" and f.check == "switch down/up")
    local = next(f for f in rack.findings if f.where == "r00/lsw0" and f.check == "switch down/up")
    return [
        ("local switch capacity (6 x Tomahawk 6)", rt["local_switch_capacity_Tbps"], "Tb/s"),
        ("chips' local ports (128 x 6 x 800G)", rt["local_chip_bandwidth_Tbps"], "Tb/s"),
        ("local switch ports wired", rt["local_switch_wired_Tbps"], "Tb/s"),
        ("local switch uplinks", local.available / 1000, "Tb/s"),
        ("chips' global ports per rack (128 x 1.6T)", per["global_chip_bandwidth_Tbps"], "Tb/s"),
        ("global leaf down (chips side), per leaf", leaf.used / 1000, "Tb/s"),
        ("global leaf up (optics), per leaf", leaf.available / 1000, "Tb/s"),
        ("rail switch capacity wired (64 x 51.2T)", pt["rail_switch_wired_Tbps"], "Tb/s"),
        ("chips' global ports, pod (2,048 x 1.6T)", pt["global_chip_bandwidth_Tbps"], "Tb/s"),
        ("rail switch capacity unused", pt["rail_switch_capacity_Tbps"] - pt["rail_switch_wired_Tbps"], "Tb/s"),
        ("chip differential pairs per rack", per["chip_diff_pairs"], "pairs"),
        ("local copper pairs per rack", rt["copper_diff_pairs"], "pairs"),
        ("global copper pairs per rack (chip to leaf)", per["copper_diff_pairs"] - rt["copper_diff_pairs"], "pairs"),
        ("1.6T optical ports per rack", per["optical_ports"], "ports"),
        ("optical lanes per rack (200G)", per["optical_lanes"], "lanes"),
        ("switch ASICs per rack (local + global)", per["switch_asics"], "ASICs"),
        ("audit findings failed (rack, pod)", sum(not f.ok for f in rack.findings + pod.findings), ""),
    ]


def print_table(rows) -> None:
    w = max(len(r[0]) for r in rows)
    print(f"{'quantity':<{w}}  {'value':>10}  unit")
    print(f"{'-' * w}  {'-' * 10}  -----")
    for q, v, u in rows:
        print(f"{q:<{w}}  {v:>10,.6g}  {u}")


def figure(rows, path: Path) -> Path:
    val = {q: v for q, v, _ in rows}
    fig = Figure(figsize=(13, 4.8), dpi=110)
    a, b, c = fig.subplots(1, 3, gridspec_kw={"width_ratios": [2.2, 1, 1]})
    # bandwidth per rack: the local tier closes at 614.4 Tb/s, the global tier at 204.8
    bars = [("chips'\nlocal ports", val["chips' local ports (128 x 6 x 800G)"], "#4c78a8"),
            ("local\nswitches", val["local switch capacity (6 x Tomahawk 6)"], "#4c78a8"),
            ("chips'\nglobal ports", val["chips' global ports per rack (128 x 1.6T)"], "#f58518"),
            ("4 leaves\ndown", 4 * val["global leaf down (chips side), per leaf"], "#f58518"),
            ("4 leaves\nup (optics)", 4 * val["global leaf up (optics), per leaf"], "#f58518"),
            ("rails, the\nrack's share", val["rail switch capacity wired (64 x 51.2T)"] / 16, "#e45756")]
    x = range(len(bars))
    a.bar(x, [v for _, v, _ in bars], color=[col for *_, col in bars])
    for i, (_, v, _) in enumerate(bars):
        a.text(i, v, f"{v:,.1f}", ha="center", va="bottom", fontsize=8)
    a.set_xticks(list(x), [lab for lab, _, _ in bars], fontsize=8)
    a.set_ylabel("bandwidth per rack, per direction (Tb/s)")
    a.set_title("closure: local 614.4 = 614.4, global 204.8 all the way up (3:1)", fontsize=10)
    a.set_ylim(0, 700)
    a.grid(axis="y", alpha=0.3)
    # differential pairs per rack
    loc, glo = val["local copper pairs per rack"], val["global copper pairs per rack (chip to leaf)"]
    b.bar([0], [loc], color="#4c78a8", label=f"local copper {loc:,.0f}")
    b.bar([0], [glo], bottom=[loc], color="#f58518", label=f"global copper {glo:,.0f}")
    b.axhline(val["chip differential pairs per rack"], color="black", ls="--", lw=0.8)
    b.text(0, val["chip differential pairs per rack"], f"chips' pairs {val['chip differential pairs per rack']:,.0f}",
           ha="center", va="bottom", fontsize=8)
    b.set_xticks([0], ["per rack"])
    b.set_ylabel("differential pairs (TX + RX per lane)")
    b.set_ylim(0, 9500)
    b.set_title("backplane copper", fontsize=10)
    b.legend(fontsize=8, loc="lower center", frameon=True)
    # optics
    ports, lanes = val["1.6T optical ports per rack"], val["optical lanes per rack (200G)"]
    c.bar([0, 1], [ports, lanes / 8], color=["#e45756", "#e45756"])
    c.text(0, ports, f"{ports:,.0f}", ha="center", va="bottom", fontsize=8)
    c.text(1, lanes / 8, f"{lanes:,.0f} lanes\n= {lanes / 8:,.0f} x 8", ha="center", va="bottom", fontsize=8)
    c.set_xticks([0, 1], ["1.6T ports", "200G lanes / 8"], fontsize=8)
    c.set_ylabel("per rack (count)")
    c.set_ylim(0, 160)
    c.set_title("front-panel optics", fontsize=10)
    for ax in (b, c):
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle("Jalapeño rack and pod budgets (fabricsim audit of jalapeno-rack and jalapeno-pod)", fontsize=11)
    fig.subplots_adjust(wspace=0.35, left=0.06, right=0.98, top=0.86, bottom=0.14)
    fig.savefig(path, facecolor="white")
    return path


def main(outdir: str = "out") -> Path:
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    rows = rows_of()
    print("Jalapeño bandwidth closure and budgets (per direction; from fabricsim.topo.audit)\n")
    print_table(rows)
    path = figure(rows, out / "jalapeno_budgets.png")
    print(f"\nwrote {path}")
    return path


if __name__ == "__main__":
    main(*sys.argv[1:2])
