/* The carry-less multiplication engines of CRC-32 (crc32_clmul.c says how
 * they fold), x86-64 only; crc32.c picks one at run time.  Internal to
 * the wire module, its tests and its benchmark. */
#ifndef UROCE_WIRE_CRC32_CLMUL_H
#define UROCE_WIRE_CRC32_CLMUL_H

#include <stddef.h>
#include <stdint.h>

/* Folding constants: x^n mod P in register form, shifted into the top
 * half of a quadword (crc32_clmul.c says why n is one less than the
 * distance folded).  The unit tests recompute them. */
#define UR_CRC32_K575	0x653d982200000000ull	/* fold by 512 bits, low quadword */
#define UR_CRC32_K511	0xcad38e8f00000000ull	/* fold by 512 bits, high quadword */
#define UR_CRC32_K191	0x65673b4600000000ull	/* fold by 128 bits, low quadword */
#define UR_CRC32_K127	0x9ba54c6f00000000ull	/* fold by 128 bits, high quadword */
#define UR_CRC32_K1087	0x7d657a1000000000ull	/* fold by 1024 bits, low quadword */
#define UR_CRC32_K1023	0x7406fa9500000000ull	/* fold by 1024 bits, high quadword */
#define UR_CRC32_K319	0x9570d49500000000ull	/* fold by 256 bits, low quadword */
#define UR_CRC32_K255	0x01b5fd1d00000000ull	/* fold by 256 bits, high quadword */

/* zlib-compatible CRC by PCLMULQDQ (128-bit lanes) or VPCLMULQDQ (256-bit
 * lanes, AVX2); only where the CPU has it, after the tables are built. */
uint32_t ur_crc32_clmul_noinit(uint32_t crc, const uint8_t *p, size_t len);
uint32_t ur_crc32_vpclmul_noinit(uint32_t crc, const uint8_t *p, size_t len);
/* Carry-less 32x32 product by PCLMULQDQ; only if clmul is supported. */
uint64_t ur_clmul32_x86(uint32_t a, uint32_t b);

#endif
