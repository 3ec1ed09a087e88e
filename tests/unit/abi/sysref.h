/* The system's rdma-core libibverbs, loaded privately so that a test can
 * compare uroce's answers with the reference implementation's.  Absent
 * library: sysref_open() returns NULL and the comparison is skipped (the
 * test's own expectations still run). */
#ifndef UROCE_TESTS_ABI_SYSREF_H
#define UROCE_TESTS_ABI_SYSREF_H

#include <dlfcn.h>
#include <stdio.h>

static inline void *sysref_open(void)
{
#ifdef UR_SYSTEM_LIBIBVERBS
	void *h = dlopen(UR_SYSTEM_LIBIBVERBS, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		fprintf(stderr, "reference library not loaded: %s\n", dlerror());
	return h;
#else
	fprintf(stderr, "no system libibverbs: reference comparison skipped\n");
	return NULL;
#endif
}

/* The default-version definition, as a program linked today binds it. */
#define sysref_sym(h, name, ver) dlvsym(h, name, ver)

#endif
