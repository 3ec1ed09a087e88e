/* uroce capture: the records the library hands over (src/xport/
 * capture_proto.h), turned into IP/UDP frames and written as pcapng,
 * into one file or a ring of files. */
#ifndef UROCE_TOOLS_CAPTURE_H
#define UROCE_TOOLS_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../../src/xport/capture_proto.h"   /* the library's record, compiled in */

/* The output: FILE, or a ring FILE0, FILE1, ... of files up to limit
 * bytes each, the oldest overwritten after nfiles (0: never). */
struct cap_out {
	const char *path;
	uint64_t limit;                /* 0: one file */
	unsigned nfiles;
	unsigned index;                /* the file being written */
	FILE *f;
	uint64_t size;
};

/* Opens the first file: 0, or -errno. */
int cap_out_open(struct cap_out *o);
/* Writes one record (its bytes after the header in body) as a packet,
 * moving to the next file first if this one would pass its limit. */
int cap_out_write(struct cap_out *o, const struct ur_cap_rec *r, const uint8_t *body);
int cap_out_close(struct cap_out *o);

#endif
