/* Replays a committed corpus (UR_FUZZ_CORPUS_DIR) through a fuzz target
 * without libFuzzer, so any compiler and the ASan unit build run it: each
 * file once, in a buffer of exactly its size (ASan sees overreads).  A file
 * named drop-* must be counted as malformed by the target, ok-* must not,
 * anything else must merely not crash (targets that do not judge leave
 * fuzz_dropped at -1).  With UR_FUZZ_NETNS, runs in a private network
 * namespace, and skips (77) without one rather than touch the machine's. */
#include <dirent.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "private_ns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* What the target made of its last input: 1 dropped as malformed, 0 not, -1 no judgement. */
extern int fuzz_dropped;

int main(void)
{
	struct dirent **ents;
	unsigned inputs = 0, failures = 0;
	int n;

#ifdef UR_FUZZ_NETNS
	if (ur_test_private_ns(0)) {
		fprintf(stderr, "cannot create a network namespace (needs root, or "
			"user namespaces as unshare -Urn makes them): skipped\n");
		return 77;
	}
#endif
	n = scandir(UR_FUZZ_CORPUS_DIR, &ents, NULL, alphasort);
	if (n <= 0) {
		fprintf(stderr, "%s: no corpus\n", UR_FUZZ_CORPUS_DIR);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		char path[4096];
		uint8_t *buf;
		long len;
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", UR_FUZZ_CORPUS_DIR, name);
		if (name[0] == '.' || !(f = fopen(path, "rb")))
			goto next;
		if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
			fclose(f);
			goto next;
		}
		buf = malloc(len ? (size_t)len : 1);
		if (fread(buf, 1, (size_t)len, f) == (size_t)len) {
			fuzz_dropped = -1;
			LLVMFuzzerTestOneInput(buf, (size_t)len);
			inputs++;
			if ((!strncmp(name, "drop-", 5) && fuzz_dropped != 1) ||
			    (!strncmp(name, "ok-", 3) && fuzz_dropped != 0)) {
				fprintf(stderr, "%s: %s, want %s\n", path,
					fuzz_dropped == 1 ? "dropped as malformed" : "not dropped",
					name[0] == 'd' ? "dropped" : "taken");
				failures++;
			}
		}
		free(buf);
		fclose(f);
next:
		free(ents[i]);
	}
	free(ents);
	fprintf(stderr, "%u inputs replayed, %u not as their names say\n", inputs, failures);
	return inputs && !failures ? 0 : 1;
}
