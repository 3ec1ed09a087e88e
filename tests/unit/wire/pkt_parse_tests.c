/* Header accessor and parser tests (included by wire_ut.c). */

struct pkt_fields {
	uint8_t op, pad, tver;
	bool se, mig, fecn, becn, ackreq;
	uint16_t pkey;
	uint32_t qpn, psn;
	uint64_t reth_va;
	uint32_t reth_rkey, reth_len;
	uint8_t aeth_syn;
	uint32_t aeth_msn;
	uint64_t atm_va, atm_swap_add, atm_comp;
	uint32_t atm_rkey;
	uint64_t atmack_orig;
	uint32_t imm_be, ieth_rkey, rdeth_een, deth_qkey, deth_sqp, xrc_srqn;
	uint8_t feth_plt, feth_sel;
};

static void random_fields(struct pkt_fields *f, uint8_t op)
{
	f->op = op;
	f->tver = 0;
	f->se = ut_rnd() & 1;
	f->mig = ut_rnd() & 1;
	f->fecn = ut_rnd() & 1;
	f->becn = ut_rnd() & 1;
	f->ackreq = ut_rnd() & 1;
	f->pkey = (uint16_t)ut_rnd();
	f->qpn = ut_rnd() & 0xffffff;
	f->psn = ut_rnd() & 0xffffff;
	f->reth_va = ut_rnd();
	f->reth_rkey = (uint32_t)ut_rnd();
	f->reth_len = (uint32_t)ut_rnd();
	f->aeth_syn = (uint8_t)ut_rnd();
	f->aeth_msn = ut_rnd() & 0xffffff;
	f->atm_va = ut_rnd();
	f->atm_rkey = (uint32_t)ut_rnd();
	f->atm_swap_add = ut_rnd();
	f->atm_comp = ut_rnd();
	f->atmack_orig = ut_rnd();
	f->imm_be = (uint32_t)ut_rnd();
	f->ieth_rkey = (uint32_t)ut_rnd();
	f->rdeth_een = ut_rnd() & 0xffffff;
	f->deth_qkey = (uint32_t)ut_rnd();
	f->deth_sqp = ut_rnd() & 0xffffff;
	f->xrc_srqn = ut_rnd() & 0xffffff;
	f->feth_plt = ut_rnd() & 0xf;
	f->feth_sel = ut_rnd() & 0x3;
}

static uint8_t payload_byte(uint32_t i) { return (uint8_t)(i * 7 + 3); }

/* Fill buf (garbage first, so every field must be written) with a packet of
 * f->op carrying paylen payload bytes; returns BTH..ICRC length. */
static size_t build_pkt(uint8_t *buf, const struct pkt_fields *f, uint32_t paylen)
{
	const struct ur_opcode_info *info = &ur_opcode[f->op];
	uint8_t pad = (uint8_t)(-paylen & 3);
	uint8_t *h;

	memset(buf, 0xa5, info->length + paylen + pad + UR_ICRC_BYTES);
	bth_init(buf, f->op, f->se, pad, f->pkey, f->qpn, f->ackreq, f->psn);
	bth_set_mig(buf, f->mig);
	bth_set_fecn(buf, f->fecn);
	bth_set_becn(buf, f->becn);
	bth_set_tver(buf, f->tver);

	if (info->mask & UR_OPF_RETH) {
		h = buf + info->offset[UR_HDR_RETH];
		reth_set_va(h, f->reth_va);
		reth_set_rkey(h, f->reth_rkey);
		reth_set_len(h, f->reth_len);
	}
	if (info->mask & UR_OPF_AETH) {
		h = buf + info->offset[UR_HDR_AETH];
		aeth_set_syn(h, f->aeth_syn);
		aeth_set_msn(h, f->aeth_msn);
	}
	if (info->mask & UR_OPF_ATMETH) {
		h = buf + info->offset[UR_HDR_ATMETH];
		atmeth_set_va(h, f->atm_va);
		atmeth_set_rkey(h, f->atm_rkey);
		atmeth_set_swap_add(h, f->atm_swap_add);
		atmeth_set_comp(h, f->atm_comp);
	}
	if (info->mask & UR_OPF_ATMACK)
		atmack_set_orig(buf + info->offset[UR_HDR_ATMACK], f->atmack_orig);
	if (info->mask & UR_OPF_IMMDT)
		immdt_set(buf + info->offset[UR_HDR_IMMDT], f->imm_be);
	if (info->mask & UR_OPF_IETH)
		ieth_set_rkey(buf + info->offset[UR_HDR_IETH], f->ieth_rkey);
	if (info->mask & UR_OPF_RDETH)
		rdeth_set_een(buf + info->offset[UR_HDR_RDETH], f->rdeth_een);
	if (info->mask & UR_OPF_DETH) {
		h = buf + info->offset[UR_HDR_DETH];
		deth_set_qkey(h, f->deth_qkey);
		deth_set_sqp(h, f->deth_sqp);
	}
	if (info->mask & UR_OPF_XRCETH)
		xrceth_set_srqn(buf + info->offset[UR_HDR_XRCETH], f->xrc_srqn);
	if (info->mask & UR_OPF_FETH)
		feth_init(buf + info->offset[UR_HDR_FETH], f->feth_plt, f->feth_sel);

	for (uint32_t i = 0; i < paylen; i++)
		buf[info->length + i] = payload_byte(i);
	memset(buf + info->length + paylen, 0, pad + UR_ICRC_BYTES);
	return info->length + paylen + pad + UR_ICRC_BYTES;
}

