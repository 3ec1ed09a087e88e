/* uroce res: every QP, CQ, MR and rdma_cm id of the host's uroce
 * processes, with its owner, as `rdma res show` prints a kernel's: one
 * line each ("link uroce0/1 lqpn 17 ... pid 1234 comm prog"), -j as JSON,
 * -d with details, filters as rdma's ("lqpn 17", "pid 1234", "link DEV"). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "res.h"
#include "uroce.h"

static const char res_help[] =
	"usage: uroce res [-j] [-d] [-t MS] [show] [qp|cq|mr|cm_id] [FILTER VALUE]...\n"
	"\n"
	"The live objects of this user's uroce processes in this network namespace\n"
	"(root: every user's), as `rdma res show` prints a kernel's.  Without an\n"
	"object kind: each device's counts.\n"
	"  -j, --json          JSON: one array of objects\n"
	"  -d, --details       more fields: MR keys and access, every per-QP counter,\n"
	"                      CQ use\n"
	"  -t, --timeout=MS    how long to wait for the processes' answers (1000)\n"
	"filters (all must match): link DEV[/PORT], dev DEV, pid N, comm NAME, or any\n"
	"field and its value (lqpn 17, type RC, state RTS, cqe 64 ...)\n"
	"\n"
	"examples:\n"
	"  uroce res\n"
	"  uroce res show qp\n"
	"  uroce res qp lqpn 17 -d\n"
	"  uroce res -j cq pid 1234\n";

struct filter {
	const char *key, *val;
};

static const char *const kinds[] = { "qp", "cq", "mr", "cm_id" };

static bool is_number(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static bool field_matches(const struct ur_res_obj *o, const struct filter *f)
{
	char num[32];
	const char *v;

	if (!strcmp(f->key, "pid")) {
		snprintf(num, sizeof(num), "%d", (int)o->pid);
		return !strcmp(num, f->val);
	}
	if (!strcmp(f->key, "comm"))
		return !strcmp(o->comm, f->val);
	if (!strcmp(f->key, "link") || !strcmp(f->key, "dev")) {
		const char *dev = ur_res_get(o, "ifname"), *port = ur_res_get(o, "port");
		size_t dl = dev ? strlen(dev) : 0;

		if (!dev || strncmp(f->val, dev, dl))
			return false;
		return !f->val[dl] || (f->val[dl] == '/' && port && !strcmp(f->val + dl + 1, port));
	}
	v = ur_res_get(o, f->key);
	return v && !strcmp(v, f->val);
}

static bool matches(const struct ur_res_obj *o, const char *kind, const struct filter *f, int nf)
{
	if (strcmp(o->kind, kind))
		return false;
	for (int i = 0; i < nf; i++)
		if (!field_matches(o, &f[i]))
			return false;
	return true;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void print_json(const struct ur_res_obj *o, bool details)
{
	const char *sep = "";

	putchar('{');
	for (int i = 0; i < o->nfields; i++) {
		const struct ur_res_field *f = &o->fields[i];

		if (f->detail && !details)
			continue;
		printf("%s", sep);
		json_str(f->key);
		putchar(':');
		if (is_number(f->val))
			printf("%s", f->val);
		else
			json_str(f->val);
		sep = ",";
	}
	printf("%s\"pid\":%d,\"comm\":", sep, (int)o->pid);
	json_str(o->comm);
	putchar('}');
}

/* rdma's line: "link DEV/PORT" (or "dev DEV"), the fields, pid, comm. */
static void print_text(const struct ur_res_obj *o, bool details)
{
	const char *dev = ur_res_get(o, "ifname"), *port = ur_res_get(o, "port");

	if (dev && port)
		printf("link %s/%s ", dev, port);
	else if (dev)
		printf("dev %s ", dev);
	for (int i = 0; i < o->nfields; i++) {
		const struct ur_res_field *f = &o->fields[i];

		if ((f->detail && !details) || !strcmp(f->key, "ifname") || !strcmp(f->key, "port"))
			continue;
		printf("%s %s ", f->key, f->val);
	}
	printf("pid %d comm %s\n", (int)o->pid, o->comm);
}

/* An object's number within its kind, for the order of the list. */
static unsigned long obj_number(const struct ur_res_obj *o)
{
	static const char *const ids[] = { "lqpn", "cqn", "mrn", "cm-idn" };
	const char *v = NULL;

	for (size_t i = 0; !v && i < sizeof(ids) / sizeof(ids[0]); i++)
		v = ur_res_get(o, ids[i]);
	return v ? strtoul(v, NULL, 10) : 0;
}

/* By kind, then owner, then number: as rdma lists. */
static int by_kind_pid_number(const void *a, const void *b)
{
	const struct ur_res_obj *x = a, *y = b;
	unsigned long nx = obj_number(x), ny = obj_number(y);
	int c = strcmp(x->kind, y->kind);

	if (c)
		return c;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (nx > ny) - (nx < ny);
}

