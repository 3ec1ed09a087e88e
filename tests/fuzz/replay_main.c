/* Replays the committed packet corpus (or the files and directories given
 * as arguments) through the fuzz target, without libFuzzer, so that any
 * compiler and the ASan unit build run it.
 *
 * A corpus file's name states what it is, checked here on top of "does
 * not crash": ok4-* and ok6-* parse and pass the ICRC for the fuzz target's
 * IPv4 or IPv6 path, icrc-* parse but fail both ICRC checks, and a file
 * named after a parse result (SHORT-*, BAD_PAD-*, ...) gets that result.
 * Anything else (crash-*, fuzzer finds) must merely not crash. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"
#include "wire/pkt_parse.h"

#define MIN_CORPUS_FILES 40

static unsigned files, failures;

static void expect(const char *path, const char *name, const uint8_t *p, size_t n)
{
	struct ur_roce_ip ip4, ip6;
	struct ur_pkt_view v;
	enum ur_parse_result r = ur_pkt_parse(&v, p, n);
	int c4, c6;

	fuzz_ip(&ip4, AF_INET);
	fuzz_ip(&ip6, AF_INET6);
	c4 = ur_icrc_check(&ip4, p, n, NULL);
	c6 = ur_icrc_check(&ip6, p, n, NULL);
	if (!strncmp(name, "ok4-", 4) || !strncmp(name, "ok6-", 4)) {
		if (r != UR_PARSE_OK || (name[2] == '4' ? c4 : c6) != 0) {
			fprintf(stderr, "%s: parse %s, icrc v4 %d v6 %d\n", path,
				ur_parse_result_name[r], c4, c6);
			failures++;
		}
		return;
	}
	if (!strncmp(name, "icrc-", 5)) {
		if (r != UR_PARSE_OK || c4 == 0 || c6 == 0) {
			fprintf(stderr, "%s: parse %s, icrc v4 %d v6 %d, want ICRC failure\n",
				path, ur_parse_result_name[r], c4, c6);
			failures++;
		}
		return;
	}
	for (int want = UR_PARSE_SHORT; want < UR_PARSE_NR; want++) {
		size_t l = strlen(ur_parse_result_name[want]);

		if (!strncmp(name, ur_parse_result_name[want], l) && name[l] == '-') {
			if (r != (enum ur_parse_result)want) {
				fprintf(stderr, "%s: parse %s, want %s\n", path,
					ur_parse_result_name[r], ur_parse_result_name[want]);
				failures++;
			}
			return;
		}
	}
}

static void replay_file(const char *path)
{
	const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "%s: cannot read\n", path);
		failures++;
		if (f)
			fclose(f);
		return;
	}
	/* Exactly n bytes, so ASan sees any read past the packet. */
	buf = malloc(n ? (size_t)n : 1);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "%s: short read\n", path);
		failures++;
	} else {
		LLVMFuzzerTestOneInput(buf, (size_t)n);
		expect(path, name, buf, (size_t)n);
		files++;
	}
	free(buf);
	fclose(f);
}

static void replay(const char *path)
{
	struct stat st;
	struct dirent **ents;
	int n;

	if (stat(path, &st)) {
		fprintf(stderr, "%s: not found\n", path);
		failures++;
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		replay_file(path);
		return;
	}
	n = scandir(path, &ents, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		char full[4096];

		if (ents[i]->d_name[0] != '.') {
			snprintf(full, sizeof(full), "%s/%s", path, ents[i]->d_name);
			replay_file(full);
		}
		free(ents[i]);
	}
	free(ents);
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			replay(argv[i]);
	} else {
		replay(UR_FUZZ_CORPUS_DIR);
		if (files < MIN_CORPUS_FILES) {
			fprintf(stderr, "only %u corpus files in %s\n", files, UR_FUZZ_CORPUS_DIR);
			failures++;
		}
	}
	fprintf(stderr, "%u files replayed, %u failures\n", files, failures);
	return failures ? 1 : 0;
}
