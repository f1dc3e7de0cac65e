/*
 * notify.c - systemd's readiness and status protocol (sd_notify(3)) for
 * lead: "KEY=VALUE" lines in one datagram to the unix socket that
 * $NOTIFY_SOCKET names, a path or, with a leading '@', a name in the
 * abstract namespace.
 *
 * Written here rather than linked from libsystemd: the protocol is one
 * socket and one sendto(2) per message, and libsystemd would make every
 * rlock binary depend on it (and map it), on systems without systemd too,
 * for those 40 lines.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"

/* $WATCHDOG_USEC when it is for us ($WATCHDOG_PID unset or our pid): a
 * whole number of µs, 2ms to a day; else 0.  The variables go from the
 * environment the command inherits, as sd_watchdog_enabled(3) does. */
static int64_t watchdog_usec(void)
{
	const char *usec = getenv("WATCHDOG_USEC");
	const char *pid = getenv("WATCHDOG_PID");
	char *end;
	long long v = 0;

	if (usec != NULL && (pid == NULL || (strspn(pid, "0123456789") ==
					     strlen(pid) &&
					     atoll(pid) == (long long)getpid()))) {
		errno = 0;
		if (*usec >= '0' && *usec <= '9')
			v = strtoll(usec, &end, 10);
		if (errno != 0 || *usec < '0' || *usec > '9' || *end != '\0' ||
		    v < 2000 || v > 86400LL * 1000000)
			v = 0;
	}
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	return v;
}

void cli_notify_open(struct cli_notify *n)
{
	const char *path = getenv("NOTIFY_SOCKET");
	size_t len;

	n->fd = -1;
	n->len = 0;
	n->watchdog_ms = 0;
	if (path == NULL)
		return;
	n->watchdog_ms = watchdog_usec() / 2000;
	n->watchdog_at = rlock_mono_ms();
	len = strlen(path);
	/* A path or an abstract name, that fits: anything else is not
	 * systemd's, and is not written to. */
	if (len >= 2 && len < sizeof(n->addr.sun_path) &&
	    (path[0] == '/' || path[0] == '@')) {
		memset(&n->addr, 0, sizeof(n->addr));
		n->addr.sun_family = AF_UNIX;
		memcpy(n->addr.sun_path, path, len);
		/* An abstract name starts with a NUL and is as long as
		 * given; a path ends at its NUL. */
		if (path[0] == '@')
			n->addr.sun_path[0] = '\0';
		n->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				     len + (path[0] == '/'));
		n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	}
	/* The command is not the service's main process: what it would
	 * tell systemd would be taken for ours, or refused. */
	unsetenv("NOTIFY_SOCKET");
}

void cli_notify(const struct cli_notify *n, const char *msg)
{
	if (n->fd < 0)
		return;
	/* A message that cannot be sent is lost, as with sd_notify: the
	 * service goes on, and systemd's own timeouts tell. */
	while (sendto(n->fd, msg, strlen(msg), MSG_NOSIGNAL,
		      (const struct sockaddr *)&n->addr, n->len) < 0 &&
	       errno == EINTR)
		;
}

int64_t cli_notify_watchdog(struct cli_notify *n)
{
	int64_t now = rlock_mono_ms();

	if (n->fd < 0 || n->watchdog_ms <= 0)
		return -1;
	if (now >= n->watchdog_at) {
		cli_notify(n, "WATCHDOG=1");
		n->watchdog_at = now + n->watchdog_ms;
	}
	return n->watchdog_at - now;
}

void cli_notify_close(struct cli_notify *n)
{
	if (n->fd >= 0)
		close(n->fd);
	n->fd = -1;
}
