/* The connection layer shared by `uroce pingpong`, `srq-server`/`srq-client`
 * and `bench`: open a device and pick the GID that reaches the peer, create
 * PD/CQ/QP/MR, exchange fixed endpoint records over TCP, and move QPs to
 * RTS -- with errors that name the cause and the fix.  Public verbs API only.
 *
 * Shape of a client (a server calls ur_tcp_listen/ur_tcp_accept instead of
 * ur_tcp_connect, and ur_exchange with server=true):
 *
 *     fd = ur_tcp_connect(host, port, hint);
 *     ur_dev_setup(&d, &(struct ur_dev_opts){ .peer = host, ... });
 *     cq = ur_cq_new(&d, depth);
 *     qp = ur_qp_new(&d, &(struct ur_qp_cfg){ .type = IBV_QPT_RC, ... });
 *     ur_ep_fill(&local, &d, qp, mr);
 *     ur_exchange(fd, false, &hello, &local, 1, &rhello, &remote, 1);
 *     ur_qp_connect(&d, qp, &local, &remote, NULL);
 *     ur_tcp_barrier(fd);
 *
 * N QPs per connection (perftest -q): one ur_ep per QP, exchanged as an
 * array.  Many connections on one SRQ and CQ (srq-server): one ur_dev, one
 * CQ, ur_qp_cfg.srq set for every QP.
 *
 * Functions print what went wrong on stderr and return -errno (or NULL). */
#ifndef UROCE_TOOLS_CONN_H
#define UROCE_TOOLS_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <infiniband/verbs.h>

#define UR_CONN_DEFAULT_PORT 18515
#define UR_UD_QKEY 0x11111111u
#define UR_GRH_BYTES 40 /* in front of every UD receive buffer */

/* --- device ---------------------------------------------------------------- */

struct ur_dev_opts {
	const char *dev_name;   /* NULL: the device holding the local address */
	int ib_port;            /* 0: port 1 */
	int gid_index;          /* < 0: choose (see ur_dev_setup) */
	const char *peer;       /* the peer's name or address (the server's, or the
				 * client's TCP address on a server) */
	const char *local_ip;   /* server: the address the client reached */
	bool events;            /* create a completion channel */
	const char *gid_flag;   /* the tool's GID option, for hints: "-g" */
};

struct ur_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel; /* NULL unless opts.events */
	uint8_t port;
	int gid_index;
	union ibv_gid gid;
	struct ibv_port_attr port_attr;
	struct ibv_device_attr attr;
	char gid_flag[8];
	char peer[64];          /* opts.peer, for explaining failures */
};

/* Opens the device, reads its port and device attributes, allocates a PD
 * (and a completion channel), and picks the GID index:
 *   opts.gid_index if >= 0 (checked to exist),
 *   else, with opts.peer, the index whose address the kernel routes from
 *   towards the peer (ur_gid_for_peer),
 *   else, with opts.local_ip, the index holding that address,
 *   else ur_gid_default.
 * Without opts.dev_name the device is the one holding the local address
 * (the route source towards opts.peer, or opts.local_ip), else the first. */
int ur_dev_setup(struct ur_dev *d, const struct ur_dev_opts *opts);
void ur_dev_teardown(struct ur_dev *d);

/* Checks that device NAME (NULL: any) exists and has GID index GID_INDEX
 * (< 0: any) on PORT, before a server waits for clients.  0 or -errno after
 * printing why. */
int ur_dev_check(const char *name, int port, int gid_index);

const char *ur_dev_name(const struct ur_dev *d);

/* A CQ of DEPTH entries on D's completion channel if it has one (armed with
 * ibv_req_notify_cq), with the device's max_cqe in the error. */
struct ibv_cq *ur_cq_new(struct ur_dev *d, int depth);

/* Waits for the next event on D's channel, acks it and re-arms its CQ.
 * Returns the CQ, or NULL (errno set). */
struct ibv_cq *ur_cq_wait(struct ur_dev *d);

/* Page-aligned zeroed memory (free with free()). */
void *ur_buf_alloc(size_t len);

/* Registers BUF with ACCESS; the error names the size and the access. */
struct ibv_mr *ur_mr_new(struct ur_dev *d, void *buf, size_t len, int access);

/* --- queue pairs ---------------------------------------------------------- */

struct ur_qp_cfg {
	enum ibv_qp_type type;        /* RC, UC or UD */
	struct ibv_cq *send_cq, *recv_cq;
	struct ibv_srq *srq;          /* NULL: the QP's own receive queue */
	uint32_t max_send_wr, max_recv_wr;
	uint32_t max_sge;             /* 0: 1 */
	uint32_t max_inline;
	int access;                   /* remote access flags set at INIT (RC/UC) */
	bool sq_sig_all;
	void *context;                /* qp->qp_context */
};

/* Creates a QP and moves it to INIT.  The error names the limit exceeded
 * (max_qp, max_qp_wr, inline). */
struct ibv_qp *ur_qp_new(struct ur_dev *d, const struct ur_qp_cfg *cfg);

