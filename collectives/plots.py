"""Charts of pricing results: one cost report, a comparison, a sweep of slowdowns.

Public names
------------
plot_price(report, path=None, *, G=None, link_utilization=None, ax=None) -> matplotlib.figure.Figure
    Phase times (bandwidth and latency) and where the links were busy: the
    utilization of every link by tier when ``link_utilization`` is given, else the
    report's busiest links.
plot_compare(reports, path=None, *, ax=None) -> matplotlib.figure.Figure
    Time and bus bandwidth per fabric (or per report label).
plot_sweep(sweep_or_slowdowns, path=None, *, title=None, ax=None) -> matplotlib.figure.Figure
    Slowdowns sorted, and their distribution.
link_utilization(G, collective, *, groups, size_bytes, algorithm, ...) -> numpy.ndarray
    Per-direction utilization of every link of ``link_table(G)`` over the
    bandwidth time, computed as :func:`~fabricsim.collectives.price` computes its
    bottlenecks (the input of :func:`fabricsim.topo.draw.draw_utilization`).

Every figure is built on :class:`matplotlib.figure.Figure` (no pyplot state, no
interactive backend) and returned; given a path, it is also saved in the format of the path's suffix.
Given ``ax=`` (one Axes, or a pair for the two-panel charts) it draws into the caller's figure.  Times are
shown in microseconds, bandwidths in GB/s (1e9 B/s), utilization in percent.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import networkx as nx
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from .cost.calibrate import size_text as _size_text
from .price import CostReport

__all__ = ["plot_price", "plot_compare", "plot_sweep", "link_utilization"]

BW_COLOR = "#4c78a8"
LAT_COLOR = "#f58518"
BAD_COLOR = "#d62728"
TIER_ORDER = ("local", "nvlink", "ualink", "ici", "leaf", "global", "spine")


def _save(fig: Figure, path) -> Figure:
    """Write ``fig`` to ``path`` when one is given (format from the suffix); return ``fig``."""
    if path is None:
        return fig
    p = Path(path)
    if not p.parent.exists():
        raise ValueError(f"cannot save to {str(p)!r}: directory {str(p.parent)!r} does not exist")
    fig.savefig(p, dpi=fig.dpi, facecolor="white", bbox_inches="tight")
    return fig


def _panels(ax, figsize: tuple[float, float], **gridspec) -> tuple[Figure, Any, Any, bool]:
    """The figure and the two panels' Axes: new ones, the caller's pair, or one Axes (second panel left out).

    Returns ``(fig, ax1, ax2, own)``; ``ax2`` is None when the caller gave one Axes, ``own`` says the
    figure is ours (titles and spacing are then set on the figure).
    """
    if ax is None:
        fig = Figure(figsize=figsize, dpi=110)
        ax1, ax2 = fig.subplots(1, 2, gridspec_kw=gridspec or None)
        return fig, ax1, ax2, True
    if isinstance(ax, (list, tuple, np.ndarray)):
        axes = list(np.ravel(ax))
        if len(axes) != 2:
            raise ValueError(f"ax: give one Axes or a pair of Axes (one per panel), not {len(axes)}")
        return axes[0].figure, axes[0], axes[1], False
    return ax.figure, ax, None, False


def _us(t: float) -> float:
    return t * 1e6


def link_utilization(G: nx.Graph, collective: str, *, groups: Sequence[Sequence[int]], size_bytes: float,
                     algorithm: str, split: str | None = None, tiers: str = "rule",
                     efficiency: float = 1.0) -> np.ndarray:
    """Utilization of every directed link of ``link_table(G)`` over the bandwidth time.

    Parameters
    ----------
    G, collective, groups, size_bytes, split, tiers, efficiency
        As :func:`fabricsim.collectives.price` takes them.
    algorithm : str
        A concrete algorithm (pass ``report.algorithm`` to follow an ``auto`` choice).

    Returns
    -------
    numpy.ndarray, shape (L,)
        Bytes each link carried over all phases divided by capacity x the summed
        bandwidth time of the phases: the figure ``CostReport.bottlenecks`` ranks.

    Notes
    -----
    This prices the collective; a report in hand has the same array as
    ``report.link_utilization``.

    Examples
    --------
    >>> from fabricsim.fabrics import build
    >>> from fabricsim.collectives import by_size
    >>> G = build("jalapeno-rack")
    >>> u = link_utilization(G, "all-reduce", groups=by_size(G, 8), size_bytes=2**24, algorithm="ring")
    >>> round(float(u.max()), 6)
    1.0
    """
    from .price import price
    r = price(G, collective, groups=groups, size_bytes=size_bytes, algorithm=algorithm, split=split, tiers=tiers,
              efficiency=efficiency)
    return np.array(r.link_utilization)


# ---------------------------------------------------------------------------------------
# price
# ---------------------------------------------------------------------------------------
def plot_price(report: CostReport, path=None, *, G: nx.Graph | None = None, link_utilization=None,
               ax=None) -> Figure:
    """Chart one cost report: phase times and link use; write it to ``path`` if given; return the Figure.

    Parameters
    ----------
    report : CostReport
    path : str or Path, optional
        ``.png``, ``.svg`` or ``.pdf``; nothing is written without it.
    G : networkx.Graph, optional
        The priced fabric; with ``link_utilization`` it gives every link its tier.
    link_utilization : array_like, optional
        One value per directed link of ``link_table(G)`` (see :func:`link_utilization`).
        Without it the right panel shows the report's busiest links.
    ax : matplotlib.axes.Axes or pair of Axes, optional
        Draw into these: a pair gets both panels, one Axes the phase times only.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import os, tempfile
    >>> from fabricsim.fabrics import build
    >>> from fabricsim.collectives import by_size, price
    >>> G = build("nvl72")
    >>> r = price(G, "all-reduce", groups=by_size(G, 8), size_bytes=2**26)
    >>> out = os.path.join(tempfile.mkdtemp(), "p.png")
    >>> type(plot_price(r, out)).__name__, os.path.getsize(out) > 0
    ('Figure', True)
    """
    if link_utilization is None and G is not None:
        link_utilization = report.link_utilization
    if link_utilization is not None and G is None:
        raise ValueError("link_utilization needs G, the fabric it was computed on (for the link tiers)")
    fig, ax1, ax2, own = _panels(ax, (12.5, 4.8), width_ratios=[1.05, 1])
    _phase_panel(ax1, report)
    if ax2 is None:
        pass
    elif link_utilization is not None:
        _tier_panel(ax2, G, np.asarray(link_utilization, dtype=float))
    else:
        _bottleneck_panel(ax2, report)
    head = (f"{report.collective} on {report.fabric}: {report.groups:,} group(s) of {report.group_size}, "
            f"S = {_size_text(report.size_bytes)}, {report.algorithm}")
    sub = (f"time {_us(report.time_s):,.1f} us   algbw {report.algbw_GBps:,.1f} GB/s   "
           f"busbw {report.busbw_GBps:,.1f} GB/s   ({report.mode})")
    if report.partial:
        sub += "   PARTIAL: some groups or pairs were not priced"
    if own:
        fig.suptitle(head + "\n" + sub, fontsize=11)
        fig.subplots_adjust(top=0.82, wspace=0.55, left=0.2, right=0.97, bottom=0.14)
    else:
        ax1.set_title(head + "\n" + sub, fontsize=8)
    return _save(fig, path)


def _phase_panel(ax, report: CostReport) -> None:
    ph = list(report.phases)
    names = [_wrap(f"{p.name}" + (f" x{p.repeat}" if p.repeat > 1 else ""), 34) for p in ph]
    bw = [_us(p.repeat * p.step_bandwidth_s) for p in ph]
    lat = [_us(p.repeat * p.step_latency_s) for p in ph]
    y = np.arange(len(ph))[::-1]
    ax.barh(y, bw, height=0.6, color=BW_COLOR, label="bandwidth (flow-level)")
    ax.barh(y, lat, left=bw, height=0.6, color=LAT_COLOR, label="latency + step overhead")
    ax.set_ylim(-0.6, len(ph) - 0.4 + 0.55)   # headroom for the legend above the bars
    for yi, b, l in zip(y, bw, lat):
        ax.text(b + l, yi, f" {b + l:,.1f}", va="center", fontsize=8)
    ax.set_yticks(y, names, fontsize=8)
    ax.set_xlabel("time (us)")
    ax.set_title("time by phase", fontsize=10)
    ax.set_xlim(0, max(1e-9, max((b + l for b, l in zip(bw, lat)), default=1)) * 1.25)
    ax.legend(fontsize=8, loc="upper right", frameon=False, ncol=2)
    ax.grid(axis="x", alpha=0.3)


def _wrap(text: str, width: int) -> str:
    words, lines, cur = text.split(), [], ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}".strip()
    lines.append(cur)
    return "\n".join(lines[:3])


def _tier_panel(ax, G: nx.Graph, util: np.ndarray) -> None:
    from ..topo.routing import link_table
    table = link_table(G)
    if util.shape != (len(table),):
        raise ValueError(f"link_utilization has shape {util.shape}; expected ({len(table)},), one value per "
                         f"directed link of link_table(G)")
    tiers = sorted(set(map(str, table.tier)), key=lambda t: (TIER_ORDER.index(t) if t in TIER_ORDER else 99, t))
    data = [100 * util[np.asarray(table.tier) == t] for t in tiers]
    pos = np.arange(len(tiers))
    ax.boxplot(data, positions=pos, widths=0.5, showfliers=False, medianprops={"color": "black"})
    rng = np.random.default_rng(0)   # jitter only; seeded so the figure is reproducible
    top = float(util.max()) if util.size else 0.0
    for p, d in zip(pos, data):
        if d.size > 4000:
            d = rng.choice(d, 4000, replace=False)
        x = p + rng.uniform(-0.18, 0.18, d.size)
        hot = d >= 100 * top * (1 - 1e-6) if top > 0 else np.zeros(d.size, bool)
        ax.scatter(x[~hot], d[~hot], s=5, alpha=0.35, color=BW_COLOR, linewidths=0)
        ax.scatter(x[hot], d[hot], s=12, color=BAD_COLOR, linewidths=0)
    labels = [f"{t}\n{int((np.asarray(table.tier) == t).sum()):,} links" for t in tiers]
    ax.set_xticks(pos, labels, fontsize=8)
    ax.set_ylabel("link utilization over the bandwidth time (%)")
    ax.set_ylim(-3, 108)
    ax.set_title("link use by tier (each direction one link)", fontsize=10)
    ax.legend(handles=[Patch(color=BW_COLOR, alpha=0.5, label="link"),
                       Patch(color=BAD_COLOR, label=f"bottleneck ({top:.0%}, the busiest)")],
              fontsize=8, loc="lower right", frameon=False)
    ax.grid(axis="y", alpha=0.3)


def _bottleneck_panel(ax, report: CostReport) -> None:
    b = list(report.bottlenecks)
    if not b:
        ax.text(0.5, 0.5, "no link carried traffic", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    y = np.arange(len(b))[::-1]
    u = [100 * x["utilization"] for x in b]
    top = max(u)
    colors = [BAD_COLOR if v >= top * (1 - 1e-6) else BW_COLOR for v in u]
    ax.barh(y, u, color=colors)
    ax.set_yticks(y, [f"{x['link']} ({x['tier']}, {x['capacity_GBps']:g} GB/s)" for x in b], fontsize=7)
    ax.set_xlabel("link utilization over the bandwidth time (%)")
    ax.set_xlim(0, 110)
    ax.set_title(f"busiest links (red: the bottlenecks at {top:.0f}%)", fontsize=10)
    ax.grid(axis="x", alpha=0.3)


# ---------------------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------------------
def plot_compare(reports: Sequence[CostReport] | Mapping[str, CostReport], path=None, *, ax=None) -> Figure:
    """Time (bandwidth + latency) and bus bandwidth per report; write to ``path`` if given; return the Figure.

    Parameters
    ----------
    reports : sequence of CostReport, or mapping label -> CostReport
        A sequence is labelled by each report's fabric (and algorithm where fabrics repeat).
    path : str or Path, optional
        ``.png``, ``.svg`` or ``.pdf``; nothing is written without it.
    ax : matplotlib.axes.Axes or pair of Axes, optional
        Draw into these: a pair gets both panels, one Axes the times only.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import os, tempfile
    >>> from fabricsim.fabrics import build
    >>> from fabricsim.collectives import by_size, price
    >>> rs = [price(G, "all-reduce", groups=by_size(G, 8), size_bytes=2**26)
    ...       for G in (build("nvl72"), build("jalapeno-rack"))]
    >>> len(plot_compare(rs).axes)
    2
    """
    labels, reps = _labelled(reports)
    if not reps:
        raise ValueError("no reports to compare")
    fig, ax1, ax2, own = _panels(ax, (max(8.0, 2.2 + 1.3 * len(reps)), 4.6))
    x = np.arange(len(reps))
    bw = np.array([_us(r.bandwidth_time_s) for r in reps])
    lat = np.array([_us(r.latency_s) for r in reps])
    ax1.bar(x, bw, color=BW_COLOR, label="bandwidth")
    ax1.bar(x, lat, bottom=bw, color=LAT_COLOR, label="latency + step overhead")
    for xi, t in zip(x, bw + lat):
        ax1.text(xi, t, f"{t:,.1f}", ha="center", va="bottom", fontsize=8)
    ax1.set_ylabel("time (us)")
    ax1.set_title("time (lower is better)", fontsize=10)
    if own:
        fig.legend(*ax1.get_legend_handles_labels(), fontsize=8, frameon=False, loc="lower left", ncol=2,
                   bbox_to_anchor=(0.08, 0.0))
    else:
        ax1.legend(fontsize=7, frameon=False)
    if ax2 is not None:
        bus = np.array([r.busbw_GBps for r in reps])
        ax2.bar(x, bus, color="#54a24b")
        for xi, v in zip(x, bus):
            ax2.text(xi, v, f"{v:,.0f}", ha="center", va="bottom", fontsize=8)
        ax2.set_ylabel("bus bandwidth (GB/s)")
        ax2.set_title("busbw (nccl-tests definition; higher is better)", fontsize=10)
    for a in (ax1, ax2):
        if a is None:
            continue
        a.set_xticks(x, labels, fontsize=8, rotation=20 if max(map(len, labels)) > 12 else 0,
                     ha="right" if max(map(len, labels)) > 12 else "center")
        a.grid(axis="y", alpha=0.3)
        a.set_ylim(0, a.get_ylim()[1] * 1.12)
    r0 = reps[0]
    same = all(r.collective == r0.collective and r.group_size == r0.group_size and r.size_bytes == r0.size_bytes
               for r in reps)
    head = (f"{r0.collective}, groups of {r0.group_size}, S = {_size_text(r0.size_bytes)}" if same
            else "collectives compared")
    if own:
        fig.suptitle(head, fontsize=11)
        fig.subplots_adjust(wspace=0.3, top=0.86, bottom=0.27)
    return _save(fig, path)


def _labelled(reports) -> tuple[list[str], list[CostReport]]:
    if isinstance(reports, Mapping):
        return [str(k) for k in reports], list(reports.values())
    reps = list(reports)
    fabrics = [r.fabric for r in reps]
    labels = []
    for r in reps:
        lab = r.fabric if fabrics.count(r.fabric) == 1 else f"{r.fabric}\n{r.algorithm}"
        labels.append(lab)
    if len(set(labels)) < len(labels):
        labels = [f"{lab} #{i}" for i, lab in enumerate(labels)]
    return labels, reps


# ---------------------------------------------------------------------------------------
# sweep
# ---------------------------------------------------------------------------------------
def _slowdowns(obj) -> tuple[np.ndarray, list[str]]:
    """Accept floats, a mapping label -> slowdown, rows with ``slowdown`` (objects or dicts),
    or an object whose ``scenarios`` / ``slowdowns`` / ``rows`` / ``results`` attribute is
    one of those (a :class:`~fabricsim.collectives.whatif.Sweep`)."""
    for attr in ("scenarios", "slowdowns", "rows", "results"):
        if hasattr(obj, attr) and not isinstance(obj, Mapping):
            return _slowdowns(getattr(obj, attr))
    if isinstance(obj, Mapping):
        if "slowdowns" in obj:
            return _slowdowns(obj["slowdowns"])
        return np.array([float(v) for v in obj.values()]), [str(k) for k in obj]
    vals, labels = [], []
    for i, item in enumerate(obj):
        if isinstance(item, (int, float, np.floating, np.integer)):
            vals.append(float(item))
            labels.append(str(i))
            continue
        get = item.get if isinstance(item, Mapping) else (lambda k, d=None, it=item: getattr(it, k, d))
        v = get("slowdown")
        if v is None:
            raise ValueError(f"sweep item {i} has no slowdown: {item!r}")
        vals.append(float(v))
        lab = next((get(k) for k in ("label", "name", "failed", "failure", "scenario", "where")
                    if get(k) is not None), i)
        labels.append(" + ".join(map(str, lab)) if isinstance(lab, (list, tuple)) else str(lab))
    return np.array(vals, dtype=float), labels


def plot_sweep(sweep_or_slowdowns, path=None, *, title: str | None = None, label_top: int = 8,
               ax=None) -> Figure:
    """Sorted slowdowns and their distribution; write to ``path`` if given; return the Figure.

    Parameters
    ----------
    sweep_or_slowdowns : sequence of float, mapping, rows, or a sweep result
        Slowdowns as time with the failure / time intact (1.0 = no change);
        ``inf`` or NaN marks a scenario that could not be priced.  Rows may be
        objects or dicts with ``slowdown`` and a ``label``/``name``/``failed``; a
        :class:`~fabricsim.collectives.whatif.Sweep` is read from its ``scenarios``.
    path : str or Path, optional
        ``.png``, ``.svg`` or ``.pdf``; nothing is written without it.
    label_top : int
        Name this many of the worst scenarios on the sorted curve.
    ax : matplotlib.axes.Axes or pair of Axes, optional
        Draw into these: a pair gets both panels, one Axes the sorted slowdowns only.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import os, tempfile
    >>> out = os.path.join(tempfile.mkdtemp(), "s.png")
    >>> type(plot_sweep([1.0, 1.0, 1.14, 1.14, 8.0], out)).__name__, os.path.getsize(out) > 0
    ('Figure', True)
    """
    vals, labels = _slowdowns(sweep_or_slowdowns)
    if vals.size == 0:
        raise ValueError("no slowdowns to plot")
    vals = np.where(np.isnan(vals), np.inf, vals)    # NaN: nothing left to price
    if title is None and hasattr(sweep_or_slowdowns, "failure_class"):
        sw = sweep_or_slowdowns
        title = (f"{sw.fabric}: every {sw.failure_class} failure" + (f" N-{sw.n}" if sw.n > 1 else "")
                 + f", {sw.collective} ({sw.algorithm})")
    order = np.argsort(-np.where(np.isfinite(vals), vals, np.inf), kind="stable")
    v = vals[order]
    finite = np.isfinite(v)
    n_inf = int((~finite).sum())
    fig, ax1, ax2, own = _panels(ax, (12.0, 4.6), width_ratios=[1.4, 1])
    x = np.arange(1, v.size + 1)
    cap = float(v[finite].max()) * 1.15 if finite.any() else 2.0
    ax1.plot(x[finite], v[finite], marker="o", ms=3 if v.size > 60 else 5, color=BW_COLOR, lw=1)
    if n_inf:
        ax1.scatter(x[~finite], np.full(n_inf, cap), marker="^", color=BAD_COLOR, zorder=3,
                    label=f"{n_inf} could not be priced")
        ax1.legend(fontsize=8, frameon=False, loc="upper left")
    ax1.axhline(1.0, color="#888888", lw=0.8, ls="--")
    # the worst distinct slowdowns, listed in a box (ties collapse into one line)
    lines, i = [], 0
    while i < v.size and len(lines) < label_top:
        j = i
        while j + 1 < v.size and (v[j + 1] == v[i] or (np.isfinite(v[i]) and abs(v[j + 1] - v[i])
                                                        <= 1e-9 * abs(v[i]))):
            j += 1
        val = f"{v[i]:.4g}x" if np.isfinite(v[i]) else "unpriced"
        tied = f" (+{j - i} tied)" if j > i else ""
        name = labels[order[i]]
        lines.append(f"#{i + 1}  {val}  {name if len(name) <= 38 else name[:37] + '…'}{tied}")
        i = j + 1
    if lines:
        ax1.text(0.98, 0.97, "worst:\n" + "\n".join(lines), transform=ax1.transAxes, ha="right", va="top",
                 fontsize=7, family="monospace", multialignment="left",
                 bbox=dict(facecolor="white", alpha=0.85, edgecolor="#cccccc"))
    ax1.set_xlabel("scenario, sorted by slowdown (worst first)")
    ax1.set_ylabel("slowdown (time / intact time, x)")
    ax1.set_title("sorted slowdowns", fontsize=10)
    lo = min(0.95, float(v[finite].min()) * 0.97) if finite.any() else 0.9
    ax1.set_ylim(lo, cap + (cap - lo) * (0.25 + 0.06 * len(lines)))   # room for the list of the worst
    ax1.grid(alpha=0.3)
    fv = v[finite]
    ax1.xaxis.set_major_locator(MaxNLocator(integer=True))
    if ax2 is not None:
        if fv.size:
            ax2.hist(fv, bins=_bins(fv), color=BW_COLOR, edgecolor="white")
        ax2.set_xlabel("slowdown (x)")
        ax2.set_ylabel("scenarios")
        ax2.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax2.set_title("distribution" + (f" ({n_inf} unpriced not shown)" if n_inf else ""), fontsize=10)
        ax2.grid(axis="y", alpha=0.3)
    stats = (f"{vals.size} scenarios; median {np.median(fv):.3g}x, worst {fv.max():.3g}x" if fv.size
             else f"{vals.size} scenarios, none completed")
    if own:
        fig.suptitle((title + "\n" if title else "") + stats, fontsize=11)
        fig.subplots_adjust(wspace=0.25, top=0.84 if title else 0.88, bottom=0.13)
    else:
        ax1.set_title((title + "\n" if title else "") + stats, fontsize=8)
    return _save(fig, path)


def _bins(v: np.ndarray):
    lo, hi = float(v.min()), float(v.max())
    if hi - lo < 1e-9:
        return np.array([lo - 0.05, lo + 0.05])
    return np.linspace(lo, hi, min(30, max(5, int(math.sqrt(v.size)) + 1)))
