/* A tiny assert header for unit tests: each failed check prints where and
 * what, the test keeps going, and main() returns non-zero if anything failed. */
#ifndef UROCE_TESTS_UT_H
#define UROCE_TESTS_UT_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ut_failures;
static int ut_checks;

/* Counted atomically: a check may run on an engine thread's callback. */
#define UT_COUNT_(v) __atomic_add_fetch(&(v), 1, __ATOMIC_RELAXED)
#define UT_READ_(v) __atomic_load_n(&(v), __ATOMIC_RELAXED)

#define UT_CHECK(cond)                                                      \
	do {                                                                \
		UT_COUNT_(ut_checks);                                       \
		if (!(cond)) {                                              \
			UT_COUNT_(ut_failures);                             \
			fprintf(stderr, "%s:%d: %s: check failed: %s\n",    \
				__FILE__, __LINE__, __func__, #cond);       \
		}                                                           \
	} while (0)

#define UT_EQ(a, b)                                                         \
	do {                                                                \
		long long _ua = (long long)(a), _ub = (long long)(b);       \
		UT_COUNT_(ut_checks);                                       \
		if (_ua != _ub) {                                           \
			UT_COUNT_(ut_failures);                             \
			fprintf(stderr,                                     \
				"%s:%d: %s: %s == %s failed: %lld != %lld\n", \
				__FILE__, __LINE__, __func__, #a, #b, _ua, _ub); \
		}                                                           \
	} while (0)

#define UT_MEMEQ(a, b, n) UT_CHECK(memcmp((a), (b), (n)) == 0)

/* Whether this is a ThreadSanitizer build (gcc says so with a macro,
 * clang with a feature): a test it cannot judge says why and skips. */
#if defined(__SANITIZE_THREAD__)
#define UT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UT_TSAN 1
#endif
#endif
#ifndef UT_TSAN
#define UT_TSAN 0
#endif

/* UT_ONLY=name runs only that test (to replay one while debugging). */
#define UT_RUN(fn)                                                          \
	do {                                                                \
		int _before = UT_READ_(ut_failures);                        \
		const char *_only = getenv("UT_ONLY");                      \
		if (_only && strcmp(_only, #fn))                            \
			break;                                              \
		fn();                                                       \
		fprintf(stderr, "%-6s %s\n",                                \
			UT_READ_(ut_failures) == _before ? "ok" : "FAIL", #fn); \
	} while (0)

/* A test in a table, named as UT_RUN names it: UT_CASE(test_x).  A long
 * list of tests reads better as a table than as a main() of UT_RUNs. */
struct ut_case {
	const char *name;
	void (*fn)(void);
};

#define UT_CASE(fn) { #fn, fn }

/* Runs a table of tests in order, each as UT_RUN would. */
static inline void ut_run_cases(const struct ut_case *c, size_t n)
{
	const char *only = getenv("UT_ONLY");

	for (size_t i = 0; i < n; i++) {
		int before = UT_READ_(ut_failures);

		if (only && strcmp(only, c[i].name))
			continue;
		c[i].fn();
		fprintf(stderr, "%-6s %s\n", UT_READ_(ut_failures) == before ? "ok" : "FAIL",
			c[i].name);
	}
}

#define UT_DONE()                                                           \
	({                                                                  \
		fprintf(stderr, "%d checks, %d failed\n", UT_READ_(ut_checks), \
			UT_READ_(ut_failures));                             \
		(UT_READ_(ut_failures) || !UT_READ_(ut_checks)) ? 1 : 0;    \
	})

#endif