static void check_fields(const struct ur_pkt_view *v, const struct pkt_fields *f, uint32_t paylen)
{
	const uint8_t *h;

	UT_EQ(v->opcode, f->op);
	UT_EQ(v->mask, ur_opcode[f->op].mask);
	UT_EQ(v->qpn, f->qpn);
	UT_EQ(v->psn, f->psn);
	UT_EQ(v->pad, -paylen & 3);
	UT_EQ(v->hdr_len, ur_opcode[f->op].length);
	UT_EQ(v->paylen, paylen);
	UT_CHECK(v->payload == v->bth + v->hdr_len);

	h = ur_pkt_hdr(v, UR_HDR_BTH);
	UT_CHECK(h == v->bth);
	UT_EQ(bth_opcode(h), f->op);
	UT_EQ(bth_se(h), f->se);
	UT_EQ(bth_mig(h), f->mig);
	UT_EQ(bth_pad(h), v->pad);
	UT_EQ(bth_tver(h), 0);
	UT_EQ(bth_pkey(h), f->pkey);
	UT_EQ(bth_fecn(h), f->fecn);
	UT_EQ(bth_becn(h), f->becn);
	UT_EQ(h[4] & 0x3f, 0);			/* resv6 */
	UT_EQ(bth_qpn(h), f->qpn);
	UT_EQ(bth_ackreq(h), f->ackreq);
	UT_EQ(h[8] & 0x7f, 0);			/* resv7 */
	UT_EQ(bth_psn(h), f->psn);

	if ((h = ur_pkt_hdr(v, UR_HDR_RETH))) {
		UT_EQ(reth_va(h), f->reth_va);
		UT_EQ(reth_rkey(h), f->reth_rkey);
		UT_EQ(reth_len(h), f->reth_len);
	}
	if ((h = ur_pkt_hdr(v, UR_HDR_AETH))) {
		UT_EQ(aeth_syn(h), f->aeth_syn);
		UT_EQ(aeth_msn(h), f->aeth_msn);
	}
	if ((h = ur_pkt_hdr(v, UR_HDR_ATMETH))) {
		UT_EQ(atmeth_va(h), f->atm_va);
		UT_EQ(atmeth_rkey(h), f->atm_rkey);
		UT_EQ(atmeth_swap_add(h), f->atm_swap_add);
		UT_EQ(atmeth_comp(h), f->atm_comp);
	}
	if ((h = ur_pkt_hdr(v, UR_HDR_ATMACK)))
		UT_EQ(atmack_orig(h), f->atmack_orig);
	if ((h = ur_pkt_hdr(v, UR_HDR_IMMDT)))
		UT_EQ(immdt_get(h), f->imm_be);
	if ((h = ur_pkt_hdr(v, UR_HDR_IETH)))
		UT_EQ(ieth_rkey(h), f->ieth_rkey);
	if ((h = ur_pkt_hdr(v, UR_HDR_RDETH))) {
		UT_EQ(rdeth_een(h), f->rdeth_een);
		UT_EQ(h[0], 0);
	}
	if ((h = ur_pkt_hdr(v, UR_HDR_DETH))) {
		UT_EQ(deth_qkey(h), f->deth_qkey);
		UT_EQ(deth_sqp(h), f->deth_sqp);
		UT_EQ(h[4], 0);
	}
	if ((h = ur_pkt_hdr(v, UR_HDR_XRCETH))) {
		UT_EQ(xrceth_srqn(h), f->xrc_srqn);
		UT_EQ(h[0], 0);
	}
	if ((h = ur_pkt_hdr(v, UR_HDR_FETH))) {
		UT_EQ(feth_plt(h), f->feth_plt);
		UT_EQ(feth_sel(h), f->feth_sel);
		UT_EQ(ur_get_be32(h) & ~0x3fu, 0);
	}
	for (int t = UR_HDR_RETH; t < UR_NUM_HDR_TYPES; t++)
		UT_EQ(ur_pkt_hdr(v, t) != NULL, !!(v->mask & ur_hdr_bit(t)));
	UT_CHECK(ur_pkt_hdr(v, UR_NUM_HDR_TYPES) == NULL);
	if ((h = ur_pkt_hdr(v, UR_HDR_PAYLOAD))) {
		bool same = true;

		UT_CHECK(h == v->payload);
		for (uint32_t i = 0; i < paylen; i++)
			same &= h[i] == payload_byte(i);
		UT_CHECK(same);
	}
}

