/* Between the datagram rsocket files (dgram.c: resources; dgram_io.c: the
 * data path; dgram_svc.c: the UDP thread). */
#ifndef UROCE_RSOCKET_DGRAM_PRIV_H
#define UROCE_RSOCKET_DGRAM_PRIV_H

#include "rsocket/dgram.h"

#define RS_DS_WR_RECV (1ull << 63)   /* wr_id: a receive, its slot's offset below */

/* Buffers made and the UDP thread reading the socket (once). */
int rs_ds_ready(struct rsock *rs);
/* The destination addr (made, with a QP for the local address that
 * serves it, on first use). */
int rs_ds_dest(struct rsock *rs, const struct sockaddr *addr, socklen_t len,
	       struct rs_ds_dest **out);
/* d's QP is qpn: send to it over UD from now on. */
int rs_ds_set_peer(struct rsock *rs, struct rs_ds_dest *d, uint32_t qpn);
int rs_ds_addr_cmp(const void *a, const void *b);
/* An IPv4 address, or an IPv4-mapped IPv6 one (a dual-stack socket's
 * view of an IPv4 peer). */
bool rs_ds_is_v4(const struct sockaddr_storage *a);
/* A source an IPv6 socket reads: an IPv4 one as IPv4-mapped, as the
 * kernel gives a dual-stack socket. */
void rs_ds_map_v4(const struct rsock *rs, struct sockaddr_storage *a, socklen_t *len);
/* The receive slot at offset goes back to qp's receive queue. */
void rs_ds_repost(struct rsock *rs, struct rs_ds_qp *qp, uint32_t offset);

#endif
