/* pcapng for uroce capture: a section header and one raw-IP interface per
 * file, then an enhanced packet block per record, its direction in
 * epb_flags (as a NIC's mirror marks it) and, in a comment, which
 * processes sent and received it.  The frame is the packet as the wire
 * carries it: IPv4 (DF, checksum) or IPv6, UDP, then the record's bytes;
 * a local message (no wire form) is a UDP datagram on 127.0.0.1 between
 * ports made from the two processes' pids. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "capture.h"

#define BLK_SHB 0x0A0D0D0Au
#define BLK_IDB 0x00000001u
#define BLK_EPB 0x00000006u
#define LINKTYPE_RAW 101               /* the frame begins with the IP header */
#define OPT_END 0
#define OPT_COMMENT 1
#define OPT_IF_NAME 2
#define OPT_IF_TSRESOL 9
#define OPT_EPB_FLAGS 2
#define EPB_INBOUND 1u
#define EPB_OUTBOUND 2u
#define MSG_PORT_BASE 0xc000u

static uint16_t pid_port(int32_t pid)
{
	return (uint16_t)(MSG_PORT_BASE | ((uint32_t)pid & 0x3fffu));
}

/* Ones' complement sum, folded by the caller. */
static uint32_t sum16(uint32_t s, const uint8_t *p, size_t n)
{
	for (; n > 1; p += 2, n -= 2)
		s += (uint32_t)p[0] << 8 | p[1];
	if (n)
		s += (uint32_t)p[0] << 8;
	return s;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* The IP and UDP headers of a record into hdr; returns their length. */
static size_t frame_headers(const struct ur_cap_rec *r, const uint8_t *body, uint8_t *hdr)
{
	uint16_t sport = r->sport, dport = r->dport;
	uint16_t ulen = (uint16_t)(8 + r->len);
	uint8_t *udp;
	size_t iplen;

	if (r->kind == UR_CAP_MSG) {
		sport = pid_port(r->pid);
		dport = pid_port(r->peer_pid);
	}
	if (r->family == AF_INET) {
		uint16_t tot = (uint16_t)(20 + ulen), ck;

		memset(hdr, 0, 20);
		hdr[0] = 0x45;
		hdr[1] = r->tclass;
		hdr[2] = (uint8_t)(tot >> 8), hdr[3] = (uint8_t)tot;
		hdr[4] = (uint8_t)(r->ip_id >> 8), hdr[5] = (uint8_t)r->ip_id;
		hdr[6] = 0x40;                                 /* DF */
		hdr[8] = r->hop_limit;
		hdr[9] = 17;
		memcpy(hdr + 12, r->saddr, 4);
		memcpy(hdr + 16, r->daddr, 4);
		ck = fold(sum16(0, hdr, 20));
		hdr[10] = (uint8_t)(ck >> 8), hdr[11] = (uint8_t)ck;
		iplen = 20;
	} else {
		memset(hdr, 0, 40);
		hdr[0] = (uint8_t)(0x60 | r->tclass >> 4);
		hdr[1] = (uint8_t)(r->tclass << 4);
		hdr[4] = (uint8_t)(ulen >> 8), hdr[5] = (uint8_t)ulen;
		hdr[6] = 17;
		hdr[7] = r->hop_limit;
		memcpy(hdr + 8, r->saddr, 16);
		memcpy(hdr + 24, r->daddr, 16);
		iplen = 40;
	}
	udp = hdr + iplen;
	udp[0] = (uint8_t)(sport >> 8), udp[1] = (uint8_t)sport;
	udp[2] = (uint8_t)(dport >> 8), udp[3] = (uint8_t)dport;
	udp[4] = (uint8_t)(ulen >> 8), udp[5] = (uint8_t)ulen;
	udp[6] = udp[7] = 0;        /* IPv4: none, as RoCEv2 senders leave it */
	if (r->family != AF_INET) {
		/* IPv6 requires one: pseudo-header, UDP header, bytes. */
		uint32_t s = sum16(0, hdr + 8, 32) + ulen + 17;
		uint16_t ck;

		s = sum16(s, udp, 8);
		s = sum16(s, body, r->len);
		ck = fold(s);
		if (!ck)
			ck = 0xffff;
		udp[6] = (uint8_t)(ck >> 8), udp[7] = (uint8_t)ck;
	}
	return iplen + 8;
}

static const char *via_name(uint8_t via)
{
	switch (via) {
	case UR_CAP_VIA_UDP: return "udp";
	case UR_CAP_VIA_UNIX: return "unix socket";
	case UR_CAP_VIA_SHM: return "shared memory";
	default: return "?";
	}
}

static size_t comment(const struct ur_cap_rec *r, char *buf, size_t len)
{
	int n;

	if (r->kind == UR_CAP_MSG)
		n = snprintf(buf, len, "uroce local message, pid %d -> pid %d", r->pid, r->peer_pid);
	else if (r->dir == UR_CAP_TX && r->peer_pid)
		n = snprintf(buf, len, "pid %d -> pid %d by %s", r->pid, r->peer_pid, via_name(r->via));
	else if (r->dir == UR_CAP_TX)
		n = snprintf(buf, len, "sent by pid %d by %s", r->pid, via_name(r->via));
	else if (r->peer_pid)
		n = snprintf(buf, len, "received by pid %d by %s for pid %d", r->pid,
			     via_name(r->via), r->peer_pid);
	else
		n = snprintf(buf, len, "received by pid %d by %s", r->pid, via_name(r->via));
	if (n > 0 && r->placed && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n,
			      "; %u payload bytes copied directly between the processes, not carried",
			      r->placed);
	if (n < 0)
		return 0;
	return (size_t)n < len ? (size_t)n : len - 1;
}

static size_t pad4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

static int put(struct cap_out *o, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, o->f) != n)
		return -EIO;
	o->size += n;
	return 0;
}

