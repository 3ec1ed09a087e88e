#!/usr/bin/python3
"""tests/integ/perftest_table.py against latency tables: a normal one, one
where perftest itself printed its standard deviation as -nan (passes, with
a note), and rows with any other field not a finite number (fail).

    perftest_table_ut.py PATH_TO_perftest_table.py
"""
import subprocess
import sys
import tempfile

HEADER = (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
          "    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n")


def check(checker, row):
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
        f.write(HEADER + row + "\n---\n")
        f.flush()
        out = subprocess.run([sys.executable, checker, f.name, "lat", "2", "1000"],
                             capture_output=True, text=True).stdout
    return out.splitlines()


def main():
    checker, failed = sys.argv[1], 0
    cases = [
        ("a normal row", " 2       1000   1.20   9.5   1.50   1.61   0.22   2.10   9.5", "ok", None),
        ("perftest's -nan stdev", " 2       1000   1.20   380000.5   1.50   400.1   -nan   2.10   380000.5",
         "ok", "note: perftest printed its standard deviation as -nan"),
        ("nan in another field", " 2       1000   1.20   nan   1.50   1.61   0.22   2.10   9.5", "FAIL", None),
        ("a word as the stdev", " 2       1000   1.20   9.5   1.50   1.61   x   2.10   9.5", "FAIL", None),
    ]
    for name, row, want, note in cases:
        lines = check(checker, row)
        got = "FAIL" if any(l.startswith("FAIL:") for l in lines) else \
              "ok" if any(l.startswith("ok:") for l in lines) else "nothing"
        if got != want or (note and not any(l.startswith(note) for l in lines)) or \
           (not note and any(l.startswith("note:") for l in lines)):
            print(f"FAIL: {name}: expected {want}{', ' + note if note else ''}, saw {lines}")
            failed += 1
        else:
            print(f"ok: {name}: {want}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
