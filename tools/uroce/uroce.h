/* The uroce tool's subcommands. */
#ifndef UROCE_TOOLS_UROCE_H
#define UROCE_TOOLS_UROCE_H

/* Exit codes, documented in the man page. */
enum {
	UR_EXIT_OK = 0,
	UR_EXIT_FAIL = 1,       /* the operation failed */
	UR_EXIT_USAGE = 2,      /* bad arguments */
};

/* Returned by option parsers: go on (anything else is an exit code). */
#define UR_CONTINUE (-1)

struct ur_cmd {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

int cmd_run(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_netdev(int argc, char **argv);
int cmd_gid(int argc, char **argv);
int cmd_devinfo(int argc, char **argv);
int cmd_link(int argc, char **argv);
int cmd_devnodes(int argc, char **argv);
int cmd_sysfs(int argc, char **argv);
int cmd_res(int argc, char **argv);

struct ibv_context;
/* The network interface under PORT of CTX; 0, or -1 when unknown. */
int ur_port_netdev(struct ibv_context *ctx, unsigned char port, char *name, unsigned long len);
int cmd_pingpong(int argc, char **argv);
int cmd_srq_server(int argc, char **argv);
int cmd_srq_client(int argc, char **argv);
int cmd_bench(int argc, char **argv);

/* The directory holding uroce's libibverbs.so.1, or NULL. */
const char *ur_tool_libdir(void);

#endif
