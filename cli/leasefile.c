/*
 * leasefile.c - what acquire --renew's background renewer and release tell
 * each other, in a directory of the user's own: TOKEN.renewing exists while
 * a renewer keeps TOKEN's lease (release removes it first, so the renewer
 * knows a token that stops holding was given up, not lost), and TOKEN.lost
 * records when and why a renewer lost it (release reports it, then removes
 * it).  The directory is /tmp/rlock-UID, whatever the environment says: a
 * script that changes TMPDIR between acquire and release must still find
 * its renewer.  It is made 0700 and used only when it is ours and no one
 * else can write to it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* The directory into buf, made when make is set.  Returns 0, or -1 when
 * there is none fit to use. */
static int lease_dir(char *buf, size_t len, int make)
{
	struct stat st;
	char uid[24];

	uid[rlock_utoa(uid, getuid())] = '\0';
	if (rlock_join(buf, len, (const char *[]){ "/tmp/rlock-", uid,
						    NULL }) < 0)
		return -1;
	if (make && mkdir(buf, 0700) != 0 && errno != EEXIST)
		return -1;
	/* Another user's directory, or one others may write to, could be
	 * made to say anything. */
	if (lstat(buf, &st) != 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != getuid() || (st.st_mode & 022) != 0)
		return -1;
	return 0;
}

static int lease_path(char *buf, size_t len, const char *token,
		      const char *what, int make)
{
	char dir[64];

	/* A token from the command line names a file only when it cannot
	 * name one elsewhere; rlock's own are 32 hex digits. */
	if (token[0] == '\0' || strlen(token) > 128 ||
	    strspn(token, "0123456789abcdefABCDEF-_") != strlen(token))
		return -1;
	if (lease_dir(dir, sizeof(dir), make) != 0)
		return -1;
	return rlock_join(buf, len, (const char *[]){ dir, "/", token, ".",
						       what, NULL }) < 0 ? -1 : 0;
}

int lease_file_write(const char *token, const char *what, const char *text)
{
	char path[256];
	size_t len = strlen(text);
	int fd, ret = -1;

	if (lease_path(path, sizeof(path), token, what, 1) != 0)
		return -1;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0)
		return -1;
	if (write(fd, text, len) == (ssize_t)len)
		ret = 0;
	if (close(fd) != 0)
		ret = -1;
	return ret;
}

int lease_file_read(const char *token, const char *what, char *buf,
		    size_t len)
{
	char path[256];
	ssize_t n;
	int fd;

	if (lease_path(path, sizeof(path), token, what, 0) != 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

int lease_file_remove(const char *token, const char *what)
{
	char path[256];

	if (lease_path(path, sizeof(path), token, what, 0) != 0)
		return -1;
	return unlink(path);
}

/*
 * Remove what renewers left that nobody will read: marks of renewers that
 * were killed (their pid gone) and records of losses never released, once
 * they are older than a day and a week.
 */
void lease_file_sweep(void)
{
	char dir[64], path[600], buf[32];
	long long pid;
	struct dirent *e;
	struct stat st;
	time_t now = time(NULL);
	DIR *d;

	if (lease_dir(dir, sizeof(dir), 0) != 0 || (d = opendir(dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		const char *dot = strrchr(e->d_name, '.');
		int fd;
		ssize_t n;

		if (dot == NULL || e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		if (strcmp(dot, ".lost") == 0 && now - st.st_mtime > 7 * 86400) {
			unlink(path);
		} else if (strcmp(dot, ".renewing") == 0 &&
			   now - st.st_mtime > 86400) {
			fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			if (fd < 0)
				continue;
			n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			buf[n > 0 ? n : 0] = '\0';
			/* The renewer's pid and a newline; anything else is no
			 * mark of ours to judge. */
			if (n > 1 && buf[n - 1] == '\n' &&
			    rlock_parse_ll(buf, (size_t)n - 1, 1, INT_MAX,
					   &pid) == 0 &&
			    kill((pid_t)pid, 0) != 0 && errno == ESRCH)
				unlink(path);
		}
	}
	closedir(d);
}

int lease_lost_parse(char *rec, long long *ms, const char **reason)
{
	char *sp = strchr(rec, ' ');

	if (sp == NULL ||
	    rlock_parse_ll(rec, (size_t)(sp - rec), 0, LLONG_MAX / 2, ms) != 0)
		return -1;
	sp[1 + strcspn(sp + 1, "\n")] = '\0';
	*reason = sp + 1;
	return 0;
}
