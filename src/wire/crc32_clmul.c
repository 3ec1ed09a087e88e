/* CRC-32 by carry-less multiplication, x86-64 only.
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
 * PCLMULQDQ engine: four lanes fold 64 bytes per step (F = 512) to hide the
 * multiplier's latency, then merge into one (F = 128).  VPCLMULQDQ engine:
 * the same on 256-bit registers, two lanes each, 128 bytes per step
 * (F = 1024), merged by F = 256 and then 128.  The last lane and the tail go
 * through the table engine: the CRC of a lane from a zero register is
 * exactly lane * x^32 mod P.
 */
#include "wire/crc32_clmul.h"

#include "wire/crc32_portable.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define UR_CLMUL_TARGET __attribute__((target("pclmul,sse4.1")))
#define UR_VPCLMUL_TARGET __attribute__((target("vpclmulqdq,pclmul,avx2,sse4.1")))

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

/* Fold the whole 16-byte blocks left into x, then finish with tables. */
UR_CLMUL_TARGET static inline uint32_t finish(__m128i x, const uint8_t *p, size_t len)
{
	const __m128i k = _mm_set_epi64x((long long)UR_CRC32_K127, (long long)UR_CRC32_K191);
	uint8_t lane[16];
	uint32_t reg;

	for (; len >= 16; p += 16, len -= 16)
		x = fold(x, k, load(p));
	_mm_storeu_si128((__m128i *)(void *)lane, x);
	reg = ur_crc32_raw_noinit(0, lane, sizeof(lane));
	return ~ur_crc32_raw_noinit(reg, p, len);
}

UR_CLMUL_TARGET uint32_t ur_crc32_clmul_noinit(uint32_t crc, const uint8_t *p, size_t len)
{
	uint32_t reg = ~crc;
	__m128i x0, x1, x2, x3, k;

	if (len < 16)
		return ~ur_crc32_raw_noinit(reg, p, len);
	/* A starting register is the same as XOR-ing it into the first 4 bytes. */
	x0 = _mm_xor_si128(load(p), _mm_cvtsi32_si128((int)reg));
	if (len < 64)
		return finish(x0, p + 16, len - 16);

	x1 = load(p + 16);
	x2 = load(p + 32);
	x3 = load(p + 48);
	k = _mm_set_epi64x((long long)UR_CRC32_K511, (long long)UR_CRC32_K575);
	for (p += 64, len -= 64; len >= 64; p += 64, len -= 64) {
		x0 = fold(x0, k, load(p));
		x1 = fold(x1, k, load(p + 16));
		x2 = fold(x2, k, load(p + 32));
		x3 = fold(x3, k, load(p + 48));
	}
	k = _mm_set_epi64x((long long)UR_CRC32_K127, (long long)UR_CRC32_K191);
	x0 = fold(x0, k, x1);
	x0 = fold(x0, k, x2);
	x0 = fold(x0, k, x3);
	return finish(x0, p, len);
}

UR_VPCLMUL_TARGET static inline __m256i fold2(__m256i y, __m256i k, __m256i next)
{
	__m256i l = _mm256_clmulepi64_epi128(y, k, 0x00);
	__m256i h = _mm256_clmulepi64_epi128(y, k, 0x11);

	return _mm256_xor_si256(_mm256_xor_si256(l, h), next);
}

UR_VPCLMUL_TARGET static inline __m256i load2(const uint8_t *p)
{
	return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

UR_VPCLMUL_TARGET uint32_t ur_crc32_vpclmul_noinit(uint32_t crc, const uint8_t *p, size_t len)
{
	__m256i y0, y1, y2, y3, k;
	__m128i x;

	if (len < 256)
		return ur_crc32_clmul_noinit(crc, p, len);

	y0 = _mm256_xor_si256(load2(p), _mm256_set_epi32(0, 0, 0, 0, 0, 0, 0, (int)~crc));
	y1 = load2(p + 32);
	y2 = load2(p + 64);
	y3 = load2(p + 96);
	k = _mm256_set_epi64x((long long)UR_CRC32_K1023, (long long)UR_CRC32_K1087,
			      (long long)UR_CRC32_K1023, (long long)UR_CRC32_K1087);
	for (p += 128, len -= 128; len >= 128; p += 128, len -= 128) {
		y0 = fold2(y0, k, load2(p));
		y1 = fold2(y1, k, load2(p + 32));
		y2 = fold2(y2, k, load2(p + 64));
		y3 = fold2(y3, k, load2(p + 96));
	}
	/* Each register's two lanes move 32 bytes onto the next register's. */
	k = _mm256_set_epi64x((long long)UR_CRC32_K255, (long long)UR_CRC32_K319,
			      (long long)UR_CRC32_K255, (long long)UR_CRC32_K319);
	y1 = fold2(y0, k, y1);
	y2 = fold2(y1, k, y2);
	y3 = fold2(y2, k, y3);
	x = fold(_mm256_castsi256_si128(y3),
		 _mm_set_epi64x((long long)UR_CRC32_K127, (long long)UR_CRC32_K191),
		 _mm256_extracti128_si256(y3, 1));
	return finish(x, p, len);
}

UR_CLMUL_TARGET uint64_t ur_clmul32_x86(uint32_t a, uint32_t b)
{
	__m128i r = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)a), _mm_cvtsi32_si128((int)b), 0);

	return (uint64_t)_mm_cvtsi128_si64(r);
}

#else /* !__x86_64__: never selected, the _supported() predicates are false */

uint32_t ur_crc32_clmul_noinit(uint32_t crc, const uint8_t *p, size_t len)
{
	return ~ur_crc32_raw_noinit(~crc, p, len);
}

uint32_t ur_crc32_vpclmul_noinit(uint32_t crc, const uint8_t *p, size_t len)
{
	return ~ur_crc32_raw_noinit(~crc, p, len);
}

uint64_t ur_clmul32_x86(uint32_t a, uint32_t b)
{
	return ur_clmul32_portable(a, b);
}

#endif
