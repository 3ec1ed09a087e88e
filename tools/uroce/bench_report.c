/* uroce bench: perftest's text -- the header block, the address lines and
 * the bandwidth and latency tables, column for column (latency adds p50). */
#include "bench.h"
#include "uroce.h"

#define RULE "---------------------------------------------------------------------------------------\n"

static void print_address(FILE *f, const char *which, const struct ur_ep *ep, bool rdma)
{
	fprintf(f, " %s address: LID %04x QPN 0x%04x PSN 0x%06x", which, ep->lid, ep->qpn, ep->psn);
	if (rdma)
		fprintf(f, " RKey 0x%06x VAddr 0x%014llx", ep->rkey, (unsigned long long)ep->addr);
	fprintf(f, "\n GID: ");
	for (int i = 0; i < 16; i++)
		fprintf(f, "%02d%s", ep->gid.raw[i], i < 15 ? ":" : "\n");
}

void bench_print_header(FILE *f, const struct bench *b)
{
	const struct bench_opts *o = &b->o;
	bool rdma = o->op != BENCH_SEND;

	fprintf(f, RULE);
	fprintf(f, "                    %s\n", bench_title(o));
	fprintf(f, " Dual-port       : OFF\t\tDevice         : %s\n", ur_dev_name(&b->d));
	fprintf(f, " Number of qps   : %u\t\tTransport type : IB\n", o->qps * o->threads);
	fprintf(f, " Connection type : %s\t\tUsing SRQ      : OFF\n", bench_qpt_name(o->qpt));
	fprintf(f, " Threads         : %u (x %u QPs each)\n", o->threads, o->qps);
	if (!b->server || o->lat)
		fprintf(f, " TX depth        : %u\n", o->tx_depth);
	if (!o->lat)
		fprintf(f, " CQ Moderation   : %u\n", o->tx_depth < 16 ? o->tx_depth : 16);
	fprintf(f, " Mtu             : %d[B]\n", ur_mtu_bytes(b->path_mtu));
	fprintf(f, " Link type       : %s\n",
		b->d.port_attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "IB");
	fprintf(f, " GID index       : %d\n", b->d.gid_index);
	fprintf(f, " Max inline data : %u[B]\n", o->inline_size);
	fprintf(f, " rdma_cm QPs\t : OFF\n");
	fprintf(f, " Data ex. method : Ethernet\n");
	fprintf(f, RULE);
	for (unsigned k = 0; k < o->threads; k++)
		for (unsigned i = 0; i < o->qps; i++)
			print_address(f, "local", &b->th[k].local[i], rdma);
	for (unsigned k = 0; k < o->threads; k++)
		for (unsigned i = 0; i < o->qps; i++)
			print_address(f, "remote", &b->th[k].remote[i], rdma);
	fflush(f);
}

void bench_print_table_head(FILE *f, const struct bench_opts *o)
{
	const char *u = o->gbits ? "Gb/sec" : "MB/sec";

	fprintf(f, RULE);
	if (o->lat)
		fprintf(f, " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    "
			   "t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   "
			   "99.9%% percentile[usec]    p50[usec]\n");
	else
		fprintf(f, " #bytes     #iterations    BW peak[%s]    BW average[%s]   "
			   "MsgRate[Mpps]\n", u, u);
}

void bench_print_row(FILE *f, const struct bench_opts *o, const struct bench_result *r)
{
	if (o->lat)
		fprintf(f, " %-7u %-10u   %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     "
			   "\t%-7.2f\t\t%-7.2f \t\t%-7.2f \t\t%-7.2f\n",
			r->size, r->iters, r->t_min, r->t_max, r->t_typical, r->t_avg, r->t_stdev,
			r->p99, r->p999, r->p50);
	else
		fprintf(f, " %-7u    %-10u       %-7.2f            %-7.2f\t\t   %-7.6f\n", r->size,
			r->iters, bench_bw_unit(r->bw_peak, o->gbits), bench_bw_unit(r->bw_avg, o->gbits),
			r->msg_rate / 1e6);
}

void bench_print_table_end(FILE *f)
{
	fprintf(f, RULE);
}
