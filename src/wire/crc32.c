/* CRC-32 (zlib's) for the ICRC: the engine picked at run time (the
 * portable one, crc32_portable.c, or a carry-less multiplication one,
 * crc32_clmul.c), and the GF(2) helpers the ICRC check needs. */
#include "wire/crc32.h"

#include <endian.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/config.h"
#include "wire/icrc.h"

enum crc_engine { ENGINE_PORTABLE, ENGINE_PCLMUL, ENGINE_VPCLMUL };

static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static bool crc_has_clmul, crc_has_vpclmul;
static enum crc_engine crc_engine;
/* x^(-8i) and x^(-2048i) mod P, i < 256: any x^(-8n), n < 65536, is one
 * product of the two. */
static uint32_t crc_xinv_lo[256], crc_xinv_hi[256];

static uint32_t mulmod(uint32_t a, uint32_t b);

/* P(x) = x*Q(x) + 1, so x*Q(x) = 1 mod P and Q is the inverse of x.  In
 * register form Q is the polynomial's bits moved one power down: POLY << 1,
 * plus x^31 (bit 0) from the x^32 term. */
static void crc_build_inverses(void)
{
	uint32_t xinv = (UR_CRC32_POLY << 1) | 1, xinv8 = xinv;

	for (int i = 0; i < 3; i++)
		xinv8 = mulmod(xinv8, xinv8);
	crc_xinv_lo[0] = UR_CRC32_ONE;
	for (int i = 1; i < 256; i++)
		crc_xinv_lo[i] = mulmod(crc_xinv_lo[i - 1], xinv8);
	crc_xinv_hi[0] = UR_CRC32_ONE;
	crc_xinv_hi[1] = mulmod(crc_xinv_lo[255], xinv8);
	for (int i = 2; i < 256; i++)
		crc_xinv_hi[i] = mulmod(crc_xinv_hi[i - 1], crc_xinv_hi[1]);
}

static void crc_setup(void)
{
	enum ur_config_crc want = ur_config()->crc;

	ur_crc32_tables_build();
#if defined(__x86_64__)
	__builtin_cpu_init();
	crc_has_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
	crc_has_vpclmul = crc_has_clmul && __builtin_cpu_supports("vpclmulqdq") &&
			  __builtin_cpu_supports("avx2");
#endif
	crc_engine = crc_has_vpclmul ? ENGINE_VPCLMUL : crc_has_clmul ? ENGINE_PCLMUL
								   : ENGINE_PORTABLE;
	if (want == UR_CONFIG_CRC_PORTABLE)
		crc_engine = ENGINE_PORTABLE;
	else if (want == UR_CONFIG_CRC_PCLMUL && crc_has_clmul)
		crc_engine = ENGINE_PCLMUL;
	crc_build_inverses();
}

void ur_crc32_init(void)
{
	pthread_once(&crc_once, crc_setup);
}

bool ur_crc32_clmul_supported(void)
{
	ur_crc32_init();
	return crc_has_clmul;
}

bool ur_crc32_vpclmul_supported(void)
{
	ur_crc32_init();
	return crc_has_vpclmul;
}

const char *ur_crc32_impl(void)
{
	static const char *const names[] = {
		[ENGINE_PORTABLE] = "slice-by-16",
		[ENGINE_PCLMUL] = "pclmulqdq",
		[ENGINE_VPCLMUL] = "vpclmulqdq",
	};

	ur_crc32_init();
	return names[crc_engine];
}

uint32_t ur_crc32_raw(uint32_t reg, const void *buf, size_t len)
{
	ur_crc32_init();
	return ur_crc32_raw_noinit(reg, buf, len);
}

uint32_t ur_crc32_portable(uint32_t crc, const void *buf, size_t len)
{
	ur_crc32_init();
	return ~ur_crc32_raw_noinit(~crc, buf, len);
}

uint32_t ur_crc32_clmul(uint32_t crc, const void *buf, size_t len)
{
	ur_crc32_init();
	return ur_crc32_clmul_noinit(crc, buf, len);
}

uint32_t ur_crc32_vpclmul(uint32_t crc, const void *buf, size_t len)
{
	ur_crc32_init();
	return ur_crc32_vpclmul_noinit(crc, buf, len);
}

uint32_t ur_crc32(uint32_t crc, const void *buf, size_t len)
{
	ur_crc32_init();
	switch (crc_engine) {
	case ENGINE_VPCLMUL:
		return ur_crc32_vpclmul_noinit(crc, buf, len);
	case ENGINE_PCLMUL:
		return ur_crc32_clmul_noinit(crc, buf, len);
	default:
		return ~ur_crc32_raw_noinit(~crc, buf, len);
	}
}

/* For a and b in register form, the integer carry-less product c holds
 * A*B/x with bit k the coefficient of x^(62-k); c << 1 is A*B with bit k the
 * coefficient of x^(63-k).  Its high word is already in register form (x^31
 * .. x^0); its low word is H*x^32 with H in register form, and H*x^32 mod P
 * is what feeding H's four bytes into a zero register computes. */
static uint32_t mulmod(uint32_t a, uint32_t b)
{
	const uint32_t (*t)[256] = (const uint32_t (*)[256])ur_crc32_tab;
	uint64_t c;
	uint32_t lo;

	c = (crc_engine != ENGINE_PORTABLE ? ur_clmul32_x86(a, b) : ur_clmul32_portable(a, b)) << 1;
	lo = (uint32_t)c;
	return (uint32_t)(c >> 32) ^ t[3][lo & 0xff] ^ t[2][(lo >> 8) & 0xff] ^
	       t[1][(lo >> 16) & 0xff] ^ t[0][lo >> 24];
}

uint32_t ur_crc32_mulmod(uint32_t a, uint32_t b)
{
	ur_crc32_init();
	return mulmod(a, b);
}

uint32_t ur_crc32_xpow8(uint64_t n)
{
	uint32_t r = UR_CRC32_ONE, p = UR_CRC32_ONE >> 8;	/* x^8 */

	ur_crc32_init();
	for (; n; n >>= 1) {
		if (n & 1)
			r = mulmod(r, p);
		p = mulmod(p, p);
	}
	return r;
}

uint32_t ur_crc32_xpow8_inv(uint32_t n)
{
	ur_crc32_init();
	return mulmod(crc_xinv_lo[n & 0xff], crc_xinv_hi[(n >> 8) & 0xff]);
}
