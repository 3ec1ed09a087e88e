/* Opcode table tests (included by wire_ut.c).
 *
 * expected_hdrs[] is written out by hand from the IBA tables (vol 1 9.2, XRC
 * annex, memory placement extensions, RoCEv2 annex), independently of the
 * mask-driven construction in opcode.c. */

struct expected_op {
	uint8_t op;
	const char *hdrs;	/* wire order; "PAY" = may carry payload */
};

static const struct expected_op expected_hdrs[] = {
	{ UR_OP_RC_SEND_FIRST,				"BTH PAY" },
	{ UR_OP_RC_SEND_MIDDLE,				"BTH PAY" },
	{ UR_OP_RC_SEND_LAST,				"BTH PAY" },
	{ UR_OP_RC_SEND_LAST_WITH_IMMEDIATE,		"BTH IMMDT PAY" },
	{ UR_OP_RC_SEND_ONLY,				"BTH PAY" },
	{ UR_OP_RC_SEND_ONLY_WITH_IMMEDIATE,		"BTH IMMDT PAY" },
	{ UR_OP_RC_RDMA_WRITE_FIRST,			"BTH RETH PAY" },
	{ UR_OP_RC_RDMA_WRITE_MIDDLE,			"BTH PAY" },
	{ UR_OP_RC_RDMA_WRITE_LAST,			"BTH PAY" },
	{ UR_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE,	"BTH IMMDT PAY" },
	{ UR_OP_RC_RDMA_WRITE_ONLY,			"BTH RETH PAY" },
	{ UR_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,	"BTH RETH IMMDT PAY" },
	{ UR_OP_RC_RDMA_READ_REQUEST,			"BTH RETH" },
	{ UR_OP_RC_RDMA_READ_RESPONSE_FIRST,		"BTH AETH PAY" },
	{ UR_OP_RC_RDMA_READ_RESPONSE_MIDDLE,		"BTH PAY" },
	{ UR_OP_RC_RDMA_READ_RESPONSE_LAST,		"BTH AETH PAY" },
	{ UR_OP_RC_RDMA_READ_RESPONSE_ONLY,		"BTH AETH PAY" },
	{ UR_OP_RC_ACKNOWLEDGE,				"BTH AETH" },
	{ UR_OP_RC_ATOMIC_ACKNOWLEDGE,			"BTH AETH ATMACK" },
	{ UR_OP_RC_COMPARE_SWAP,			"BTH ATMETH" },
	{ UR_OP_RC_FETCH_ADD,				"BTH ATMETH" },
	{ UR_OP_RC_SEND_LAST_WITH_INVALIDATE,		"BTH IETH PAY" },
	{ UR_OP_RC_SEND_ONLY_WITH_INVALIDATE,		"BTH IETH PAY" },
	{ UR_OP_RC_FLUSH,				"BTH FETH RETH" },
	{ UR_OP_RC_ATOMIC_WRITE,			"BTH RETH PAY" },

	{ UR_OP_UC_SEND_FIRST,				"BTH PAY" },
	{ UR_OP_UC_SEND_MIDDLE,				"BTH PAY" },
	{ UR_OP_UC_SEND_LAST,				"BTH PAY" },
	{ UR_OP_UC_SEND_LAST_WITH_IMMEDIATE,		"BTH IMMDT PAY" },
	{ UR_OP_UC_SEND_ONLY,				"BTH PAY" },
	{ UR_OP_UC_SEND_ONLY_WITH_IMMEDIATE,		"BTH IMMDT PAY" },
	{ UR_OP_UC_RDMA_WRITE_FIRST,			"BTH RETH PAY" },
	{ UR_OP_UC_RDMA_WRITE_MIDDLE,			"BTH PAY" },
	{ UR_OP_UC_RDMA_WRITE_LAST,			"BTH PAY" },
	{ UR_OP_UC_RDMA_WRITE_LAST_WITH_IMMEDIATE,	"BTH IMMDT PAY" },
	{ UR_OP_UC_RDMA_WRITE_ONLY,			"BTH RETH PAY" },
	{ UR_OP_UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,	"BTH RETH IMMDT PAY" },

	{ UR_OP_RD_SEND_FIRST,				"BTH DCETH RDETH DETH PAY" },
	{ UR_OP_RD_SEND_MIDDLE,				"BTH DCETH RDETH DETH PAY" },
	{ UR_OP_RD_SEND_LAST,				"BTH DCETH RDETH DETH PAY" },
	{ UR_OP_RD_SEND_LAST_WITH_IMMEDIATE,		"BTH DCETH RDETH DETH IMMDT PAY" },
	{ UR_OP_RD_SEND_ONLY,				"BTH DCETH RDETH DETH PAY" },
	{ UR_OP_RD_SEND_ONLY_WITH_IMMEDIATE,		"BTH DCETH RDETH DETH IMMDT PAY" },
	{ UR_OP_RD_RDMA_WRITE_FIRST,			"BTH DCETH RDETH DETH RETH PAY" },
	{ UR_OP_RD_RDMA_WRITE_MIDDLE,			"BTH DCETH RDETH DETH PAY" },
	{ UR_OP_RD_RDMA_WRITE_LAST,			"BTH DCETH RDETH DETH PAY" },
	{ UR_OP_RD_RDMA_WRITE_LAST_WITH_IMMEDIATE,	"BTH DCETH RDETH DETH IMMDT PAY" },
	{ UR_OP_RD_RDMA_WRITE_ONLY,			"BTH DCETH RDETH DETH RETH PAY" },
	{ UR_OP_RD_RDMA_WRITE_ONLY_WITH_IMMEDIATE,	"BTH DCETH RDETH DETH RETH IMMDT PAY" },
	{ UR_OP_RD_RDMA_READ_REQUEST,			"BTH DCETH RDETH DETH RETH" },
	{ UR_OP_RD_RDMA_READ_RESPONSE_FIRST,		"BTH DCETH RDETH AETH PAY" },
	{ UR_OP_RD_RDMA_READ_RESPONSE_MIDDLE,		"BTH DCETH RDETH PAY" },
	{ UR_OP_RD_RDMA_READ_RESPONSE_LAST,		"BTH DCETH RDETH AETH PAY" },
	{ UR_OP_RD_RDMA_READ_RESPONSE_ONLY,		"BTH DCETH RDETH AETH PAY" },
	{ UR_OP_RD_ACKNOWLEDGE,				"BTH DCETH RDETH AETH" },
	{ UR_OP_RD_ATOMIC_ACKNOWLEDGE,			"BTH DCETH RDETH AETH ATMACK" },
	{ UR_OP_RD_COMPARE_SWAP,			"BTH DCETH RDETH DETH ATMETH" },
	{ UR_OP_RD_FETCH_ADD,				"BTH DCETH RDETH DETH ATMETH" },

	{ UR_OP_UD_SEND_ONLY,				"BTH DETH PAY" },
	{ UR_OP_UD_SEND_ONLY_WITH_IMMEDIATE,		"BTH DETH IMMDT PAY" },

	{ UR_OP_CNP,					"BTH PAY" },

	{ UR_OP_XRC_SEND_FIRST,				"BTH XRCETH PAY" },
	{ UR_OP_XRC_SEND_MIDDLE,			"BTH XRCETH PAY" },
	{ UR_OP_XRC_SEND_LAST,				"BTH XRCETH PAY" },
	{ UR_OP_XRC_SEND_LAST_WITH_IMMEDIATE,		"BTH XRCETH IMMDT PAY" },
	{ UR_OP_XRC_SEND_ONLY,				"BTH XRCETH PAY" },
	{ UR_OP_XRC_SEND_ONLY_WITH_IMMEDIATE,		"BTH XRCETH IMMDT PAY" },
	{ UR_OP_XRC_RDMA_WRITE_FIRST,			"BTH XRCETH RETH PAY" },
	{ UR_OP_XRC_RDMA_WRITE_MIDDLE,			"BTH XRCETH PAY" },
	{ UR_OP_XRC_RDMA_WRITE_LAST,			"BTH XRCETH PAY" },
	{ UR_OP_XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE,	"BTH XRCETH IMMDT PAY" },
	{ UR_OP_XRC_RDMA_WRITE_ONLY,			"BTH XRCETH RETH PAY" },
	{ UR_OP_XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,	"BTH XRCETH RETH IMMDT PAY" },
	{ UR_OP_XRC_RDMA_READ_REQUEST,			"BTH XRCETH RETH" },
	{ UR_OP_XRC_RDMA_READ_RESPONSE_FIRST,		"BTH AETH PAY" },
	{ UR_OP_XRC_RDMA_READ_RESPONSE_MIDDLE,		"BTH PAY" },
	{ UR_OP_XRC_RDMA_READ_RESPONSE_LAST,		"BTH AETH PAY" },
	{ UR_OP_XRC_RDMA_READ_RESPONSE_ONLY,		"BTH AETH PAY" },
	{ UR_OP_XRC_ACKNOWLEDGE,			"BTH AETH" },
	{ UR_OP_XRC_ATOMIC_ACKNOWLEDGE,			"BTH AETH ATMACK" },
	{ UR_OP_XRC_COMPARE_SWAP,			"BTH XRCETH ATMETH" },
	{ UR_OP_XRC_FETCH_ADD,				"BTH XRCETH ATMETH" },
	{ UR_OP_XRC_SEND_LAST_WITH_INVALIDATE,		"BTH XRCETH IETH PAY" },
	{ UR_OP_XRC_SEND_ONLY_WITH_INVALIDATE,		"BTH XRCETH IETH PAY" },
};

