/*
 * sigstate - print this process's blocked and ignored signal sets and the
 * descriptors it has open beyond 0, 1 and 2, then exit 0.  The tests run it
 * under `rlock run` to prove that the command starts with a clean signal
 * state and inherits no descriptor of rlock's.
 *
 * Output, one item per line:
 *	blocked 0000000000000000
 *	ignored 0000000000000000
 *	fds none		(or: fds 5=socket:[1234] 7=pipe:[99])
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int print_mask(const char *field, const char *label)
{
	char line[256];
	size_t n = strlen(field);
	int found = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (f == NULL) {
		perror("sigstate: /proc/self/status");
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, field, n) == 0 && line[n] == ':') {
			char *v = line + n + 1;

			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = '\0';
			printf("%s %s\n", label, v);
			found = 1;
			break;
		}
	}
	fclose(f);
	if (!found) {
		fprintf(stderr, "sigstate: no %s in /proc/self/status\n", field);
		return -1;
	}
	return 0;
}

static int print_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int any = 0;

	if (d == NULL) {
		perror("sigstate: /proc/self/fd");
		return -1;
	}
	fputs("fds", stdout);
	while ((e = readdir(d)) != NULL) {
		char path[PATH_MAX], target[PATH_MAX];
		ssize_t len;
		int fd;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		fd = atoi(e->d_name);
		/* 0-2 are the caller's; the directory stream is our own. */
		if (fd <= 2 || fd == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		len = readlink(path, target, sizeof(target) - 1);
		if (len < 0)
			len = 0;
		target[len] = '\0';
		printf(" %d=%s", fd, target);
		any = 1;
	}
	closedir(d);
	if (!any)
		fputs(" none", stdout);
	putchar('\n');
	return 0;
}

int main(void)
{
	int ret = 0;

	if (print_mask("SigBlk", "blocked") < 0)
		ret = 1;
	if (print_mask("SigIgn", "ignored") < 0)
		ret = 1;
	if (print_fds() < 0)
		ret = 1;
	if (fflush(stdout) != 0)
		ret = 1;
	return ret;
}
