/*
 * renewer.c - run's renewal thread: it keeps the lease alive with the
 * handle the lock was taken on, which it has to itself while it runs (a
 * connection belongs to one thread), and reports the end of its work on a
 * pipe, which the supervising loop polls next to its signalfd.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

void renewer_init(struct renewer *rn)
{
	memset(rn, 0, sizeof(*rn));
	rn->stop[0] = rn->stop[1] = rn->done[0] = rn->done[1] = -1;
}

int renewer_open(struct renewer *rn, char *err, size_t errlen)
{
	/* Made before the lock is taken: pipes that cannot be made then
	 * leave nothing behind to release. */
	if (pipe2(rn->stop, O_CLOEXEC) != 0 || pipe2(rn->done, O_CLOEXEC) != 0) {
		snprintf(err, errlen, "cannot make a pipe: %s", strerror(errno));
		return RLOCK_ESYS;
	}
	return RLOCK_OK;
}

static void *renew_main(void *arg)
{
	struct renewer *rn = arg;
	sigset_t all;
	char b = 'x';

	/* Signals are the main thread's business. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	rn->result = rlock_keepalive(rn->rl, rn->name, &rn->lease,
				     rn->stop[0], rn->at_once);
	rlock_strlcpy(rn->err, rlock_errstr(rn->rl), sizeof(rn->err));
	while (write(rn->done[1], &b, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

int renewer_start(struct renewer *rn, struct rlock *rl, const char *name,
		  const struct rlock_lease *lease, int at_once)
{
	pthread_attr_t attr;
	int rc;

	rn->rl = rl;
	rn->name = name;
	rn->lease = *lease;
	rn->at_once = at_once;
	/* The renewal loop needs little stack; a small one is cheaper to
	 * map and to give back than the default 8 MiB. */
	rc = pthread_attr_init(&attr);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	pthread_attr_setstacksize(&attr, 256 * 1024);
	rc = pthread_create(&rn->th, &attr, renew_main, rn);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	rn->started = 1;
	return 0;
}

int renewer_fd(const struct renewer *rn)
{
	return rn->started ? rn->done[0] : -1;
}

int renewer_join(struct renewer *rn)
{
	char b;

	if (read(rn->done[0], &b, 1) < 0)
		b = 0;
	pthread_join(rn->th, NULL);
	rn->started = 0;
	return rn->result;
}

void renewer_lease(const struct renewer *rn, struct rlock_lease *lease)
{
	if (rn->rl == NULL || rn->started)
		return;
	lease->renewed_boot_ms = rn->lease.renewed_boot_ms;
	lease->ttl_ms = rn->lease.ttl_ms;
	lease->first_ms = rn->lease.first_ms;
}

void renewer_stop(struct renewer *rn)
{
	char b = 'x';

	if (rn->started) {
		while (write(rn->stop[1], &b, 1) < 0 && errno == EINTR)
			;
		pthread_join(rn->th, NULL);
		rn->started = 0;
	}
	for (int i = 0; i < 2; i++) {
		if (rn->stop[i] >= 0)
			close(rn->stop[i]);
		if (rn->done[i] >= 0)
			close(rn->done[i]);
		rn->stop[i] = rn->done[i] = -1;
	}
}
