/* Per-QP state of the three protocol roles (the split Linux rxe uses):
 * the requester turns send WQEs into request packets, the completer turns
 * responses into completions and drives retransmission, the responder
 * executes incoming requests and answers them.  The state is the QP
 * object's (as rxe keeps it in struct rxe_qp); the protocol that runs it
 * is src/rel's. */
#ifndef UROCE_CORE_QP_PROTO_H
#define UROCE_CORE_QP_PROTO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/srq_tm.h"

struct ur_recv_wqe;
struct ur_pd;

struct ur_req_state {
	uint32_t psn;            /* next PSN to send */
	uint32_t psn_max;        /* one past the highest PSN ever sent: go-back-N
				  * lowers psn, not this; responses up to it count */
	uint32_t wqe;            /* SQ index of the WQE being packetized */
	int opcode;              /* BTH opcode last sent mid-message, -1 between messages */
	uint32_t rd_atomic;      /* READ/ATOMIC requests awaiting their responses */
	uint32_t noack;          /* packets sent since one asked for an ACK */
	uint32_t cwnd;           /* packets allowed in flight (AIMD) */
	bool recovering;         /* the window was halved for a loss, and no more
				  * until recover_psn is acknowledged */
	uint32_t recover_psn;
	bool blocked;            /* the transport had no room: resume when writable */
	uint64_t blocked_ns;     /* since when it waits for a turn without sending */
	bool rnr_wait;           /* waiting out an RNR NAK timer */
	bool force_ackreq;       /* the packet being sent asks for an ACK */
	bool ask_ack;            /* so does the next data packet: the first of a
				  * resend after a timeout (rel/comp.c, retry) */
	bool sel_pending;        /* comp.sel_psn waits for room to be resent */
	bool place_ok;           /* large WRITEs and READs offered are copied straight
				  * into place (rel/req.c, waits_to_place) */
	uint8_t place_probe;     /* large ones since they were not, to try again */
	uint8_t place_missing;   /* refused in a row as not published (a region moving) */
};

/* A counted retry, as the QP saw it (rel/giveup.c): when, why (the timer,
 * or the answer that started it: its BTH opcode and AETH syndrome), where
 * the requester stood, and the QP's packet counts by then. */
#define UR_RETRY_MARKS 8u
struct ur_retry_mark {
	uint64_t ns;
	bool timer;
	uint8_t opcode, syn;     /* else the answer's */
	uint32_t psn;            /* oldest unacknowledged */
	uint32_t sent_psn;       /* next to send, before going back */
	uint64_t rcvd, sent;     /* the QP's rcvd_pkts, sent_pkts */
	uint64_t early;          /* its go-backs that did not count, so far */
};

enum ur_peer_holds {
	UR_PEER_HOLDS_UNKNOWN = 0,
	UR_PEER_HOLDS_YES,
	UR_PEER_HOLDS_NO,
};

