#!/bin/sh
# /init of the interop guest: a busybox userland around the kernel's Soft-RoCE (rdma_rxe).
# Brings up eth0 on the private tap link, creates rxe0 on it, prints a ready marker on the
# serial console and serves a command channel (busybox nc running /bin/sh) to the host.
# Settings come from the kernel command line (unknown key=value words reach init's environment).
# Test-only: the command channel has no authentication; it listens on the private link alone.

export PATH=/usr/bin:/usr/sbin
export HOME=/root

ip_cidr=${uroce_ip:-10.77.0.2/24}
cmd_port=${uroce_port:-7070}

fail() {
	echo "UROCE-GUEST-FAILED: $*"
	echo "--- dmesg tail"
	dmesg | tail -n 30
	poweroff -f
	sleep 5
	exit 1
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /dev/shm
mkdir -p /root /tmp/uroce/run /tmp/uroce/bg

# Modules in dependency order, as computed at build time (modprobe --show-depends)
while read -r mod; do
	[ -n "$mod" ] || continue
	insmod "$mod" || fail "insmod $mod"
done </etc/uroce/modules.load

ip link set lo up
i=0
while ! ip link show eth0 >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -le 100 ] || fail "no eth0 (virtio_net)"
	sleep 0.1
done
ip link set eth0 up || fail "eth0 up"
ip addr add "$ip_cidr" dev eth0 || fail "ip addr add $ip_cidr"
rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add rxe0 type rxe netdev eth0"

# Ready = port ACTIVE and the RoCE v2 GID of our IPv4 address in the GID table
addr=${ip_cidr%/*}
gid_suffix=$(printf '%02x%02x:%02x%02x' $(echo "$addr" | tr . ' '))
i=0
while :; do
	state=$(cat /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null)
	if [ "${state#*ACTIVE}" != "$state" ] &&
		cat /sys/class/infiniband/rxe0/ports/1/gids/* 2>/dev/null | grep -q "ffff:$gid_suffix\$"; then
		break
	fi
	i=$((i + 1))
	[ $i -le 300 ] || fail "rxe0 not active (state: $state)"
	sleep 0.1
done

ulimit -l unlimited 2>/dev/null
cd /root || exit 1
nc -ll -p "$cmd_port" -e /bin/sh </dev/null >/dev/null 2>&1 &
nc_pid=$!
# wait until the command channel listens, then announce readiness on the console
i=0
while ! netstat -ltn 2>/dev/null | grep -q ":$cmd_port "; do
	i=$((i + 1))
	[ $i -le 100 ] || fail "command channel did not start"
	sleep 0.1
done
echo "UROCE-GUEST-READY rxe0 $ip_cidr port $cmd_port kernel $(uname -r)"

# Stay PID 1: reap orphans; if the command channel dies, power off so the host notices
while kill -0 "$nc_pid" 2>/dev/null; do
	wait
	sleep 1
done
echo "UROCE-GUEST-FAILED: command channel exited"
poweroff -f
