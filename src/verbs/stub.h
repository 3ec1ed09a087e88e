/* The one way uroce writes an exported entry point it does not implement:
 * libibverbs' provider interface (verbs/private_compat.c) and the verbs
 * that need a kernel (importing objects, dma-buf, layer-2 resolution:
 * verbs/mr.c, device.c, gid.c), librdmacm's ECE calls
 * (rdmacm/unsupported.c) and the mlx5 features a uroce device has no
 * counterpart of (mlx5dv/unsupported.c).
 *
 * UR_STUB() defines NAME, exported, with the return TYPE and parameter list
 * PARAMS of its ABI: it runs NOTE (a statement: UR_STUB_QUIET, or what its
 * library does when reached, such as logging once), sets errno to EOPNOTSUPP
 * and returns FAIL, the failure value of that function's contract (an errno
 * value, -1 or NULL).  UR_STUB_VOID() is the same for a function with
 * nothing to return, which only runs NOTE.
 *
 * Each defines the prototype as well, so that a stub whose library installs
 * no header still builds under -Wmissing-prototypes; where a header declares
 * it, the compiler checks the stub against that declaration. */
#ifndef UROCE_VERBS_STUB_H
#define UROCE_VERBS_STUB_H

#include <errno.h>

#include "util/compiler.h"

#define UR_STUB_QUIET ((void)0)

#define UR_STUB(note, type, name, params, fail)                            \
	type name params;                                                   \
	UR_EXPORT type name params                                          \
	{                                                                   \
		note;                                                       \
		errno = EOPNOTSUPP;                                         \
		return fail;                                                \
	}

#define UR_STUB_VOID(note, name, params)                                    \
	void name params;                                                   \
	UR_EXPORT void name params                                          \
	{                                                                   \
		note;                                                       \
	}

#endif
