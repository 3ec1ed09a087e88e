#!/usr/bin/env python3
"""Plots what bench/compare.sh swept: bandwidth (above) and latency (below)
against message size, one line per series, as a self-contained SVG.

    plot_compare.py SWEEP.tsv OUT.svg [TITLE]

SWEEP.tsv has one point per line: series, panel (bw or lat), message size
in bytes, value (MB/s or microseconds), tab-separated.  Both axes are
logarithmic: sizes in powers of two, values in powers of ten.  No
dependencies beyond Python's standard library.
"""
import math
import sys
from xml.sax.saxutils import escape

WIDTH, PANEL_H, LEFT, RIGHT, TOP, GAP = 1000, 280, 80, 310, 50, 80
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
          "#17becf", "#7f7f7f"]
PANELS = [("bw", "bandwidth, MB/s (higher is better)"),
          ("lat", "latency, one way, us (lower is better)")]


def read_points(path):
    points = {}
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 4:
                continue
            series, panel, size, value = parts
            try:
                size, value = float(size), float(value)
            except ValueError:
                continue
            if size > 0 and value > 0:
                points.setdefault(panel, {}).setdefault(series, []).append((size, value))
    return points


def size_label(b):
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n:
            return "%d %s" % (b // n, unit)
    return "%d B" % b


def panel_svg(out, top, title, series, xs, colors):
    values = [v for pts in series.values() for _, v in pts]
    if not values:
        return
    x0, x1 = math.floor(math.log2(min(xs))), math.ceil(math.log2(max(xs)))
    y0 = math.floor(math.log10(min(values)))
    y1 = max(math.ceil(math.log10(max(values))), y0 + 1)
    plot_w = WIDTH - LEFT - RIGHT

    def px(size):
        return LEFT + (math.log2(size) - x0) / max(x1 - x0, 1) * plot_w

    def py(v):
        return top + PANEL_H - (math.log10(v) - y0) / (y1 - y0) * PANEL_H

    out.append('<text x="%d" y="%d" font-weight="bold">%s</text>' % (LEFT, top - 10, escape(title)))
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>'
               % (LEFT, top, plot_w, PANEL_H))
    for e in range(y0, y1 + 1):
        y = py(10 ** e)
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (LEFT, y, LEFT + plot_w, y))
        out.append('<text x="%d" y="%.1f" text-anchor="end" font-size="11">%g</text>' % (LEFT - 6, y + 4, 10 ** e))
    for e in range(x0, x1 + 1, 2 if x1 - x0 > 12 else 1):
        x = px(2 ** e)
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>' % (x, top, x, top + PANEL_H))
        out.append('<text x="%.1f" y="%d" text-anchor="middle" font-size="10">%s</text>'
                   % (x, top + PANEL_H + 14, size_label(2 ** e)))
    for i, (name, pts) in enumerate(sorted(series.items())):
        color = colors[name]
        pts = sorted(pts)
        path = " ".join("%.1f,%.1f" % (px(s), py(v)) for s, v in pts)
        out.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>' % (path, color))
        for s, v in pts:
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %s, %g</title></circle>'
                       % (px(s), py(v), color, escape(name), size_label(int(s)), v))
        ly = top + 14 + i * 18
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>'
                   % (LEFT + plot_w + 15, ly - 4, LEFT + plot_w + 40, ly - 4, color))
        out.append('<text x="%d" y="%d" font-size="12">%s</text>' % (LEFT + plot_w + 46, ly, escape(name)))


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    points = read_points(sys.argv[1])
    if not points:
        sys.stderr.write("plot_compare.py: no points in %s\n" % sys.argv[1])
        return 1
    title = sys.argv[3] if len(sys.argv) > 3 else "uroce and its peers, one run"
    names = sorted({n for p in points.values() for n in p})
    colors = {n: COLORS[i % len(COLORS)] for i, n in enumerate(names)}
    xs = [s for p in points.values() for pts in p.values() for s, _ in pts]
    height = TOP + len(PANELS) * (PANEL_H + GAP)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (WIDTH, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>' % (LEFT, escape(title))]
    for i, (panel, label) in enumerate(PANELS):
        panel_svg(out, TOP + 20 + i * (PANEL_H + GAP), label, points.get(panel, {}), xs, colors)
    out.append("</svg>")
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
