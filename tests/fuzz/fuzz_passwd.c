/*
 * fuzz_passwd.c - rl_passwd_name (lib/util.c) on the input as the passwd
 * file, asked for uid 0, 1000 and a uid from the input's first four bytes.
 * The file is a memfd made once per process and rewritten for each input.
 *
 * Beyond not crashing: a name found is non-empty, NUL-terminated and fits
 * the buffer it was given; a smaller buffer finds the same name or none;
 * and the answer is the one a reading of the whole file at once gives
 * (lines split at '\n', the same rules per line, a line of 4 KiB or more
 * reached before the answer ends the search): rl_passwd_name reads in 4 KiB
 * pieces, and lines that cross them must not read differently.
 */
#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "rlock_int.h"

#define LINE_MAX_READ 4096	/* rl_passwd_name's buffer */

static int digit(char c)
{
	return c >= '0' && c <= '9';
}

/* One line, the rules written out anew: 1 with the name's start and
 * length, 0 not uid's, -1 give up (NIS's +/- lines, no room for the
 * name). */
static int ref_line(const char *p, size_t n, unsigned long uid, size_t len,
		    const char **name, size_t *nlen)
{
	size_t i = 0, f1, f2, f3;
	unsigned long long v = 0;	/* 64-bit, as is unsigned long here */

	while (i < n && (p[i] == ' ' || p[i] == '\t'))
		i++;
	if (i == n || p[i] == '#')
		return 0;
	if (p[i] == '+' || p[i] == '-')
		return -1;
	for (f1 = i; f1 < n && p[f1] != ':'; f1++)
		;
	if (f1 == n || f1 == i)
		return 0;
	for (f2 = f1 + 1; f2 < n && p[f2] != ':'; f2++)
		;
	if (f2 == n)
		return 0;
	for (f3 = f2 + 1; f3 < n && digit(p[f3]); f3++) {
		/* rl_passwd_name gives up on a value that might not fit. */
		if (v > (ULONG_MAX - 9) / 10)
			return 0;
		v = v * 10 + (unsigned long long)(p[f3] - '0');
	}
	if (f3 == f2 + 1 || f3 == n || p[f3] != ':' || v != uid)
		return 0;
	if (f1 - i >= len)
		return -1;
	*name = p + i;
	*nlen = f1 - i;
	return 1;
}

static int reference(const char *data, size_t size, unsigned long uid,
		     size_t len, const char **name, size_t *nlen)
{
	const char *p = data, *end = data + size;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
		int r;

		if (n >= LINE_MAX_READ)
			return -1;
		r = ref_line(p, n, uid, len, name, nlen);
		if (r != 0)
			return r;
		p += n + 1;
	}
	return 0;
}

static void ask(const char *path, const uint8_t *data, size_t size,
		unsigned long uid)
{
	static const size_t lens[] = { 256, 9, 1 };
	const char *want;
	size_t wantlen = 0;
	char big[256];
	int found_big = 0;

	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		char name[256];
		size_t len = lens[k];
		int rc, ref;

		memset(name, 'Z', sizeof(name));
		rc = rl_passwd_name(path, uid, name, len);
		ref = reference((const char *)data, size, uid, len, &want,
				&wantlen);
		REQUIRE(rc == 0 || rc == -1);
		REQUIRE(rc == (ref == 1 ? 0 : -1));
		if (rc != 0) {
			/* Nothing written past the buffer, failed or not. */
			for (size_t i = len; i < sizeof(name); i++)
				REQUIRE(name[i] == 'Z');
			continue;
		}
		REQUIRE(wantlen > 0 && wantlen < len);
		REQUIRE(name[wantlen] == '\0');
		REQUIRE(memcmp(name, want, wantlen) == 0);
		for (size_t i = wantlen + 1; i < sizeof(name); i++)
			REQUIRE(name[i] == 'Z');
		if (k == 0) {
			memcpy(big, name, wantlen + 1);
			found_big = 1;
		} else {
			REQUIRE(found_big);
			REQUIRE(memcmp(big, name, wantlen + 1) == 0);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	static int fd = -1;
	uint32_t uid = 0;

	if (fd < 0) {
		fd = memfd_create("fuzz-passwd", MFD_CLOEXEC);
		REQUIRE(fd >= 0);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	REQUIRE(ftruncate(fd, 0) == 0);
	REQUIRE(size == 0 || pwrite(fd, data, size, 0) == (ssize_t)size);

	memcpy(&uid, data, size < sizeof(uid) ? size : sizeof(uid));
	ask(path, data, size, 0);
	ask(path, data, size, 1000);
	ask(path, data, size, uid);
	return 0;
}
