/* The data path's copy.
 *
 * glibc copies blocks of 2 KiB and more with `rep movsb` on CPUs that
 * advertise fast string moves (ERMS/FSRM).  On some virtual machines that
 * instruction is slow (seen: 1.9 GB/s for 4 KiB blocks on an AMD EPYC
 * guest, where vector moves run at 60+ GB/s), and packet-sized blocks are
 * exactly what uroce copies.  ur_memcpy moves medium blocks with AVX2 loads
 * and stores when the CPU has them and leaves the rest to memcpy. */
#ifndef UROCE_UTIL_COPY_H
#define UROCE_UTIL_COPY_H

#include <stddef.h>
#include <string.h>

void ur_memcpy_medium(void *dst, const void *src, size_t n);

static inline void ur_memcpy(void *dst, const void *src, size_t n)
{
	if (n < 2048 || n > (256u << 10))
		memcpy(dst, src, n);
	else
		ur_memcpy_medium(dst, src, n);
}

#endif
