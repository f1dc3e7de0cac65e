/*
 * cleanexec [-s] COMMAND [ARG...] - exec COMMAND with every signal at its
 * default disposition, an empty signal mask and no descriptor beyond 0, 1
 * and 2.  With -s it first starts a new session, so that the test helper
 * can find and stop everything the command leaves behind.
 *
 * The tests need it because a shell without job control starts background
 * commands with SIGINT and SIGQUIT ignored, and bats keeps descriptors of its
 * own open; either would hide what rlock itself passes on to its command.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int argi = 1;
	sigset_t none;
	DIR *d;

	if (argc > 1 && strcmp(argv[1], "-s") == 0) {
		/* Fails only when we already lead a group: fine either way. */
		setsid();
		argi++;
	}
	if (argi >= argc) {
		fprintf(stderr, "usage: cleanexec [-s] COMMAND [ARG...]\n");
		return 2;
	}
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);	/* EINVAL for KILL, STOP, RT: harmless */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	d = opendir("/proc/self/fd");
	if (d != NULL) {
		struct dirent *e;
		int dfd = dirfd(d);

		while ((e = readdir(d)) != NULL) {
			int fd = atoi(e->d_name);

			if (e->d_name[0] >= '0' && e->d_name[0] <= '9' &&
			    fd > 2 && fd != dfd)
				close(fd);
		}
		closedir(d);
	}
	execvp(argv[argi], argv + argi);
	fprintf(stderr, "cleanexec: %s: ", argv[argi]);
	perror(NULL);
	return 127;
}
