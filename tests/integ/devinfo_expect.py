#!/usr/bin/python3
"""Compares `ibv_devinfo -v` on uroce with what the interfaces say.

    devinfo_expect.py IP_JSON DEVINFO_TXT

IP_JSON is `ip -j addr show` of the same network namespace.  What a RoCE
device built the way rxe builds it must show, per interface with an
address, in interface-index order (uroce0, uroce1, ...):
  - port state PORT_ACTIVE when the interface is up with carrier, else PORT_DOWN;
  - link_layer Ethernet, max_mtu 4096;
  - active_mtu = (MTU - 80) rounded down to an IB MTU, capped at 4096;
  - GID[0] = the interface's link-local address: fe80::/64 + the modified
    EUI-64 of the MAC when it has that one, else its other link-local
    address; without any (lo), a copy of its first IPv6 address (else of
    GID[1]); then from GID[1] one
    ::ffff:a.b.c.d per IPv4 address, then one entry per IPv6 address (an
    address equal to GID[0] is not repeated); every entry RoCE v2.  Every
    GID shown is an address of its interface.
Prints one "ok: ..." or "FAIL: ..." line per check.
"""
import ipaddress
import json
import re
import socket
import sys


def ib_mtu(netdev_mtu):
    room = netdev_mtu - 80
    for m in (4096, 2048, 1024, 512):
        if room >= m:
            return m
    return 256


def eui64_gid(mac):
    b = bytes(int(x, 16) for x in mac.split(":"))
    raw = bytes([0xfe, 0x80] + [0] * 6 + [b[0] ^ 2, b[1], b[2], 0xff, 0xfe, b[3], b[4], b[5]])
    return socket.inet_ntop(socket.AF_INET6, raw)


def v6(addr):
    return socket.inet_ntop(socket.AF_INET6, socket.inet_pton(socket.AF_INET6, addr))


def expected(ifaces):
    devs = []
    for itf in sorted(ifaces, key=lambda i: i["ifindex"]):
        addrs = itf.get("addr_info", [])
        if not any(a.get("family") in ("inet", "inet6") for a in addrs):
            continue
        ll = eui64_gid(itf.get("address", "00:00:00:00:00:00"))
        v6s = [v6(a["local"]) for a in addrs if a.get("family") == "inet6"]
        lls = [a for a in v6s if ipaddress.ip_address(a).is_link_local]
        gids = [ll if ll in v6s else (lls[0] if lls else None)]
        for a in addrs:
            if a.get("family") == "inet":
                g = "::ffff:" + a["local"]
                if g not in gids:
                    gids.append(g)
        for a in addrs:
            if a.get("family") == "inet6":
                g = v6(a["local"])
                if g not in gids:
                    gids.append(g)
        if gids[0] is None and len(gids) > 1:   # no link-local: a copy
            gids[0] = ([g for g in gids[1:] if not g.startswith("::ffff:")] + gids[1:])[0]
        gids = [g for g in gids if g]
        flags = itf.get("flags", [])
        up = "UP" in flags and "LOWER_UP" in flags
        devs.append({
            "ifname": itf["ifname"],
            "state": "PORT_ACTIVE" if up else "PORT_DOWN",
            "active_mtu": ib_mtu(itf["mtu"]),
            "gids": ["%d %s" % (i, g) for i, g in enumerate(gids)],
        })
    for i, d in enumerate(devs):
        d["name"] = "uroce%d" % i
    return devs


def parse_devinfo(text):
    devs = {}
    cur = None
    for line in text.splitlines():
        m = re.match(r"hca_id:\s*(\S+)", line)
        if m:
            cur = devs.setdefault(m.group(1), {"gids": [], "gid_types": []})
            continue
        if cur is None:
            continue
        m = re.match(r"\s+(state|link_layer|max_mtu|active_mtu):\s+(\S+)", line)
        if m:
            cur[m.group(1)] = m.group(2)
            continue
        m = re.match(r"\s+GID\[\s*(\d+)\]:\s+(\S+?),?\s+(RoCE v\d|IB)?\s*$", line)
        if m:
            cur["gids"].append("%d %s" % (int(m.group(1)), m.group(2).rstrip(",")))
            cur["gid_types"].append(m.group(3) or "?")
    return devs


def main():
    ifaces = json.load(open(sys.argv[1]))
    seen = parse_devinfo(open(sys.argv[2]).read())
    fails = 0

    def check(what, exp, got):
        nonlocal fails
        if exp == got:
            print("ok: %s: %s" % (what, got))
        else:
            fails += 1
            print("FAIL: %s: expected %s, saw %s" % (what, exp, got))

    exp = expected(ifaces)
    check("devices (one per interface with an address, by ifindex)",
          [d["name"] for d in exp], sorted(seen, key=lambda n: int(n[5:]) if n[5:].isdigit() else 1 << 30))
    for d in exp:
        s = seen.get(d["name"])
        tag = "%s (%s)" % (d["name"], d["ifname"])
        if s is None:
            continue
        check(tag + " port state", d["state"], s.get("state"))
        check(tag + " link_layer", "Ethernet", s.get("link_layer"))
        check(tag + " max_mtu", "4096", s.get("max_mtu"))
        check(tag + " active_mtu", str(d["active_mtu"]), s.get("active_mtu"))
        check(tag + " GID table", d["gids"], s["gids"])
        check(tag + " GID types", ["RoCE v2"] * len(s["gids"]), s["gid_types"])
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
