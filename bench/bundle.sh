#!/usr/bin/env bash
# A folder that runs bench/progress.sh (the progress issue's table) on a
# machine without Debian's packages, a many-core one say: uroce's build,
# the unmodified programs the table runs (perftest, ibv_rc_pingpong,
# ibv_devinfo, rping, fio, iperf3, qperf, ip, ss) and every library they
# need but the C library's own, packed as one archive.
#
#   bench/bundle.sh [BUILD_DIR] OUT.tar.xz
#
# On the other machine, as root:
#   tar -xJf OUT.tar.xz -C /tmp && /tmp/uroce-bench/run.sh
# run.sh passes its environment on (PROGRESS_SECS, PROGRESS_PAIRS, ...).
# Open MPI is not carried (its plugins and data files are tied to where
# Debian put them): the MPI row needs a machine with openmpi-bin.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || { echo "usage: bench/bundle.sh [BUILD_DIR] OUT.tar.xz" >&2; exit 2; }
if [ $# -ge 2 ]; then build=$(cd "$1" && pwd); out=$2; else build=$src/build; out=$1; fi
tools="ib_write_bw ib_read_bw ib_send_bw ib_send_lat ib_write_lat ibv_devinfo ibv_rc_pingpong rping fio
	iperf3 qperf ip ss"
missing=
for t in $tools; do command -v "$t" >/dev/null || missing="$missing $t"; done
[ -z "$missing" ] || { echo "missing:$missing: apt-get install perftest ibverbs-utils rdmacm-utils fio iperf3 qperf iproute2" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
d=$stage/uroce-bench
mkdir -p "$d/bench" "$d/build/bin" "$d/build/lib" "$d/tools/bin" "$d/tools/real" "$d/tools/lib" \
	"$d/tools/fallback"
cp "$src"/bench/{progress,veth,pairs,events,netns_pair,mpi_alltoall,lib}.sh "$d/bench/"
cp "$build/bin/uroce" "$d/build/bin/"
cp -a "$build/lib/." "$d/build/lib/"
# Each program behind a wrapper that adds the carried libraries after
# whatever the caller put on LD_LIBRARY_PATH (the bench scripts put
# uroce's first): nothing else on the machine sees them.
for t in $tools; do
	cp -L "$(command -v "$t")" "$d/tools/real/"
	printf '#!/bin/sh\nh=$(dirname "$0")/..\nLD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$h/lib exec "$h/real/%s" "$@"\n' \
		"$t" > "$d/tools/bin/$t"
	chmod +x "$d/tools/bin/$t"
done
# awk, for a machine with none (run.sh puts it last on PATH).
cp -L "$(command -v awk)" "$d/tools/fallback/awk"

# The libraries the programs load, but the C library's (the machine's own
# must serve: a second glibc cannot be mixed in) and the verbs libraries,
# which are uroce's (libmlx5 too: uroce answers its direct verbs).
for f in "$d"/tools/real/* "$d/tools/fallback/awk" "$d/build/bin/uroce"; do
	LD_LIBRARY_PATH=$build/lib ldd "$f" 2>/dev/null | awk '/=> \// { print $3 }'
done | sort -u |
	grep -vE '/(libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl|libnss_[a-z]+|ld-linux[^/]*)\.so' |
	grep -vE "^$build/lib/" | grep -vE '/lib(ibverbs|rdmacm|mlx5)\.so' |
	while read -r lib; do cp -L "$lib" "$d/tools/lib/"; done
# Debug information stays here: the folder travels.
strip --strip-debug "$d"/build/lib/*.so* "$d"/tools/lib/* "$d"/tools/real/* "$d/build/bin/uroce" 2>/dev/null || true

cat > "$d/run.sh" <<'EOF'
#!/usr/bin/env bash
# The progress issue's table on this machine, from this folder (bench/bundle.sh).
here=$(cd "$(dirname "$0")" && pwd)
export PATH=$here/tools/bin:$PATH:$here/tools/fallback
exec "$here/bench/progress.sh" "$here/build" "$@"
EOF
chmod +x "$d/run.sh"
tar -C "$stage" -cJf "$out" uroce-bench
echo "$out: $(du -h "$out" | cut -f1) ($(du -sh "$d" | cut -f1) unpacked)"
