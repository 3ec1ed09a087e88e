#!/usr/bin/python3
"""Checks the result table a perftest program printed.

    perftest_table.py OUTPUT KIND SIZES [ITERS] [UNIT]

KIND is bw or lat.  SIZES is a comma-separated list of message sizes: the
table must hold exactly one row per size, in that order, and every field of
every row must be a finite number (bw: #bytes #iterations peak average
msgrate; lat: #bytes #iterations and seven times), but for a latency row's
standard deviation: perftest computes it as the square root of the mean
square less the squared mean, which rounding makes negative after one huge
outlier, and then prints "-nan" itself.  ITERS, when given and
not "-", is the #iterations every row must show.  UNIT (bw only) is the unit
the header must name: MB/sec (the default) or Gb/sec (--report_gbits).
Prints one "ok: ..." or "FAIL: ..." line per check.
"""
import math
import re
import sys

COLUMNS = {"bw": 5, "lat": 9}
# t_stdev's field in a latency row (see above).
LAT_STDEV = 6


def number(s):
    try:
        v = float(s)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def main():
    path, kind, sizes = sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3].split(",")]
    iters = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] != "-" else None
    unit = sys.argv[5] if len(sys.argv) > 5 else "MB/sec"
    text = open(path, errors="replace").read().splitlines()

    header = [i for i, l in enumerate(text) if re.match(r"\s*#bytes\s+#iterations", l)]
    if len(header) != 1:
        print(f"FAIL: expected one result table header (#bytes #iterations ...), found {len(header)}")
        return
    h = text[header[0]]
    if kind == "bw":
        if f"BW average[{unit}]" in h:
            print(f"ok: the bandwidth is reported in {unit}")
        else:
            print(f"FAIL: expected the header to report BW in {unit}, saw: {h.strip()}")

    rows = []
    for line in text[header[0] + 1:]:
        if line.startswith("---"):
            break
        if line.strip():
            rows.append(line.split())

    seen = []
    bad = []
    for r in rows:
        vals = [number(f) for f in r]
        if kind == "lat" and len(r) == COLUMNS[kind] and vals[LAT_STDEV] is None \
                and r[LAT_STDEV].lstrip("-").lower() == "nan":
            print(f"note: perftest printed its standard deviation as {r[LAT_STDEV]} for {r[0]} bytes")
            vals[LAT_STDEV] = 0.0
        if len(r) != COLUMNS[kind] or any(v is None for v in vals):
            bad.append(" ".join(r))
            continue
        seen.append(int(vals[0]))
        if iters is not None and int(vals[1]) != int(iters):
            bad.append(" ".join(r) + f" (expected {iters} iterations)")
    if seen == sizes and not bad:
        print(f"ok: {len(sizes)} numeric row(s) of {COLUMNS[kind]} fields, sizes {sizes[0]}..{sizes[-1]}"
              + (f", {iters} iterations each" if iters else ""))
    else:
        if seen != sizes:
            print(f"FAIL: expected rows for sizes {sizes}, saw {seen}")
        for b in bad:
            print(f"FAIL: malformed result row: {b}")


if __name__ == "__main__":
    main()
