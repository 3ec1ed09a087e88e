/* socket(2) for uroce's own sockets, as the kernel's call rather than
 * through the symbol: a preloaded library that takes socket() over
 * (rdma-core's librspreload.so makes every AF_INET/AF_INET6 socket an
 * rsocket, datagram ones included, and offers any other to rsocket() first,
 * behind a placeholder descriptor) must not take the sockets uroce itself
 * runs on.  The calls on the descriptor after it (bind, sendmsg...) pass
 * through such a library untouched: it knows only the sockets it made. */
#ifndef UROCE_UTIL_SYS_SOCKET_H
#define UROCE_UTIL_SYS_SOCKET_H

#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline int ur_socket(int domain, int type, int protocol)
{
#if defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer must see every socket made: it models all sockets
	 * as one synchronisation object, and the tests hand memory written
	 * by the engine thread across processes over TCP (a socket it did
	 * not see has a sync object of its own, and the hand-over becomes a
	 * reported race).  Sanitizer builds do not run under a preload. */
	return socket(domain, type, protocol);
#else
	return (int)syscall(SYS_socket, domain, type, protocol);
#endif
}

#endif
