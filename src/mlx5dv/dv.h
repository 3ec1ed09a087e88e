/* What the parts of uroce's libmlx5.so.1 share.  The library presents
 * mlx5's direct-verbs ABI (infiniband/mlx5dv.h) over uroce's
 * libibverbs.so.1: DC QPs through dc_abi.h, everything else refused. */
#ifndef UROCE_MLX5DV_DV_H
#define UROCE_MLX5DV_DV_H

/* DCI streams a DCI accepts, as log2 (mlx5dv_dci_streams_caps): they share
 * the one DCI and its send queue, one after another, so the number only
 * bounds what a program may ask for; no stream has an error state of its
 * own (max_log_num_errored is 0). */
#define DV_DCI_MAX_LOG_STREAMS 4

#endif
