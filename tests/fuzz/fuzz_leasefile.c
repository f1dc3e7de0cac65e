/*
 * fuzz_leasefile.c - lease_file_read (cli/leasefile.c) on a lease file
 * holding the input, into buffers of the sizes release gives it (700 for
 * TOKEN.lost, 32 for TOKEN.renewing) and of 2 and 1 bytes; then the
 * reading of a TOKEN.lost that release makes of it (lease_lost_parse, the
 * time shown with localtime_r and strftime, the reason through
 * rlock_vis).
 *
 * The lease directory is /tmp/rlock-UID whatever HOME or TMPDIR say, so
 * the file is the real directory's TOKEN.lost for a token of this process
 * ("f022-" and the pid in hex), removed at exit.
 *
 * Beyond not crashing: the read succeeds, writes nothing past its buffer,
 * and gives the file's first len - 1 bytes, terminated; release's reading
 * never points past the text it read, its time converts, and what it
 * shows is fit for a terminal (fuzz_shown).
 */
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "fuzz.h"

static char token[32], path[128];

static void remove_file(void)
{
	lease_file_remove(token, "lost");
}

static void open_once(void)
{
	snprintf(token, sizeof(token), "f022-%x", (unsigned)getpid());
	/* Makes the directory, and checks that it is fit to use. */
	REQUIRE(lease_file_write(token, "lost", "") == 0);
	snprintf(path, sizeof(path), "/tmp/rlock-%u/%s.lost",
		 (unsigned)getuid(), token);
	REQUIRE(access(path, F_OK) == 0);
	atexit(remove_file);
}

/* What release does with the text of TOKEN.lost it read into rec. */
static void release_reading(char *rec)
{
	size_t had = strlen(rec);
	const char *reason;
	long long ms;
	char when[64], vis[700];
	struct tm tm;
	time_t t;

	if (lease_lost_parse(rec, &ms, &reason) != 0)
		return;
	/* The reason is inside what was read, one line, and the time is
	 * one the wall clock can show. */
	REQUIRE(reason > rec && reason <= rec + had);
	REQUIRE(strchr(reason, '\n') == NULL);
	REQUIRE(ms >= 0);
	t = (time_t)(ms / 1000);
	REQUIRE(localtime_r(&t, &tm) != NULL);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", &tm);
	rlock_vis(vis, sizeof(vis), reason, strlen(reason));
	REQUIRE(fuzz_shown(vis, strlen(vis)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t lens[] = { 700, 32, 2, 1 };
	int fd;

	if (token[0] == '\0')
		open_once();
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
	REQUIRE(fd >= 0);
	REQUIRE(size == 0 || write(fd, data, size) == (ssize_t)size);
	REQUIRE(close(fd) == 0);

	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		size_t len = lens[k], n = size < len - 1 ? size : len - 1;
		char *buf = malloc(len);	/* exactly: ASan sees past it */

		REQUIRE(buf != NULL);
		memset(buf, 'Z', len);
		REQUIRE(lease_file_read(token, "lost", buf, len) == 0);
		REQUIRE(buf[n] == '\0');
		REQUIRE(memcmp(buf, data, n) == 0);
		if (len == 700)
			release_reading(buf);
		free(buf);
	}
	return 0;
}
