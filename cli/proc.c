/*
 * proc.c - the clock of the wall and what /proc says of a process.
 */
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

long long cli_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cli_proc_stat(pid_t pid, const int *fields, size_t nf,
		  unsigned long long *v)
{
	char path[64], num[24], buf[2048], *p, *end;
	ssize_t n;
	int fd, field;
	size_t k = 0;

	/* No printf: run reads its own stat on its way to the command
	 * (RLOCK_HELD), and printf's pages would cost it 100 KiB of peak
	 * RSS (bench/RESULTS-perf.md). */
	num[rlock_lltoa(num, (long long)pid)] = '\0';
	if (rlock_join(path, sizeof(path),
		       (const char *[]){ "/proc/", num, "/stat", NULL }) < 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* The command name (field 2) is in parentheses and may hold
	 * anything, parentheses too: the fields start after the last ')'. */
	p = strrchr(buf, ')');
	if (p == NULL)
		return -1;
	p++;
	for (field = 3; k < nf && *p != '\0'; field++) {
		while (*p == ' ')
			p++;
		end = p + strcspn(p, " \n");
		if (field == fields[k]) {
			long long x;

			if (rlock_parse_ll(p, (size_t)(end - p), 0, LLONG_MAX,
					   &x) != 0)
				return -1;
			v[k++] = (unsigned long long)x;
		}
		p = end;
	}
	return k == nf ? 0 : -1;
}
