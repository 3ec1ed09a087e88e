#!/usr/bin/env bash
# ctest-timeout: 600
# ctest-labels: tsan
# The verbs API beyond what the Debian clients use, through test programs
# of tests/integ/progs (two QPs of one process connected through the device):
#  - datapath: inline data, multi-SGE gather/scatter, unsignaled WRs, the
#    completion fields of every opcode (zero-length ones and a 1 MiB SEND
#    too), an SRQ shared by two QPs, UD with its GRH and ibv_create_ah_from_wc;
#  - ex_api: ibv_create_cq_ex + ibv_start_poll reading wr_id, opcode,
#    qp_num, src_qp, byte_len, imm_data, wc_flags; ibv_wr_* for every RC
#    opcode and data form, UD, ibv_wr_abort; memory windows (type 1 and 2,
#    local and remote invalidation); ATOMIC WRITE;
#  - tm: tag matching: tagged buffers added, deleted, synced; EAGER
#    messages matched, unexpected, NO_TAG; rendezvous READ and FIN, and a
#    rendezvous naming a bad key;
#  - unsupported: every optional feature agrees with its capability bits or
#    fails with EOPNOTSUPP, never a fake success.
# On uroce0 (lo) with its IPv4 and IPv6 GIDs, and on a 1500-byte veth in a
# namespace.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/progs_lib.sh"
UR_TIMEOUT=240

prog_lo_gids

for p in datapath ex_api unsupported tm; do
	prog_run "lo.$p" "$p" uroce0 "${g4:-1}"
done
prog_run lo6.datapath datapath uroce0 "${g6:-2}"
prog_run lo6.ex_api ex_api uroce0 "${g6:-2}"

ur_netns_pair 1500
UR_NS=$UR_NS_A prog_run veth.datapath datapath uroce1 1
UR_NS=$UR_NS_A prog_run veth.ex_api ex_api uroce1 1
UR_NS=$UR_NS_A prog_run veth.tm tm uroce1 1

ur_done
