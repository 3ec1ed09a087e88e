#!/usr/bin/python3
"""Generate the seed corpus of tests/fuzz/fuzz_pkt_parse.c.

One valid packet per opcode the wire module knows, ICRC computed for the
fuzz target's fixed IPv4 path (fuzz_common.h) with a random IP ID and DF set, a
few for its IPv6 path, and malformed packets named after the parse result
they must get.  The header layouts are restated here from the IBA tables, so
the corpus also cross-checks the C opcode table (tests/unit/fuzz_replay).
RD's opcodes carry DC's 8-byte DCETH after the BTH, as uroce sends them
(docs/dc.md).

Run from the repository root:  /usr/bin/python3 tests/fuzz/gen_corpus.py
"""
import os
import random
import socket
import struct
import zlib

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "pkt_parse")
IP4 = (socket.inet_pton(socket.AF_INET, "10.0.0.1"), socket.inet_pton(socket.AF_INET, "10.0.0.2"))
IP6 = (socket.inet_pton(socket.AF_INET6, "fd00::1"), socket.inet_pton(socket.AF_INET6, "fd00::2"))
SPORT, DPORT = 0xC001, 4791
SIZE = dict(RETH=16, AETH=4, ATMETH=28, ATMACK=8, IMMDT=4, IETH=4, DCETH=8, RDETH=4, DETH=8, XRCETH=4,
            FETH=4)

# Operation (low 5 bits) -> (name, extension headers, carries payload, is request)
OPS = {
    0x00: ("SEND_FIRST", [], True, True),
    0x01: ("SEND_MIDDLE", [], True, True),
    0x02: ("SEND_LAST", [], True, True),
    0x03: ("SEND_LAST_WITH_IMMEDIATE", ["IMMDT"], True, True),
    0x04: ("SEND_ONLY", [], True, True),
    0x05: ("SEND_ONLY_WITH_IMMEDIATE", ["IMMDT"], True, True),
    0x06: ("RDMA_WRITE_FIRST", ["RETH"], True, True),
    0x07: ("RDMA_WRITE_MIDDLE", [], True, True),
    0x08: ("RDMA_WRITE_LAST", [], True, True),
    0x09: ("RDMA_WRITE_LAST_WITH_IMMEDIATE", ["IMMDT"], True, True),
    0x0A: ("RDMA_WRITE_ONLY", ["RETH"], True, True),
    0x0B: ("RDMA_WRITE_ONLY_WITH_IMMEDIATE", ["RETH", "IMMDT"], True, True),
    0x0C: ("RDMA_READ_REQUEST", ["RETH"], False, True),
    0x0D: ("RDMA_READ_RESPONSE_FIRST", ["AETH"], True, False),
    0x0E: ("RDMA_READ_RESPONSE_MIDDLE", [], True, False),
    0x0F: ("RDMA_READ_RESPONSE_LAST", ["AETH"], True, False),
    0x10: ("RDMA_READ_RESPONSE_ONLY", ["AETH"], True, False),
    0x11: ("ACKNOWLEDGE", ["AETH"], False, False),
    0x12: ("ATOMIC_ACKNOWLEDGE", ["AETH", "ATMACK"], False, False),
    0x13: ("COMPARE_SWAP", ["ATMETH"], False, True),
    0x14: ("FETCH_ADD", ["ATMETH"], False, True),
    0x16: ("SEND_LAST_WITH_INVALIDATE", ["IETH"], True, True),
    0x17: ("SEND_ONLY_WITH_INVALIDATE", ["IETH"], True, True),
    0x1C: ("FLUSH", ["FETH", "RETH"], False, True),
    0x1D: ("ATOMIC_WRITE", ["RETH"], True, True),
}


def opcodes():
    """opcode -> (name, headers after the BTH, carries payload)."""
    table = {}
    for low, (name, hdrs, pay, req) in OPS.items():
        table[low] = ("RC_" + name, hdrs, pay)
        if low <= 0x0B:
            table[0x20 | low] = ("UC_" + name, hdrs, pay)
        if low <= 0x14:
            table[0x40 | low] = ("RD_" + name, ["DCETH", "RDETH"] + (["DETH"] if req else []) + hdrs, pay)
        if low <= 0x17 and low != 0x15:
            table[0xA0 | low] = ("XRC_" + name, (["XRCETH"] if req else []) + hdrs, pay)
    table[0x64] = ("UD_SEND_ONLY", ["DETH"], True)
    table[0x65] = ("UD_SEND_ONLY_WITH_IMMEDIATE", ["DETH", "IMMDT"], True)
    table[0x81] = ("CNP", [], True)
    return table


