#!/usr/bin/python3
"""Compares a `run_tests.py -v` log with the expected results.

    compare.py LOG EXPECTED [--write] [--may-skip REASON]...

EXPECTED lists one "TEST_ID pass|skip" per line (# comments allowed).  The
run fails when a test errors or fails, when a test expected to pass does
not pass, or when the log has no summary (the suite crashed).  A test that
now passes where a skip was expected is reported, not failed: make it
expected.  --may-skip lets a test expected to pass skip instead, if its
skip reason contains REASON (what this run could not provide, such as huge
pages without root); it is reported.  --write rewrites EXPECTED from LOG.
"""
import re
import sys

ID = r"(test_\w+) \((tests\.[\w.]+)\)"
STATUS = r"(ok|skipped.*|ERROR|FAIL|expected failure|unexpected success)$"


def parse(text, reasons=None):
    """{test id: pass|skip|error|fail} from unittest's verbose output: the
    id line, maybe the docstring's first line, " ... ", then the status at
    the end of that line or alone on a later one (after what the library or
    the test printed meanwhile).  A skip's reason goes into reasons."""
    res = {}
    pending, dots = None, False
    for line in text.splitlines():
        m = re.match(ID + r"(.*)$", line)
        if m:
            pending, dots, line = m.group(2), False, m.group(3)
        if not pending:
            continue
        if not dots and " ... " in line:
            dots, line = True, line.split(" ... ", 1)[1]
        elif not dots:
            continue
        m = re.match(STATUS, line)
        if m:
            res[pending] = word(m.group(1))
            if reasons is not None and res[pending] == "skip":
                reasons[pending] = m.group(1)
            pending = None
    return res


def word(status):
    if status == "ok" or status == "expected failure":
        return "pass"
    if status.startswith("skipped"):
        return "skip"
    if status == "FAIL" or status == "unexpected success":
        return "fail"
    return "error"


def main():
    text = open(sys.argv[1], errors="replace").read()
    reasons = {}
    got = parse(text, reasons)
    may_skip = [sys.argv[i + 1] for i, a in enumerate(sys.argv[:-1]) if a == "--may-skip"]
    if "--write" in sys.argv:
        with open(sys.argv[2], "w") as f:
            f.write("# rdma-core v44 tests on uroce, with and without --dev uroce0 --gid 1: "
                    "TEST_ID pass|skip\n# (regenerate from a run log: tests/pyverbs/compare.py "
                    "LOG expected.txt --write)\n")
            for t in sorted(got):
                f.write("%s %s\n" % (t, got[t]))
        return 0
    exp = {}
    for line in open(sys.argv[2]):
        line = line.split("#")[0].split()
        if len(line) == 2:
            exp[line[0]] = line[1]
    bad = 0
    summary = re.search(r"^Ran (\d+) tests? in", text, re.M)
    if not summary:
        print("FAIL: the suite did not finish (no 'Ran N tests' line)")
        bad += 1
    for t, st in sorted(got.items()):
        if st in ("error", "fail"):
            print("FAIL: %s: %s" % (t, st.upper()))
            bad += 1
        elif exp.get(t) == "pass" and st == "skip" and \
                any(r in reasons.get(t, "") for r in may_skip):
            print("note: %s: expected to pass, %s (allowed in this run)" % (t, reasons[t]))
        elif exp.get(t) == "pass" and st != "pass":
            print("FAIL: %s: expected to pass, %s" % (t, st))
            bad += 1
        elif st == "pass" and exp.get(t) != "pass":
            print("note: %s now passes (expected %s): add it to %s" % (t, exp.get(t, "nothing"), sys.argv[2]))
    for t in sorted(set(exp) - set(got)):
        if exp[t] == "pass":
            print("FAIL: %s: expected to pass, did not run" % t)
            bad += 1
    n = {k: sum(1 for v in got.values() if v == k) for k in ("pass", "skip", "fail", "error")}
    print("pyverbs: %d tests: %d pass, %d skip, %d fail, %d error; %d unexpected"
          % (len(got), n["pass"], n["skip"], n["fail"], n["error"], bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
