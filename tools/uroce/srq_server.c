/* Placeholder until srq-server/srq-client land: says so and fails. */
#include <stdio.h>

#include "uroce.h"

int cmd_srq_server(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "uroce srq-server: not implemented yet\n");
	return UR_EXIT_FAIL;
}

int cmd_srq_client(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "uroce srq-client: not implemented yet\n");
	return UR_EXIT_FAIL;
}