static int put32(struct cap_out *o, uint32_t v)
{
	return put(o, &v, 4);
}

static int put_opt(struct cap_out *o, uint16_t code, const void *v, uint16_t len)
{
	static const uint8_t zeros[4];
	uint16_t h[2] = { code, len };

	if (put(o, h, 4) || put(o, v, len))
		return -EIO;
	return put(o, zeros, pad4(len) - len);
}

static int write_heads(struct cap_out *o)
{
	static const char app[] = "uroce capture", ifname[] = "uroce";
	const uint8_t tsresol = 9;     /* nanoseconds */
	uint32_t shb_len = 28 + 4 + pad4(sizeof(app) - 1) + 4;
	uint32_t idb_len = 20 + 4 + pad4(sizeof(ifname) - 1) + 8 + 4;
	uint16_t ver[2] = { 1, 0 };
	int64_t section = -1;
	uint16_t lt[2] = { LINKTYPE_RAW, 0 };
	int err = 0;

	err |= put32(o, BLK_SHB) | put32(o, shb_len) | put32(o, 0x1A2B3C4Du);
	err |= put(o, ver, 4) | put(o, &section, 8);
	err |= put_opt(o, 4 /* shb_userappl */, app, sizeof(app) - 1);
	err |= put_opt(o, OPT_END, NULL, 0) | put32(o, shb_len);
	err |= put32(o, BLK_IDB) | put32(o, idb_len) | put(o, lt, 4) | put32(o, 0);
	err |= put_opt(o, OPT_IF_NAME, ifname, sizeof(ifname) - 1);
	err |= put_opt(o, OPT_IF_TSRESOL, &tsresol, 1);
	err |= put_opt(o, OPT_END, NULL, 0) | put32(o, idb_len);
	return err ? -EIO : 0;
}

static int open_index(struct cap_out *o)
{
	char name[4096];

	if (o->limit)
		snprintf(name, sizeof(name), "%s%u", o->path, o->index);
	else
		snprintf(name, sizeof(name), "%s", o->path);
	o->f = strcmp(name, "-") ? fopen(name, "wb") : stdout;
	if (!o->f)
		return -errno;
	o->size = 0;
	return write_heads(o);
}

int cap_out_open(struct cap_out *o)
{
	o->index = 0;
	return open_index(o);
}

static int rotate(struct cap_out *o)
{
	int ret = cap_out_close(o);

	if (ret)
		return ret;
	o->index++;
	if (o->nfiles && o->index >= o->nfiles)
		o->index = 0;
	return open_index(o);
}

int cap_out_write(struct cap_out *o, const struct ur_cap_rec *r, const uint8_t *body)
{
	static const uint8_t zeros[4];
	uint8_t hdr[48];
	char note[160];
	size_t hlen = frame_headers(r, body, hdr);
	size_t cap = hlen + r->len, nlen = comment(r, note, sizeof(note));
	uint32_t flags = r->dir == UR_CAP_RX ? EPB_INBOUND : EPB_OUTBOUND;
	uint32_t blen = (uint32_t)(28 + pad4(cap) + 8 + 4 + pad4(nlen) + 4 + 4);
	int err = 0;

	if (o->limit && o->size > 0 && o->size + blen > o->limit && rotate(o))
		return -EIO;
	err |= put32(o, BLK_EPB) | put32(o, blen) | put32(o, 0);
	err |= put32(o, (uint32_t)(r->time_ns >> 32)) | put32(o, (uint32_t)r->time_ns);
	err |= put32(o, (uint32_t)cap) | put32(o, (uint32_t)cap);
	err |= put(o, hdr, hlen) | put(o, body, r->len) | put(o, zeros, pad4(cap) - cap);
	err |= put_opt(o, OPT_EPB_FLAGS, &flags, 4);
	err |= put_opt(o, OPT_COMMENT, note, (uint16_t)nlen);
	err |= put_opt(o, OPT_END, NULL, 0) | put32(o, blen);
	return err ? -EIO : 0;
}

int cap_out_close(struct cap_out *o)
{
	int ret = 0;

	if (!o->f)
		return 0;
	if (o->f == stdout)
		ret = fflush(o->f);
	else
		ret = fclose(o->f);
	o->f = NULL;
	return ret ? -EIO : 0;
}