/* Every opcode: build with the setters, parse, read every field back. */
static void test_parse_roundtrip(void)
{
	static const uint32_t lens[] = { 0, 1, 2, 3, 4, 5, 7, 8, 255, 256, 1024, 4093, 4096 };
	static uint8_t buf[8192];

	for (int op = 0; op < 256; op++) {
		if (!ur_opcode_known((uint8_t)op))
			continue;
		for (size_t i = 0; i < UR_ARRAY_SIZE(lens); i++) {
			struct pkt_fields f;
			struct ur_pkt_view v;
			uint32_t paylen = lens[i];
			size_t len;

			if (paylen && !(ur_opcode[op].mask & UR_OPF_PAYLOAD))
				break;
			random_fields(&f, (uint8_t)op);
			len = build_pkt(buf, &f, paylen);
			UT_EQ(ur_pkt_parse(&v, buf, len), UR_PARSE_OK);
			check_fields(&v, &f, paylen);
		}
	}
}

/* Setting one BTH field leaves every other field alone. */
static void test_bth_setters_independent(void)
{
	for (int iter = 0; iter < 2000; iter++) {
		uint8_t h[UR_BTH_BYTES], before[UR_BTH_BYTES];
		uint64_t r = ut_rnd();
		int field = iter % 11;

		for (int i = 0; i < UR_BTH_BYTES; i++)
			h[i] = (uint8_t)ut_rnd();
		memcpy(before, h, sizeof(h));
		switch (field) {
		case 0: bth_set_opcode(h, (uint8_t)r); UT_EQ(bth_opcode(h), (uint8_t)r); break;
		case 1: bth_set_se(h, r & 1); UT_EQ(bth_se(h), r & 1); break;
		case 2: bth_set_mig(h, r & 1); UT_EQ(bth_mig(h), r & 1); break;
		case 3: bth_set_pad(h, r & 3); UT_EQ(bth_pad(h), r & 3); break;
		case 4: bth_set_tver(h, r & 15); UT_EQ(bth_tver(h), r & 15); break;
		case 5: bth_set_pkey(h, (uint16_t)r); UT_EQ(bth_pkey(h), (uint16_t)r); break;
		case 6: bth_set_fecn(h, r & 1); UT_EQ(bth_fecn(h), r & 1); break;
		case 7: bth_set_becn(h, r & 1); UT_EQ(bth_becn(h), r & 1); break;
		case 8: bth_set_qpn(h, (uint32_t)r); UT_EQ(bth_qpn(h), r & 0xffffff); break;
		case 9: bth_set_ackreq(h, r & 1); UT_EQ(bth_ackreq(h), r & 1); break;
		case 10: bth_set_psn(h, (uint32_t)r); UT_EQ(bth_psn(h), r & 0xffffff); break;
		}
		/* Compare all other fields. */
		if (field != 0) UT_EQ(bth_opcode(h), bth_opcode(before));
		if (field != 1) UT_EQ(bth_se(h), bth_se(before));
		if (field != 2) UT_EQ(bth_mig(h), bth_mig(before));
		if (field != 3) UT_EQ(bth_pad(h), bth_pad(before));
		if (field != 4) UT_EQ(bth_tver(h), bth_tver(before));
		if (field != 5) UT_EQ(bth_pkey(h), bth_pkey(before));
		if (field != 6) UT_EQ(bth_fecn(h), bth_fecn(before));
		if (field != 7) UT_EQ(bth_becn(h), bth_becn(before));
		if (field != 8) UT_EQ(bth_qpn(h), bth_qpn(before));
		if (field != 9) UT_EQ(bth_ackreq(h), bth_ackreq(before));
		if (field != 10) UT_EQ(bth_psn(h), bth_psn(before));
		UT_EQ(h[4] & 0x3f, before[4] & 0x3f);
		UT_EQ(h[8] & 0x7f, before[8] & 0x7f);
	}
}