/* Path parameters for RTR/RTS; NULL or zero fields take the defaults. */
struct ur_qp_tune {
	enum ibv_mtu mtu;             /* 0: min(local, remote active MTU) */
	uint8_t max_rd_atomic;        /* 0: min(16, device max_qp_rd_atom) */
	uint8_t timeout;              /* 0: 14 (67 ms) */
	uint8_t retry_cnt;            /* 0: 7 */
	uint8_t rnr_retry;            /* 0: 7 (forever) */
	uint8_t min_rnr_timer;        /* 0: 12 (0.64 ms) */
	uint8_t sl, traffic_class;
};

/* --- endpoint records, exchanged over TCP ---------------------------------- */

/* What one side tells the other about one QP and its buffer. */
struct ur_ep {
	uint16_t lid;
	uint32_t qpn;
	uint32_t psn;
	union ibv_gid gid;
	uint64_t addr;                /* the buffer the peer may access */
	uint32_t rkey;
	uint32_t len;
	enum ibv_mtu mtu;             /* the port's active MTU */
	uint8_t gid_index;            /* informational: the sender's index */
};

/* Fills EP for QP (and MR if not NULL) with a random 24-bit PSN. */
void ur_ep_fill(struct ur_ep *ep, const struct ur_dev *d, const struct ibv_qp *qp,
		const struct ibv_mr *mr);

/* Prints ibv_rc_pingpong's address line ("  local address:  LID 0x0000,
 * QPN 0x000011, PSN 0x1b5b2a, GID ::ffff:127.0.0.1"), with ", VA 0x...,
 * RKEY 0x..." when RDMA is true.  WHICH is "local" or "remote". */
void ur_ep_print(FILE *f, const char *which, const struct ur_ep *ep, bool rdma);

/* The path MTU between D and REMOTE: REQUESTED (0: automatic) checked
 * against both active MTUs.  Returns the MTU, or 0 after printing the
 * mismatch and the fix. */
enum ibv_mtu ur_path_mtu(const struct ur_dev *d, const struct ur_ep *remote,
			 enum ibv_mtu requested);

int ur_mtu_bytes(enum ibv_mtu mtu);
/* 256..4096 -> IBV_MTU_*, else 0. */
enum ibv_mtu ur_mtu_from_bytes(int bytes);

/* Moves QP (in INIT) to RTR and RTS towards REMOTE.  On failure says why:
 * a GID index that does not reach the peer (and the one that does), an MTU
 * the path cannot carry. */
int ur_qp_connect(struct ur_dev *d, struct ibv_qp *qp, const struct ur_ep *local,
		  const struct ur_ep *remote, const struct ur_qp_tune *tune);

/* An address handle towards REMOTE for UD sends. */
struct ibv_ah *ur_ah_new(struct ur_dev *d, const struct ur_ep *remote);

/* --- TCP -------------------------------------------------------------------- */

/* Listens on PORT on all addresses (IPv6 and IPv4).  Returns the fd. */
int ur_tcp_listen(int port);

/* Accepts one connection; PEER (may be NULL) gets "addr:port".  -EAGAIN
 * (silently) when LFD is non-blocking and nobody is waiting. */
int ur_tcp_accept(int lfd, char *peer, size_t peerlen);

/* Connects to HOST:PORT within 10 s.  A refusal prints "no server at
 * HOST:PORT: connection refused; HINT". */
int ur_tcp_connect(const char *host, int port, const char *hint);

/* The local address of a connected socket, as text ("10.0.0.1", "fd00::1"). */
int ur_tcp_local_ip(int fd, char *ip, size_t len);
/* The peer's address of a connected socket, as text. */
int ur_tcp_peer_ip(int fd, char *ip, size_t len);

int ur_tcp_write_all(int fd, const void *buf, size_t len);
/* 0, or -EPIPE when the peer closed the connection first. */
int ur_tcp_read_all(int fd, void *buf, size_t len);

/* Both sides wait for each other.  0, or -errno after saying so. */
int ur_tcp_barrier(int fd);

/* --- the exchange ------------------------------------------------------------- */

#define UR_HELLO_WORDS 8

/* Sent first: who is talking and with which parameters, then NEP records. */
struct ur_hello {
	char tool[12];                /* "pingpong", "bench", "srq": refuses a mix-up */
	uint32_t nep;
	uint32_t word[UR_HELLO_WORDS];/* the tool's parameters, its to compare */
};

int ur_hello_send(int fd, const struct ur_hello *h);
/* Receives a hello and checks it comes from TOOL (NULL: any uroce tool). */
int ur_hello_recv(int fd, struct ur_hello *h, const char *tool);
int ur_eps_send(int fd, const struct ur_ep *eps, uint32_t n);
int ur_eps_recv(int fd, struct ur_ep *eps, uint32_t n);

/* The whole exchange, ordered so neither side can block the other: the
 * client sends its hello, the server answers with its own, then the client's
 * NLOCAL records go out and the server's come back (LH->nep is set to
 * NLOCAL).  Both sides check the peer runs the same tool with as many QPs;
 * the peer's hello goes to RH, its records to REMOTE. */
int ur_exchange(int fd, bool server, const struct ur_hello *lh, const struct ur_ep *local,
		struct ur_hello *rh, struct ur_ep *remote, uint32_t nlocal);

#endif
