#!/usr/bin/python3
"""Raw RoCEv2 probe: talk to the guest's kernel Soft-RoCE (rxe) from a plain UDP socket.

No uroce code and no RDMA stack on the host: the probe plays the client side of an unmodified
`ibv_rc_pingpong` server running in the guest.

  rc-send      TCP address exchange with the ibv_rc_pingpong server (its text format
               "%04x:%06x:%06x:%s" = LID:QPN:PSN:GID, 32 hex digits of GID), then
                 1. an RC SEND_ONLY with a corrupted ICRC: expect no response, counters unchanged;
                 2. the same SEND_ONLY with the correct ICRC: expect an ACK (AETH syndrome ACK, MSN 1)
                    and the server's own SEND_ONLY, which the probe ACKs so the server completes.
  verify-pcap  recompute the ICRC of every RoCEv2 packet in a capture, with this file's code and with
               scapy's contrib/roce.py, and compare both with the ICRC on the wire.

Sending: the socket is bound to the host address and port 4791 and sets IP_MTU_DISCOVER =
IP_PMTUDISC_DO; packets go out with sendto() on the unconnected socket, so the kernel sends
DF and IP ID 0 (Linux uses a per-socket ID counter only for connected DF sockets).  Every IPv4
header field the ICRC covers is then predictable: version/IHL 0x45, total length, ID 0, flags DF,
protocol 17, addresses (TOS, TTL and checksum are masked to 1s).

Receiving: a UDP socket does not see the IP ID that rxe picks at random, so received ICRCs are not
checked here; verify-pcap checks them from a capture taken on the tap.

Runs with Debian's /usr/bin/python3 and python3-scapy (scapy is used as an independent ICRC oracle).
"""

import argparse
import json
import os
import random
import socket
import struct
import subprocess
import sys
import time
import zlib

ROCE_PORT = 4791
IP_MTU_DISCOVER = getattr(socket, "IP_MTU_DISCOVER", 10)
IP_PMTUDISC_DO = getattr(socket, "IP_PMTUDISC_DO", 2)

OP_RC_SEND_ONLY = 0x04
OP_RC_ACK = 0x11
OPNAMES = {
    0x00: "RC SEND_FIRST", 0x01: "RC SEND_MIDDLE", 0x02: "RC SEND_LAST", 0x04: "RC SEND_ONLY",
    0x06: "RC RDMA_WRITE_FIRST", 0x0A: "RC RDMA_WRITE_ONLY", 0x0C: "RC RDMA_READ_REQUEST",
    0x10: "RC RDMA_READ_RESPONSE_ONLY", 0x11: "RC ACKNOWLEDGE", 0x12: "RC ATOMIC_ACKNOWLEDGE",
    0x64: "UD SEND_ONLY",
}
AETH_SYNDROMES = {0: "ACK", 1: "RNR NAK", 3: "NAK"}
NAK_CODES = {0: "PSN sequence error", 1: "invalid request", 2: "remote access error",
             3: "remote operational error", 4: "invalid RD request"}
EXCH_LEN = len("0000:000000:000000:00000000000000000000000000000000") + 1  # sizeof msg, with NUL


def fail(msg):
    print(f"roce_probe: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def info(msg):
    print(f"roce_probe: {msg}", flush=True)


# ---------------------------------------------------------------- ICRC (own implementation)

def icrc_ipv4(ip_hdr: bytes, udp_hdr: bytes, bth_and_rest: bytes) -> bytes:
    """ICRC over a RoCEv2/IPv4 packet without its ICRC; returned as the 4 bytes on the wire.

    CRC-32 (zlib's) over 8 bytes of 0xFF (masked LRH), the IPv4 header with TOS, TTL and checksum
    set to 1s, the UDP header with checksum 1s, the BTH with its FECN/BECN/resv6 byte set to 1s,
    then everything after the BTH up to the ICRC; stored little-endian.
    """
    ip = bytearray(ip_hdr)
    ip[1] = 0xFF            # TOS (DSCP/ECN)
    ip[8] = 0xFF            # TTL
    ip[10:12] = b"\xff\xff"  # header checksum
    udp = bytearray(udp_hdr)
    udp[6:8] = b"\xff\xff"  # UDP checksum
    bth = bytearray(bth_and_rest)
    bth[4] = 0xFF           # FECN, BECN, resv6
    crc = zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bth)) & 0xFFFFFFFF
    return struct.pack("<I", crc)


def ipv4_header(src: str, dst: str, payload_len: int) -> bytes:
    """The IPv4 header the kernel sends for our unconnected DF socket (checksum/TTL/TOS are masked)."""
    total = 20 + payload_len
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0x4000, 64, 17, 0,
                       socket.inet_aton(src), socket.inet_aton(dst))