def icrc(v6, roce, ip_id=0, df=True):
    udp_len = 8 + len(roce) + 4
    if v6:
        ip = struct.pack(">IHBB16s16s", 0x6FFFFFFF, udp_len, 17, 0xFF, *IP6)
    else:
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0xFF, 20 + udp_len, ip_id,
                         0x4000 if df else 0, 0xFF, 17, 0xFFFF, *IP4)
    udp = struct.pack(">HHHH", SPORT, DPORT, udp_len, 0xFFFF)
    bth = roce[:4] + b"\xff" + roce[5:12]
    return zlib.crc32(b"\xff" * 8 + ip + udp + bth + roce[12:]) & 0xFFFFFFFF


def packet(rng, op, hdrs, paylen, tver=0, pad=None):
    if pad is None:
        pad = -paylen % 4
    flags = (rng.getrandbits(1) << 7) | (1 << 6) | (pad << 4) | tver
    bth = struct.pack(">BBHII", op, flags, 0xFFFF, (rng.getrandbits(2) << 30) | rng.getrandbits(24),
                      (rng.getrandbits(1) << 31) | rng.getrandbits(24))
    ext = b"".join(bytes(rng.getrandbits(8) for _ in range(SIZE[h])) for h in hdrs)
    return bth + ext + bytes(rng.getrandbits(8) for _ in range(paylen)) + b"\0" * pad


def seal(roce, v6=False, ip_id=0, df=True):
    return roce + struct.pack("<I", icrc(v6, roce, ip_id, df))


def acceptable_v4(pkt):
    """Would some IP ID (with DF, which the check requires) make this packet's ICRC right?  (Brute force.)"""
    want = struct.unpack("<I", pkt[-4:])[0]
    return any(icrc(False, pkt[:-4], i, True) == want for i in range(65536))


def main():
    rng = random.Random(0xC0DE)
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if not f.startswith("crash-"):
            os.remove(os.path.join(OUT, f))
    files = {}
    table = opcodes()

    for op, (name, hdrs, pay) in sorted(table.items()):
        paylen = (16 if name == "CNP" else rng.choice([0, 1, 3, 4, 7, 13, 32, 61])) if pay else 0
        files["ok4-%02x-%s" % (op, name)] = seal(packet(rng, op, hdrs, paylen), False,
                                                rng.getrandbits(16), True)
    for op in (0x04, 0x0A, 0x11, 0x12, 0x13, 0x65, 0xA6):
        name, hdrs, pay = table[op]
        files["ok6-%02x-%s" % (op, name)] = seal(packet(rng, op, hdrs, 9 if pay else 0), True)
    files["ok4-0e-RC_RDMA_READ_RESPONSE_MIDDLE-1024"] = seal(packet(rng, 0x0E, [], 1024), False,
                                                            0, True)

    ack = seal(packet(rng, 0x11, ["AETH"], 0))
    send = seal(packet(rng, 0x04, [], 5))
    read = seal(packet(rng, 0x0C, ["RETH"], 0))
    files["SHORT-empty"] = b""
    files["SHORT-bth-only"] = ack[:12]
    files["SHORT-15"] = ack[:15]
    files["SHORT-read-in-reth"] = read[:20]
    files["SHORT-ack-no-icrc"] = ack[:16]
    files["BAD_OPCODE-15"] = b"\x15" + ack[1:]
    files["BAD_OPCODE-ff"] = b"\xff" + ack[1:]
    files["BAD_OPCODE-3f"] = b"\x3f" + send[1:]
    files["BAD_TVER-1"] = seal(packet(rng, 0x04, [], 8, tver=1))
    files["BAD_TVER-f"] = seal(packet(rng, 0x11, ["AETH"], 0, tver=15))
    files["BAD_PAD-ack-pad1"] = seal(packet(rng, 0x11, ["AETH"], 0, pad=1))
    files["BAD_PAD-send-odd-length"] = send[:-1]
    files["BAD_PAD-read-pad2"] = seal(packet(rng, 0x0C, ["RETH"], 0, pad=2))
    files["BAD_PAD-write-length-4n+2"] = seal(packet(rng, 0x0A, ["RETH"], 8))[:-2]
    files["BAD_PAYLOAD-ack-plus-4"] = seal(packet(rng, 0x11, ["AETH"], 4, pad=0))
    files["BAD_PAYLOAD-read-plus-8"] = seal(packet(rng, 0x0C, ["RETH"], 8, pad=0))

    for name, good in (("ack", ack), ("send", send), ("read", read)):
        for pos in (2, 13, len(good) - 5, len(good) - 1):
            bad = bytearray(good)
            bad[pos] ^= 1 << rng.randrange(8)
            bad = bytes(bad)
            if pos != 4 and not acceptable_v4(bad):
                files["icrc-%s-byte%d" % (name, pos)] = bad

    for name, data in files.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print("%d files in %s" % (len(files), OUT))


if __name__ == "__main__":
    main()
