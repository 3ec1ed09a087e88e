#!/usr/bin/env python3
"""Seeds for fuzz_rs_dgram: a selector byte (0: a UDP side-channel message
on an IPv4 socket, 1: on an IPv6 one, 2: a UD payload's datagram header),
then the message as rdma-core's rsockets send it.  ok-*: headers the readers
must take; drop-*: ones they must refuse."""
import os
import struct
import sys

TAG = 0x55555555
DATA, CTRL = 0, 7


def udp4(op=DATA, qpn=0x123456, length=16, tag=TAG, version=4, body=b'hello'):
    return struct.pack('>IBBBBI', tag, version, op, length, 0, qpn) + bytes([10, 0, 0, 2]) + body


def udp6(op=DATA, qpn=0x42, body=b'six'):
    return struct.pack('>IBBBBI', TAG, 6, op, 28, 0, qpn) + bytes(15) + b'\x01' + body


def hdr4(port=7174, body=b'payload'):
    return struct.pack('>BBH', 4, 8, port) + bytes([10, 0, 0, 2]) + body


def hdr6(port=7174, body=b'payload'):
    return struct.pack('>BBHI', 6, 24, port, 5) + bytes(15) + b'\x01' + body


def main(out):
    os.makedirs(out, exist_ok=True)
    seeds = {
        'ok-udp4-data': b'\0' + udp4(),
        'ok-udp4-ctrl': b'\0' + udp4(op=CTRL, body=b''),
        'ok-udp6-data': b'\1' + udp6(),
        'ok-hdr4': b'\2' + hdr4(),
        'ok-hdr4-empty': b'\2' + hdr4(body=b''),
        'ok-hdr6': b'\2' + hdr6(),
        'drop-udp4-short': b'\0' + udp4(body=b'')[:15],
        'drop-udp4-tag': b'\0' + udp4(tag=0x55555554),
        'drop-udp4-length': b'\0' + udp4(length=28),
        'drop-udp4-op': b'\0' + udp4(op=4),
        'drop-udp6-on-ipv4': b'\0' + udp6(),
        'drop-udp4-on-ipv6': b'\1' + udp4(),
        'drop-udp6-short': b'\1' + udp6(body=b'')[:27],
        'drop-hdr-short': b'\2' + hdr4()[:7],
        'drop-hdr6-short': b'\2' + hdr6(body=b'')[:23],
        'drop-hdr-version': b'\2' + b'\5' + hdr4()[1:],
        'drop-hdr-length': b'\2' + b'\4\x18' + hdr4()[2:],
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), 'corpus', 'rs_dgram'))
