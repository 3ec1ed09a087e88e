/* CRC throughput, side by side in one run: ur_crc32 through each engine,
 * zlib's crc32 and memcpy (the floor any per-byte pass is measured
 * against), for buffer sizes from one small packet to 1 MiB.  Then the cost
 * of the ICRC per packet: generation, the exact IPv6 check and the IPv4
 * check that also solves for the IP ID.
 *
 * Usage: bench_crc [seconds per measurement, default 0.3] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <zlib.h>

#include "util/compiler.h"
#include "wire/crc32.h"
#include "wire/icrc.h"
#include "wire/roce_hdr.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile uint32_t sink;
static uint8_t *src, *dst;

enum method { M_VPCLMUL, M_CLMUL, M_PORTABLE, M_ZLIB, M_MEMCPY, M_NR };
static const char *const method_name[M_NR] = {
	"ur_crc32 vpclmulqdq", "ur_crc32 pclmulqdq", "ur_crc32 slice-by-16", "zlib crc32", "memcpy",
};

static void run_once(enum method m, size_t len)
{
	switch (m) {
	case M_VPCLMUL: sink = ur_crc32_vpclmul(sink, src, len); break;
	case M_CLMUL: sink = ur_crc32_clmul(sink, src, len); break;
	case M_PORTABLE: sink = ur_crc32_portable(sink, src, len); break;
	case M_ZLIB: sink = (uint32_t)crc32(sink, src, (uInt)len); break;
	case M_MEMCPY: memcpy(dst, src, len); sink = dst[len - 1]; break;
	default: break;
	}
}

/* Bytes per second, repeating in batches until `secs` have passed; the
 * best of three runs, since the machine may be shared. */
static double measure1(enum method m, size_t len, double secs)
{
	size_t batch = (1u << 22) / len + 1, done = 0;
	double t0 = now(), t;

	for (size_t i = 0; i < batch; i++)	/* warm up */
		run_once(m, len);
	t0 = now();
	do {
		for (size_t i = 0; i < batch; i++)
			run_once(m, len);
		done += batch;
		t = now();
	} while (t - t0 < secs);
	return (double)done * len / (t - t0);
}

static double measure(enum method m, size_t len, double secs)
{
	double best = 0;

	for (int i = 0; i < 3; i++)
		best = ur_max(best, measure1(m, len, secs / 3));
	return best;
}

static double measure_icrc1(int family, int check, size_t len, double secs)
{
	struct ur_roce_ip ip = { .family = family, .sport = 0xc123, .dport = UR_ROCE_UDP_PORT,
				 .ip_id = 0x4d2, .df = 1 };
	struct iovec iov = { src, len - 4 };
	size_t done = 0;
	double t0, t;

	memset(&ip.v6, 0x42, sizeof(ip.v6));
	src[1] = 0;
	ur_put_le32(src + len - 4, ur_icrc_calc(&ip, &iov, 1, len - 4));
	t0 = now();
	do {
		for (int i = 0; i < 1000; i++) {
			if (check)
				sink += (uint32_t)ur_icrc_check(&ip, src, len, NULL);
			else
				sink += ur_icrc_calc(&ip, &iov, 1, len - 4);
		}
		done += 1000;
		t = now();
	} while (t - t0 < secs);
	if (check && ur_icrc_check(&ip, src, len, NULL) != 0)
		fprintf(stderr, "ICRC check failed on its own packet\n");
	return (t - t0) / (double)done * 1e9;
}

/* Nanoseconds per packet, best of three. */
static double measure_icrc(int family, int check, size_t len, double secs)
{
	double best = 1e30;

	for (int i = 0; i < 3; i++)
		best = ur_min(best, measure_icrc1(family, check, len, secs / 3));
	return best;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 64, 1024, 4096, 65536, 1 << 20 };
	static const size_t pkts[] = { 64, 1024, 4096 };
	double secs = argc > 1 ? atof(argv[1]) : 0.3;
	bool clmul = ur_crc32_clmul_supported(), vpclmul = ur_crc32_vpclmul_supported();

	src = malloc(1 << 20);
	dst = malloc(1 << 20);
	for (size_t i = 0; i < (1 << 20); i++)
		src[i] = (uint8_t)(i * 131 + 7);

	printf("ur_crc32 default engine: %s\n\n", ur_crc32_impl());
	printf("%-22s", "GB/s");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		printf("%10zu", sizes[s]);
	printf("\n");
	for (int m = 0; m < M_NR; m++) {
		if ((m == M_CLMUL && !clmul) || (m == M_VPCLMUL && !vpclmul))
			continue;
		printf("%-22s", method_name[m]);
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
			printf("%10.2f", measure(m, sizes[s], secs) / 1e9);
		printf("\n");
	}

	printf("\n%-22s", "ns per packet");
	for (size_t s = 0; s < sizeof(pkts) / sizeof(pkts[0]); s++)
		printf("%10zu", pkts[s]);
	printf("\n");
	static const struct { const char *name; int family, check; } icrc[] = {
		{ "ur_icrc_calc IPv4", AF_INET, 0 },
		{ "ur_icrc_check IPv6", AF_INET6, 1 },
		{ "ur_icrc_check IPv4", AF_INET, 1 },
	};
	for (size_t k = 0; k < sizeof(icrc) / sizeof(icrc[0]); k++) {
		printf("%-22s", icrc[k].name);
		for (size_t s = 0; s < sizeof(pkts) / sizeof(pkts[0]); s++)
			printf("%10.1f", measure_icrc(icrc[k].family, icrc[k].check, pkts[s], secs));
		printf("\n");
	}
	free(src);
	free(dst);
	return 0;
}
