#!/usr/bin/env bash
# ctest-timeout: 240
# `uroce bench`, server and client processes:
#  - on one host (uroce0 over lo, -x 1): each operation's bandwidth and
#    latency with a small -n: both sides exit 0, print perftest's table,
#    and the server reports the client's iteration count (for send, what
#    it received itself); -q 4, -T 2, -b, --report_gbits, -e, UC write, UD
#    send;
#  - a -a sweep with --json, --csv and --plot: python3 parses them (one
#    record per size, numbers > 0, bw_avg <= bw_peak, t_min <= t_avg,
#    p50 <= p99 <= p99.9 <= max), the SVG is XML with a polyline per series;
#  - across two namespaces (no -d, no -x: each side finds the device and
#    GID that reach the other): write bw, read lat, UD send bw and lat;
#  - failures: no server (exit 1 naming host:port), -x of a GID that does
#    not reach the peer (exit 1 naming the index that does), a missing GID
#    index, an unknown option and refused combinations (exit 2).
. "$(dirname "$0")/lib.sh"
UR_TIMEOUT=60
U=$UR_BUILD/bin/uroce
J=$UR_TMP/json
mkdir -p "$J"

# row TAG: "bytes iterations" of the first table row in TAG's output.
row() {
	awk '/#bytes/ { getline; print $1, $2; exit }' "$(ur_out "$1")"
}

# bench_ok TAG ITERS ARGS...: a pair on lo with ARGS on both sides; both exit
# 0 and print the same first row (size, iterations = ITERS).
bench_ok() {
	local tag=$1 iters=$2 port
	shift 2
	port=$(ur_port)
	ur_pair "$tag" "$port" "$U" bench "$@" -x 1 -p "$port" \
		-- "$U" bench "$@" -x 1 -p "$port" 127.0.0.1
	bench_check "$tag" "$iters" "$*"
}

bench_check() {
	local tag=$1 iters=$2 what=$3 c s
	ur_expect_pair_ok "$tag" "bench $what" || return
	c=$(row "$tag.client")
	s=$(row "$tag.server")
	case $c in
	*" $iters") ur_pass "$tag: client table row: $c" ;;
	*) ur_fail "$tag: client table row '$c', expected $iters iterations"; ur_show "$tag.client" ;;
	esac
	ur_expect_eq "$tag: the server reports the same size and iterations" "$c" "$s"
}

# --- one host: every operation ---------------------------------------------------
for op in write read send atomic; do
	bench_ok "bw.$op" 200 "$op" -n 200
	ur_expect_grep "bw.$op.client" "^ #bytes     #iterations    BW peak\[MB/sec\]    BW average\[MB/sec\]   MsgRate\[Mpps\]" \
		"bw.$op: perftest's bandwidth table"
	bench_ok "lat.$op" 200 "$op" --lat -n 200
	ur_expect_grep "lat.$op.client" "^ #bytes #iterations    t_min\[usec\]    t_max\[usec\]  t_typical\[usec\] .*99.9% percentile\[usec\] +p50\[usec\]" \
		"lat.$op: perftest's latency table with p50"
done
ur_expect_grep bw.write.client "^                    RDMA_Write BW Test" "bw.write: perftest's title"
ur_expect_grep bw.write.client "^ GID index       : 1" "bw.write: the header names the GID index"
ur_expect_grep bw.write.client "^ remote address: LID 0000 QPN 0x[0-9a-f]+ PSN 0x[0-9a-f]{6} RKey 0x[0-9a-f]+ VAddr 0x[0-9a-f]+" \
	"bw.write: perftest's address line"
bench_ok lat.cas 100 atomic --lat -A CMP_AND_SWAP -n 100
ur_expect_grep lat.cas.client "Atomic CMP_AND_SWAP Latency Test" "-A CMP_AND_SWAP: the title says so"

bench_ok q4 100 write -q 4 -n 100
ur_expect_grep q4.client "^ Number of qps   : 4[[:space:]]" "-q 4: four QPs"
bench_ok t2 100 send -T 2 -q 2 -n 100
ur_expect_grep t2.client "^ Number of qps   : 4[[:space:]]" "-T 2 -q 2: four QPs in all"
ur_expect_grep t2.client "^ Threads         : 2 \(x 2 QPs each\)" "-T 2: two threads"
bench_ok bidir 100 write -b -n 100
bench_ok bidir.send 100 send -b -n 100
bench_ok gbits 100 read --report_gbits -n 100
ur_expect_grep gbits.client "BW peak\[Gb/sec\]    BW average\[Gb/sec\]" "--report_gbits: Gb/sec"
bench_ok events 100 send -e -n 100 -s 4096
bench_ok inline 100 write -I 64 -s 64 -n 100
bench_ok uc.write 100 write -c UC -n 100 -s 4096
bench_ok ud.send 100 send -c UD -n 100 -s 1024
bench_ok ud.lat 100 send -c UD --lat -n 100 -s 1024
bench_ok uc.lat 100 send -c UC --lat -n 100
bench_ok lat.t2 100 write --lat -T 2 -q 2 -n 100
bench_ok lat.events 100 send --lat -e -T 2 -n 100