def udp_header(sport: int, dport: int, payload_len: int) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + payload_len, 0)


# ---------------------------------------------------------------- packets

def bth(opcode, dqpn, psn, ackreq=False, se=False, padcnt=0, pkey=0xFFFF):
    b1 = (0x80 if se else 0) | ((padcnt & 3) << 4)  # MigReq 0, TVer 0
    return struct.pack("!BBHI I", opcode, b1, pkey, dqpn & 0xFFFFFF,
                       ((0x80000000 if ackreq else 0) | (psn & 0xFFFFFF)))


def build(src, dst, sport, body: bytes) -> bytes:
    """UDP payload = body (BTH, ext headers, payload, pad) + ICRC for src->dst."""
    udp_len = len(body) + 4
    return body + icrc_ipv4(ipv4_header(src, dst, 8 + udp_len), udp_header(sport, ROCE_PORT, udp_len), body)


def scapy_icrc(src, dst, sport, body: bytes) -> bytes:
    """The same ICRC computed by scapy's contrib/roce.py (an independent oracle)."""
    from scapy.layers.inet import IP, UDP
    from scapy.contrib.roce import BTH
    from scapy.packet import Raw
    b = BTH(body[:12] + b"\0\0\0\0")  # dissect the BTH fields; icrc recomputed below
    pkt = IP(src=src, dst=dst, id=0, flags="DF", ttl=64) / UDP(sport=sport, dport=ROCE_PORT, chksum=0) / \
        BTH(opcode=b.opcode, solicited=b.solicited, migreq=b.migreq, padcount=b.padcount, version=b.version,
            pkey=b.pkey, dqpn=b.dqpn, ackreq=b.ackreq, psn=b.psn) / Raw(body[12:])
    return bytes(pkt)[-4:]


def parse(data: bytes):
    if len(data) < 16:
        return None
    opcode, b1, pkey, dq, ap = struct.unpack("!BBHII", data[:12])
    p = {"opcode": opcode, "opname": OPNAMES.get(opcode, f"0x{opcode:02x}"), "se": bool(b1 & 0x80),
         "padcnt": (b1 >> 4) & 3, "pkey": pkey, "dqpn": dq & 0xFFFFFF, "ackreq": bool(ap >> 31),
         "psn": ap & 0xFFFFFF, "icrc": data[-4:].hex(), "len": len(data)}
    rest = data[12:-4]
    if opcode in (0x11, 0x12, 0x0D, 0x0F, 0x10):  # ACK, atomic ACK, read responses first/last/only
        syn, = struct.unpack("!B", rest[:1])
        p["aeth_syndrome"] = syn
        p["aeth_msn"] = int.from_bytes(rest[1:4], "big")
        kind = AETH_SYNDROMES.get(syn >> 5, "reserved")
        if kind == "NAK":
            kind += " (" + NAK_CODES.get(syn & 0x1F, "?") + ")"
        elif kind == "ACK":
            kind += f" (credits code {syn & 0x1F})"
        p["aeth_kind"] = kind
        rest = rest[4:]
    p["payload_len"] = len(rest) - p["padcnt"]
    p["payload_head"] = rest[:8].hex()
    return p


# ---------------------------------------------------------------- ibv_rc_pingpong address exchange

def gid_v4mapped(addr: str) -> bytes:
    return b"\0" * 10 + b"\xff\xff" + socket.inet_aton(addr)


