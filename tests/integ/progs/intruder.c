/* What another user of the host tries against a uroce process, in
 * integ.local_creds (run as that other user; also as the first user, to
 * show the same attempt gets through when it should):
 *
 *   intruder packet UID PID QPN PSN RKEY VA
 *       A valid RDMA WRITE_ONLY (64 bytes of 0xa5, ICRC right) to the QP,
 *       sent the way a process of the host hands packets to another: a
 *       datagram on that process's unix socket ("uroce-fwd-UID-PID",
 *       abstract).  Exit 0 if the kernel took the datagram.
 *   intruder open PATH
 *       Opens PATH for reading, then for reading and writing.  Exit 0 if
 *       both are refused.
 *   intruder squat UID
 *       Creates, mode 0666, the registry and router lock files that UID's
 *       processes in this network namespace will use.  Exit 0 if created.
 *
 * Built with uroce's internals (the wire codec) rather than the verbs: an
 * intruder writes packets, it does not ask a device for them. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "host/registry.h"
#include "wire/icrc.h"
#include "wire/opcode.h"
#include "wire/roce_hdr.h"
#include "xport/udp/udp_priv.h"

static int send_packet(char **a)
{
	unsigned uid = (unsigned)strtoul(a[0], NULL, 0), qpn = (unsigned)strtoul(a[2], NULL, 0);
	int pid = atoi(a[1]);
	uint32_t psn = (uint32_t)strtoul(a[3], NULL, 0), rkey = (uint32_t)strtoul(a[4], NULL, 0);
	uint64_t va = strtoull(a[5], NULL, 0);
	const struct ur_opcode_info *op = &ur_opcode[UR_OP_RC_RDMA_WRITE_ONLY];
	uint8_t pkt[512];
	struct ur_fwd_hdr h = {
		.magic = UR_FWD_MAGIC, .version = UR_FWD_VERSION, .kind = UR_FWD_PACKETS,
		.family = AF_INET, .sport = 49152, .dport = UR_ROCE_UDP_PORT, .hop_limit = 64,
	};
	struct ur_roce_ip ip = {
		.family = AF_INET, .sport = 49152, .dport = UR_ROCE_UDP_PORT, .df = true,
	};
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	size_t len = op->length + 64;
	struct iovec v[2];
	struct msghdr msg;
	socklen_t slen;
	int fd, n;

	memset(pkt, 0, sizeof(pkt));
	bth_init(pkt, UR_OP_RC_RDMA_WRITE_ONLY, false, 0, UR_DEFAULT_PKEY, qpn, false, psn);
	reth_set_va(pkt + op->offset[UR_HDR_RETH], va);
	reth_set_rkey(pkt + op->offset[UR_HDR_RETH], rkey);
	reth_set_len(pkt + op->offset[UR_HDR_RETH], 64);
	memset(pkt + op->length, 0xa5, 64);
	ip.v4.saddr.s_addr = ip.v4.daddr.s_addr = htonl(INADDR_LOOPBACK);
	memcpy(h.saddr, &ip.v4.saddr, 4);
	memcpy(h.daddr, &ip.v4.daddr, 4);
	v[0] = (struct iovec){ pkt, len };
	ur_put_le32(pkt + len, ur_icrc_calc(&ip, v, 1, len));
	len += 4;

	n = snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1, "uroce-fwd-%u-%d", uid, pid);
	slen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("socket");
		return 1;
	}
	v[0] = (struct iovec){ &h, sizeof(h) };
	v[1] = (struct iovec){ pkt, len };
	msg = (struct msghdr){ .msg_name = &sun, .msg_namelen = slen, .msg_iov = v, .msg_iovlen = 2 };
	if (sendmsg(fd, &msg, 0) < 0) {
		printf("sendmsg to @%s: %s\n", sun.sun_path + 1, strerror(errno));
		close(fd);
		return 1;
	}
	printf("sent a %zu-byte WRITE_ONLY to QP 0x%06x (PSN 0x%06x, rkey 0x%08x) through @%s as uid %u\n",
	       len, qpn, psn, rkey, sun.sun_path + 1, (unsigned)getuid());
	close(fd);
	return 0;
}

static int try_open(const char *path)
{
	static const struct { int flags; const char *name; } modes[] = {
		{ O_RDONLY, "reading" }, { O_RDWR, "reading and writing" },
	};
	int opened = 0;

	for (unsigned i = 0; i < 2; i++) {
		int fd = open(path, modes[i].flags | O_CLOEXEC);

		printf("open %s for %s as uid %u: %s\n", path, modes[i].name, (unsigned)getuid(),
		       fd < 0 ? strerror(errno) : "opened");
		if (fd >= 0) {
			opened++;
			close(fd);
		}
	}
	return opened ? 1 : 0;
}

static int squat(const char *uid)
{
	struct stat st;
	char path[2][160];
	int ret = 0;

	if (stat("/proc/self/ns/net", &st))
		return 1;
	snprintf(path[0], sizeof(path[0]), "/dev/shm/uroce-%s-net%lu-v%u", uid,
		 (unsigned long)st.st_ino, UR_REG_VERSION);
	snprintf(path[1], sizeof(path[1]), "/dev/shm/uroce-%s-net%lu.router", uid,
		 (unsigned long)st.st_ino);
	for (unsigned i = 0; i < 2; i++) {
		int fd = open(path[i], O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);

		if (fd < 0 || fchmod(fd, 0666)) {
			printf("create %s: %s\n", path[i], strerror(errno));
			ret = 1;
		} else {
			printf("created %s, mode 0666\n", path[i]);
		}
		if (fd >= 0)
			close(fd);
	}
	return ret;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 8 && !strcmp(argv[1], "packet"))
		return send_packet(argv + 2);
	if (argc == 3 && !strcmp(argv[1], "open"))
		return try_open(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "squat"))
		return squat(argv[2]);
	fprintf(stderr, "usage: intruder packet UID PID QPN PSN RKEY VA | open PATH | squat UID\n");
	return 2;
}
