/* ibv_devinfo's output, field for field, from the public query verbs: the
 * same names, order and value formats, so scripts that parse one parse the
 * other. */
#include "devinfo.h"

#include <endian.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dev_open.h"

static const char *guid_str(__be64 guid, char *buf)
{
	uint64_t g = be64toh(guid);

	sprintf(buf, "%04x:%04x:%04x:%04x", (unsigned)(g >> 48) & 0xffff,
		(unsigned)(g >> 32) & 0xffff, (unsigned)(g >> 16) & 0xffff, (unsigned)g & 0xffff);
	return buf;
}

static const char *transport_str(enum ibv_transport_type t)
{
	switch (t) {
	case IBV_TRANSPORT_IB: return "InfiniBand";
	case IBV_TRANSPORT_IWARP: return "iWARP";
	case IBV_TRANSPORT_USNIC: return "usNIC";
	case IBV_TRANSPORT_USNIC_UDP: return "usNIC UDP";
	case IBV_TRANSPORT_UNSPECIFIED: return "unspecified";
	default: return "invalid transport";
	}
}

static const char *atomic_str(enum ibv_atomic_cap a)
{
	switch (a) {
	case IBV_ATOMIC_NONE: return "ATOMIC_NONE";
	case IBV_ATOMIC_HCA: return "ATOMIC_HCA";
	case IBV_ATOMIC_GLOB: return "ATOMIC_GLOB";
	default: return "invalid atomic capability";
	}
}

static const char *mtu_str(enum ibv_mtu m)
{
	static const char *const s[] = { "invalid MTU", "256", "512", "1024", "2048", "4096" };

	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? s[m] : s[0];
}

static const char *width_str(uint8_t w)
{
	switch (w) {
	case 1: return "1";
	case 2: return "4";
	case 4: return "8";
	case 8: return "12";
	case 16: return "2";
	default: return "invalid width";
	}
}

static const char *speed_str(uint32_t s)
{
	switch (s) {
	case 1: return "2.5 Gbps";
	case 2: return "5.0 Gbps";
	case 4: /* fall through */
	case 8: return "10.0 Gbps";
	case 16: return "14.0 Gbps";
	case 32: return "25.0 Gbps";
	case 64: return "50.0 Gbps";
	case 128: return "100.0 Gbps";
	case 256: return "200.0 Gbps";
	default: return "invalid speed";
	}
}

static const char *vl_str(uint8_t v)
{
	switch (v) {
	case 1: return "1";
	case 2: return "2";
	case 3: return "4";
	case 4: return "8";
	case 5: return "15";
	default: return "invalid value";
	}
}

static const char *link_layer_str(uint8_t l)
{
	switch (l) {
	case IBV_LINK_LAYER_UNSPECIFIED: /* fall through */
	case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
	case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
	default: return "Unknown";
	}
}

const char *ur_port_state_str(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_NOP: return "PORT_NOP";
	case IBV_PORT_DOWN: return "PORT_DOWN";
	case IBV_PORT_INIT: return "PORT_INIT";
	case IBV_PORT_ARMED: return "PORT_ARMED";
	case IBV_PORT_ACTIVE: return "PORT_ACTIVE";
	case IBV_PORT_ACTIVE_DEFER: return "PORT_ACTIVE_DEFER";
	default: return "invalid state";
	}
}

static const char *phys_state_str(uint8_t s)
{
	switch (s) {
	case 1: return "SLEEP";
	case 2: return "POLLING";
	case 3: return "DISABLED";
	case 4: return "PORT_CONFIGURATION TRAINNING";
	case 5: return "LINK_UP";
	case 6: return "LINK_ERROR_RECOVERY";
	case 7: return "PHY TEST";
	default: return "invalid physical state";
	}
}

