#!/usr/bin/env python3
"""Seeds for fuzz_shm_ring: a ring's head and tail (8 bytes each, little
endian), then bytes laid at the head (wrapping to the ring's start) and
repeated from the ring's start; without them the ring is zeros, i.e.
records of 0 bytes.  ok-*: well-formed records the consumer must take;
drop-*: impossible rings it must empty and report."""
import os
import struct
import sys

RING = 1 << 20
ALIGN = 64
WRAP = 0xffffffff


def rec(length, tc=0):
    hdr = struct.pack('<IBBBB', length, tc, 64, 0, 0) + bytes(40)
    body = bytes((i * 7) & 0xff for i in range(length))
    room = (48 + length + ALIGN - 1) & ~(ALIGN - 1)
    return (hdr + body).ljust(room, b'\0')


def seed(head, tail, body):
    return struct.pack('<QQ', head, tail) + body


def main(out):
    os.makedirs(out, exist_ok=True)
    two = rec(100, 1) + rec(1, 2)
    wrap128 = struct.pack('<I', WRAP) + bytes(124)
    seeds = {
        'ok-empty': seed(0, 0, b''),
        'ok-two-records': seed(0, len(two), two),
        'ok-max-packet': seed(0, len(rec(8192)), rec(8192)),
        'ok-past-2-32': seed((1 << 32) - 512, (1 << 32) - 512 + len(two), two),
        'drop-tail-past-ring': seed(0, RING + 64, two),
        'drop-head-misaligned': seed(8, 8 + len(two), two),
        'drop-len-too-big': seed(0, 64 * 4, struct.pack('<I', 9000) + bytes(60)),
        'drop-record-past-tail': seed(0, 64, rec(100)),
        'drop-wrap-past-tail': seed(RING - 256, RING - 192, struct.pack('<I', WRAP) + bytes(60)),
        # A WRAP mark 128 bytes before the end, the record after it at 0.
        'ok-wrap': seed(RING - 128, RING + len(rec(100)), wrap128 + rec(100)),
        # A record ending exactly at the end of the ring, the next at 0.
        'ok-exact-end': seed(3 * RING - 192, 3 * RING + 64, rec(100) + rec(1)),
        # The whole ring published: 16384 records of 0 bytes.
        'ok-full-zeros': seed(5 * RING, 6 * RING, b''),
        # More records than a batch takes.
        'ok-batch': seed(0, 64 * 100, rec(1, 3) * 100),
        # A length whose room (header and packet, to a line) overflows 32 bits to 64.
        'drop-len-room-overflow': seed(0, 64 * 4, struct.pack('<I', 0xfffffff0) + bytes(252)),
        # A tail off a cache line: the second record is cut short.
        'drop-tail-misaligned': seed(0, 100, rec(1) + rec(1)),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else
         os.path.join(os.path.dirname(os.path.abspath(__file__)), 'corpus', 'shm_ring'))