struct ur_comp_state {
	uint32_t psn;            /* oldest PSN not yet acknowledged */
	uint32_t retry_left;
	uint32_t rnr_retry_left;
	bool retrying;           /* a retry started and nothing progressed since:
				  * later packets telling of the same loss do not
				  * start another (a timeout still does) */
	uint64_t retrans_deadline;   /* ns, 0 = off */
	uint64_t rnr_deadline;       /* ns, 0 = off */
	/* The measured round trip (timers.c): one PSN timed at a time, none
	 * while a retry is under way (Karn), srtt 0 until the first sample. */
	uint64_t srtt_ns, rttvar_ns;
	uint64_t rtt_sent_ns;        /* when rtt_psn left; 0 = none timed */
	uint32_t rtt_psn;
	uint8_t backoff;             /* early retries since progress: RTO << backoff */
	/* Start of the QP-timeout period that a retry counts against: the
	 * last progress, or the last counted retry. */
	uint64_t period_ns;
	/* Since when a local peer process has been behind, reading what we
	 * sent (timers.c); 0: none since the last progress. */
	uint64_t behind_ns;
	/* While the last period found a reader of this host behind
	 * (behind_seen), early retries go back only after gaps that double
	 * (timers.c): when one last went back, and the gap to the next. */
	bool behind_seen;
	uint64_t hold_back_ns, hold_gap_ns;
	/* The processes of this host that may be the peer, as last seen
	 * (rel/starved.c): their threads' time run then, whether one was
	 * runnable, and when that look was taken; and since when their
	 * waiting for a CPU has kept retries from counting (0: not since the
	 * last progress). */
	pid_t starve_pid[4];
	uint64_t starve_ran[4];
	bool starve_runnable[4];
	uint64_t starve_at[4];
	uint64_t starved_ns;
	/* Selective retransmission (rel/held.h): whether the responder holds
	 * what follows a gap (learnt from its answer to the first packet
	 * resent alone), and sel_psn, the one packet resent for its NAK. */
	uint8_t peer_holds;          /* enum ur_peer_holds */
	uint8_t holds_misses;        /* answers that showed nothing held, before a yes */
	uint32_t sel_next, sel_run;  /* the last run resent alone: [next - run, next) */
	bool sel_sent;
	uint32_t sel_psn;
	/* sel_psn went alone because the timer fired (a probe, comp.c): the
	 * answer tells where the responder stands.  Cleared by progress.
	 * probe_end: what the requester had sent when the timer fired; what
	 * is outstanding below it once the probe is answered was lost. */
	bool probing;
	uint32_t probe_end;
	/* Gaps NAKed among the packets in flight when the first of them was:
	 * [first gap, sel_flight_end). */
	uint8_t sel_gaps;
	uint32_t sel_flight_end;
	bool sel_dense;              /* the last flight had too many gaps */
	bool sel_gone_back;          /* went back for density, over [.., sel_gb_end) */
	uint32_t sel_gb_end;
	/* When each outstanding PSN was last resent alone, in the order of
	 * those resends (0: not resent; rel_priv.h), so that a GAP_AGAIN
	 * tells a lost resend from one still on its way. */
	uint16_t rs_seq;
	bool rs_any;                 /* some stamp may be set, below rs_end */
	uint32_t rs_end;             /* one past the newest PSN stamped */
	uint16_t rs_stamp[128];      /* by PSN modulo the largest window */
	/* For the lines a QP that gives up logs (rel/giveup.c): the last
	 * progress, and the counted retries since. */
	uint64_t progress_ns;
	uint64_t early_retries;      /* go-backs that did not count, ever */
	uint8_t nmarks;
	struct ur_retry_mark marks[UR_RETRY_MARKS];
};

enum ur_res_type {
	UR_RES_FREE = 0,
	UR_RES_READ,
	UR_RES_ATOMIC,
};

/* A READ or ATOMIC the responder must answer, kept so that a duplicate
 * request is answered again without executing twice. */
struct ur_resp_res {
	uint8_t type;
	bool pending;            /* responses still to send */
	bool answered;           /* the whole answer went out once, or this is a
				  * repeat: the requester no longer counts it
				  * against its limit */
	bool placed;             /* the requester fetched the bytes itself: one
				  * response of headers */
	uint32_t first_psn, last_psn;
	uint32_t cur_psn;        /* next response PSN to send (reads) */
	uint32_t msn;
	uint64_t va;             /* next byte to read */
	uint32_t rkey;
	uint32_t resid;          /* bytes still to send */
	uint32_t length;         /* whole read, to tell FIRST from MIDDLE */
	uint64_t atomic_orig;    /* the value an atomic returned */
	uint8_t syndrome;        /* AETH of an atomic ACK */
	struct ur_pd *pd;        /* the PD the read's rkey is checked in */
};

/* What an atomic returned, kept by PSN so that a duplicate is answered
 * without executing again.  Apart from the READ/ATOMIC ring: a duplicate
 * is answered from its original's slot while the ring holds it, but one
 * whose slot went to a newer request takes a slot of its own, and the
 * result must outlive that. */
