#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_local (tests/fuzz/corpus/local): local
messages and forwarding datagrams as processes of one host send them
(src/rel/xrc_msg.h, src/xport/udp/udp_priv.h), each behind fuzz_local's
selector byte.  ok-* must be taken, drop-* counted malformed, any-* merely
not crash (the corpus replay checks the names).

    gen_local_corpus.py [OUT_DIR]
"""
import os
import socket
import struct
import sys

SEL_FWD, SEL_MSG_VALID, SEL_MSG_AIM, SEL_FWD_VALID, SEL_FWD_ICRC = 0x01, 0x02, 0x04, 0x08, 0x20
DELIVER, REPLY = 1, 2
F_FIRST, F_LAST, F_IMM = 1, 2, 4
FWD_MAGIC, FWD_VERSION, FWD_PACKETS, FWD_MSG = 0x75465744, 2, 1, 2
XRC_MAGIC, XRC_VERSION = 0x75585243, 1


def xrc(kind, flags=0, payload=b"", magic=XRC_MAGIC, psn=0, tgt=0x10):
    # Each seed names its own target QP: the owner keeps a sink per (sender, target).
    # magic, version, kind, src_pid, tgt_qpn, srqn, psn, gen, status,
    # xrcd_dev, xrcd_ino, ibdev, src_qpn, flags, imm, paylen
    hdr = struct.pack("<IHHiIIIIIQQ64sIIII", magic, XRC_VERSION, kind, 1, tgt, 0, psn, 0, 0,
                      0, 0, b"uroce0", 0x123456, flags, 0x01020304, len(payload))
    assert len(hdr) == 128
    return hdr + payload


def fwd(kind, body, family=socket.AF_INET, seg=0, magic=FWD_MAGIC):
    src = socket.inet_pton(socket.AF_INET, "127.0.0.1").ljust(16, b"\0")
    hdr = struct.pack("<IBBH16s16sHHBBH", magic, FWD_VERSION, kind, family, src, src,
                      49152, 4791, 0, 64, seg)
    assert len(hdr) == 48
    return hdr + body


def bth(opcode, qpn, psn):
    return struct.pack(">BBHII", opcode, 0x40, 0xffff, qpn & 0xffffff, psn & 0xffffff)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                             "corpus", "local")
    os.makedirs(out, exist_ok=True)
    pkt = bth(0x04, 0x000100, 5) + b"\0" * 44 + b"\0\0\0\0"   # RC SEND ONLY, ICRC sealed by the target
    seeds = {
        # Local messages (XRC), with the header made right and aimed.
        "ok-deliver-whole": (SEL_MSG_VALID | SEL_MSG_AIM, xrc(DELIVER, F_FIRST | F_LAST | F_IMM, b"x" * 100, tgt=0x11)),
        "ok-deliver-first": (SEL_MSG_VALID | SEL_MSG_AIM, xrc(DELIVER, F_FIRST, b"y" * 2000, psn=7, tgt=0x12)),
        "ok-deliver-too-long": (SEL_MSG_VALID | SEL_MSG_AIM, xrc(DELIVER, F_FIRST | F_LAST, b"z" * 9000, tgt=0x13)),
        "ok-deliver-middle-alone": (SEL_MSG_VALID | SEL_MSG_AIM, xrc(DELIVER, 0, b"m" * 64, tgt=0x14)),
        "ok-deliver-unknown-srq": (SEL_MSG_VALID, xrc(DELIVER, F_FIRST | F_LAST, b"u" * 8)),
        "ok-reply-stale": (SEL_MSG_VALID | SEL_MSG_AIM, xrc(REPLY)),
        # ... and as they come, unrepaired.
        "drop-msg-short": (0, b"\x43\x52\x58\x75" + b"\0" * 10),
        "drop-msg-magic": (0, xrc(DELIVER, F_FIRST, b"a", magic=0x12345678)),
        "drop-msg-paylen": (0, xrc(DELIVER, F_FIRST, b"abc")[:-1]),
        "drop-msg-empty": (0, b"\0"),
        # Forwarding datagrams.
        "ok-fwd-one": (SEL_FWD | SEL_FWD_VALID | SEL_FWD_ICRC, fwd(FWD_PACKETS, pkt)),
        "ok-fwd-batch": (SEL_FWD | SEL_FWD_VALID | SEL_FWD_ICRC, fwd(FWD_PACKETS, pkt * 3, seg=len(pkt))),
        "ok-fwd-batch6": (SEL_FWD | SEL_FWD_VALID | SEL_FWD_ICRC,
                          fwd(FWD_PACKETS, pkt * 2 + pkt[:28], family=socket.AF_INET6, seg=len(pkt))),
        # A batch whose last packet is not a whole number of words.
        "drop-fwd-ragged-tail": (SEL_FWD | SEL_FWD_VALID | SEL_FWD_ICRC,
                                 fwd(FWD_PACKETS, pkt + pkt[:30], seg=len(pkt))),
        "ok-fwd-msg": (SEL_FWD | SEL_FWD_VALID, fwd(FWD_MSG, xrc(REPLY))),
        "drop-fwd-msg-garbage": (SEL_FWD | SEL_FWD_VALID, fwd(FWD_MSG, b"\xff" * 40)),
        "drop-fwd-family": (SEL_FWD | SEL_FWD_VALID, fwd(FWD_PACKETS, pkt, family=99)),
        "drop-fwd-magic": (SEL_FWD, fwd(FWD_PACKETS, pkt, magic=0)),
        "drop-fwd-short": (SEL_FWD, b"\x44\x57\x46\x75\x02"),
        "any-fwd-seg1": (SEL_FWD | SEL_FWD_VALID | SEL_FWD_ICRC, fwd(FWD_PACKETS, pkt * 4, seg=1)),
        "any-fwd-empty-batch": (SEL_FWD | SEL_FWD_VALID, fwd(FWD_PACKETS, b"", seg=64)),
    }
    for name, (sel, body) in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(bytes([sel]) + body)


if __name__ == "__main__":
    main()
