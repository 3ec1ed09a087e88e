/* Replays the packet corpus through the receive-path fuzz target with the
 * ordinary compiler (and the ASan build): every file, aimed at each of the
 * four QPs.  Needs its own network namespace (root); exits 77 (skip)
 * without one rather than touching the machine's. */
#include <dirent.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "private_ns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : UR_FUZZ_CORPUS_DIR;
	struct dirent **ents;
	unsigned inputs = 0;
	int n;

	if (ur_test_private_ns(0)) {
		fprintf(stderr, "cannot create a network namespace (needs root, or "
			"user namespaces as unshare -Urn makes them): skipped\n");
		return 77;
	}
	n = scandir(dir, &ents, NULL, alphasort);
	if (n <= 0) {
		fprintf(stderr, "%s: no corpus\n", dir);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		char path[4096];
		uint8_t buf[16385];
		size_t len;
		FILE *f;

		if (ents[i]->d_name[0] == '.')
			goto next;
		snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
		f = fopen(path, "rb");
		if (!f)
			goto next;
		len = fread(buf + 1, 1, sizeof(buf) - 1, f);
		fclose(f);
		for (int sel = 0; sel < 16; sel++) {
			uint8_t *in = malloc(len + 1);   /* exact size: ASan sees overreads */

			memcpy(in + 1, buf + 1, len);
			/* Each QP, with the PSN as is, in the responder's window and
			 * in the completer's. */
			static const uint8_t bits[4] = { 0, 0x40, 0x20, 0x80 };

			in[0] = (uint8_t)(bits[sel / 4] | (sel % 4));
			LLVMFuzzerTestOneInput(in, len + 1);
			free(in);
			inputs++;
		}
next:
		free(ents[i]);
	}
	free(ents);
	fprintf(stderr, "%u inputs replayed through the receive path\n", inputs);
	return inputs ? 0 : 1;
}