static void print_cap_flags(uint32_t f)
{
	static const struct { uint32_t bit; const char *name; } names[] = {
		{ IBV_DEVICE_RESIZE_MAX_WR, "RESIZE_MAX_WR" },
		{ IBV_DEVICE_BAD_PKEY_CNTR, "BAD_PKEY_CNTR" },
		{ IBV_DEVICE_BAD_QKEY_CNTR, "BAD_QKEY_CNTR" },
		{ IBV_DEVICE_RAW_MULTI, "RAW_MULTI" },
		{ IBV_DEVICE_AUTO_PATH_MIG, "AUTO_PATH_MIG" },
		{ IBV_DEVICE_CHANGE_PHY_PORT, "CHANGE_PHY_PORT" },
		{ IBV_DEVICE_UD_AV_PORT_ENFORCE, "UD_AV_PORT_ENFORCE" },
		{ IBV_DEVICE_CURR_QP_STATE_MOD, "CURR_QP_STATE_MOD" },
		{ IBV_DEVICE_SHUTDOWN_PORT, "SHUTDOWN_PORT" },
		{ IBV_DEVICE_INIT_TYPE, "INIT_TYPE" },
		{ IBV_DEVICE_PORT_ACTIVE_EVENT, "PORT_ACTIVE_EVENT" },
		{ IBV_DEVICE_SYS_IMAGE_GUID, "SYS_IMAGE_GUID" },
		{ IBV_DEVICE_RC_RNR_NAK_GEN, "RC_RNR_NAK_GEN" },
		{ IBV_DEVICE_SRQ_RESIZE, "SRQ_RESIZE" },
		{ IBV_DEVICE_N_NOTIFY_CQ, "N_NOTIFY_CQ" },
		{ IBV_DEVICE_MEM_WINDOW, "MEM_WINDOW" },
		{ IBV_DEVICE_UD_IP_CSUM, "UD_IP_CSUM" },
		{ IBV_DEVICE_XRC, "XRC" },
		{ IBV_DEVICE_MEM_MGT_EXTENSIONS, "MEM_MGT_EXTENSIONS" },
		{ IBV_DEVICE_MEM_WINDOW_TYPE_2A, "MEM_WINDOW_TYPE_2A" },
		{ IBV_DEVICE_MEM_WINDOW_TYPE_2B, "MEM_WINDOW_TYPE_2B" },
		{ IBV_DEVICE_RC_IP_CSUM, "RC_IP_CSUM" },
		{ IBV_DEVICE_RAW_IP_CSUM, "RAW_IP_CSUM" },
		{ IBV_DEVICE_MANAGED_FLOW_STEERING, "MANAGED_FLOW_STEERING" },
	};
	uint32_t known = 0;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		known |= names[i].bit;
		if (f & names[i].bit)
			printf("\t\t\t\t\t%s\n", names[i].name);
	}
	if (f & ~known)
		printf("\t\t\t\t\tUnknown flags: 0x%" PRIX32 "\n", f & ~known);
}

