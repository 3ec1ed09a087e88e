/* Two processes of a verbs test: a TCP side channel to exchange QP numbers,
 * GIDs and verdicts, and byte streams both sides can regenerate from a key
 * (so that what must arrive need not be sent twice).  Exits the program
 * (status 2) when the side channel breaks. */
#ifndef UROCE_INTEG_VT_PEER_H
#define UROCE_INTEG_VT_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Listens on TCP port (any address, IPv4 and IPv6) and returns the first
 * connection. */
int vt_tcp_accept(const char *port);
/* Connects to host:port, retrying for 10 s while nobody listens yet. */
int vt_tcp_connect(const char *host, const char *port);
/* Sends (out) or receives exactly len bytes. */
void vt_xfer(int fd, void *buf, size_t len, bool out);

/* The opening of a client's run: its hello (the run's settings, hello_len
 * bytes) and its n QP numbers out, then the server's answer (answer_len
 * bytes: its GID, or more) and the server's n QP numbers in. */
void vt_peer_hello(int fd, void *hello, size_t hello_len, uint32_t *qpn, void *answer,
		   size_t answer_len, uint32_t *peer_qpn, uint32_t n);
/* Whether the peer has said something on fd (a read would not block). */
bool vt_peer_spoke(int fd);
/* The end of a run: the server sends how many of its checks failed, the
 * client receives it (one check: none); each then closes fd. */
void vt_peer_verdict_send(int fd);
void vt_peer_verdict_check(int fd);

/* A 64-bit mixer (splitmix64's finaliser): distinct inputs, unrelated
 * outputs. */
uint64_t vt_mix(uint64_t x);
/* Byte off of the stream named key. */
uint8_t vt_stream_byte(uint64_t key, uint64_t off);
/* p[0..len) = the stream's bytes start .. start + len. */
void vt_stream_fill(uint8_t *p, size_t len, uint64_t key, uint64_t start);
/* The first offset where p differs from the stream, or -1. */
long vt_stream_diff(const uint8_t *p, size_t len, uint64_t key, uint64_t start);

#endif