static const struct {
	const char *name;
	enum ur_hdr_type type;
	unsigned bytes;
} hdr_names[] = {
	{ "BTH", UR_HDR_BTH, UR_BTH_BYTES },
	{ "RETH", UR_HDR_RETH, UR_RETH_BYTES },
	{ "AETH", UR_HDR_AETH, UR_AETH_BYTES },
	{ "ATMETH", UR_HDR_ATMETH, UR_ATMETH_BYTES },
	{ "ATMACK", UR_HDR_ATMACK, UR_ATMACK_BYTES },
	{ "IMMDT", UR_HDR_IMMDT, UR_IMMDT_BYTES },
	{ "IETH", UR_HDR_IETH, UR_IETH_BYTES },
	{ "DCETH", UR_HDR_DCETH, UR_DCETH_BYTES },
	{ "RDETH", UR_HDR_RDETH, UR_RDETH_BYTES },
	{ "DETH", UR_HDR_DETH, UR_DETH_BYTES },
	{ "XRCETH", UR_HDR_XRCETH, UR_XRCETH_BYTES },
	{ "FETH", UR_HDR_FETH, UR_FETH_BYTES },
	{ "PAY", UR_HDR_PAYLOAD, 0 },
};

/* Canonical wire order, for the generic "offsets add up" walk. */
static const enum ur_hdr_type wire_order[] = {
	UR_HDR_BTH, UR_HDR_DCETH, UR_HDR_RDETH, UR_HDR_DETH, UR_HDR_XRCETH, UR_HDR_FETH, UR_HDR_RETH,
	UR_HDR_ATMETH, UR_HDR_AETH, UR_HDR_IMMDT, UR_HDR_IETH, UR_HDR_ATMACK,
};

