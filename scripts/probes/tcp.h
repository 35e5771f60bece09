/*
 * What the loopback TCP probes share: a listener on 127.0.0.1 at a port the kernel picks, a
 * connection without Nagle's delay, and reading or writing a whole message.
 */
#ifndef TCP_H
#define TCP_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

/* A listening socket on loopback, its address in *a: the socket, or -1. */
static inline int loopback_listener(struct sockaddr_in *a)
{
	socklen_t alen = sizeof *a;
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	*a = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (ls < 0 || bind(ls, (struct sockaddr *)a, sizeof *a) || listen(ls, 1) ||
	    getsockname(ls, (struct sockaddr *)a, &alen))
		return -1;
	return ls;
}

/* Each message goes out as written (TCP_NODELAY): one request, one segment. */
static inline void no_delay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Read (reading) or write n bytes of buf whole: 0, or -1 when the peer is gone. */
static inline int full(int fd, char *buf, int n, int reading)
{
	for (int done = 0; done < n;) {
		int k = reading ? read(fd, buf + done, n - done) : write(fd, buf + done, n - done);
		if (k <= 0)
			return -1;
		done += k;
	}
	return 0;
}

#endif
