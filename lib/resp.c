/*
 * resp.c - requests written as RESP2, straight into the connection's
 * buffer: "*argc\r\n" and "$len\r\narg\r\n" per argument, with the
 * numbers written by hand.  hiredis's redisFormatCommandArgv does the same
 * through sprintf and a fresh allocation, and was three quarters of the
 * client's instructions per lock cycle.
 */
#include <string.h>

#include "rlock_int.h"

size_t rlock_utoa(char *dst, unsigned long long v)
{
	char tmp[20];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (size_t i = 0; i < n; i++)
		dst[i] = tmp[n - 1 - i];
	return n;
}

size_t rlock_lltoa(char *dst, long long v)
{
	if (v >= 0)
		return rlock_utoa(dst, (unsigned long long)v);
	dst[0] = '-';
	/* -(v + 1) + 1: LLONG_MIN has no positive counterpart. */
	return 1 + rlock_utoa(dst + 1, (unsigned long long)-(v + 1) + 1);
}

/* The digits of v. */
static size_t digits(size_t v)
{
	size_t n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

size_t resp_size(int argc, const size_t *lens)
{
	size_t n = 3 + digits((size_t)argc);

	for (int i = 0; i < argc; i++)
		n += 5 + digits(lens[i]) + lens[i];
	return n;
}

size_t resp_write(char *dst, int argc, const char *const *argv,
		  const size_t *lens)
{
	char *p = dst;

	*p++ = '*';
	p += rlock_utoa(p, (unsigned long long)argc);
	*p++ = '\r';
	*p++ = '\n';
	for (int i = 0; i < argc; i++) {
		*p++ = '$';
		p += rlock_utoa(p, lens[i]);
		*p++ = '\r';
		*p++ = '\n';
		memcpy(p, argv[i], lens[i]);
		p += lens[i];
		*p++ = '\r';
		*p++ = '\n';
	}
	return (size_t)(p - dst);
}
