#!/usr/bin/python3
"""Checks the /sys/class view `uroce run` gives against what the library
says, reading the files directly as scripts do.  Run under `uroce run`.

    sysfs_view_check.py DEVINFO NETDEV

DEVINFO is `ibv_devinfo -v` (run under `uroce run`), NETDEV `uroce netdev`.
Prints "ok: ..." / "FAIL: ..." lines (lib.sh's ur_report)."""
import ipaddress
import os
import re
import sys

IB = "/sys/class/infiniband"


def ok(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)


def read(path):
    with open(path) as f:
        return f.read().rstrip("\n")


def devinfo(text):
    """{dev: {'node_guid': .., 'fw_ver': .., 'state': n, 'gids': {idx: (ip, type)}}}"""
    devs, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"hca_id:\s+(\S+)", line)
        if m:
            cur = devs.setdefault(m.group(1), {"gids": {}})
            continue
        if cur is None:
            continue
        m = re.match(r"\s+(node_guid|fw_ver|board_id):\s+(\S+)", line)
        if m:
            cur[m.group(1)] = m.group(2)
        m = re.match(r"\s+state:\s+\S+ \((\d+)\)", line)
        if m:
            cur["state"] = int(m.group(1))
        m = re.match(r"\s+GID\[\s*(\d+)\]:\s+([^,]+), (.+)$", line)
        if m:
            cur["gids"][int(m.group(1))] = (ipaddress.ip_address(m.group(2)), m.group(3))
    return devs


def main():
    want = devinfo(open(sys.argv[1]).read())
    netdev = {}
    for line in open(sys.argv[2]):
        f = line.split()   # uroce0 port 1 ==> lo (Up)
        if len(f) >= 5 and f[3] == "==>":
            netdev[f[0]] = f[4]
    listed = sorted(os.listdir(IB))
    ok(listed == sorted(want),
       f"ls {IB}: {' '.join(listed)} (ibv_devinfo: {' '.join(sorted(want))})")
    for dev, d in sorted(want.items()):
        base = f"{IB}/{dev}"
        for name in ("node_guid", "fw_ver", "board_id"):
            if os.path.exists(f"{base}/{name}"):
                ok(read(f"{base}/{name}") == d.get(name), f"{dev}/{name} {read(f'{base}/{name}')}")
            else:
                ok(False, f"{dev}/{name} missing")
        ok(read(f"{base}/node_type") == "1: CA", f"{dev}/node_type '1: CA'")
        state = read(f"{base}/ports/1/state")
        ok(state.startswith(f"{d.get('state')}: "), f"{dev}/ports/1/state '{state}'")
        ok(read(f"{base}/ports/1/link_layer") == "Ethernet", f"{dev}/ports/1/link_layer Ethernet")
        # Every non-zero GID file is a GID ibv_devinfo lists at that index,
        # with its type and interface; none is missing.
        seen, empty = {}, []
        for idx in sorted(int(n) for n in os.listdir(f"{base}/ports/1/gids")):
            raw = read(f"{base}/ports/1/gids/{idx}").replace(":", "")
            ip = ipaddress.ip_address(bytes.fromhex(raw))
            if ip == ipaddress.ip_address("::"):
                empty.append(idx)
                continue
            gtype = read(f"{base}/ports/1/gid_attrs/types/{idx}")
            ndev = read(f"{base}/ports/1/gid_attrs/ndevs/{idx}")
            seen[idx] = (ip, gtype)
            ok(ndev == netdev.get(dev),
               f"{dev} GID {idx} ndev {ndev} (uroce netdev: {netdev.get(dev)})")
        typed = [i for i in empty if os.path.exists(f"{base}/ports/1/gid_attrs/types/{i}")]
        ok(empty and not typed, f"{dev}: {len(empty)} empty GIDs, none with a type file {typed}")
        ok(seen == d["gids"], f"{dev}: GID files equal ibv_devinfo -v's: "
           + ", ".join(f"{i}={ip} {t}" for i, (ip, t) in sorted(seen.items()))
           + ("" if seen == d["gids"] else f" (ibv_devinfo: {d['gids']})"))
        nets = sorted(os.listdir(f"{base}/device/net"))
        ok(nets == [netdev.get(dev)], f"ls {dev}/device/net: {' '.join(nets)}")
        for n in nets:
            real = os.path.realpath(f"{base}/device/net/{n}")
            ok(real.startswith("/sys/devices/") and
               read(f"{base}/device/net/{n}/address") == read(f"/sys/class/net/{n}/address"),
               f"{dev}/device/net/{n} resolves to {real}")
    verbs = sorted(os.listdir("/sys/class/infiniband_verbs"))
    ok(sorted(read(f"/sys/class/infiniband_verbs/{v}/ibdev") for v in verbs) == sorted(want),
       f"infiniband_verbs: {' '.join(verbs)} name the devices")


main()
