/* CRC-32 engines behind ur_crc32(), and GF(2) arithmetic modulo the CRC
 * polynomial.  Internal to the wire module, its tests and its benchmark.
 *
 * The CRC is the reflected IEEE 802.3 one (zlib's crc32()).  "Register form"
 * is how the CRC register holds a polynomial of degree < 32: bit 31 is the
 * coefficient of x^0 and bit 0 that of x^31.  Feeding n bytes into a
 * register r gives (r * x^(8n) + M(x) * x^32) mod P, M being the bytes read
 * least significant bit first; that is all the algebra below relies on.
 */
#ifndef UROCE_WIRE_CRC32_H
#define UROCE_WIRE_CRC32_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/crc32_clmul.h"
#include "wire/crc32_portable.h"

/* zlib-compatible CRC (pre- and post-inverted) through one engine:
 * slice-by-16 tables (any CPU), PCLMULQDQ on 128-bit lanes, or VPCLMULQDQ
 * on 256-bit lanes (AVX2), twice the multiplier throughput where the CPU
 * has it.  Call the last two only when their _supported() says so. */
uint32_t ur_crc32_portable(uint32_t crc, const void *buf, size_t len);
uint32_t ur_crc32_clmul(uint32_t crc, const void *buf, size_t len);
uint32_t ur_crc32_vpclmul(uint32_t crc, const void *buf, size_t len);
bool ur_crc32_clmul_supported(void);
bool ur_crc32_vpclmul_supported(void);
/* Engine ur_crc32() uses: "vpclmulqdq", "pclmulqdq" or "slice-by-16".
 * The best one the CPU has, unless UROCE_CRC=portable or UROCE_CRC=pclmul
 * asks for a lesser one. */
const char *ur_crc32_impl(void);

/* Raw register update, no inversions: what every engine ends with. */
uint32_t ur_crc32_raw(uint32_t reg, const void *buf, size_t len);

/* a * b mod P, both in register form. */
uint32_t ur_crc32_mulmod(uint32_t a, uint32_t b);
/* x^(8n) mod P in register form: the effect of n zero bytes on a register. */
uint32_t ur_crc32_xpow8(uint64_t n);
/* x^(-8n) mod P for n < 65536 (higher bits of n are ignored): undoes n
 * zero bytes.  Two table lookups and one multiplication. */
uint32_t ur_crc32_xpow8_inv(uint32_t n);

/* Builds the tables once (the _noinit engines may run only after it). */
void ur_crc32_init(void);

#endif