static unsigned hdr_bytes(enum ur_hdr_type t)
{
	for (size_t i = 0; i < UR_ARRAY_SIZE(hdr_names); i++)
		if (hdr_names[i].type == t)
			return hdr_names[i].bytes;
	return 0;
}

static void test_opcode_expected_headers(void)
{
	unsigned known = 0;

	for (int op = 0; op < 256; op++)
		known += ur_opcode[op].mask != 0;
	UT_EQ(known, UR_ARRAY_SIZE(expected_hdrs));

	for (size_t i = 0; i < UR_ARRAY_SIZE(expected_hdrs); i++) {
		const struct ur_opcode_info *info = &ur_opcode[expected_hdrs[i].op];
		char list[128], *save = NULL, *tok;
		uint32_t seen = 0;
		unsigned off = 0;

		snprintf(list, sizeof(list), "%s", expected_hdrs[i].hdrs);
		for (tok = strtok_r(list, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
			size_t h;

			for (h = 0; h < UR_ARRAY_SIZE(hdr_names); h++)
				if (!strcmp(tok, hdr_names[h].name))
					break;
			UT_CHECK(h < UR_ARRAY_SIZE(hdr_names));
			if (h == UR_ARRAY_SIZE(hdr_names))
				continue;
			seen |= ur_hdr_bit(hdr_names[h].type);
			if (hdr_names[h].type == UR_HDR_PAYLOAD)
				continue;
			if (info->offset[hdr_names[h].type] != off)
				fprintf(stderr, "  %s: %s at %u, want %u\n", info->name, tok,
					info->offset[hdr_names[h].type], off);
			UT_EQ(info->offset[hdr_names[h].type], off);
			off += hdr_names[h].bytes;
		}
		UT_EQ(info->length, off);
		UT_EQ(info->offset[UR_HDR_PAYLOAD], off);
		/* Exactly the listed headers are flagged present (BTH has no bit). */
		UT_EQ(info->mask & (ur_hdr_bit(UR_NUM_HDR_TYPES) - 2), seen & ~ur_hdr_bit(UR_HDR_BTH));
	}
}

static void test_opcode_offsets_add_up(void)
{
	for (int op = 0; op < 256; op++) {
		const struct ur_opcode_info *info = &ur_opcode[op];
		unsigned off = 0;

		if (!info->mask) {
			UT_CHECK(info->name == NULL);
			UT_EQ(info->length, 0);
			continue;
		}
		for (size_t i = 0; i < UR_ARRAY_SIZE(wire_order); i++) {
			enum ur_hdr_type t = wire_order[i];

			if (t != UR_HDR_BTH && !(info->mask & ur_hdr_bit(t))) {
				UT_EQ(info->offset[t], 0);
				continue;
			}
			UT_EQ(info->offset[t], off);
			off += hdr_bytes(t);
		}
		UT_EQ(info->length, off);
		UT_EQ(info->offset[UR_HDR_PAYLOAD], info->length);
		UT_EQ(info->length % 4, 0);
		UT_CHECK(info->length >= UR_BTH_BYTES && info->length <= 64);
	}
}

static bool is_cnp(int op) { return op == UR_OP_CNP; }

static void test_opcode_mask_rules(void)
{
	for (int op = 0; op < 256; op++) {
		uint32_t m = ur_opcode[op].mask;
		bool req = m & UR_OPF_REQ, resp = m & UR_OPF_RESP;
		unsigned kinds;

		if (!m)
			continue;
		/* Direction: exactly one, CNP neither. */
		UT_CHECK(is_cnp(op) ? !req && !resp : req != resp);
		kinds = !!(m & UR_OPF_SEND) + !!(m & UR_OPF_WRITE) + !!(m & UR_OPF_READ) +
			!!(m & UR_OPF_ATOMIC) + !!(m & UR_OPF_FLUSH) + !!(m & UR_OPF_ATOMIC_WRITE);
		UT_EQ(kinds, req ? 1 : 0);

		/* Position bits. */
		UT_EQ(UR_OPF_ONLY, UR_OPF_FIRST | UR_OPF_LAST);
		if (m & UR_OPF_MIDDLE)
			UT_CHECK(!(m & (UR_OPF_FIRST | UR_OPF_LAST | UR_OPF_START | UR_OPF_END)));
		if (m & UR_OPF_FIRST)
			UT_CHECK(m & UR_OPF_START);
		if (m & UR_OPF_LAST)
			UT_CHECK(m & UR_OPF_END);
		if (!is_cnp(op) && !(m & (UR_OPF_FIRST | UR_OPF_MIDDLE | UR_OPF_LAST)))
			UT_EQ(m & (UR_OPF_START | UR_OPF_END), UR_OPF_START | UR_OPF_END);
		/* Segmented messages are exactly sends, writes and read responses. */
		UT_EQ(!!(m & (UR_OPF_FIRST | UR_OPF_MIDDLE | UR_OPF_LAST)),
		      !!(m & (UR_OPF_SEND | UR_OPF_WRITE)) || (resp && (m & UR_OPF_PAYLOAD)));

		/* RWR: sends, and write-with-immediate LAST/ONLY; COMP = RWR && END. */
		UT_EQ(!!(m & UR_OPF_RWR),
		      !!(m & UR_OPF_SEND) || ((m & UR_OPF_WRITE) && (m & UR_OPF_IMM)));
		if ((m & UR_OPF_WRITE) && (m & UR_OPF_IMM))
			UT_CHECK(m & UR_OPF_END);
		UT_EQ(!!(m & UR_OPF_COMP), (m & UR_OPF_RWR) && (m & UR_OPF_END));

		/* Semantic bits match the headers they imply. */
		UT_EQ(!!(m & UR_OPF_IMM), !!(m & UR_OPF_IMMDT));
		UT_EQ(!!(m & UR_OPF_INV), !!(m & UR_OPF_IETH));
		UT_EQ(!!(m & UR_OPF_ATOMIC), !!(m & UR_OPF_ATMETH));
		UT_EQ(!!(m & UR_OPF_FLUSH), !!(m & UR_OPF_FETH));
		if (m & UR_OPF_INV)
			UT_CHECK((m & UR_OPF_SEND) && (m & UR_OPF_END));
		if (m & UR_OPF_ATMACK)
			UT_CHECK(resp && (m & UR_OPF_AETH));
		if (m & UR_OPF_AETH)
			UT_CHECK(resp);
		if (m & UR_OPF_RETH)
			UT_CHECK(req && ((m & (UR_OPF_READ | UR_OPF_FLUSH | UR_OPF_ATOMIC_WRITE)) ||
					 ((m & UR_OPF_WRITE) && (m & UR_OPF_START))));
		if ((m & UR_OPF_WRITE) && (m & UR_OPF_START))
			UT_CHECK(m & UR_OPF_RETH);
		/* Payload: data-moving packets only. */
		UT_EQ(!!(m & UR_OPF_PAYLOAD),
		      is_cnp(op) || !!(m & (UR_OPF_SEND | UR_OPF_WRITE | UR_OPF_ATOMIC_WRITE)) ||
		      (resp && (m & (UR_OPF_FIRST | UR_OPF_MIDDLE | UR_OPF_LAST))));

		/* Transport headers. */
		switch (op & UR_OP_TYPE_MASK) {
		case UR_OP_TYPE_RD:
			UT_CHECK(m & UR_OPF_DCETH);
			UT_CHECK(m & UR_OPF_RDETH);
			UT_EQ(!!(m & UR_OPF_DETH), req);
			break;
		case UR_OP_TYPE_UD:
			UT_CHECK(m & UR_OPF_DETH);
			UT_CHECK(m & UR_OPF_SEND);
			break;
		case UR_OP_TYPE_XRC:
			UT_EQ(!!(m & UR_OPF_XRCETH), req);
			break;
		default:
			UT_CHECK(!(m & (UR_OPF_DCETH | UR_OPF_RDETH | UR_OPF_DETH | UR_OPF_XRCETH)));
		}
	}
}

/* UC, RD, UD and XRC rows are their RC counterpart plus transport headers. */
static void test_opcode_transports_agree(void)
{
	const uint32_t thdr = UR_OPF_DCETH | UR_OPF_RDETH | UR_OPF_DETH | UR_OPF_XRCETH;

	for (int op = 0x20; op < 256; op++) {
		const struct ur_opcode_info *rc = &ur_opcode[op & 0x1f];

		if (!ur_opcode[op].mask || is_cnp(op))
			continue;
		UT_CHECK(rc->mask != 0);
		UT_EQ(ur_opcode[op].mask & ~thdr, rc->mask);
		UT_CHECK(!strcmp(strchr(ur_opcode[op].name, '_'), strchr(rc->name, '_')));
	}
	/* UC: sends and writes only. */
	for (int op = 0x20; op < 0x40; op++)
		if (ur_opcode[op].mask)
			UT_CHECK(ur_opcode[op].mask & (UR_OPF_SEND | UR_OPF_WRITE));
}

static void test_opcode_names(void)
{
	static const struct { uint8_t type; const char *prefix; } pfx[] = {
		{ UR_OP_TYPE_RC, "RC_" }, { UR_OP_TYPE_UC, "UC_" }, { UR_OP_TYPE_RD, "RD_" },
		{ UR_OP_TYPE_UD, "UD_" }, { UR_OP_TYPE_CNP, "CNP" }, { UR_OP_TYPE_XRC, "XRC_" },
	};

	for (int op = 0; op < 256; op++) {
		const char *name = ur_opcode_name((uint8_t)op);

		UT_CHECK(name != NULL);
		if (!ur_opcode[op].mask) {
			UT_CHECK(!strcmp(name, "UNKNOWN"));
			UT_CHECK(!ur_opcode_known((uint8_t)op));
			continue;
		}
		UT_CHECK(ur_opcode_known((uint8_t)op));
		for (size_t i = 0; i < UR_ARRAY_SIZE(pfx); i++)
			if ((op & UR_OP_TYPE_MASK) == pfx[i].type)
				UT_CHECK(!strncmp(name, pfx[i].prefix, strlen(pfx[i].prefix)));
		for (int other = 0; other < op; other++)
			if (ur_opcode[other].name)
				UT_CHECK(strcmp(name, ur_opcode[other].name));
	}
	UT_CHECK(!strcmp(ur_opcode_name(UR_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE),
			 "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE"));
	UT_CHECK(!strcmp(ur_opcode_name(0x15), "UNKNOWN"));
	UT_CHECK(!strcmp(ur_opcode_name(0xff), "UNKNOWN"));
}