/* Known byte images, so the accessors agree with the spec's bit numbering
 * and not just with themselves. */
static void test_header_byte_layout(void)
{
	uint8_t h[32];
	static const uint8_t bth_img[] = {
		0x0b, 0xe0, 0x12, 0x34, 0x00, 0xab, 0xcd, 0xef, 0x80, 0x12, 0x34, 0x56,
	};

	bth_init(h, UR_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, true, 2, 0x1234, 0xabcdef, true, 0x123456);
	UT_MEMEQ(h, bth_img, sizeof(bth_img));
	bth_set_fecn(h, true);
	bth_set_becn(h, true);
	UT_EQ(h[4], 0xc0);
	UT_EQ(bth_qpn(h), 0xabcdef);

	memset(h, 0, sizeof(h));
	aeth_set_syn(h, UR_NAK_REM_ACCESS_ERR);
	aeth_set_msn(h, 0x010203);
	UT_EQ(ur_get_be32(h), 0x62010203);
	UT_EQ(ur_aeth_type(aeth_syn(h)), UR_AETH_NAK);
	UT_EQ(ur_aeth_code(UR_AETH_RNR_NAK | 14), 14);
	UT_EQ(ur_aeth_type(UR_AETH_ACK_UNLIMITED), UR_AETH_ACK);

	/* ImmDt travels exactly as libibverbs holds it (__be32). */
	immdt_set(h, htobe32(0x11223344));
	UT_EQ(h[0], 0x11);
	UT_EQ(h[3], 0x44);
	UT_EQ(immdt_get(h), htobe32(0x11223344));

	memset(h, 0xff, sizeof(h));
	deth_set_qkey(h, 0x80010000);
	deth_set_sqp(h, 0x1000001);
	UT_EQ(ur_get_be32(h), 0x80010000);
	UT_EQ(ur_get_be32(h + 4), 0x000001);
	UT_EQ(deth_sqp(h), 1);

	memset(h, 0, sizeof(h));
	atmeth_set_va(h, 0x0102030405060708ull);
	atmeth_set_rkey(h, 0x090a0b0c);
	atmeth_set_swap_add(h, 0x0d0e0f1011121314ull);
	atmeth_set_comp(h, 0x15161718191a1b1cull);
	for (int i = 0; i < UR_ATMETH_BYTES; i++)
		UT_EQ(h[i], i + 1);

	memset(h, 0, sizeof(h));
	feth_init(h, 0x5, 0x2);
	UT_EQ(ur_get_be32(h), 0x25);
	feth_set_sel(h, 1);
	feth_set_plt(h, 0xf);
	UT_EQ(ur_get_be32(h), 0x1f);

	ur_put_le32(h, 0x11223344);
	UT_EQ(h[0], 0x44);
	UT_EQ(ur_get_le32(h), 0x11223344);
	ur_put_be64(h + 1, 0x0102030405060708ull);	/* misaligned */
	UT_EQ(h[1], 1);
	UT_EQ(ur_get_be64(h + 1), 0x0102030405060708ull);
}

/* What the parser must say for a len-byte prefix of a valid packet. */
static enum ur_parse_result expected_prefix(uint8_t op, uint8_t pad, size_t len)
{
	const struct ur_opcode_info *info = &ur_opcode[op];
	size_t fixed = info->length + pad + UR_ICRC_BYTES;

	if (len < UR_BTH_BYTES + UR_ICRC_BYTES || len < fixed)
		return UR_PARSE_SHORT;
	if (!(info->mask & UR_OPF_PAYLOAD))
		return len == fixed ? UR_PARSE_OK : UR_PARSE_BAD_PAYLOAD;
	return ((len - fixed + pad) & 3) ? UR_PARSE_BAD_PAD : UR_PARSE_OK;
}

/* Every truncation of every opcode, each in a heap block of exactly that
 * size so that ASan catches a single byte read past the end. */
