/* The portable CRC-32 engine, which every other one ends with (a lane's
 * remainder, the tail): slice-by-16 tables, and the carry-less product
 * done without the CPU's instruction.  Register form and the polynomial:
 * crc32.h.  Internal to the wire module, its tests and its benchmark. */
#ifndef UROCE_WIRE_CRC32_PORTABLE_H
#define UROCE_WIRE_CRC32_PORTABLE_H

#include <stddef.h>
#include <stdint.h>

#define UR_CRC32_POLY	0xedb88320u	/* P(x) without x^32, register form */
#define UR_CRC32_ONE	0x80000000u	/* the polynomial 1 */
#define UR_CRC32_X	0x40000000u	/* the polynomial x */

/* ur_crc32_tab[k][b] is byte b followed by k zero bytes; built once by
 * ur_crc32_tables_build() (crc32.c's ur_crc32_init runs it), before any
 * _noinit engine runs. */
extern uint32_t ur_crc32_tab[16][256];
void ur_crc32_tables_build(void);
uint32_t ur_crc32_raw_noinit(uint32_t reg, const uint8_t *p, size_t len);
/* Carry-less 32x32 -> 63-bit product. */
uint64_t ur_clmul32_portable(uint32_t a, uint32_t b);

#endif
