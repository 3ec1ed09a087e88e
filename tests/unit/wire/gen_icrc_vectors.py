#!/usr/bin/python3
"""Generate tests/unit/wire/icrc_vectors.h: RoCEv2 packets with their ICRC.

IPv4 ICRCs come from scapy's contrib.roce module (BTH.compute_icrc), an
implementation independent of ours.  scapy does not support IPv6 there, so
IPv6 ICRCs are computed here from scapy-built IPv6/UDP headers, masked as the
RoCEv2 annex says, with zlib.crc32; the same masking code is first checked
against scapy on every IPv4 vector.

Run: /usr/bin/python3 tests/unit/wire/gen_icrc_vectors.py > tests/unit/wire/icrc_vectors.h
"""
import random
import struct
import sys
import zlib

from scapy.compat import raw
from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.packet import Raw

rng = random.Random(4791)


def ext(op, paylen):
    """Extension headers for opcode op, packed by hand (IBA vol 1, ch. 9)."""
    r = lambda bits: rng.getrandbits(bits)
    reth = lambda: struct.pack(">QII", r(64), r(32), paylen)
    aeth = lambda: struct.pack(">I", r(32))
    immdt = lambda: struct.pack(">I", r(32))
    deth = lambda: struct.pack(">II", r(32), r(24))
    atmeth = lambda: struct.pack(">QIQQ", r(64), r(32), r(64), r(64))
    atmack = lambda: struct.pack(">Q", r(64))
    ieth = lambda: struct.pack(">I", r(32))
    return {
        0x04: b"",                                   # RC SEND_ONLY
        0x05: immdt(),                               # RC SEND_ONLY_WITH_IMMEDIATE
        0x06: reth(),                                # RC RDMA_WRITE_FIRST
        0x0B: reth() + immdt(),                      # RC RDMA_WRITE_ONLY_WITH_IMMEDIATE
        0x0C: reth(),                                # RC RDMA_READ_REQUEST
        0x0E: b"",                                   # RC RDMA_READ_RESPONSE_MIDDLE
        0x10: aeth(),                                # RC RDMA_READ_RESPONSE_ONLY
        0x11: aeth(),                                # RC ACKNOWLEDGE
        0x12: aeth() + atmack(),                     # RC ATOMIC_ACKNOWLEDGE
        0x13: atmeth(),                              # RC COMPARE_SWAP
        0x17: ieth(),                                # RC SEND_ONLY_WITH_INVALIDATE
        0x24: b"",                                   # UC SEND_ONLY
        0x64: deth(),                                # UD SEND_ONLY
        0x65: deth() + immdt(),                      # UD SEND_ONLY_WITH_IMMEDIATE
        0x81: b"",                                   # CNP (16 reserved bytes as payload)
    }[op]


def roce_bytes(op, paylen):
    pad = -paylen % 4
    bth = BTH(opcode=op, solicited=rng.getrandbits(1), migreq=1, padcount=pad,
              pkey=0xFFFF, fecn=rng.getrandbits(1), becn=rng.getrandbits(1),
              dqpn=rng.getrandbits(24), ackreq=rng.getrandbits(1),
              psn=rng.getrandbits(24))
    body = ext(op, paylen) + bytes(rng.getrandbits(8) for _ in range(paylen)) + b"\0" * pad
    return bth, body


def masked_icrc(ip_hdr, udp_hdr, roce_wo_icrc):
    """ICRC over 8 x 0xFF, IP, UDP and BTH with the variant fields as ones."""
    ip = bytearray(ip_hdr)
    if ip[0] >> 4 == 4:
        ip[1] = 0xFF                     # TOS
        ip[8] = 0xFF                     # TTL
        ip[10:12] = b"\xff\xff"          # header checksum
    else:
        ip[0] |= 0x0F                    # traffic class, flow label
        ip[1:4] = b"\xff\xff\xff"
        ip[7] = 0xFF                     # hop limit
    udp = bytearray(udp_hdr)
    udp[6:8] = b"\xff\xff"               # checksum
    roce = bytearray(roce_wo_icrc)
    roce[4] = 0xFF                       # FECN, BECN, resv6
    return zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(roce)) & 0xFFFFFFFF


