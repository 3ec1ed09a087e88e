/* Device limits, reported by ibv_query_device and enforced at creation
 * (object counts per process and device: ur_device_obj_get).
 * The values follow Linux rxe where it has one, so that programs tuned for
 * rxe size their queues the same way on uroce; the CQ depth follows mlx5
 * instead (rxe's 32767 is too small for libfabric's ofi_rxm, which asks
 * for (rx + tx) x 256 peers): a CQ's ring is calloc'd, so its pages cost
 * only once completions reach them. */
#ifndef UROCE_CORE_LIMITS_H
#define UROCE_CORE_LIMITS_H

#define UR_MAX_QP            65536
#define UR_MAX_QP_WR         16384
#define UR_MAX_SGE           32
#define UR_MAX_SGE_RD        32
#define UR_MAX_INLINE        400
#define UR_MAX_CQ            16384
#define UR_MAX_CQE           4194303
#define UR_MAX_MR            65536
#define UR_MAX_MW            65536
#define UR_MAX_PD            32764
#define UR_MAX_QP_RD_ATOM    128
#define UR_MAX_SRQ           8192
#define UR_MAX_SRQ_WR        16384
#define UR_MAX_SRQ_SGE       27
#define UR_MAX_AH            65536
#define UR_MAX_MCAST_GRP     256      /* the host registry's group table */
#define UR_MAX_MCAST_QP_ATTACH 56
#define UR_MAX_TOTAL_MCAST_QP_ATTACH 4096
#define UR_MAX_PKEYS         1
#define UR_LOCAL_ACK_DELAY   15
#define UR_MAX_DM_BYTES      (256 * 1024)  /* device memory (ibv_alloc_dm), per allocation */
#define UR_MAX_MSG_SZ        0x40000000u   /* 1 GiB */
#define UR_MAX_MTU           IBV_MTU_4096

/* The vendor part id reported under no vendor (0xffffff, rxe's): perftest
 * names a device by its part id alone and posts through ibv_wr_* (the only
 * path with DC) for those it knows, 4115 among them in every version that
 * decides so (4.4-0.37 on); for others it calls ibv_post_send, which cannot
 * name a DC target.  Programs that key quirks on a part id (UCX, Open MPI,
 * pyverbs' tests) pair it with the vendor id, which matches none of theirs.
 * UROCE_VENDOR_PART_ID replaces it. */
#define UR_VENDOR_PART_ID    4115

#endif
