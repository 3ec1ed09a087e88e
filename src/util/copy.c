#include "util/copy.h"

#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/config.h"

static int use_avx2 = -1;

__attribute__((target("avx2")))
static void copy_avx2(uint8_t *d, const uint8_t *s, size_t n)
{
	while (n >= 128) {
		__m256i a = _mm256_loadu_si256((const __m256i *)s);
		__m256i b = _mm256_loadu_si256((const __m256i *)(s + 32));
		__m256i c = _mm256_loadu_si256((const __m256i *)(s + 64));
		__m256i e = _mm256_loadu_si256((const __m256i *)(s + 96));

		_mm256_storeu_si256((__m256i *)d, a);
		_mm256_storeu_si256((__m256i *)(d + 32), b);
		_mm256_storeu_si256((__m256i *)(d + 64), c);
		_mm256_storeu_si256((__m256i *)(d + 96), e);
		s += 128;
		d += 128;
		n -= 128;
	}
	while (n >= 32) {
		_mm256_storeu_si256((__m256i *)d, _mm256_loadu_si256((const __m256i *)s));
		s += 32;
		d += 32;
		n -= 32;
	}
	if (n)
		memcpy(d, s, n);
}

void ur_memcpy_medium(void *dst, const void *src, size_t n)
{
	/* Threads may race to the first choice; they all pick the same, and
	 * the relaxed atomics make that race a defined one. */
	int avx2 = __atomic_load_n(&use_avx2, __ATOMIC_RELAXED);

	if (avx2 < 0) {
		__builtin_cpu_init();
		avx2 = __builtin_cpu_supports("avx2") && !ur_config()->copy_libc;
		__atomic_store_n(&use_avx2, avx2, __ATOMIC_RELAXED);
	}
	if (avx2)
		copy_avx2(dst, src, n);
	else
		memcpy(dst, src, n);
}
