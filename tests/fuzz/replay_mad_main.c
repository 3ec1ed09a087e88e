/* Replays the MAD corpus (tests/fuzz/corpus/mad, gen_mad_corpus.py)
 * through fuzz_mad's target without libFuzzer, so any compiler and the
 * ASan unit build run it: ok-* must parse (and pass the target's checks),
 * bad-* must be refused, anything else must merely not crash. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/mad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(void)
{
	DIR *d = opendir(UR_FUZZ_CORPUS_DIR);
	struct dirent *e;
	unsigned files = 0, failures = 0;

	if (!d) {
		perror(UR_FUZZ_CORPUS_DIR);
		return 1;
	}
	while ((e = readdir(d))) {
		char path[4096];
		uint8_t buf[4096];
		struct ur_cm_msg m;
		size_t n;
		FILE *f;
		int r;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", UR_FUZZ_CORPUS_DIR, e->d_name);
		f = fopen(path, "rb");
		if (!f)
			continue;
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		files++;
		LLVMFuzzerTestOneInput(buf, n);
		r = ur_cm_parse(buf, n, &m);
		if ((!strncmp(e->d_name, "ok-", 3) && r) || (!strncmp(e->d_name, "bad-", 4) && !r)) {
			printf("FAIL %s: parse returned %d\n", e->d_name, r);
			failures++;
		}
	}
	closedir(d);
	printf("%u corpus files, %u failed\n", files, failures);
	return failures || files < 11;
}
