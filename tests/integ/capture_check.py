#!/usr/bin/env python3
"""Checks a `uroce capture` pcapng file on its own, beside tshark's decoding:
every packet is raw IPv4/IPv6 + UDP to port 4791 whose lengths add up, and
its ICRC is the one those headers and bytes give (the RoCEv2 rule: 8 bytes
of ones, the IP header with its variant fields set to ones, the UDP header
with its checksum set to ones, the BTH with byte 4 set to ones, the rest).
Prints "packets N icrc_bad B other O" (O: not RoCE, such as local messages)."""
import struct
import sys
import zlib


def blocks(data):
    off = 0
    while off + 12 <= len(data):
        btype, blen = struct.unpack_from('<II', data, off)
        yield btype, data[off + 8:off + blen - 4]
        off += blen


def icrc_ok(frame):
    v = frame[0] >> 4
    if v == 4:
        ihl = (frame[0] & 15) * 4
        ip = bytearray(frame[:ihl])
        ip[1] = 0xff
        ip[8] = 0xff
        ip[10:12] = b'\xff\xff'
    else:
        ihl = 40
        ip = bytearray(frame[:40])
        ip[0] |= 0x0f
        ip[1:4] = b'\xff\xff\xff'
        ip[7] = 0xff
    udp = bytearray(frame[ihl:ihl + 8])
    udp[6:8] = b'\xff\xff'
    roce = bytearray(frame[ihl + 8:-4])
    roce[4] = 0xff
    crc = zlib.crc32(b'\xff' * 8 + bytes(ip) + bytes(udp) + bytes(roce)) & 0xffffffff
    return crc == struct.unpack('<I', frame[-4:])[0]


def main():
    data = open(sys.argv[1], 'rb').read()
    packets = bad = other = 0
    for btype, body in blocks(data):
        if btype != 6:
            continue
        caplen = struct.unpack_from('<I', body, 12)[0]
        frame = body[20:20 + caplen]
        ihl = (frame[0] & 15) * 4 if frame[0] >> 4 == 4 else 40
        dport = struct.unpack_from('>H', frame, ihl + 2)[0]
        ulen = struct.unpack_from('>H', frame, ihl + 4)[0]
        if dport != 4791:
            other += 1
            continue
        packets += 1
        if ihl + ulen != len(frame) or not icrc_ok(frame):
            bad += 1
    print('packets %d icrc_bad %d other %d' % (packets, bad, other))


main()