/* "0: uroce0: pd 1 cq 2 qp 3 cm_id 0 mr 2 ctx 1", summed over processes. */
static void print_summary(const struct ur_res_set *set, bool json)
{
	const char *names[64];
	int ndev = 0;

	for (int i = 0; i < set->n; i++) {
		const char *d = ur_res_get(&set->objs[i], "ifname");
		int j;

		for (j = 0; d && j < ndev && strcmp(names[j], d); j++)
			;
		if (d && j == ndev && ndev < 64)
			names[ndev++] = d;
	}
	for (int a = 0; a < ndev; a++)           /* by name: uroce0, uroce1 ... */
		for (int b = a + 1; b < ndev; b++)
			if (strcmp(names[a], names[b]) > 0) {
				const char *t = names[a];

				names[a] = names[b];
				names[b] = t;
			}
	if (json)
		putchar('[');
	for (int d = 0; d < ndev; d++) {
		unsigned long pd = 0, ctx = 0, cnt[4] = { 0 };

		for (int i = 0; i < set->n; i++) {
			const struct ur_res_obj *o = &set->objs[i];
			const char *od = ur_res_get(o, "ifname");

			if (!od || strcmp(od, names[d]))
				continue;
			if (!strcmp(o->kind, "dev")) {
				pd += strtoul(ur_res_get(o, "pd") ?: "0", NULL, 10);
				ctx += strtoul(ur_res_get(o, "ctx") ?: "0", NULL, 10);
			}
			for (int k = 0; k < 4; k++)
				cnt[k] += !strcmp(o->kind, kinds[k]);
		}
		if (json)
			printf("%s{\"ifindex\":%d,\"ifname\":\"%s\",\"pd\":%lu,\"cq\":%lu,\"qp\":%lu,"
			       "\"cm_id\":%lu,\"mr\":%lu,\"ctx\":%lu}", d ? "," : "", d, names[d],
			       pd, cnt[1], cnt[0], cnt[3], cnt[2], ctx);
		else
			printf("%d: %s: pd %lu cq %lu qp %lu cm_id %lu mr %lu ctx %lu\n", d, names[d],
			       pd, cnt[1], cnt[0], cnt[3], cnt[2], ctx);
	}
	if (json)
		printf("]\n");
}

int cmd_res(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "details", no_argument, NULL, 'd' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct ur_res_set set = { 0 };
	struct filter filters[16];
	const char *kind = NULL, *words[64];
	bool json = false, details = false;
	int c, nwords = 0, nf = 0, timeout = 1000, ret, w = 0;
	char *end;

	optind = 1;
	while ((c = getopt_long(argc, argv, "-jdt:h", opts, NULL)) != -1) {
		switch (c) {
		case 1:         /* operands in order, among the options */
			if (nwords == 64) {
				fprintf(stderr, "uroce res: too many arguments\n");
				return UR_EXIT_USAGE;
			}
			words[nwords++] = optarg;
			break;
		case 'j': json = true; break;
		case 'd': details = true; break;
		case 't':
			timeout = (int)strtol(optarg, &end, 10);
			if (*end || timeout < 1 || timeout > 600000) {
				fprintf(stderr, "uroce res: -t %s: milliseconds, 1 to 600000\n", optarg);
				return UR_EXIT_USAGE;
			}
			break;
		case 'h': fputs(res_help, stdout); return UR_EXIT_OK;
		default: fputs(res_help, stderr); return UR_EXIT_USAGE;
		}
	}
	if (w < nwords && !strcmp(words[w], "show"))
		w++;
	if (w < nwords) {
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
			if (!strcmp(words[w], kinds[k]))
				kind = kinds[k];
		if (!kind) {
			fprintf(stderr, "uroce res: unknown object '%s': qp, cq, mr or cm_id\n",
				words[w]);
			return UR_EXIT_USAGE;
		}
		w++;
	}
	for (; w < nwords; w += 2) {
		if (w + 1 == nwords || nf == 16) {
			fprintf(stderr, "uroce res: filter '%s' needs a value\n", words[w]);
			return UR_EXIT_USAGE;
		}
		filters[nf++] = (struct filter){ words[w], words[w + 1] };
	}
	if (nf && !kind) {
		fprintf(stderr, "uroce res: filters need an object kind (qp, cq, mr, cm_id)\n");
		return UR_EXIT_USAGE;
	}

	ret = ur_res_query(&set, timeout);
	if (ret) {
		fprintf(stderr, "uroce res: cannot ask the processes: %s\n", strerror(-ret));
		ur_res_set_free(&set);
		return UR_EXIT_FAIL;
	}
	if (set.n)   /* qsort wants a base even for nothing */
		qsort(set.objs, (size_t)set.n, sizeof(set.objs[0]), by_kind_pid_number);
	for (int i = 0; i < set.n; i++)
		if (!strcmp(set.objs[i].kind, "busy"))
			fprintf(stderr, "uroce res: process %d was busy: its %s objects are left out "
				"(ask again)\n", (int)set.objs[i].pid,
				ur_res_get(&set.objs[i], "what") ?: "");
	if (!kind) {
		print_summary(&set, json);
	} else {
		const char *sep = "";

		if (json)
			putchar('[');
		for (int i = 0; i < set.n; i++) {
			if (!matches(&set.objs[i], kind, filters, nf))
				continue;
			if (json) {
				printf("%s", sep);
				print_json(&set.objs[i], details);
				sep = ",";
			} else {
				print_text(&set.objs[i], details);
			}
		}
		if (json)
			printf("]\n");
	}
	ur_res_set_free(&set);
	return UR_EXIT_OK;
}
