/* The 40 bytes in front of every UD receive: on RoCE v2 the GRH is the IP
 * header the datagram came with, an IPv6 header as it is or, for IPv4, the
 * IPv4 header in the last 20 bytes (where rdma-core and rxe put it). */
#ifndef UROCE_WIRE_GRH_H
#define UROCE_WIRE_GRH_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#define UR_GRH_BYTES 40

/* What a receiver knows of the IP header a datagram came with. */
struct ur_grh_fields {
	union ibv_gid sgid, dgid;
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint32_t flow_label;
	bool ipv6;
};

/* The L3 type a UD receive completion reports in ibv_wc.sl on RoCE, as
 * mlx5 devices do (their CQE's "RoCE packet type"): UCX's UD transport and
 * other mlx5-minded code read it to know where the destination address sits
 * in the GRH area (the last 4 bytes for IPv4, the last 16 for IPv6). */
enum ur_grh_l3_type {
	UR_GRH_L3_GRH = 0,     /* RoCE v1: an IB GRH */
	UR_GRH_L3_IPV6 = 1,
	UR_GRH_L3_IPV4 = 2,
};

static inline uint8_t ur_grh_l3_type(const struct ur_grh_fields *f)
{
	return f->ipv6 ? UR_GRH_L3_IPV6 : UR_GRH_L3_IPV4;
}

/* Writes the GRH of a datagram whose RoCE part (BTH .. ICRC) is
 * roce_bytes long; UDP's 8 bytes are added here. */
void ur_grh_build(uint8_t grh[UR_GRH_BYTES], const struct ur_grh_fields *f, uint32_t roce_bytes);

/* Reads a GRH back (ibv_init_ah_from_wc): 0, or -EINVAL if it is neither
 * an IPv6 nor an IPv4 header. */
int ur_grh_parse(const uint8_t grh[UR_GRH_BYTES], struct ur_grh_fields *f);

#endif
