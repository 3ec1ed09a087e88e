/* What the packet fuzz target and its corpus agree on: the IP and UDP
 * fields the ICRC of corpus packets was computed with (gen_corpus.py). */
#ifndef UROCE_TESTS_FUZZ_COMMON_H
#define UROCE_TESTS_FUZZ_COMMON_H

#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>

#include "wire/icrc.h"
#include "wire/roce_hdr.h"

#define FUZZ_SPORT	0xc001

static inline void fuzz_ip(struct ur_roce_ip *ip, int family)
{
	memset(ip, 0, sizeof(*ip));
	ip->family = family;
	if (family == AF_INET) {
		inet_pton(AF_INET, "10.0.0.1", &ip->v4.saddr);
		inet_pton(AF_INET, "10.0.0.2", &ip->v4.daddr);
	} else {
		inet_pton(AF_INET6, "fd00::1", &ip->v6.saddr);
		inet_pton(AF_INET6, "fd00::2", &ip->v6.daddr);
	}
	ip->sport = FUZZ_SPORT;
	ip->dport = UR_ROCE_UDP_PORT;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
