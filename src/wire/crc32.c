/* CRC-32 (zlib's) for the ICRC: a portable slice-by-8 engine, a PCLMULQDQ
 * engine picked at run time, and the GF(2) helpers the ICRC check needs.
 * UROCE_CRC=portable in the environment forces the portable engine. */
#include "wire/crc32.h"

#include <endian.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "wire/icrc.h"

uint32_t ur_crc32_tab[8][256];

static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static bool crc_has_clmul;
static bool crc_use_clmul;
/* x^(-8i) and x^(-2048i) mod P, i < 256: any x^(-8n), n < 65536, is one
 * product of the two. */
static uint32_t crc_xinv_lo[256], crc_xinv_hi[256];

static uint32_t mulmod(uint32_t a, uint32_t b);

static void crc_build_tables(void)
{
	for (unsigned b = 0; b < 256; b++) {
		uint32_t r = b;

		for (int k = 0; k < 8; k++)
			r = (r >> 1) ^ (UR_CRC32_POLY & -(r & 1));
		ur_crc32_tab[0][b] = r;
	}
	for (unsigned b = 0; b < 256; b++)
		for (int t = 1; t < 8; t++) {
			uint32_t r = ur_crc32_tab[t - 1][b];

			ur_crc32_tab[t][b] = (r >> 8) ^ ur_crc32_tab[0][r & 0xff];
		}
}

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
	const char *env = getenv("UROCE_CRC");

	crc_build_tables();
#if defined(__x86_64__)
	__builtin_cpu_init();
	crc_has_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
	crc_use_clmul = crc_has_clmul && !(env && strcmp(env, "portable") == 0);
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

const char *ur_crc32_impl(void)
{
	ur_crc32_init();
	return crc_use_clmul ? "pclmul" : "slice-by-8";
}

uint32_t ur_crc32_raw_noinit(uint32_t reg, const uint8_t *p, size_t len)
{
	const uint32_t (*t)[256] = (const uint32_t (*)[256])ur_crc32_tab;

	/* Eight bytes per step: each byte's table already includes the zero
	 * bytes that follow it within the word. */
	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, sizeof(w));
		w = le64toh(w) ^ reg;
		reg = t[7][w & 0xff] ^ t[6][(w >> 8) & 0xff] ^
		      t[5][(w >> 16) & 0xff] ^ t[4][(w >> 24) & 0xff] ^
		      t[3][(w >> 32) & 0xff] ^ t[2][(w >> 40) & 0xff] ^
		      t[1][(w >> 48) & 0xff] ^ t[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		reg = (reg >> 8) ^ t[0][(reg ^ *p++) & 0xff];
	return reg;
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

uint32_t ur_crc32(uint32_t crc, const void *buf, size_t len)
{
	ur_crc32_init();
	if (crc_use_clmul)
		return ur_crc32_clmul(crc, buf, len);
	return ~ur_crc32_raw_noinit(~crc, buf, len);
}

/* Carry-less 32x32 -> 63-bit product, four bits of b at a time. */
uint64_t ur_clmul32_portable(uint32_t a, uint32_t b)
{
	uint64_t t[16], r = 0;

	t[0] = 0;
	t[1] = a;
	for (int i = 2; i < 16; i += 2) {
		t[i] = t[i / 2] << 1;
		t[i + 1] = t[i] ^ a;
	}
	for (int i = 0; i < 32; i += 4)
		r ^= t[(b >> i) & 15] << i;
	return r;
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

	c = (crc_use_clmul ? ur_clmul32_x86(a, b) : ur_clmul32_portable(a, b)) << 1;
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
