#!/usr/bin/env python3
"""Checks `uroce gid` / `uroce netdev` / `uroce devinfo -v` output against the
interfaces (`ip -j addr`) and against Debian's `ibv_devinfo -v`.

usage: tool_inspect_check.py gid IP_JSON GID_OUT
       tool_inspect_check.py link IP_JSON LINK_OUT
       tool_inspect_check.py netdev GID_OUT NETDEV_OUT
       tool_inspect_check.py devinfo OURS THEIRS
Prints "ok: ..." and "FAIL: ..." lines.

An interface is asked first what it is: one with a link-local address has
it (its EUI-64 one) as GID 0; one without (a tap with no carrier has none:
the kernel configures IPv6 only once the link is up) has a copy of its first
IPv6 GID there, else of its first IPv4 one (src/host/netdev.c, fill_gid0);
a port is ACTIVE exactly when its interface is up with carrier."""
import ipaddress
import json
import sys


def gid_rows(path):
    rows = []
    for line in open(path):
        f = line.split()
        if not f or f[0] == "DEV":
            continue
        # DEV PORT INDEX GID TYPE(2 words) NETDEV IP
        rows.append({"dev": f[0], "port": int(f[1]), "index": int(f[2]), "gid": f[3],
                     "type": " ".join(f[4:6]), "netdev": f[6], "ip": f[7]})
    return rows


def check_gid(ip_json, gid_out):
    ifs = json.load(open(ip_json))
    rows = gid_rows(gid_out)
    ok = True
    for itf in ifs:
        addrs = [a for a in itf.get("addr_info", []) if a["family"] in ("inet", "inet6")
                 and not (a["family"] == "inet6" and a["local"].startswith("fe80"))]
        if not addrs:
            continue
        mine = [r for r in rows if r["netdev"] == itf["ifname"]]
        if not mine:
            print(f"FAIL: no device has GIDs on {itf['ifname']}")
            ok = False
            continue
        devs = {r["dev"] for r in mine}
        if len(devs) != 1:
            print(f"FAIL: {itf['ifname']} GIDs on several devices {devs}")
            ok = False
        for a in addrs:
            want = ipaddress.ip_address(a["local"])
            gid = ipaddress.IPv6Address("::ffff:" + str(want)) if want.version == 4 else want
            hit = [r for r in mine if ipaddress.ip_address(r["gid"]) == gid]
            if not hit:
                print(f"FAIL: {itf['ifname']} address {want}: no GID {gid}")
                ok = False
            elif hit[0]["type"] != "RoCE v2" or ipaddress.ip_address(hit[0]["ip"]) != want:
                print(f"FAIL: {itf['ifname']} GID {gid}: type/ip {hit[0]}")
                ok = False
            else:
                print(f"ok: {itf['ifname']} {want} is GID {hit[0]['dev']}/{hit[0]['index']}")
        if itf["ifname"] != "lo" and itf.get("address"):
            if has_link_local(itf):
                ok = check_gid0_link_local(itf, mine) and ok
            else:
                ok = check_gid0_copy(itf, mine) and ok
    return ok


def has_link_local(itf):
    return any(a["family"] == "inet6" and a["local"].startswith("fe80")
               for a in itf.get("addr_info", []))


def check_gid0_link_local(itf, mine):
    """GID 0 of an interface with a link-local address: the EUI-64 one."""
    mac = bytes.fromhex(itf["address"].replace(":", ""))
    eui = bytes([mac[0] ^ 2]) + mac[1:3] + b"\xff\xfe" + mac[3:]
    ll = ipaddress.IPv6Address(b"\xfe\x80" + b"\0" * 6 + eui)
    zero = [r for r in mine if r["index"] == 0]
    if not zero or ipaddress.ip_address(zero[0]["gid"]) != ll:
        print(f"FAIL: {itf['ifname']} GID 0 is not {ll} (EUI-64 of the MAC): {zero}")
        return False
    print(f"ok: {itf['ifname']} GID 0 is the link-local {ll}")
    return True


def check_gid0_copy(itf, mine):
    """GID 0 of an interface without a link-local address: no link-local
    GID (none could be used), a copy of its first IPv6 GID, else IPv4."""
    rest = sorted((r for r in mine if r["index"] > 0), key=lambda r: r["index"])
    v6 = [r for r in rest if ipaddress.ip_address(r["ip"]).version == 6]
    want = (v6 or rest)[0]["gid"] if rest else None
    zero = [r for r in mine if r["index"] == 0]
    if not zero or want is None or \
            ipaddress.ip_address(zero[0]["gid"]) != ipaddress.ip_address(want):
        print(f"FAIL: {itf['ifname']} has no link-local address; GID 0 is not a copy "
              f"of {want}: {zero}")
        return False
    print(f"ok: {itf['ifname']} has no link-local address (flags {','.join(itf.get('flags', []))}): "
          f"GID 0 is a copy of {want}")
    return True


def check_link(ip_json, link_out):
    """Each port's state against its interface: ACTIVE when it is up with
    carrier (iproute2 says NO-CARRIER for an interface up without), DOWN
    otherwise."""
    ifs = {itf["ifname"]: itf for itf in json.load(open(ip_json))}
    ok, ports = True, 0
    for line in open(link_out):
        f = line.split()
        if len(f) < 8 or f[0] != "link" or f[6] != "netdev" or f[7] not in ifs:
            continue
        flags = ifs[f[7]].get("flags", [])
        up = "UP" in flags and "NO-CARRIER" not in flags
        want = "ACTIVE" if up else "DOWN"
        ports += 1
        if f[3] != want:
            print(f"FAIL: {f[1]} on {f[7]} (flags {','.join(flags)}) is {f[3]}, not {want}")
            ok = False
        else:
            print(f"ok: {f[1]} on {f[7]} is {want}")
    if not ports:
        print("FAIL: uroce link shows no port on an interface ip lists")
        ok = False
    return ok


def check_netdev(gid_out, netdev_out):
    want = {(r["dev"], r["netdev"]) for r in gid_rows(gid_out)}
    seen = set()
    for line in open(netdev_out):
        f = line.split()
        if len(f) >= 6 and f[1] == "port" and f[3] == "==>":
            seen.add((f[0], f[4]))
            if f[5] not in ("(Up)", "(Down)"):
                print(f"FAIL: netdev state {f[5]}")
                return False
    if want != seen:
        print(f"FAIL: netdev says {sorted(seen)}, GID tables say {sorted(want)}")
        return False
    print(f"ok: netdev maps {sorted(seen)}")
    return True


def check_devinfo(ours, theirs):
    a, b = open(ours).read().splitlines(), open(theirs).read().splitlines()
    if a == b:
        print(f"ok: uroce devinfo -v equals ibv_devinfo -v ({len(a)} lines)")
        return True
    import difflib
    diff = list(difflib.unified_diff(b, a, "ibv_devinfo", "uroce devinfo", lineterm="", n=0))
    print("FAIL: uroce devinfo -v differs from ibv_devinfo -v:\n" + "\n".join(diff[:40]))
    return False


if __name__ == "__main__":
    cmd = sys.argv[1]
    fn = {"gid": check_gid, "link": check_link, "netdev": check_netdev,
          "devinfo": check_devinfo}[cmd]
    sys.exit(0 if fn(*sys.argv[2:]) else 1)
