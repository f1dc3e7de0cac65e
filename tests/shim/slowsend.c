/*
 * slowsend.c - an LD_PRELOAD shim for tests/faults_proxy.bats: every
 * send(2) waits 50ms first, so that a proxy's reset lands between an
 * rlock's connect and its request.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	static ssize_t (*real)(int, const void *, size_t, int);
	struct timespec ts = { 0, 50 * 1000000L };

	if (real == NULL)
		real = (ssize_t (*)(int, const void *, size_t, int))
			dlsym(RTLD_NEXT, "send");
	nanosleep(&ts, NULL);
	return real(fd, buf, len, flags);
}