# --- sweeps: JSON, CSV, SVG ----------------------------------------------------------
port=$(ur_port)
ur_pair sweep "$port" "$U" bench write -a -n 8 -x 1 -p "$port" \
	-- "$U" bench write -a -n 8 -x 1 -p "$port" --json "$J/bw.json" --csv "$J/bw.csv" --plot "$J/bw.svg" 127.0.0.1
ur_expect_pair_ok sweep "bench write -a with --json, --csv, --plot"
port=$(ur_port)
ur_pair sweep.lat "$port" "$U" bench send --lat -a -n 10 -x 1 -p "$port" \
	-- "$U" bench send --lat -a -n 10 -x 1 -p "$port" --json "$J/lat.json" --csv "$J/lat.csv" --plot "$J/lat.svg" 127.0.0.1
ur_expect_pair_ok sweep.lat "bench send --lat -a with --json, --csv, --plot"
port=$(ur_port)
ur_pair one.svg "$port" "$U" bench read -n 50 -x 1 -p "$port" \
	-- "$U" bench read -n 50 -x 1 -p "$port" --plot "$J/one.svg" --json - 127.0.0.1
ur_expect_pair_ok one.svg "bench read, one size, --plot and --json -"

ur_report records python3 - "$J" "$(ur_out one.svg.client)" <<'PY'
import csv, json, sys, xml.etree.ElementTree as ET
d, one_out = sys.argv[1], sys.argv[2]
def ok(c, what):
    print(("ok: " if c else "FAIL: ") + what)
sizes = [2 << i for i in range(23)]
for mode in ("bw", "lat"):
    try:
        doc = json.load(open(f"{d}/{mode}.json"))
    except Exception as e:
        ok(False, f"{mode}.json parses: {e}"); continue
    rs = doc["results"]
    ok([r["size_bytes"] for r in rs] == sizes, f"{mode}.json: one record per size 2..8M ({len(rs)})")
    ok(doc["test"] == mode and doc["device"] == "uroce0", f"{mode}.json: test and device named")
    for r in rs:
        s = r["size_bytes"]
        ok(r["iterations"] == (8 if mode == "bw" else 10) and r["messages"] > 0 and r["seconds"] > 0,
           f"{mode} {s}: iterations, messages, seconds")
        if mode == "bw":
            ok(0 < r["bw_avg_MBps"] <= r["bw_peak_MBps"] and r["msg_rate_Mpps"] > 0,
               f"bw {s}: 0 < avg {r['bw_avg_MBps']} <= peak {r['bw_peak_MBps']}")
            ok(abs(r["bw_avg_Gbps"] - r["bw_avg_MBps"] * 1048576 * 8 / 1e9) < 1e-3 * max(1, r["bw_avg_Gbps"]),
               f"bw {s}: Gbps = MBps * 2^20 * 8 / 1e9")
            ok(r["bw_avg_MBps"] < 1e6, f"bw {s}: plausible (< 1 TB/s)")
        else:
            ok(0 < r["lat_min_usec"] <= r["lat_avg_usec"] <= r["lat_max_usec"],
               f"lat {s}: 0 < min {r['lat_min_usec']} <= avg <= max {r['lat_max_usec']}")
            ok(r["lat_p50_usec"] <= r["lat_p99_usec"] <= r["lat_p999_usec"] <= r["lat_max_usec"],
               f"lat {s}: p50 <= p99 <= p99.9 <= max")
            ok(r["lat_min_usec"] < 60e6, f"lat {s}: plausible (< 60 s)")
    rows = list(csv.DictReader(open(f"{d}/{mode}.csv")))
    ok(len(rows) == len(rs) and [int(r["size_bytes"]) for r in rows] == sizes,
       f"{mode}.csv: one row per size")
    key = "bw_avg_MBps" if mode == "bw" else "lat_p99_usec"
    ok(all(abs(float(a[key]) - b[key]) <= 1e-3 for a, b in zip(rows, rs)), f"{mode}.csv agrees with JSON on {key}")
    ns = "{http://www.w3.org/2000/svg}"
    for f in (f"{mode}.svg",) + (("one.svg",) if mode == "bw" else ()):
        try:
            root = ET.parse(f"{d}/{f}").getroot()
        except Exception as e:
            ok(False, f"{f} is XML: {e}"); continue
        lines = root.findall(f".//{ns}polyline")
        want = 3 if mode == "bw" else 5
        ok(len(lines) == want, f"{f}: {len(lines)} polylines (one per series, want {want})")
        npts = {len(p.get("points").split()) for p in lines}
        ok(npts == ({1} if f == "one.svg" else {23}), f"{f}: a point per size {npts}")
        texts = " ".join(t.text or "" for t in root.iter(f"{ns}text"))
        ok("message size" in texts and "MB/s" in texts, f"{f}: labelled axes")
        title = root.find(f"{ns}title").text
        ok("uroce0" in title and ("RC" in title), f"{f}: title names op, QP type, device: {title}")