def vector(family, op, paylen):
    bth, body = roce_bytes(op, paylen)
    sport = 0xC000 | rng.getrandbits(14)
    ip_id = rng.getrandbits(16)
    df = rng.getrandbits(1)
    if family == 4:
        src = "10.%d.%d.%d" % (rng.randrange(256), rng.randrange(256), rng.randrange(1, 255))
        dst = "192.168.%d.%d" % (rng.randrange(256), rng.randrange(1, 255))
        # TOS/TTL/checksum are arbitrary: the ICRC masks them.
        l3 = IP(src=src, dst=dst, id=ip_id, flags="DF" if df else 0,
                tos=rng.getrandbits(8), ttl=rng.randrange(1, 256))
    else:
        src = "fe80::%x:%x" % (rng.getrandbits(16), rng.getrandbits(16))
        dst = "2001:db8::%x" % rng.getrandbits(16)
        l3 = IPv6(src=src, dst=dst, tc=rng.getrandbits(8), fl=rng.getrandbits(20),
                  hlim=rng.randrange(1, 256))
    pkt = l3 / UDP(sport=sport, dport=4791, chksum=rng.getrandbits(16)) / bth / Raw(body)
    wire = raw(pkt)
    iplen = 20 if family == 4 else 40
    ip_hdr, udp_hdr, roce = wire[:iplen], wire[iplen:iplen + 8], wire[iplen + 8:]
    ours = masked_icrc(ip_hdr, udp_hdr, roce[:-4])
    if family == 4:
        # scapy computed the trailing ICRC itself; our masking must agree.
        assert struct.unpack("<I", roce[-4:])[0] == ours, (op, paylen)
    else:
        roce = roce[:-4] + struct.pack("<I", ours)
    return dict(family=family, src=src, dst=dst, sport=sport, ip_id=ip_id if family == 4 else 0,
                df=df if family == 4 else 0, op=op, roce=roce, icrc=ours)


def c_addr(family, a):
    import socket
    b = socket.inet_pton(socket.AF_INET if family == 4 else socket.AF_INET6, a)
    return "{" + ", ".join("0x%02x" % x for x in b) + "}"


def main():
    cases = [(0x04, n) for n in (0, 1, 2, 3, 4, 61, 256, 1024, 4096)] + \
            [(0x05, 8), (0x06, 1024), (0x0B, 13), (0x0C, 0), (0x0E, 1024), (0x10, 7),
             (0x11, 0), (0x12, 0), (0x13, 0), (0x17, 33), (0x24, 100), (0x64, 256),
             (0x65, 3), (0x81, 16)]
    vecs = [vector(fam, op, n) for fam in (4, 6) for op, n in cases]
    out = sys.stdout
    out.write("/* Generated by gen_icrc_vectors.py (scapy %s): do not edit.\n"
              " * IPv4 ICRCs computed by scapy.contrib.roce; IPv6 ICRCs by the script's own\n"
              " * masking + zlib.crc32, checked against scapy on the IPv4 vectors. */\n"
              % __import__("scapy").__version__)
    out.write("struct icrc_vector {\n\tint family;\n\tuint8_t saddr[16], daddr[16];\n"
              "\tuint16_t sport, ip_id;\n\tbool df;\n\tuint8_t opcode;\n\tuint32_t icrc;\n"
              "\tsize_t len;\n\tconst uint8_t *roce;\t/* BTH .. ICRC */\n};\n\n")
    for i, v in enumerate(vecs):
        rows = [", ".join("0x%02x" % b for b in v["roce"][j:j + 12])
                for j in range(0, len(v["roce"]), 12)]
        out.write("static const uint8_t icrc_vec%d[] = {\n\t%s,\n};\n" % (i, ",\n\t".join(rows)))
    out.write("\nstatic const struct icrc_vector icrc_vectors[] = {\n")
    for i, v in enumerate(vecs):
        out.write("\t{ %s, %s, %s, %d, 0x%04x, %s, 0x%02x, 0x%08x, sizeof(icrc_vec%d), icrc_vec%d },\n"
                  % ("AF_INET" if v["family"] == 4 else "AF_INET6", c_addr(v["family"], v["src"]),
                     c_addr(v["family"], v["dst"]), v["sport"], v["ip_id"],
                     "true" if v["df"] else "false", v["op"], v["icrc"], i, i))
    out.write("};\n")


if __name__ == "__main__":
    main()
