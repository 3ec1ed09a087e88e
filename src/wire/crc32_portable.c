#include "wire/crc32_portable.h"

#include <endian.h>
#include <string.h>

uint32_t ur_crc32_tab[16][256];

void ur_crc32_tables_build(void)
{
	for (unsigned b = 0; b < 256; b++) {
		uint32_t r = b;

		for (int k = 0; k < 8; k++)
			r = (r >> 1) ^ (UR_CRC32_POLY & -(r & 1));
		ur_crc32_tab[0][b] = r;
	}
	for (unsigned b = 0; b < 256; b++)
		for (int t = 1; t < 16; t++) {
			uint32_t r = ur_crc32_tab[t - 1][b];

			ur_crc32_tab[t][b] = (r >> 8) ^ ur_crc32_tab[0][r & 0xff];
		}
}

uint32_t ur_crc32_raw_noinit(uint32_t reg, const uint8_t *p, size_t len)
{
	const uint32_t (*t)[256] = (const uint32_t (*)[256])ur_crc32_tab;

	/* Sixteen bytes per step: each byte's table already includes the zero
	 * bytes that follow it within the block, so the sixteen lookups are
	 * independent and only the XOR with the register is serial. */
	while (len >= 16) {
		uint64_t a, b;

		memcpy(&a, p, sizeof(a));
		memcpy(&b, p + 8, sizeof(b));
		a = le64toh(a) ^ reg;
		b = le64toh(b);
		reg = t[15][a & 0xff] ^ t[14][(a >> 8) & 0xff] ^
		      t[13][(a >> 16) & 0xff] ^ t[12][(a >> 24) & 0xff] ^
		      t[11][(a >> 32) & 0xff] ^ t[10][(a >> 40) & 0xff] ^
		      t[9][(a >> 48) & 0xff] ^ t[8][a >> 56] ^
		      t[7][b & 0xff] ^ t[6][(b >> 8) & 0xff] ^
		      t[5][(b >> 16) & 0xff] ^ t[4][(b >> 24) & 0xff] ^
		      t[3][(b >> 32) & 0xff] ^ t[2][(b >> 40) & 0xff] ^
		      t[1][(b >> 48) & 0xff] ^ t[0][b >> 56];
		p += 16;
		len -= 16;
	}
	while (len--)
		reg = (reg >> 8) ^ t[0][(reg ^ *p++) & 0xff];
	return reg;
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