static void test_parse_truncation(void)
{
	static uint8_t full[256];

	for (int op = 0; op < 256; op++) {
		for (uint32_t paylen = 0; paylen <= 9 && ur_opcode_known((uint8_t)op); paylen += 9) {
			struct pkt_fields f;
			size_t len;

			if (paylen && !(ur_opcode[op].mask & UR_OPF_PAYLOAD))
				break;
			random_fields(&f, (uint8_t)op);
			len = build_pkt(full, &f, paylen);
			for (size_t t = 0; t <= len; t++) {
				uint8_t *p = malloc(t ? t : 1);
				struct ur_pkt_view v;
				enum ur_parse_result r, want = expected_prefix((uint8_t)op, -paylen & 3, t);

				memcpy(p, full, t);
				r = ur_pkt_parse(&v, p, t);
				if (r != want)
					fprintf(stderr, "  %s paylen %u prefix %zu: %s, want %s\n",
						ur_opcode_name((uint8_t)op), paylen, t,
						ur_parse_result_name[r], ur_parse_result_name[want]);
				UT_EQ(r, want);
				if (t < ur_opcode[op].length + (-paylen & 3) + UR_ICRC_BYTES)
					UT_EQ(r, UR_PARSE_SHORT);
				if (r == UR_PARSE_OK)
					UT_EQ(v.paylen, t - ur_opcode[op].length - (-paylen & 3) -
							UR_ICRC_BYTES);
				free(p);
			}
		}
	}
}

static void test_parse_rejects(void)
{
	static uint8_t buf[256];
	struct ur_pkt_view v;
	struct pkt_fields f;
	unsigned unknown = 0;

	for (int op = 0; op < 256; op++) {
		const struct ur_opcode_info *info = &ur_opcode[op];
		size_t len;

		if (!info->mask) {
			/* Unknown opcode, whatever the length. */
			memset(buf, 0, sizeof(buf));
			buf[0] = (uint8_t)op;
			UT_EQ(ur_pkt_parse(&v, buf, 64), UR_PARSE_BAD_OPCODE);
			UT_EQ(ur_pkt_parse(&v, buf, 16), UR_PARSE_BAD_OPCODE);
			unknown++;
			continue;
		}
		random_fields(&f, (uint8_t)op);
		len = build_pkt(buf, &f, 0);
		UT_EQ(ur_pkt_parse(&v, buf, len), UR_PARSE_OK);

		/* Any transport header version but 0. */
		for (uint8_t tver = 1; tver < 16; tver++) {
			bth_set_tver(buf, tver);
			UT_EQ(ur_pkt_parse(&v, buf, len), UR_PARSE_BAD_TVER);
		}
		bth_set_tver(buf, 0);

		if (info->mask & UR_OPF_PAYLOAD) {
			/* Payload + pad must fill whole words: with headers and
			 * ICRC whole words too, the length must be one. */
			len = build_pkt(buf, &f, 5);
			UT_EQ(ur_pkt_parse(&v, buf, len), UR_PARSE_OK);
			UT_EQ(v.paylen, 5);
			for (uint8_t pad = 0; pad < 4; pad++) {
				bth_set_pad(buf, pad);
				UT_EQ(ur_pkt_parse(&v, buf, len), UR_PARSE_OK);
				UT_EQ(v.paylen, 8 - pad);
				for (size_t odd = 1; odd < 4; odd++)
					UT_EQ(ur_pkt_parse(&v, buf, len - 4 + odd), UR_PARSE_BAD_PAD);
			}
			continue;
		}
		/* No pad and no payload where the opcode has none. */
		for (uint8_t pad = 1; pad < 4; pad++) {
			bth_set_pad(buf, pad);
			UT_EQ(ur_pkt_parse(&v, buf, len), UR_PARSE_BAD_PAD);
			UT_EQ(ur_pkt_parse(&v, buf, len + pad), UR_PARSE_BAD_PAD);
		}
		bth_set_pad(buf, 0);
		for (size_t extra = 1; extra <= 8; extra++)
			UT_EQ(ur_pkt_parse(&v, buf, len + extra), UR_PARSE_BAD_PAYLOAD);
	}
	UT_EQ(unknown, 256 - UR_ARRAY_SIZE(expected_hdrs));

	/* An ACK carrying 4 bytes: the example from the contract. */
	random_fields(&f, UR_OP_RC_ACKNOWLEDGE);
	UT_EQ(ur_pkt_parse(&v, buf, build_pkt(buf, &f, 0) + 4), UR_PARSE_BAD_PAYLOAD);

	for (int r = 0; r < UR_PARSE_NR; r++)
		UT_CHECK(ur_parse_result_name[r] != NULL);
}
