/* CRC-32 by carry-less multiplication (PCLMULQDQ), x86-64 only.
 *
 * The buffer is read as 128-bit lanes, each a polynomial whose first bit is
 * its highest coefficient (the reflected order the CRC uses).  A lane X =
 * L*x^64 + H (L its low quadword, H its high one) moved F bits further from
 * the end of the message becomes L*x^(64+F) + H*x^F; replacing the powers of
 * x by their residues mod P keeps the value congruent and 128 bits wide.
 * PCLMULQDQ on two reflected quadwords yields their product divided by x, so
 * the constant for x^n is x^(n-1) mod P, placed in the top half of its
 * quadword (register form shifted left by 32).
 *
 * Four lanes fold 64 bytes per step (F = 512) to hide the multiplier's
 * latency, then merge into one lane (F = 128).  The last lane and the tail
 * go through the table engine: the CRC of a lane from a zero register is
 * exactly lane * x^32 mod P.
 */
#include "wire/crc32.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define UR_CLMUL_TARGET __attribute__((target("pclmul,sse4.1")))


UR_CLMUL_TARGET static inline __m128i fold(__m128i x, __m128i k, __m128i next)
{
	__m128i l = _mm_clmulepi64_si128(x, k, 0x00);	/* L * x^(64+F) */
	__m128i h = _mm_clmulepi64_si128(x, k, 0x11);	/* H * x^F */

	return _mm_xor_si128(_mm_xor_si128(l, h), next);
}

UR_CLMUL_TARGET static inline __m128i load(const uint8_t *p)
{
	return _mm_loadu_si128((const __m128i *)(const void *)p);
}

UR_CLMUL_TARGET uint32_t ur_crc32_clmul(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t reg = ~crc;
	__m128i x0, x1, x2, x3, k;
	uint8_t lane[16];

	ur_crc32_init();
	if (len < 64)
		return ~ur_crc32_raw_noinit(reg, p, len);

	/* A starting register is the same as XOR-ing it into the first 4 bytes. */
	x0 = _mm_xor_si128(load(p), _mm_cvtsi32_si128((int)reg));
	x1 = load(p + 16);
	x2 = load(p + 32);
	x3 = load(p + 48);
	p += 64;
	len -= 64;

	k = _mm_set_epi64x((long long)UR_CRC32_K511, (long long)UR_CRC32_K575);
	while (len >= 64) {
		x0 = fold(x0, k, load(p));
		x1 = fold(x1, k, load(p + 16));
		x2 = fold(x2, k, load(p + 32));
		x3 = fold(x3, k, load(p + 48));
		p += 64;
		len -= 64;
	}

	k = _mm_set_epi64x((long long)UR_CRC32_K127, (long long)UR_CRC32_K191);
	x0 = fold(x0, k, x1);
	x0 = fold(x0, k, x2);
	x0 = fold(x0, k, x3);
	while (len >= 16) {
		x0 = fold(x0, k, load(p));
		p += 16;
		len -= 16;
	}

	_mm_storeu_si128((__m128i *)(void *)lane, x0);
	reg = ur_crc32_raw_noinit(0, lane, sizeof(lane));
	return ~ur_crc32_raw_noinit(reg, p, len);
}

UR_CLMUL_TARGET uint64_t ur_clmul32_x86(uint32_t a, uint32_t b)
{
	__m128i r = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)a), _mm_cvtsi32_si128((int)b), 0);

	return (uint64_t)_mm_cvtsi128_si64(r);
}

#else /* !__x86_64__: never selected, since ur_crc32_clmul_supported() is false */

uint32_t ur_crc32_clmul(uint32_t crc, const void *buf, size_t len)
{
	return ur_crc32_portable(crc, buf, len);
}

uint64_t ur_clmul32_x86(uint32_t a, uint32_t b)
{
	return ur_clmul32_portable(a, b);
}

#endif
