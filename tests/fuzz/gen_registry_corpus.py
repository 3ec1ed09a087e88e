#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_registry (tests/fuzz/corpus/registry):
patches to the host registry (src/host/registry_priv.h, layout version 4) of
the kinds a dead, older or buggy process of the same user could leave.
Each record: a 3-byte word index past the 32-byte header, a 4-byte value.

    gen_registry_corpus.py [OUT_DIR]
"""
import os
import random
import struct
import sys

HEADER, SLOTS, BLOCKS, GROUPS, DEVS, COUNTERS = 32, 1024, 65536, 256, 8, 28
SLOT_AT = HEADER                          # 32-byte slots: pid, gen, start_time, ports
BLOCK_AT = SLOT_AT + 32 * SLOTS           # u16 owner (slot + 1) per block
MCAST_AT = BLOCK_AT + 2 * BLOCKS          # 152-byte groups: gid, ifindex, member bits
CNT_AT = MCAST_AT + (24 + SLOTS // 8) * GROUPS
DEVCNT = 8 + 8 * COUNTERS


def rec(offset, value):
    assert offset % 4 == 0 and offset >= HEADER
    idx = (offset - HEADER) // 4
    return struct.pack("<I", idx)[:3] + struct.pack("<I", value & 0xffffffff)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                             "corpus", "registry")
    os.makedirs(out, exist_ok=True)
    seeds = {
        # Block owners naming slots that do not exist, or every block taken.
        "owners-out-of-range": b"".join(rec(BLOCK_AT + 4 * b, 0xffff0401) for b in range(1, 64)),
        "owners-all-taken": b"".join(rec(BLOCK_AT + 4 * b, 0x00020002)
                                     for b in range(0, BLOCKS // 2, 97)),
        # Slots of processes that never were: pid -1, pid 1, a pid with no /proc entry.
        "slots-odd-pids": rec(SLOT_AT + 32 * 3, 0xffffffff) + rec(SLOT_AT + 32 * 4, 1) +
                          rec(SLOT_AT + 32 * 5, 0x3fffffff) + rec(BLOCK_AT + 8, 0x00060005),
        # A group every slot belongs to, and a CM listener key with dead members.
        "mcast-all-members": rec(MCAST_AT, 0xff) + b"".join(
            rec(MCAST_AT + 24 + 4 * w, 0xffffffff) for w in range(SLOTS // 32)),
        # Counters of interface 1 at the edge of overflow, in a free slot.
        "counters-huge": rec(CNT_AT + DEVCNT * DEVS * 7, 1) + b"".join(
            rec(CNT_AT + DEVCNT * DEVS * 7 + 8 + 8 * i + 4, 0xffffffff) for i in range(COUNTERS)),
    }
    rnd = random.Random(4791)
    for n in range(3):
        seeds["random-%d" % n] = b"".join(rec(HEADER + 4 * rnd.randrange(450000),
                                              rnd.getrandbits(32)) for _ in range(200))
    for name, body in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(body)


if __name__ == "__main__":
    main()
