/*
 * sigcount FILE [STOPSIG [MAXSECS [STOPSTATUS]]] - record the signals this
 * process receives.  Installs handlers for HUP INT QUIT TERM USR1 USR2
 * WINCH, appends "ready" to FILE once they are in place, then appends the
 * name of each signal it gets (one per line, written from the main loop,
 * never from the handler).  Exits STOPSTATUS (default 0) after it gets
 * STOPSIG (a name such as TERM or USR1, default TERM), or 124 after MAXSECS
 * (default 20) so that it never outlives a broken test.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const struct {
	int sig;
	const char *name;
} sigs[] = {
	{ SIGHUP, "HUP" }, { SIGINT, "INT" }, { SIGQUIT, "QUIT" },
	{ SIGTERM, "TERM" }, { SIGUSR1, "USR1" }, { SIGUSR2, "USR2" },
	{ SIGWINCH, "WINCH" },
};
#define NSIGS (sizeof(sigs) / sizeof(sigs[0]))

static int pipefd[2];

/* Only hand the number to the main loop: write(2) is async-signal-safe. */
static void on_signal(int sig)
{
	unsigned char b = (unsigned char)sig;
	int saved = errno;

	if (write(pipefd[1], &b, 1) < 0) {
		/* nothing safe to do here */
	}
	errno = saved;
}

static const char *sig_name(int sig)
{
	for (size_t i = 0; i < NSIGS; i++)
		if (sigs[i].sig == sig)
			return sigs[i].name;
	return "?";
}

static int sig_number(const char *name)
{
	if (strncmp(name, "SIG", 3) == 0)
		name += 3;
	for (size_t i = 0; i < NSIGS; i++)
		if (strcmp(sigs[i].name, name) == 0)
			return sigs[i].sig;
	return 0;
}

static void append(int fd, const char *s)
{
	char line[64];
	int n = snprintf(line, sizeof(line), "%s\n", s);

	if (write(fd, line, (size_t)n) != n) {
		perror("sigcount: write");
		exit(2);
	}
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	int stopsig = SIGTERM, stopstatus = 0, out;
	long long deadline, maxsecs = 20;
	struct sigaction sa;

	if (argc < 2) {
		fprintf(stderr, "usage: sigcount FILE [STOPSIG [MAXSECS [STOPSTATUS]]]\n");
		return 2;
	}
	if (argc > 2 && (stopsig = sig_number(argv[2])) == 0) {
		fprintf(stderr, "sigcount: unknown signal '%s'\n", argv[2]);
		return 2;
	}
	if (argc > 3)
		maxsecs = atoll(argv[3]);
	if (argc > 4)
		stopstatus = atoi(argv[4]);
	out = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (out < 0) {
		perror(argv[1]);
		return 2;
	}
	if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0) {
		perror("sigcount: pipe");
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	for (size_t i = 0; i < NSIGS; i++) {
		if (sigaction(sigs[i].sig, &sa, NULL) < 0) {
			perror("sigcount: sigaction");
			return 2;
		}
	}
	append(out, "ready");

	deadline = now_ms() + maxsecs * 1000;
	for (;;) {
		long long left = deadline - now_ms();
		struct pollfd p = { .fd = pipefd[0], .events = POLLIN };
		unsigned char b;

		if (left <= 0) {
			append(out, "timeout");
			return 124;
		}
		if (poll(&p, 1, (int)(left > 1000 ? 1000 : left)) < 0) {
			if (errno == EINTR)
				continue;
			perror("sigcount: poll");
			return 2;
		}
		while (read(pipefd[0], &b, 1) == 1) {
			append(out, sig_name(b));
			if (b == stopsig)
				return stopstatus;
		}
	}
}
