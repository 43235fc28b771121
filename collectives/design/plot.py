"""A picture of a design search: every priced design, the Pareto front joined up."""
from __future__ import annotations

from .search import DesignResult

__all__ = ["plot_front"]

_SCALE = {"time_s": (1e6, "time (us)"), "capex_usd": (1e-6, "capex (M$)"), "power_kw": (1.0, "power (kW)"),
          "capex_per_chip_usd": (1e-3, "capex per chip (k$)"), "network_capex_usd": (1e-6, "network capex (M$)"),
          "network_power_kw": (1.0, "network power (kW)"), "chips": (1.0, "chips"),
          "worst_n1_slowdown": (1.0, "worst N-1 slowdown (x)")}


def plot_front(result: DesignResult, path=None, *, x: str | None = None, y: str | None = None, ax=None):
    """Scatter the priced designs on two objectives and draw the front; return the Figure.

    ``x``, ``y`` default to the space's first two objectives; ``path`` (optional) writes a
    PNG; ``ax`` draws into an existing matplotlib axes.
    """
    import matplotlib
    if ax is None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    objs = list(result.space.objectives)
    x = x or objs[0]
    y = y or (objs[1] if len(objs) > 1 else objs[0])
    sx, lx = _SCALE.get(x, (1.0, x))
    sy, ly = _SCALE.get(y, (1.0, y))
    fig = ax.figure if ax is not None else plt.figure(figsize=(7, 4.5))
    ax = ax if ax is not None else fig.add_subplot()
    pts = [p for p in result.points if p.status == "ok"]
    ax.scatter([p.objectives[x] * sx for p in pts], [p.objectives[y] * sy for p in pts], s=14, c="0.6",
               label=f"priced ({len(pts)})")
    front = sorted(result.front(), key=lambda p: p.objectives[x])
    ax.plot([p.objectives[x] * sx for p in front], [p.objectives[y] * sy for p in front], "o-", c="C3",
            label=f"Pareto front ({len(front)})")
    for p in front[:12]:
        ax.annotate(", ".join(f"{k}={v}" for k, v in p.params.items()), (p.objectives[x] * sx, p.objectives[y] * sy),
                    fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel(lx)
    ax.set_ylabel(ly)
    ax.set_title(f"design {result.space.builder}: {len(result.points):,} designs, {result.pruned:,} pruned")
    ax.legend(fontsize=8)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
