#!/bin/bash
# Build (or reuse) everything the interop guest needs: a stock Debian kernel that has rdma_rxe,
# the modules it needs, and a busybox initramfs with the verbs tools and their libraries.
#
#   build-guest.sh [CACHE_DIR]      default CACHE_DIR: ${UROCE_BUILD:-build}/interop-cache
#
# Prints the directory holding vmlinuz + initramfs.cpio as its last line of stdout.
# Idempotent and cached: the key is the kernel version, the versions of the host packages the
# guest userland is copied from, and a hash of this script and the guest's /init; a changed key
# rebuilds, an unchanged one returns at once.  Runs as root on Debian bookworm (x86_64);
# installs missing Debian packages itself (or, not root, prints the apt-get command).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/deps.sh
. "$here/../lib/deps.sh"

cache=${1:-${UROCE_BUILD:-build}/interop-cache}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

log() { echo "build-guest: $*" >&2; }
die() {
	echo "build-guest: error: $*" >&2
	exit 1
}

# Guest userland: tools and the files they need at run time (copied from the host's packages)
GUEST_TOOLS=(
	ibv_devinfo ibv_devices ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong
	ib_send_bw ib_send_lat ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_atomic_bw ib_atomic_lat
	rping udaddy ucmatose mckey rstream riostream rcopy rdma stdbuf
)
RXE_PROVIDER=/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
RXE_DRIVER=/etc/libibverbs.d/rxe.driver
STDBUF_LIB=/usr/libexec/coreutils/libstdbuf.so
# glibc loads it when a thread exits or is cancelled (rping's threads): not in ldd's list.
GCC_S_LIB=/usr/lib/x86_64-linux-gnu/libgcc_s.so.1
# Kernel modules wanted (their dependencies are added from modinfo); virtio_pci must be loaded
# explicitly (virtio_net does not pull it in); crc32_generic provides the "crc32" crypto
# algorithm rdma_rxe needs for the ICRC (without it "rdma link add" fails with ENOENT);
# rdma_ucm gives librdmacm users (rping, perftest -R) /dev/infiniband/rdma_cm.
GUEST_MODULES=(crc32_generic virtio_pci virtio_net udp_tunnel ip6_udp_tunnel ib_core ib_uverbs rdma_rxe rdma_ucm)
HOST_PACKAGES=(busybox-static ibverbs-utils ibverbs-providers perftest rdmacm-utils iproute2 coreutils libibverbs1 libgcc-s1)

uroce_require static:/bin/busybox busybox-static \
	ibv_devinfo ibverbs-utils ibv_rc_pingpong ibverbs-utils "$RXE_PROVIDER" ibverbs-providers \
	ib_write_bw perftest rping rdmacm-utils rdma iproute2 stdbuf coreutils \
	depmod kmod modprobe kmod modinfo kmod cpio cpio dpkg-deb dpkg apt-get apt sha256sum coreutils

