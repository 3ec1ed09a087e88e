/* Socket addresses as rdma_cm uses them: a leaf, called from every file. */
#include <arpa/inet.h>

#include "rdmacm/cma.h"

uint16_t cma_port_of(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}
