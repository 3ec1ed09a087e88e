/* uroce pingpong: one QP between two processes, exercising one operation in
 * ping-pong fashion (send, send-imm, write, write-imm) or driven by the
 * client alone (read, cas, faa), optionally validating every byte. */
#ifndef UROCE_TOOLS_PP_H
#define UROCE_TOOLS_PP_H

#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "opts.h"

enum pp_op { PP_SEND, PP_SEND_IMM, PP_WRITE, PP_WRITE_IMM, PP_READ, PP_CAS, PP_FAA, PP_NOPS };

struct pp_opts {
	struct ur_conn_opts conn;       /* -d -i -g -p -m */
	const char *server;     /* NULL: this is the server */
	enum pp_op op;
	enum ibv_qp_type qpt;
	uint32_t size;
	uint32_t iters;
	bool events, validate, use_inline;
};

/* Everything one side holds during a run. */
struct pp {
	struct pp_opts o;
	bool server;
	int fd;                 /* the TCP connection to the peer */
	bool peer_sent;         /* the peer has written on it (no EOF check needed) */
	struct ur_dev d;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;      /* UD */
	uint8_t *buf;           /* [0, size): what we send / read results; [rx_off, ...): what arrives */
	size_t buf_len, rx_off;
	struct ibv_mr *mr;
	struct ur_ep local, remote;
	enum ibv_mtu path_mtu;
	uint64_t validated;     /* messages checked */
	/* The peer's next message, arrived while we waited for our send's
	 * completion (the peer saw our message before our side saw its ACK:
	 * a lost ACK, a retry); it belongs to the next iteration. */
	bool early;
	struct ibv_wc early_wc;
};

const char *pp_op_name(enum pp_op op);
const char *pp_qpt_name(enum ibv_qp_type t);
bool pp_op_one_sided(enum pp_op op);  /* read, cas, faa: the server stays passive */
bool pp_op_atomic(enum pp_op op);

/* Parses argv into O; returns UR_OPT_HELP after printing help (exit 0), or
 * the exit code for bad arguments, or 0. */
int pp_parse(int argc, char **argv, struct pp_opts *o);

/* Connect, create, exchange, move to RTS (pp_setup.c). 0 or an exit code. */
int pp_setup(struct pp *p);
void pp_teardown(struct pp *p);

/* The measured loop (pp_run.c); 0 or an exit code. */
int pp_run(struct pp *p);

/* Patterns (pp_run.c): byte I of message ITER sent by the server or the client. */
uint8_t pp_pattern(uint32_t iter, size_t i, bool from_server);

/* The atomic word's initial value and the client's plan for iteration K. */
#define PP_ATOMIC_INIT 0x55524f4300000000ull
void pp_atomic_step(enum pp_op op, uint32_t k, uint64_t cur, uint64_t *compare_add,
		    uint64_t *swap, uint64_t *next);

#endif
