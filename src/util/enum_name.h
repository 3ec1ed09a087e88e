/* An enum and its name table made from one list, so that a member can never
 * lack its name or sit at another's index.  A list is a macro that applies
 * its argument to each (member, "text") row, in the enum's order:
 *
 *   #define UR_FOO_LIST(X) \
 *	X(UR_FOO_IDLE, "idle") \
 *	X(UR_FOO_BUSY, "busy")
 *   UR_ENUM_DECLARE(ur_foo, UR_FOO_LIST, UR_FOO_NR, ur_foo_name);	(foo.h)
 *   UR_ENUM_NAMES(UR_FOO_LIST, UR_FOO_NR, ur_foo_name);		(foo.c)
 *
 * declares enum ur_foo { UR_FOO_IDLE, UR_FOO_BUSY, UR_FOO_NR } and
 * ur_foo_name[UR_FOO_NR] = { "idle", "busy" }: grep the tag to find it.
 * The text is spelled out (not made from the member) because what a log or
 * a tool prints is an interface of its own: "selective_go_backs" is
 * UR_CNT_SELECTIVE_DENSE's. */
#ifndef UROCE_UTIL_ENUM_NAME_H
#define UROCE_UTIL_ENUM_NAME_H

/* A row may carry more columns for its file's own tables (a state
 * machine's step): these two read the first two. */
#define UR_ENUM_MEMBER(member, ...)	member,
#define UR_ENUM_NAME(member, ...)	[member] = UR__ENUM_TEXT(__VA_ARGS__, ),
#define UR__ENUM_TEXT(text, ...)	text

/* The enum, nr (its count) last, and the declaration of its name table. */
#define UR_ENUM_DECLARE(tag, list, nr, names)				\
	enum tag { list(UR_ENUM_MEMBER) nr };				\
	extern const char *const names[nr]

/* The name table, in the enum's .c file. */
#define UR_ENUM_NAMES(list, nr, names)					\
	const char *const names[nr] = { list(UR_ENUM_NAME) }

/* An enum a .c file keeps to itself, with its name table. */
#define UR_ENUM_LOCAL(tag, list, nr, names)				\
	enum tag { list(UR_ENUM_MEMBER) nr };				\
	static UR_ENUM_NAMES(list, nr, names)

/* A table row for an enum someone else defines whose names are its
 * members' own spelling (rdma_event_str's "RDMA_CM_EVENT_..."). */
#define UR_ENUM_SPELLING(member)	[member] = #member

#endif
