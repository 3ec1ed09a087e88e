#!/usr/bin/env python3
"""Checks `uroce res -j -d` against what integ_res_set says it made.

  res_check.py MADE_LINE_FILE DIR [exact]

DIR holds qp.json, cq.json, mr.json, cm_id.json (`uroce res -j -d KIND pid
PID`) and summary.json (`uroce res -j`).  With "exact" the namespace is the
test's own, so the device's counts must be the program's alone.  Prints
"ok: ..." and "FAIL: ..." lines (tests/integ/lib.sh: ur_report)."""
import json
import os
import sys


def say(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    return cond


def load(d, name):
    with open(os.path.join(d, name)) as f:
        return json.load(f)


def main():
    with open(sys.argv[1]) as f:
        line = next(l for l in f if l.startswith("made "))
    made = json.loads(line[len("made "):])
    d = sys.argv[2]
    exact = len(sys.argv) > 3 and sys.argv[3] == "exact"
    pid = made["pid"]
    res = {k: load(d, k + ".json") for k in ("qp", "cq", "mr", "cm_id")}

    for kind, objs in res.items():
        say(all(o["pid"] == pid and o["comm"] == "integ_res_set" for o in objs),
            "%s: every object is pid %d's, comm integ_res_set" % (kind, pid))

    qps = {o["lqpn"]: o for o in res["qp"]}
    want = {q["lqpn"]: q for q in made["qp"]}
    if say(sorted(qps) == sorted(want), "qp: exactly the QPs made: %s" % sorted(want)):
        for n, w in want.items():
            seen = qps[n]
            for k, v in w.items():
                say(seen.get(k) == v, "qp %d (%s): %s %s (seen %s)" % (n, w["type"], k, v, seen.get(k)))
            say(seen.get("ifname") == "uroce0" and seen.get("port") == 1,
                "qp %d: on uroce0 port 1" % n)
            for c in ("retrans", "naks", "rnr", "errors", "completer_retry_err"):
                say(seen.get(c) == 0, "qp %d: counter %s is 0 with no traffic" % (n, c))
        ud = next(q["lqpn"] for q in made["qp"] if q["type"] == "UD")
        say("rqpn" not in qps[ud], "qp %d: a UD QP has no rqpn" % ud)

    say(sorted(o["cqe"] for o in res["cq"]) == sorted(made["cqe"]),
        "cq: exactly the CQs made, of %s entries" % made["cqe"])
    cq_users = sorted(o["users"] for o in res["cq"])
    say(cq_users == [3, 3], "cq: each used by 3 queues (seen %s)" % cq_users)

    mrs = {o["lkey"]: o for o in res["mr"]}
    wmr = {int(m["lkey"]): m for m in made["mr"]}
    seen_keys = {int(k, 16) for k in mrs}
    if say(seen_keys == set(wmr), "mr: exactly the MRs made (lkeys %s)" % sorted(wmr)):
        for k, o in mrs.items():
            w = wmr[int(k, 16)]
            say(o["mrlen"] == w["mrlen"] and o["access"] == w["access"],
                "mr %s: mrlen %s access %s (seen %s %s)" % (k, w["mrlen"], w["access"],
                                                           o["mrlen"], o["access"]))

    cm = res["cm_id"]
    if say(len(cm) == 1, "cm_id: exactly one id (seen %d)" % len(cm)):
        c = cm[0]
        want_src = "127.0.0.1:%d" % made["cm_port"]
        say(c["state"] == "LISTEN" and c["ps"] == "TCP" and c["src-addr"] == want_src,
            "cm_id: LISTEN, ps TCP, src-addr %s (seen %s %s %s)" % (want_src, c["state"], c["ps"],
                                                                   c["src-addr"]))

    summary = {o["ifname"]: o for o in load(d, "summary.json")}
    s = summary.get("uroce0", {})
    if exact:
        got = {k: s.get(k) for k in ("qp", "cq", "mr", "cm_id")}
        say(got == {"qp": 3, "cq": 2, "mr": 2, "cm_id": 1},
            "summary: uroce0 counts the program's objects alone: %s" % got)
    else:
        say(s.get("qp", 0) >= 3 and s.get("cq", 0) >= 2 and s.get("mr", 0) >= 2,
            "summary: uroce0 counts at least the program's objects: %s" % s)


main()
