#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_mad (tests/fuzz/corpus/mad): one CM MAD
of each kind uroce sends and hears, as the kernel's ib_cm lays them out
(IBA 12.6), named ok-<ATTR>, plus refusals named bad-<why>.

    gen_mad_corpus.py [OUT_DIR]
"""
import os
import struct
import sys

ATTRS = {"REQ": 0x10, "MRA": 0x11, "REJ": 0x12, "REP": 0x13, "RTU": 0x14,
         "DREQ": 0x15, "DREP": 0x16}


def mad(attr, body):
    hdr = struct.pack(">BBBBHHQHHI", 1, 0x07, 2, 0x03, 0, 0, 0x0102030405060708, attr, 0, 0)
    data = bytearray(232)
    data[:len(body)] = body
    return hdr + bytes(data)


def req():
    b = bytearray(232)
    struct.pack_into(">I", b, 0, 0x11000102)               # local comm ID
    struct.pack_into(">Q", b, 8, 0x0000000001064e20)       # service ID, TCP port 20000
    struct.pack_into(">I", b, 32, 0x00020104)              # QPN 0x201, resp. resources 4
    struct.pack_into(">I", b, 36, 0x00000004)              # initiator depth 4
    b[43] = 18 << 3
    struct.pack_into(">I", b, 44, (0x123456 << 8) | (18 << 3) | 7)
    struct.pack_into(">H", b, 48, 0xffff)
    b[50] = (5 << 4) | 7
    b[51] = 15 << 4
    b[56 + 10:56 + 16] = b"\xff\xff\x7f\x00\x00\x01"     # ::ffff:127.0.0.1
    b[72 + 10:72 + 16] = b"\xff\xff\x7f\x00\x00\x01"
    b[93] = 64
    b[95] = 14 << 3
    hdr = bytearray(36)                                    # rdma_cm's header
    hdr[1] = 0x40
    struct.pack_into(">H", hdr, 2, 40000)
    hdr[4 + 12:4 + 16] = b"\x7f\x00\x00\x01"
    hdr[20 + 12:20 + 16] = b"\x7f\x00\x00\x01"
    b[140:140 + 36] = hdr
    return b


def rep():
    b = bytearray(232)
    struct.pack_into(">II", b, 0, 0x22000105, 0x11000102)
    struct.pack_into(">I", b, 12, 0x10500 << 8)
    struct.pack_into(">I", b, 20, 0x654321 << 8)
    b[24], b[25], b[27] = 4, 4, 7 << 5
    return b


def pair(local, remote, extra=b""):
    return struct.pack(">II", local, remote) + extra


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus", "mad")
    os.makedirs(out, exist_ok=True)
    files = {
        "ok-REQ": mad(ATTRS["REQ"], req()),
        "ok-REP": mad(ATTRS["REP"], rep()),
        "ok-RTU": mad(ATTRS["RTU"], pair(0x11000102, 0x22000105)),
        "ok-REJ": mad(ATTRS["REJ"], pair(0, 0x11000102, b"\x00\x00\x00\x08")),
        "ok-MRA": mad(ATTRS["MRA"], pair(0x22000105, 0x11000102, b"\x00" + bytes([20 << 3]))),
        "ok-DREQ": mad(ATTRS["DREQ"], pair(0x11000102, 0x22000105, b"\x01\x05\x00\x00")),
        "ok-DREP": mad(ATTRS["DREP"], pair(0x22000105, 0x11000102)),
    }
    files["bad-short"] = files["ok-REQ"][:255]
    files["bad-class"] = bytes([1, 0x01]) + files["ok-REQ"][2:]
    files["bad-attr-LAP"] = mad(0x19, b"")
    files["bad-method"] = files["ok-RTU"][:3] + b"\x81" + files["ok-RTU"][4:]
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