static void print_odp_transport(uint32_t caps)
{
	static const struct { uint32_t bit; const char *name; } names[] = {
		{ IBV_ODP_SUPPORT_SEND, "SUPPORT_SEND" },
		{ IBV_ODP_SUPPORT_RECV, "SUPPORT_RECV" },
		{ IBV_ODP_SUPPORT_WRITE, "SUPPORT_WRITE" },
		{ IBV_ODP_SUPPORT_READ, "SUPPORT_READ" },
		{ IBV_ODP_SUPPORT_ATOMIC, "SUPPORT_ATOMIC" },
		{ IBV_ODP_SUPPORT_SRQ_RECV, "SUPPORT_SRQ" },
	};

	if (!caps) {
		printf("\t\t\t\t\tNO SUPPORT\n");
		return;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (caps & names[i].bit)
			printf("\t\t\t\t\t%s\n", names[i].name);
}

static void print_odp(const struct ibv_device_attr_ex *x)
{
	const struct ibv_odp_caps *c = &x->odp_caps;

	printf("\tgeneral_odp_caps:\n");
	if (c->general_caps & IBV_ODP_SUPPORT)
		printf("\t\t\t\t\tODP_SUPPORT\n");
	if (c->general_caps & IBV_ODP_SUPPORT_IMPLICIT)
		printf("\t\t\t\t\tODP_SUPPORT_IMPLICIT\n");
	printf("\trc_odp_caps:\n");
	print_odp_transport(c->per_transport_caps.rc_odp_caps);
	printf("\tuc_odp_caps:\n");
	print_odp_transport(c->per_transport_caps.uc_odp_caps);
	printf("\tud_odp_caps:\n");
	print_odp_transport(c->per_transport_caps.ud_odp_caps);
	printf("\txrc_odp_caps:\n");
	print_odp_transport(x->xrc_odp_caps);
}

/* The offload sections ibv_devinfo -v prints: TSO, RSS, pacing, tag
 * matching (their supported-QP lists only when the device has them). */
static void print_offloads(const struct ibv_device_attr_ex *x)
{
	printf("\ttso_caps:\n");
	printf("\t\tmax_tso:\t\t\t%d\n", x->tso_caps.max_tso);
	printf("\trss_caps:\n");
	printf("\t\tmax_rwq_indirection_tables:\t\t\t%u\n",
	       x->rss_caps.max_rwq_indirection_tables);
	printf("\t\tmax_rwq_indirection_table_size:\t\t\t%u\n",
	       x->rss_caps.max_rwq_indirection_table_size);
	printf("\t\trx_hash_function:\t\t\t\t0x%x\n", x->rss_caps.rx_hash_function);
	printf("\t\trx_hash_fields_mask:\t\t\t\t0x%" PRIX64 "\n", x->rss_caps.rx_hash_fields_mask);
}

static void print_pacing_tm(const struct ibv_device_attr_ex *x)
{
	printf("\tpacket_pacing_caps:\n");
	printf("\t\tqp_rate_limit_min:\t%ukbps\n", x->packet_pacing_caps.qp_rate_limit_min);
	printf("\t\tqp_rate_limit_max:\t%ukbps\n", x->packet_pacing_caps.qp_rate_limit_max);
	if (x->tm_caps.max_num_tags) {
		printf("\tmax_rndv_hdr_size:\t\t%u\n", x->tm_caps.max_rndv_hdr_size);
		printf("\tmax_num_tags:\t\t\t%u\n", x->tm_caps.max_num_tags);
		printf("\tmax_ops:\t\t\t%u\n", x->tm_caps.max_ops);
		printf("\tmax_sge:\t\t\t%u\n", x->tm_caps.max_sge);
		printf("\tflags:\n");
		if (x->tm_caps.flags & IBV_TM_CAP_RC)
			printf("\t\t\t\t\tIBV_TM_CAP_RC\n");
	} else {
		printf("\ttag matching not supported\n");
	}
}

static void print_device_verbose(const struct ibv_device_attr_ex *x, int comp_vectors)
{
	const struct ibv_device_attr *a = &x->orig_attr;

	printf("\tmax_mr_size:\t\t\t0x%llx\n", (unsigned long long)a->max_mr_size);
	printf("\tpage_size_cap:\t\t\t0x%llx\n", (unsigned long long)a->page_size_cap);
	printf("\tmax_qp:\t\t\t\t%d\n", a->max_qp);
	printf("\tmax_qp_wr:\t\t\t%d\n", a->max_qp_wr);
	printf("\tdevice_cap_flags:\t\t0x%08x\n", a->device_cap_flags);
	print_cap_flags(a->device_cap_flags);
	printf("\tmax_sge:\t\t\t%d\n", a->max_sge);
	printf("\tmax_sge_rd:\t\t\t%d\n", a->max_sge_rd);
	printf("\tmax_cq:\t\t\t\t%d\n", a->max_cq);
	printf("\tmax_cqe:\t\t\t%d\n", a->max_cqe);
	printf("\tmax_mr:\t\t\t\t%d\n", a->max_mr);
	printf("\tmax_pd:\t\t\t\t%d\n", a->max_pd);
	printf("\tmax_qp_rd_atom:\t\t\t%d\n", a->max_qp_rd_atom);
	printf("\tmax_ee_rd_atom:\t\t\t%d\n", a->max_ee_rd_atom);
	printf("\tmax_res_rd_atom:\t\t%d\n", a->max_res_rd_atom);
	printf("\tmax_qp_init_rd_atom:\t\t%d\n", a->max_qp_init_rd_atom);
	printf("\tmax_ee_init_rd_atom:\t\t%d\n", a->max_ee_init_rd_atom);
	printf("\tatomic_cap:\t\t\t%s (%d)\n", atomic_str(a->atomic_cap), a->atomic_cap);
	printf("\tmax_ee:\t\t\t\t%d\n", a->max_ee);
	printf("\tmax_rdd:\t\t\t%d\n", a->max_rdd);
	printf("\tmax_mw:\t\t\t\t%d\n", a->max_mw);
	printf("\tmax_raw_ipv6_qp:\t\t%d\n", a->max_raw_ipv6_qp);
	printf("\tmax_raw_ethy_qp:\t\t%d\n", a->max_raw_ethy_qp);
	printf("\tmax_mcast_grp:\t\t\t%d\n", a->max_mcast_grp);
	printf("\tmax_mcast_qp_attach:\t\t%d\n", a->max_mcast_qp_attach);
	printf("\tmax_total_mcast_qp_attach:\t%d\n", a->max_total_mcast_qp_attach);
	printf("\tmax_ah:\t\t\t\t%d\n", a->max_ah);
	printf("\tmax_fmr:\t\t\t%d\n", a->max_fmr);
	if (a->max_fmr)
		printf("\tmax_map_per_fmr:\t\t%d\n", a->max_map_per_fmr);
	printf("\tmax_srq:\t\t\t%d\n", a->max_srq);
	if (a->max_srq) {
		printf("\tmax_srq_wr:\t\t\t%d\n", a->max_srq_wr);
		printf("\tmax_srq_sge:\t\t\t%d\n", a->max_srq_sge);
	}
	printf("\tmax_pkeys:\t\t\t%d\n", a->max_pkeys);
	printf("\tlocal_ca_ack_delay:\t\t%d\n", a->local_ca_ack_delay);
	print_odp(x);
	if (x->completion_timestamp_mask)
		printf("\tcompletion timestamp_mask:\t\t\t0x%016" PRIx64 "\n",
		       x->completion_timestamp_mask);
	else
		printf("\tcompletion_timestamp_mask not supported\n");
	if (x->hca_core_clock)
		printf("\thca_core_clock:\t\t\t%" PRIu64 "kHZ\n", x->hca_core_clock);
	else
		printf("\tcore clock not supported\n");
	printf("\tdevice_cap_flags_ex:\t\t0x%" PRIX64 "\n", x->device_cap_flags_ex);
	print_offloads(x);
	printf("\tmax_wq_type_rq:\t\t\t%u\n", x->max_wq_type_rq);
	print_pacing_tm(x);
	if (x->cq_mod_caps.max_cq_count && x->cq_mod_caps.max_cq_period) {
		printf("\n\tcq moderation caps:\n");
		printf("\t\tmax_cq_count:\t%u\n", x->cq_mod_caps.max_cq_count);
		printf("\t\tmax_cq_period:\t%u us\n\n", x->cq_mod_caps.max_cq_period);
	}
	if (x->max_dm_size)
		printf("\tmaximum available device memory:\t%" PRIu64 "Bytes\n\n", x->max_dm_size);
	printf("\tnum_comp_vectors:\t\t%d\n", comp_vectors);
}

static void print_gids(struct ibv_context *ctx, uint8_t port)
{
	struct ur_gid_info t[256];
	int n = ur_gid_table(ctx, port, t, 256);

	for (int i = 0; i < n; i++) {
		char s[UR_GID_STRLEN];

		ur_gid_to_str(&t[i].e.gid, s, sizeof(s));
		if (t[i].e.gid_type == IBV_GID_TYPE_IB)
			printf("\t\t\tGID[%3u]:\t\t%s\n", t[i].e.gid_index, s);
		else
			printf("\t\t\tGID[%3u]:\t\t%s, %s\n", t[i].e.gid_index, s,
			       ur_gid_type_str(t[i].e.gid_type));
	}
}

static void print_port_verbose(struct ibv_context *ctx, uint8_t port, const struct ibv_port_attr *p)
{
	uint32_t speed = p->active_speed;

	printf("\t\t\tmax_msg_sz:\t\t0x%x\n", p->max_msg_sz);
	printf("\t\t\tport_cap_flags:\t\t0x%08x\n", p->port_cap_flags);
	printf("\t\t\tport_cap_flags2:\t0x%04x\n", p->port_cap_flags2);
	printf("\t\t\tmax_vl_num:\t\t%s (%d)\n", vl_str(p->max_vl_num), p->max_vl_num);
	printf("\t\t\tbad_pkey_cntr:\t\t0x%x\n", p->bad_pkey_cntr);
	printf("\t\t\tqkey_viol_cntr:\t\t0x%x\n", p->qkey_viol_cntr);
	printf("\t\t\tsm_sl:\t\t\t%d\n", p->sm_sl);
	printf("\t\t\tpkey_tbl_len:\t\t%d\n", p->pkey_tbl_len);
	printf("\t\t\tgid_tbl_len:\t\t%d\n", p->gid_tbl_len);
	printf("\t\t\tsubnet_timeout:\t\t%d\n", p->subnet_timeout);
	printf("\t\t\tinit_type_reply:\t%d\n", p->init_type_reply);
	printf("\t\t\tactive_width:\t\t%sX (%d)\n", width_str(p->active_width), p->active_width);
	printf("\t\t\tactive_speed:\t\t%s (%u)\n", speed_str(speed), speed);
	if (ctx->device->transport_type == IBV_TRANSPORT_IB)
		printf("\t\t\tphys_state:\t\t%s (%d)\n", phys_state_str(p->phys_state),
		       p->phys_state);
	print_gids(ctx, port);
}

int ur_devinfo_print(struct ibv_context *ctx, int only_port, bool verbose, bool counters)
{
	struct ibv_device_attr_ex x = { 0 };
	struct ibv_device *dev = ctx->device;
	char buf[256];

	if (ibv_query_device_ex(ctx, NULL, &x) && ibv_query_device(ctx, &x.orig_attr)) {
		fprintf(stderr, "cannot query device %s\n", ibv_get_device_name(dev));
		return -1;
	}
	if (only_port > x.orig_attr.phys_port_cnt) {
		fprintf(stderr, "device %s has no port %d (it has %d)\n", ibv_get_device_name(dev),
			only_port, x.orig_attr.phys_port_cnt);
		return -1;
	}
	printf("hca_id:\t%s\n", ibv_get_device_name(dev));
	printf("\ttransport:\t\t\t%s (%d)\n", transport_str(dev->transport_type),
	       dev->transport_type);
	if (strlen(x.orig_attr.fw_ver))
		printf("\tfw_ver:\t\t\t\t%s\n", x.orig_attr.fw_ver);
	printf("\tnode_guid:\t\t\t%s\n", guid_str(x.orig_attr.node_guid, buf));
	printf("\tsys_image_guid:\t\t\t%s\n", guid_str(x.orig_attr.sys_image_guid, buf));
	printf("\tvendor_id:\t\t\t0x%04x\n", x.orig_attr.vendor_id);
	printf("\tvendor_part_id:\t\t\t%d\n", x.orig_attr.vendor_part_id);
	printf("\thw_ver:\t\t\t\t0x%X\n", x.orig_attr.hw_ver);
	if (ibv_read_sysfs_file(dev->ibdev_path, "board_id", buf, sizeof(buf)) > 0)
		printf("\tboard_id:\t\t\t%s\n", buf);
	printf("\tphys_port_cnt:\t\t\t%d\n", x.orig_attr.phys_port_cnt);
	if (verbose)
		print_device_verbose(&x, ctx->num_comp_vectors);
	for (uint8_t port = 1; port <= x.orig_attr.phys_port_cnt; port++) {
		struct ibv_port_attr p;

		if (only_port && port != only_port)
			continue;
		if (ibv_query_port(ctx, port, &p)) {
			fprintf(stderr, "cannot query port %u of %s\n", port, ibv_get_device_name(dev));
			return -1;
		}
		printf("\t\tport:\t%u\n", port);
		printf("\t\t\tstate:\t\t\t%s (%d)\n", ur_port_state_str(p.state), p.state);
		printf("\t\t\tmax_mtu:\t\t%s (%d)\n", mtu_str(p.max_mtu), p.max_mtu);
		printf("\t\t\tactive_mtu:\t\t%s (%d)\n", mtu_str(p.active_mtu), p.active_mtu);
		printf("\t\t\tsm_lid:\t\t\t%d\n", p.sm_lid);
		printf("\t\t\tport_lid:\t\t%d\n", p.lid);
		printf("\t\t\tport_lmc:\t\t0x%02x\n", p.lmc);
		printf("\t\t\tlink_layer:\t\t%s\n", link_layer_str(p.link_layer));
		if (verbose)
			print_port_verbose(ctx, port, &p);
		if (counters)
			ur_devinfo_print_counters(ctx, port);
		printf("\n");
	}
	return 0;
}
