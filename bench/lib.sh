# shellcheck shell=bash
# Shared by the bench scripts: sourced, not run.
#
#   bench_scratch            $tmp, a fresh directory, and $pids, background
#                            processes of the script: at exit (or ^C) the
#                            processes are killed and the directory removed
#   bench_need TOOL... -- PACKAGE...
#                            exits 1 naming the apt-get line when a TOOL is
#                            missing

bench_cleanup() {
	for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}

bench_scratch() {
	tmp=$(mktemp -d)
	pids=()
	trap bench_cleanup EXIT INT TERM
}

bench_need() {
	local tools=() tool
	while [ $# -gt 0 ] && [ "$1" != -- ]; do tools+=("$1"); shift; done
	shift
	for tool in "${tools[@]}"; do
		command -v "$tool" >/dev/null || { echo "missing $tool: apt-get install $*" >&2; exit 1; }
	done
}
