/* CRC-32 engine and GF(2) helper tests (included by wire_ut.c).  zlib's
 * crc32() is the reference. */

#define BIG (70000 + 16)

static uint8_t *random_bytes(size_t n)
{
	uint8_t *p = malloc(n);

	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)ut_rnd();
	return p;
}

static void test_crc32_check_value(void)
{
	static const char msg[] = "123456789";

	UT_EQ(ur_crc32(0, msg, 9), 0xcbf43926);
	UT_EQ(ur_crc32_portable(0, msg, 9), 0xcbf43926);
	if (ur_crc32_clmul_supported())
		UT_EQ(ur_crc32_clmul(0, msg, 9), 0xcbf43926);
	if (ur_crc32_vpclmul_supported())
		UT_EQ(ur_crc32_vpclmul(0, msg, 9), 0xcbf43926);
	UT_EQ(ur_crc32(0, NULL, 0), 0);
	UT_EQ(ur_crc32(0x12345678, msg, 0), 0x12345678);
	fprintf(stderr, "       ur_crc32 engine: %s (pclmulqdq %s, vpclmulqdq %s)\n",
		ur_crc32_impl(), ur_crc32_clmul_supported() ? "yes" : "no",
		ur_crc32_vpclmul_supported() ? "yes" : "no");
}

/* Every engine and the dispatcher against zlib: every length up to 1100,
 * then random lengths up to 70000, at every misalignment, chained from a
 * random previous CRC. */
static void test_crc32_vs_zlib(void)
{
	uint8_t *buf = random_bytes(BIG);
	bool clmul = ur_crc32_clmul_supported(), vpclmul = ur_crc32_vpclmul_supported();
	unsigned bad = 0, runs = 0;

	for (int i = 0; i < 1100 + 600; i++) {
		size_t len = i < 1100 ? (size_t)i : ut_rnd() % 70001;
		size_t mis = ut_rnd() % 16;
		uint32_t seed = i % 3 ? (uint32_t)ut_rnd() : 0;
		uint32_t want = (uint32_t)crc32(seed, buf + mis, (uInt)len);

		bad += ur_crc32_portable(seed, buf + mis, len) != want;
		if (clmul)
			bad += ur_crc32_clmul(seed, buf + mis, len) != want;
		if (vpclmul)
			bad += ur_crc32_vpclmul(seed, buf + mis, len) != want;
		bad += ur_crc32(seed, buf + mis, len) != want;
		runs++;
	}
	UT_EQ(bad, 0);
	UT_EQ(runs, 1700);
	free(buf);
}

static void test_crc32_chaining(void)
{
	uint8_t *buf = random_bytes(9000);

	for (int i = 0; i < 300; i++) {
		size_t len = ut_rnd() % 9000, cut = len ? ut_rnd() % len : 0;
		uint32_t whole = ur_crc32(0, buf, len);

		UT_EQ(ur_crc32(ur_crc32(0, buf, cut), buf + cut, len - cut), whole);
		UT_EQ(ur_crc32_portable(ur_crc32_portable(0, buf, cut), buf + cut, len - cut), whole);
		if (ur_crc32_vpclmul_supported())
			UT_EQ(ur_crc32_vpclmul(ur_crc32_vpclmul(0, buf, cut), buf + cut, len - cut),
			      whole);
	}
	free(buf);
}

/* Bit-serial references, deliberately naive. */
static uint32_t ref_mulmod(uint32_t a, uint32_t b)
{
	uint32_t p = 0;

	for (int i = 0; i < 32; i++) {		/* bit 31 - i of a: x^i */
		if (a & (UR_CRC32_ONE >> i))
			p ^= b;
		b = (b >> 1) ^ ((b & 1) ? UR_CRC32_POLY : 0);	/* b *= x */
	}
	return p;
}

static uint32_t ref_xpow(unsigned n)
{
	uint32_t r = UR_CRC32_ONE;

	while (n--)
		r = (r >> 1) ^ ((r & 1) ? UR_CRC32_POLY : 0);
	return r;
}

static uint64_t ref_clmul(uint32_t a, uint32_t b)
{
	uint64_t r = 0;

	for (int i = 0; i < 32; i++)
		if (b & (1u << i))
			r ^= (uint64_t)a << i;
	return r;
}

static void test_crc32_fold_constants(void)
{
	UT_EQ((uint64_t)ref_xpow(575) << 32, UR_CRC32_K575);
	UT_EQ((uint64_t)ref_xpow(511) << 32, UR_CRC32_K511);
	UT_EQ((uint64_t)ref_xpow(191) << 32, UR_CRC32_K191);
	UT_EQ((uint64_t)ref_xpow(127) << 32, UR_CRC32_K127);
	UT_EQ((uint64_t)ref_xpow(1087) << 32, UR_CRC32_K1087);
	UT_EQ((uint64_t)ref_xpow(1023) << 32, UR_CRC32_K1023);
	UT_EQ((uint64_t)ref_xpow(319) << 32, UR_CRC32_K319);
	UT_EQ((uint64_t)ref_xpow(255) << 32, UR_CRC32_K255);
}

static void test_gf2_arith(void)
{
	static const uint8_t zeros[70000];
	bool clmul = ur_crc32_clmul_supported();
	unsigned bad = 0;

	for (int i = 0; i < 20000; i++) {
		uint32_t a = (uint32_t)ut_rnd(), b = (uint32_t)ut_rnd();
		uint64_t c = ref_clmul(a, b);

		bad += ur_clmul32_portable(a, b) != c;
		if (clmul)
			bad += ur_clmul32_x86(a, b) != c;
		bad += ur_crc32_mulmod(a, b) != ref_mulmod(a, b);
		bad += ur_crc32_mulmod(a, UR_CRC32_ONE) != a;
	}
	UT_EQ(bad, 0);

	/* x^(8n) is what n zero bytes do to a register holding 1. */
	for (unsigned n = 0; n < 600; n++)
		bad += ur_crc32_xpow8(n) != ur_crc32_raw(UR_CRC32_ONE, zeros, n);
	for (int i = 0; i < 200; i++) {
		size_t n = ut_rnd() % sizeof(zeros);

		bad += ur_crc32_xpow8(n) != ur_crc32_raw(UR_CRC32_ONE, zeros, n);
	}
	UT_EQ(bad, 0);

	/* The inverse table covers every n below 65536. */
	for (uint32_t n = 0; n < 65536; n++)
		bad += ur_crc32_mulmod(ur_crc32_xpow8_inv(n), ur_crc32_xpow8(n)) != UR_CRC32_ONE;
	UT_EQ(bad, 0);
	/* x * x^7 * x^-8 = 1, and x^-8 undoes one zero byte. */
	UT_EQ(ur_crc32_mulmod(ur_crc32_mulmod(UR_CRC32_X, ref_xpow(7)), ur_crc32_xpow8_inv(1)),
	      UR_CRC32_ONE);
	for (int i = 0; i < 1000; i++) {
		uint32_t r = (uint32_t)ut_rnd();

		bad += ur_crc32_mulmod(ur_crc32_raw(r, zeros, 1), ur_crc32_xpow8_inv(1)) != r;
	}
	UT_EQ(bad, 0);
}
