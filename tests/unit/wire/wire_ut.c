/* Unit tests of the wire module: opcode table, header accessors, parser,
 * CRC engines and ICRC.  One file per source file under test, included here
 * so that the module is one executable. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <zlib.h>

#include "ut.h"
#include "ut_rnd.h"
#include "util/compiler.h"
#include "wire/crc32.h"
#include "wire/icrc.h"
#include "wire/opcode.h"
#include "wire/pkt_parse.h"
#include "wire/roce_hdr.h"

#include "opcode_tests.c"
#include "pkt_parse_tests.c"
#include "crc32_tests.c"
#include "icrc_tests.c"

int main(void)
{
	UT_RUN(test_opcode_expected_headers);
	UT_RUN(test_opcode_offsets_add_up);
	UT_RUN(test_opcode_mask_rules);
	UT_RUN(test_opcode_transports_agree);
	UT_RUN(test_opcode_names);

	UT_RUN(test_header_byte_layout);
	UT_RUN(test_bth_setters_independent);
	UT_RUN(test_parse_roundtrip);
	UT_RUN(test_parse_truncation);
	UT_RUN(test_parse_rejects);

	UT_RUN(test_crc32_check_value);
	UT_RUN(test_crc32_vs_zlib);
	UT_RUN(test_crc32_chaining);
	UT_RUN(test_crc32_fold_constants);
	UT_RUN(test_gf2_arith);

	UT_RUN(test_icrc_vectors);
	UT_RUN(test_icrc_vs_zlib);
	UT_RUN(test_icrc_id_recovery);
	UT_RUN(test_icrc_single_bit_flips);
	UT_RUN(test_icrc_corruption);
	UT_RUN(test_icrc_edges);
	return UT_DONE();
}