struct ur_atomic_result {
	bool valid;
	uint32_t psn;
	uint32_t msn;
	uint64_t orig;
};

/* ACKs the receiving thread left for the QP's lock holder (rel/inbox.h):
 * while the holder builds work requests or copies a large WRITE or READ
 * into or out of the peer's memory, an ACK arriving for the QP is put here
 * instead of making its thread wait on the lock, and the holder's run step
 * takes it.
 * Bytes of the packet as received (BTH, AETH, maybe AtomicAckETH, ICRC). */
#define UR_INBOX_SLOTS 8u
#define UR_INBOX_PKT_MAX 32u

struct ur_inbox_pkt {
	uint8_t len;
	uint8_t bytes[UR_INBOX_PKT_MAX];
	uint8_t sgid[16];        /* the sender's address, checked against the peer's */
};

struct ur_inbox {
	uint32_t spin;           /* guards what follows; not the QP's lock */
	bool open;               /* the lock holder takes what is put here */
	uint8_t n;
	uint32_t covered;        /* ACKs whose slot a newer one took, not yet counted */
	struct ur_inbox_pkt pkt[UR_INBOX_SLOTS];
};

struct ur_resp_state {
	uint32_t psn;            /* next request PSN expected */
	uint32_t msn;            /* messages completed */
	int opcode;              /* last request opcode mid-message, -1 between */
	bool nak_sent;           /* one sequence NAK per gap, not a storm */
	bool rnr_sent;           /* the expected PSN was RNR NAKed: what
				  * follows it is dropped unanswered until
				  * it comes again (the requester goes back
				  * to it and sends all after it anew) */
	bool drop_msg;           /* UC: drop packets until the next FIRST/ONLY */
	bool peer_selective;     /* the requester marks its requests: hold what
				  * arrives past a gap (rel/held.h) */
	bool draining;           /* executing held packets: one answer at the end */
	uint32_t seen_end;       /* while packets are held: one past the newest
				  * PSN seen, so that only new gaps are reported */
	bool drain_ackreq;       /* one of them asked for an ACK */

	/* a SEND spanning several packets */
	bool recv_active;
	uint32_t recv_offset;
	struct ur_recv_wqe *rwqe;    /* private copy, sized for max_recv_sge */
	bool recv_from_srq;
	/* ... into a tag-matching SRQ: what it matched, and how many of its
	 * first bytes are not placed (a matched message's TMH; all of a
	 * rendezvous request, whose data is READ instead) */
	struct ur_tm_match tm;
	uint32_t tm_skip;

	/* an RDMA WRITE spanning several packets */
	uint64_t write_va;
	uint32_t write_rkey;
	uint32_t write_resid;
	uint32_t write_length;

	/* the ACK or NAK to send once queued responses are out */
	bool ack_pending;
	bool ack_held;                  /* ... at the end of this batch (resp_batch.h) */
	uint8_t ack_syn;
	uint32_t ack_psn;
	uint32_t ack_msn;

	/* READ/ATOMIC resources: a ring of max_dest_rd_atomic entries; the
	 * ones marked pending go out in ring order, which is PSN order. */
	struct ur_resp_res *res;
	uint32_t nres;
	uint32_t res_next;       /* slot the next request takes */
	uint32_t res_tx;         /* oldest slot that may still have output */
	struct ur_atomic_result *atomics;   /* nres entries, allocated with res */
	uint32_t atomic_next;

	/* XRC target, a packet for another process's SRQ (xrc.c) */
	bool xrc_msg_foreign;    /* the message in progress (opcode >= 0) is */
	pid_t xrc_pid;           /* the SRQ's owner */
	uint32_t xrc_srqn;
	bool xrc_wait;           /* handed over: parked until the owner answers */
	bool xrc_dropped;        /* later PSNs arrived while parked: NAK the gap */
	uint8_t xrc_opcode;      /* the parked packet's opcode */
	uint64_t xrc_sent_ns;    /* when it was (last) handed over */
};

#endif