# --json - : the records on stdout, the tables on stderr (same file here)
txt = open(one_out).read()
i = txt.find('{"tool"')
try:
    doc, _ = json.JSONDecoder().raw_decode(txt[i:])
    ok(len(doc["results"]) == 1 and doc["results"][0]["size_bytes"] == 65536, "--json -: one record on stdout")
except Exception as e:
    ok(False, f"--json -: {e}")
PY

# --- failures ------------------------------------------------------------------------
port=$(ur_port)
ur_run noserver "$U" bench write -x 1 -p "$port" 127.0.0.1
ur_expect_rc noserver 1 "no server: exit 1"
ur_expect_grep noserver "^no server at 127.0.0.1:$port: connection refused; start \`uroce bench write\`" \
	"no server: names host:port and what to start"

port=$(ur_port)
UR_TIMEOUT=30 ur_pair gidfam "$port" "$U" bench write -n 10 -x 1 -p "$port" \
	-- "$U" bench write -n 10 -x 2 -p "$port" 127.0.0.1
ur_expect_rc gidfam.client 1 "client -x 2 (IPv6) to an IPv4 peer: client exits 1"
ur_expect_fail_fast gidfam.server "client -x 2, server -x 1: server fails too"
ur_expect_grep gidfam.client "GID index 2 \(::1\) does not reach the peer 127.0.0.1, GID index 1 \(uroce0, lo\) does: use -x 1" \
	"client -x 2: names -x 1"
ur_run gid9 "$U" bench write -x 9 127.0.0.1
ur_expect_rc gid9 1 "-x 9 (no such GID): exit 1"
ur_expect_grep gid9 "GID index 9 is not in uroce0 port 1's table" "-x 9: says the index does not exist"

ur_run badopt "$U" bench write --bogus
ur_expect_rc badopt 2 "unknown option: exit 2"
ur_expect_grep badopt "see \`uroce bench --help\`" "unknown option: a usage hint"
ur_run badop "$U" bench swap
ur_expect_rc badop 2 "unknown operation: exit 2"
ur_run uc.read "$U" bench read -c UC
ur_expect_rc uc.read 2 "read -c UC: exit 2"
ur_expect_grep uc.read "UC carries SEND and RDMA WRITE only" "read -c UC: says why"
ur_run ud.write "$U" bench write -c UD
ur_expect_rc ud.write 2 "write -c UD: exit 2"
ur_run lat.bidir "$U" bench send --lat -b
ur_expect_rc lat.bidir 2 "--lat -b: exit 2"
ur_run atomic.size "$U" bench atomic -s 64
ur_expect_rc atomic.size 2 "atomic -s 64: exit 2"
ur_run help "$U" bench --help
ur_expect_rc help 0 "--help: exit 0"
ur_expect_grep help "^examples:" "--help shows examples"

port=$(ur_port)
UR_TIMEOUT=30 ur_pair mismatch "$port" "$U" bench write -n 10 -x 1 -p "$port" \
	-- "$U" bench write -n 20 -x 1 -p "$port" 127.0.0.1
ur_expect_rc mismatch.client 1 "different -n on both sides: client exits 1"
ur_expect_grep mismatch.client "the peer runs \`bench write --bw -c RC -q 1 -T 1 -n 10" "mismatch: names the peer's options"

# --- two namespaces --------------------------------------------------------------------
ur_netns_pair
for c in "write --bw -n 100" "read --lat -n 100" "send --bw -c UD -s 1024 -n 100" "send --lat -c UD -s 512 -n 100" "atomic --bw -q 2 -n 100"; do
	set -- $c
	tag=ns.$1.${2#--}; [ "$3" = -c ] && tag+=.$4
	port=$(ur_port)
	UR_SNS=$UR_NS_A UR_CNS=$UR_NS_B ur_pair "$tag" "$port" \
		"$U" bench "$@" -p "$port" -- "$U" bench "$@" -p "$port" "$UR_IP_A"
	bench_check "$tag" 100 "$c (netns)"
done
ur_expect_grep "ns.write.bw.client" "^ GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:79:" "netns: the client chose the veth's GID"

ur_done