# --- which kernel: the one the linux-image-amd64 metapackage names (the cloud flavour has no rxe)
kernel_package() {
	local cand dep
	cand=$(LC_ALL=C apt-cache policy linux-image-amd64 2>/dev/null | sed -n 's/^ *Candidate: *//p')
	if [ -z "$cand" ] || [ "$cand" = "(none)" ]; then
		return 1
	fi
	dep=$(LC_ALL=C apt-cache show "linux-image-amd64=$cand" 2>/dev/null |
		sed -n 's/^Depends: *//p' | head -n1 | tr ',|' '\n\n' | sed 's/^ *//; s/ .*//' |
		grep -E '^linux-image-[0-9].*-amd64$' | head -n1)
	[ -n "$dep" ] || return 1
	echo "$dep"
}
kpkg=$(kernel_package) || {
	if [ "$(id -u)" = 0 ]; then
		log "no candidate for linux-image-amd64: running apt-get update"
		apt-get update -q >&2 || die "apt-get update failed; check the Debian sources in /etc/apt"
		kpkg=$(kernel_package) || die "apt-cache has no candidate for linux-image-amd64 (check /etc/apt/sources.list*)"
	else
		die "apt-cache has no candidate for linux-image-amd64: run 'sudo apt-get update' first"
	fi
}
kver=${kpkg#linux-image-}
kdebver=$(LC_ALL=C apt-cache policy "$kpkg" | sed -n 's/^ *Candidate: *//p')

# --- cache key
pkgver=$(dpkg-query -W -f '${Package}=${Version} ' "${HOST_PACKAGES[@]}" 2>/dev/null || true)
key=$({
	cat "$here/build-guest.sh" "$here/guest-init.sh"
	echo "$kpkg=$kdebver $pkgver"
} | sha256sum | cut -c1-12)
out="$cache/guest-$kver-$key"
if [ -f "$out/.complete" ]; then
	log "cached: $out"
	echo "$out"
	exit 0
fi

exec 9>"$cache/.lock"
flock 9
if [ -f "$out/.complete" ]; then # built by a concurrent run while we waited
	echo "$out"
	exit 0
fi

t0=$(date +%s)
log "building guest for kernel $kver ($kpkg $kdebver) into $out"
work=$(mktemp -d "$cache/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --- kernel package: download (kept in the cache), extract (never installed)
deb=$(ls "$cache"/deb/"${kpkg}"_*.deb 2>/dev/null | head -n1 || true)
if [ -z "$deb" ] || [ "$(dpkg-deb -f "$deb" Version)" != "$kdebver" ]; then
	mkdir -p "$cache/deb"
	rm -f "$cache"/deb/*.deb
	log "downloading $kpkg $kdebver"
	if ! (cd "$cache/deb" && apt-get download -q "$kpkg=$kdebver" >&2 2>"$work/apt.err"); then
		cat "$work/apt.err" >&2
		if [ "$(id -u)" = 0 ] && [ -z "${UROCE_BUILD_GUEST_RETRY:-}" ]; then
			# stale package lists name a version the mirror no longer has: refresh once, start over
			log "download of $kpkg $kdebver failed: running apt-get update and retrying"
			if apt-get update -q >&2; then
				rm -rf "$work"
				exec 9>&-
				UROCE_BUILD_GUEST_RETRY=1 exec bash "$here/build-guest.sh" "$cache"
			fi
		fi
		die "could not download the Debian package $kpkg ($kdebver). Fix: run 'apt-get update' (as root) so the \
package lists are current, check that the Debian mirrors in /etc/apt/sources.list* (including the \
security suite) are reachable, then retry; or put ${kpkg}_${kdebver}_amd64.deb into $cache/deb/ by hand."
	fi
	deb=$(ls "$cache"/deb/"${kpkg}"_*.deb | head -n1)
fi
log "extracting $(basename "$deb")"
mkdir -p "$work/kernel"
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work/kernel" \
	--wildcards "./boot/vmlinuz-$kver" "./lib/modules/$kver/*" ||
	die "could not extract $deb (corrupt download? delete it and rerun)"
kroot=$work/kernel
kmods=$kroot/lib/modules/$kver
[ -f "$kroot/boot/vmlinuz-$kver" ] || die "no vmlinuz-$kver in $deb"

# --- initramfs tree (merged-/usr layout like the host)
root=$work/root
mkdir -p "$root"/{usr/bin,usr/sbin,usr/lib/x86_64-linux-gnu,usr/lib64,etc/uroce,proc,sys,dev,tmp,run,root}
ln -s usr/bin "$root/bin"
ln -s usr/sbin "$root/sbin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"

# modules: the wanted set and its modinfo dependency closure, then depmod and a load order
declare -A seen=()
modfile() { find "$kmods/kernel" -name "$1.ko" -o -name "$1.ko.xz" -o -name "$1.ko.zst" | head -n1; }
add_module() {
	local m=$1 f d
	m=${m//-/_}
	[ -n "${seen[$m]:-}" ] && return 0
	seen[$m]=1
	f=$(modfile "$m")
	[ -n "$f" ] || f=$(modfile "${m//_/-}")
	if [ -z "$f" ]; then
		grep -q "/${m}.ko" "$kmods/modules.builtin" && return 0
		die "kernel module $m not in $kpkg"
	fi
	local rel=${f#"$kroot"/}
	mkdir -p "$root/usr/${rel%/*}"
	cp "$f" "$root/usr/$rel"
	for d in $(modinfo -F depends "$f" | tr ',' ' '); do
		add_module "$d"
	done
}
for m in "${GUEST_MODULES[@]}"; do add_module "$m"; done
cp "$kmods"/modules.builtin "$kmods"/modules.order "$root/usr/lib/modules/$kver/"
[ -f "$kmods/modules.builtin.modinfo" ] && cp "$kmods/modules.builtin.modinfo" "$root/usr/lib/modules/$kver/"
depmod -b "$root/usr" "$kver" || die "depmod failed"
for m in "${GUEST_MODULES[@]}"; do
	modprobe -d "$root/usr" -S "$kver" --show-depends "$m" | sed -n 's/^insmod //p'
done | sed "s|^$root/usr||; s|^|/usr|; s/ *$//" | awk '!seen[$0]++' >"$root/etc/uroce/modules.load"
log "modules: $(sed 's|.*/||' "$root/etc/uroce/modules.load" | tr '\n' ' ')"

# busybox and its applets (never link "busybox" itself: that would replace the binary
# with a self-referencing link and /init would fail with ELOOP)
cp /bin/busybox "$root/usr/bin/busybox"
for a in $(/bin/busybox --list); do
	[ "$a" = busybox ] && continue
	[ -e "$root/usr/bin/$a" ] || ln -s busybox "$root/usr/bin/$a"
done

# tools, provider, and every library they load
copy_file() { # host path -> same path in the guest (merged /usr), symlinks resolved
	local src=$1 dst=$1
	case $dst in /lib/* | /lib64/* | /bin/* | /sbin/*) dst=/usr$dst ;; esac
	mkdir -p "$root${dst%/*}"
	cp -L "$src" "$root$dst"
}
libs=()
for t in "${GUEST_TOOLS[@]}"; do
	p=$(command -v "$t") || die "tool $t missing on the host"
	rm -f "$root/usr/bin/$t" # a busybox applet of the same name (none today) yields to the real tool
	cp -L "$p" "$root/usr/bin/$t"
	libs+=("$p")
done
copy_file "$RXE_PROVIDER"
copy_file "$RXE_DRIVER"
copy_file "$STDBUF_LIB"
copy_file "$GCC_S_LIB"
libs+=("$RXE_PROVIDER" "$STDBUF_LIB" "$GCC_S_LIB")
for f in "${libs[@]}"; do
	LC_ALL=C ldd "$f" | awk '/=> \//{print $3} /^\t\//{print $1}'
done | sort -u >"$work/libs"
while read -r l; do copy_file "$l"; done <"$work/libs"
# the loader where ELF binaries ask for it
[ -e "$root/usr/lib64/ld-linux-x86-64.so.2" ] ||
	ln -s ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$root/usr/lib64/ld-linux-x86-64.so.2"

cat >"$root/etc/passwd" <<'PW'
root:x:0:0:root:/root:/bin/sh
PW
echo "root:x:0:" >"$root/etc/group"
printf '127.0.0.1 localhost\n::1 localhost\n' >"$root/etc/hosts"
echo uroce-guest >"$root/etc/hostname"
cp "$here/guest-init.sh" "$root/init"
chmod 0755 "$root/init"

# sanity: every copied ELF resolves its libraries inside the guest tree
for t in "${GUEST_TOOLS[@]}"; do
	if ! LC_ALL=C chroot "$root" /usr/lib64/ld-linux-x86-64.so.2 --list "/usr/bin/$t" >/dev/null 2>"$work/ldd.err"; then
		cat "$work/ldd.err" >&2
		die "$t does not resolve its libraries inside the guest tree"
	fi
done

# --- assemble: uncompressed cpio (TCG boots faster without decompressing)
stage=$(mktemp -d "$cache/.stage.XXXXXX")
cp "$kroot/boot/vmlinuz-$kver" "$stage/vmlinuz"
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) >"$stage/initramfs.cpio"
{
	echo "kernel: $kpkg $kdebver ($kver)"
	echo "host packages: $pkgver"
	echo "modules:"
	sed 's/^/  /' "$root/etc/uroce/modules.load"
	echo "tools: ${GUEST_TOOLS[*]}"
	echo "libraries:"
	sed 's/^/  /' "$work/libs"
} >"$stage/manifest.txt"
chmod 0755 "$stage"
touch "$stage/.complete"
rm -rf "$out"
mv "$stage" "$out"

# keep only the current build
for d in "$cache"/guest-*; do
	[ "$d" = "$out" ] || rm -rf "$d"
done
log "built in $(($(date +%s) - t0)) s: $(du -sh "$out/initramfs.cpio" | cut -f1) initramfs, $(du -sh "$out/vmlinuz" | cut -f1) kernel"
echo "$out"