def pingpong_exchange(guest, port, my_qpn, my_psn, my_gid: bytes, timeout):
    """Client side of ibv_rc_pingpong's exchange: send ours, read the server's, send "done"."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            s = socket.create_connection((guest, port), timeout=2)
            break
        except OSError as e:
            if time.monotonic() > deadline:
                fail(f"cannot connect to ibv_rc_pingpong at {guest}:{port}: {e}")
            time.sleep(0.2)
    s.settimeout(timeout)
    msg = "%04x:%06x:%06x:%s" % (0, my_qpn, my_psn, my_gid.hex())
    s.sendall(msg.encode() + b"\0")
    buf = b""
    while len(buf) < EXCH_LEN:
        chunk = s.recv(EXCH_LEN - len(buf))
        if not chunk:
            fail(f"server closed the exchange after {len(buf)} bytes: {buf!r}")
        buf += chunk
    # exactly what the real client writes (sizeof "done"): rdma-core 44's server checks that length
    s.sendall(b"done\0")
    s.close()
    text = buf.split(b"\0")[0].decode()
    lid, qpn, psn, gid = text.split(":")
    return {"lid": int(lid, 16), "qpn": int(qpn, 16), "psn": int(psn, 16), "gid": gid}


# ---------------------------------------------------------------- rc-send

def read_counters(cmd):
    if not cmd:
        return None
    out = subprocess.run(cmd, shell=True, check=True, capture_output=True, text=True, timeout=60).stdout
    c = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            c[parts[0]] = int(parts[1])
    return c


def counters_delta(before, after):
    if before is None or after is None:
        return None
    return {k: after.get(k, 0) - before.get(k, 0) for k in sorted(after) if after.get(k, 0) != before.get(k, 0)}


def recv_packets(sock, want, timeout):
    """Receive until `want` packets or timeout; returns [(parsed, raw, (ip, port))]."""
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < want:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        sock.settimeout(left)
        try:
            data, peer = sock.recvfrom(65535)
        except socket.timeout:
            break
        got.append((parse(data), data, peer))
    return got


def cmd_rc_send(a):
    my_qpn = a.qpn if a.qpn is not None else random.randint(0x100, 0xFFFF)
    my_psn = a.psn if a.psn is not None else random.randint(0, 0xFFFFFF)
    payload = bytes((0xA0 + i) & 0xFF for i in range(a.size))
    report = {"host_qpn": my_qpn, "host_psn": my_psn, "size": a.size}

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
    try:
        sock.bind((a.host_ip, ROCE_PORT))
    except OSError as e:
        fail(f"cannot bind {a.host_ip}:{ROCE_PORT}: {e}")

    srv = pingpong_exchange(a.guest_ip, a.tcp_port, my_qpn, my_psn, gid_v4mapped(a.host_ip), a.timeout)
    report["server"] = srv
    info(f"host QPN 0x{my_qpn:06x} PSN 0x{my_psn:06x}; server QPN 0x{srv['qpn']:06x} "
         f"PSN 0x{srv['psn']:06x} GID {srv['gid']}")

    body = bth(OP_RC_SEND_ONLY, srv["qpn"], my_psn, ackreq=True) + payload
    good = build(a.host_ip, a.guest_ip, ROCE_PORT, body)
    oracle = scapy_icrc(a.host_ip, a.guest_ip, ROCE_PORT, body)
    if oracle != good[-4:]:
        fail(f"own ICRC {good[-4:].hex()} != scapy ICRC {oracle.hex()}")
    report["send_icrc"] = good[-4:].hex()
    dest = (a.guest_ip, ROCE_PORT)

    # 1. corrupted ICRC: silently dropped, nothing executed
    c0 = read_counters(a.counters_cmd)
    bad = good[:-4] + bytes(x ^ y for x, y in zip(good[-4:], b"\x5a\xa5\x0f\xf0"))
    sock.sendto(bad, dest)
    info(f"sent SEND_ONLY with corrupted ICRC {bad[-4:].hex()} (correct {good[-4:].hex()})")
    resp = recv_packets(sock, 1, a.quiet_time)
    if resp:
        fail(f"response to a corrupted ICRC: {resp[0][0]}")
    c1 = read_counters(a.counters_cmd)
    d = counters_delta(c0, c1)
    report["corrupt_counters_delta"] = d
    if d:
        fail(f"guest counters changed after the corrupted packet: {d}")
    info(f"no response in {a.quiet_time}s; guest counters unchanged" + ("" if d is not None else " (not read)"))

    # 2. correct ICRC: ACK with MSN 1, then the server's own SEND_ONLY
    sock.sendto(good, dest)
    info(f"sent SEND_ONLY PSN 0x{my_psn:06x} to QPN 0x{srv['qpn']:06x}, {a.size} bytes, ICRC {good[-4:].hex()}")
    got = recv_packets(sock, 2, a.timeout)
    acks = [(p, r, peer) for p, r, peer in got if p and p["opcode"] == OP_RC_ACK]
    sends = [(p, r, peer) for p, r, peer in got if p and p["opcode"] == OP_RC_SEND_ONLY]
    for p, _, peer in got:
        info(f"received from {peer[0]}:{peer[1]}: {json.dumps(p)}")
    if not acks:
        fail(f"no ACK for the SEND_ONLY (got {[p for p, _, _ in got]})")
    ack, _, ack_peer = acks[0]
    report["ack"] = dict(ack, udp_sport=ack_peer[1])
    if ack["dqpn"] != my_qpn or ack["psn"] != my_psn:
        fail(f"ACK for QPN 0x{ack['dqpn']:x} PSN 0x{ack['psn']:x}, expected 0x{my_qpn:x}/0x{my_psn:x}")
    if ack["aeth_syndrome"] >> 5 != 0:
        fail(f"AETH is {ack['aeth_kind']} (syndrome 0x{ack['aeth_syndrome']:02x}), expected ACK")
    if ack["aeth_msn"] != 1:
        fail(f"ACK MSN {ack['aeth_msn']}, expected 1")
    info(f"ACK: syndrome 0x{ack['aeth_syndrome']:02x} ({ack['aeth_kind']}), MSN {ack['aeth_msn']}, "
         f"PSN 0x{ack['psn']:06x}, from UDP port 0x{ack_peer[1]:04x}")
    if not sends:
        fail("the server did not send its SEND_ONLY")
    snd, _, _ = sends[0]
    report["server_send"] = snd
    if snd["dqpn"] != my_qpn or snd["psn"] != srv["psn"] or snd["payload_len"] != a.size:
        fail(f"unexpected server SEND_ONLY {snd}")
    info(f"server SEND_ONLY: PSN 0x{snd['psn']:06x}, {snd['payload_len']} bytes "
         f"(starts {snd['payload_head']}), ackreq {snd['ackreq']}")

    # 3. ACK the server's SEND so its work request completes successfully
    ack_body = bth(OP_RC_ACK, srv["qpn"], srv["psn"]) + struct.pack("!I", (0x1F << 24) | 1)
    sock.sendto(build(a.host_ip, a.guest_ip, ROCE_PORT, ack_body), dest)
    info("sent ACK (syndrome 0x1f, MSN 1) for the server's SEND_ONLY")
    extra = recv_packets(sock, 1, 0.5)  # a retransmission here would mean our ACK was rejected
    if extra:
        fail(f"unexpected packet after our ACK: {extra[0][0]}")
    c2 = read_counters(a.counters_cmd)
    report["exchange_counters_delta"] = counters_delta(c1, c2)
    if c2 is not None:
        info(f"guest counters delta over the exchange: {report['exchange_counters_delta']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    info("PASS")


# ---------------------------------------------------------------- verify-pcap

def cmd_verify_pcap(a):
    from scapy.utils import rdpcap
    from scapy.layers.inet import IP, UDP
    from scapy.contrib.roce import BTH  # noqa: F401  (binds UDP 4791 -> BTH)
    bad = 0
    n = 0
    for i, pkt in enumerate(rdpcap(a.pcap), 1):
        if IP not in pkt or UDP not in pkt or ROCE_PORT not in (pkt[UDP].dport,):
            continue
        ip = pkt[IP]
        raw_ip = bytes(ip)
        ihl = (raw_ip[0] & 0xF) * 4
        ip_hdr, udp_hdr = raw_ip[:ihl], raw_ip[ihl:ihl + 8]
        udp_payload = raw_ip[ihl + 8:ip.len]
        body, wire = udp_payload[:-4], udp_payload[-4:]
        own = icrc_ipv4(ip_hdr, udp_hdr, body)
        scapy_val = pkt[BTH].compute_icrc(b"")
        p = parse(udp_payload)
        ok = own == wire
        n += 1
        bad += not ok
        if own != scapy_val:
            fail(f"frame {i}: own ICRC {own.hex()} != scapy {scapy_val.hex()}")
        print(f"frame {i:3d} {ip.src}:{pkt[UDP].sport} -> {ip.dst}:{pkt[UDP].dport} id={ip.id} "
              f"{p['opname']:<22} dqpn=0x{p['dqpn']:06x} psn=0x{p['psn']:06x} "
              f"icrc wire={wire.hex()} computed={own.hex()} {'OK' if ok else 'MISMATCH'}")
    print(f"verify-pcap: {n} RoCEv2 packets, {n - bad} ICRC OK, {bad} mismatched")
    if n == 0:
        fail("no RoCEv2 packets in the capture")
    if a.expect_bad is not None and bad != a.expect_bad:
        fail(f"{bad} ICRC mismatches, expected {a.expect_bad}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("rc-send", help="RC SEND_ONLY exchange with a guest ibv_rc_pingpong -n 1 server")
    r.add_argument("--host-ip", required=True)
    r.add_argument("--guest-ip", required=True)
    r.add_argument("--tcp-port", type=int, default=18515)
    r.add_argument("--size", type=int, default=64, help="SEND payload = the server's -s (default 64)")
    r.add_argument("--qpn", type=lambda s: int(s, 0), help="host QPN to announce (default random)")
    r.add_argument("--psn", type=lambda s: int(s, 0), help="host PSN to announce (default random)")
    r.add_argument("--timeout", type=float, default=10.0)
    r.add_argument("--quiet-time", type=float, default=1.5, help="seconds to wait for no response")
    r.add_argument("--counters-cmd", help="shell command printing guest rxe counters as 'name value' lines")
    r.add_argument("--json", help="write a report of what was seen to this file")
    v = sub.add_parser("verify-pcap", help="check the ICRC of every RoCEv2/IPv4 packet in a capture")
    v.add_argument("pcap")
    v.add_argument("--expect-bad", type=int, help="fail unless exactly this many ICRCs mismatch")
    a = ap.parse_args()
    {"rc-send": cmd_rc_send, "verify-pcap": cmd_verify_pcap}[a.cmd](a)


if __name__ == "__main__":
    main()
