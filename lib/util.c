/*
 * util.c - small helpers shared by librlock's modules: error text, clocks,
 * the lock-name check and the user's name from the passwd file.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rlock_int.h"

/*
 * Format a one-line message into buf.  errno is preserved because callers
 * often build the message from strerror(errno) and still want to return
 * with errno telling the truth.
 */
void rl_set_error(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	if (buf == NULL || len == 0)
		return;
	va_start(ap, fmt);
	/* vsnprintf truncates and always terminates when len > 0. */
	if (vsnprintf(buf, len, fmt, ap) < 0)
		buf[0] = '\0';
	va_end(ap);
	errno = saved;
}

size_t rlock_strlcpy(char *dst, const char *src, size_t len)
{
	size_t n = strlen(src);

	if (len > 0) {
		size_t k = n < len ? n : len - 1;

		memcpy(dst, src, k);
		dst[k] = '\0';
	}
	return n;
}

size_t rlock_strlcat(char *dst, const char *src, size_t len)
{
	size_t have = strnlen(dst, len);

	if (have == len)
		return len + strlen(src);
	return have + rlock_strlcpy(dst + have, src, len - have);
}

int rlock_join(char *dst, size_t len, const char *const *part)
{
	size_t n = 0, k;

	for (size_t i = 0; part[i] != NULL; i++)
		n += strlen(part[i]);
	if (n >= len || n > INT_MAX) {
		if (len > 0)
			dst[0] = '\0';
		return -1;
	}
	for (n = 0; *part != NULL; part++) {
		k = strlen(*part);
		memcpy(dst + n, *part, k);
		n += k;
	}
	dst[n] = '\0';
	return (int)n;
}

static int64_t clock_ms(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) != 0)
		return -1;
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * CLOCK_BOOTTIME keeps counting while the machine is suspended, as the
 * server's expiry clock does, so lease deadlines are judged on it.  Kernels
 * before 2.6.39 lack it; CLOCK_MONOTONIC is the closest stand-in there.
 */
int64_t rlock_boot_ms(void)
{
	int64_t t = clock_ms(CLOCK_BOOTTIME);

	return t >= 0 ? t : clock_ms(CLOCK_MONOTONIC);
}

int64_t rlock_mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

/*
 * A name becomes part of a Redis key and is shown by status, one lock per
 * line, so control characters (which could fake lines or move the cursor)
 * are refused.  Bytes from 0x80 up are allowed: names may be UTF-8.
 */
int rlock_check_name(const char *name, const char **why)
{
	const char *reason = NULL;
	size_t len, i;

	if (name == NULL || name[0] == '\0') {
		reason = "empty";
		goto out;
	}
	/* strnlen: never walk further than one byte past the limit. */
	len = strnlen(name, RLOCK_NAME_MAX + 1);
	if (len > RLOCK_NAME_MAX) {
		reason = "longer than 1024 bytes";
		goto out;
	}
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c < 0x20 || c == 0x7f) {
			reason = "contains a control character";
			goto out;
		}
	}
out:
	if (why != NULL)
		*why = reason;
	return reason == NULL ? RLOCK_OK : RLOCK_EUSAGE;
}

/* A note is shown by status and log, one event per line: the same rule as
 * a name, and as short as a label. */
int rlock_check_note(const char *note, const char **why)
{
	const char *reason = NULL;
	size_t len = strnlen(note, RLOCK_NOTE_MAX + 1);

	if (len > RLOCK_NOTE_MAX)
		reason = "longer than 256 bytes";
	for (size_t i = 0; i < len && reason == NULL; i++) {
		unsigned char c = (unsigned char)note[i];

		if (c < 0x20 || c == 0x7f)
			reason = "contains a control character";
	}
	if (why != NULL)
		*why = reason;
	return reason == NULL ? RLOCK_OK : RLOCK_EUSAGE;
}

const char *rlock_signame(int sig, char *buf, size_t len)
{
	const char *s = sigabbrev_np(sig);

	if (s != NULL)
		snprintf(buf, len, "%s", s);
	else
		snprintf(buf, len, "%d", sig);
	return buf;
}

/* ---- the user's name --------------------------------------------------- */

/* One line of a passwd file: 1 it is uid's (its name in name), 0 not, -1
 * ask NSS instead (NIS's +/- lines, a name too long for name). */
static int passwd_line(const char *p, size_t n, unsigned long uid,
		       char *name, size_t len)
{
	const char *end = p + n, *c1, *c2, *q;
	unsigned long v = 0;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p == end || *p == '#')
		return 0;
	if (*p == '+' || *p == '-')
		return -1;
	if ((c1 = memchr(p, ':', end - p)) == NULL || c1 == p ||
	    (c2 = memchr(c1 + 1, ':', end - c1 - 1)) == NULL)
		return 0;
	for (q = c2 + 1; q < end && *q >= '0' && *q <= '9'; q++) {
		if (v > (ULONG_MAX - 9) / 10)
			return 0;
		v = v * 10 + (unsigned long)(*q - '0');
	}
	if (q == c2 + 1 || q == end || *q != ':' || v != uid)
		return 0;
	if ((size_t)(c1 - p) >= len)
		return -1;
	memcpy(name, p, c1 - p);
	name[c1 - p] = '\0';
	return 1;
}

int rl_passwd_name(const char *path, unsigned long uid, char *name, size_t len)
{
	char buf[4096];
	size_t have = 0;
	int fd, eof = 0, r = 0;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	while (r == 0) {
		const char *p = buf, *end, *nl;
		ssize_t got;

		do
			got = read(fd, buf + have, sizeof(buf) - have);
		while (got < 0 && errno == EINTR);
		if (got < 0)
			break;
		eof = got == 0;
		have += (size_t)got;
		end = buf + have;
		/* Whole lines, and at the end of the file the last one. */
		while (r == 0 && p < end &&
		       ((nl = memchr(p, '\n', end - p)) != NULL || eof)) {
			if (nl == NULL)
				nl = end;
			r = passwd_line(p, nl - p, uid, name, len);
			p = nl + (nl < end);
		}
		if (eof || r != 0)
			break;
		have = end - p;
		if (have == sizeof(buf)) {
			r = -1;		/* a line longer than buf */
			break;
		}
		memmove(buf, p, have);
	}
	close(fd);
	return r == 1 ? 0 : -1;
}

int rlock_parse_ll(const char *s, size_t n, long long min, long long max,
		   long long *v)
{
	unsigned long long x = 0, lim;
	size_t i = 0;
	int neg = 0;

	if (n > 0 && s[0] == '-') {
		neg = 1;
		i = 1;
	}
	if (i == n)
		return -1;
	/* The magnitude's limit: LLONG_MAX, or one more for a negative. */
	lim = neg ? (unsigned long long)LLONG_MAX + 1 : LLONG_MAX;
	for (; i < n; i++) {
		unsigned d = (unsigned char)s[i] - '0';

		if (d > 9 || x > (lim - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	if (neg) {
		long long r = x == (unsigned long long)LLONG_MAX + 1 ?
			      LLONG_MIN : -(long long)x;

		if (r < min || r > max)
			return -1;
		*v = r;
		return 0;
	}
	if ((long long)x < min || (long long)x > max)
		return -1;
	*v = (long long)x;
	return 0;
}

size_t rlock_utf8_char(const char *s, size_t n, uint32_t *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t c, min;
	size_t len;

	if (n == 0)
		return 0;
	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	/* RFC 3629: the lead byte says the length and the smallest code
	 * point that needs it, so that an overlong form is refused. */
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		len = 2;
		c = p[0] & 0x1f;
		min = 0x80;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		len = 3;
		c = p[0] & 0x0f;
		min = 0x800;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		len = 4;
		c = p[0] & 0x07;
		min = 0x10000;
	} else {
		return 0;	/* a continuation byte, 0xc0, 0xc1 or 0xf5.. */
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

int rlock_utf8_shown(uint32_t c)
{
	if (c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f))
		return 0;		/* C0, DEL, C1 */
	/* Characters that move, hide or reorder text rather than show
	 * themselves: a name holding them could pass for another one. */
	if (c == 0xad || c == 0x61c || c == 0x180e ||
	    (c >= 0x200b && c <= 0x200f) ||	/* zero widths, LRM, RLM */
	    (c >= 0x2028 && c <= 0x202e) ||	/* separators, bidi */
	    (c >= 0x2060 && c <= 0x206f) ||	/* joiners, isolates */
	    c == 0xfeff || (c >= 0xfff9 && c <= 0xfffb) ||
	    (c >= 0xe0000 && c <= 0xe007f))	/* tags */
		return 0;
	/* Noncharacters. */
	if ((c >= 0xfdd0 && c <= 0xfdef) || (c & 0xfffe) == 0xfffe)
		return 0;
	return 1;
}

char *rl_server_text(char *buf, size_t len, const char *s, size_t n)
{
	size_t room, cut, k;

	if (len == 0)
		return buf;
	room = len - 1 < SERVER_TEXT_MAX ? len - 1 : SERVER_TEXT_MAX;
	if (n <= room) {
		memcpy(buf, s, n);
		buf[n] = '\0';
		return buf;
	}
	if (room < 4) {
		buf[0] = '\0';
		return buf;
	}
	/* Room for "..." after the text kept. */
	cut = room - 3;
	/* A space in the last half: the words before it are whole. */
	for (k = cut; k > cut / 2 && s[k] != ' '; k--)
		;
	if (s[k] == ' ') {
		cut = k;
	} else {
		/* One long word: cut before a UTF-8 continuation byte's
		 * lead, so that no character is split. */
		while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80)
			cut--;
	}
	while (cut > 0 && s[cut - 1] == ' ')
		cut--;
	memcpy(buf, s, cut);
	memcpy(buf + cut, "...", 4);
	return buf;
}

char *rlock_vis(char *dst, size_t len, const char *src, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, i = 0, k;
	uint32_t c;

	if (len == 0)
		return dst;
	while (i < n) {
		unsigned char b = (unsigned char)src[i];

		if (b == '\\') {
			if (o + 2 >= len)
				break;
			dst[o++] = '\\';
			dst[o++] = '\\';
			i++;
			continue;
		}
		k = rlock_utf8_char(src + i, n - i, &c);
		if (k > 0 && rlock_utf8_shown(c)) {
			if (o + k >= len)
				break;
			memcpy(dst + o, src + i, k);
			o += k;
			i += k;
			continue;
		}
		/* Not shown: each byte of the character, or the one byte
		 * that starts no character, as \xNN; a character whole or
		 * not at all. */
		if (k == 0)
			k = 1;
		if (o + 4 * k >= len)
			break;
		for (size_t j = 0; j < k; j++, i++) {
			b = (unsigned char)src[i];
			dst[o++] = '\\';
			dst[o++] = 'x';
			dst[o++] = hex[b >> 4];
			dst[o++] = hex[b & 15];
		}
	}
	dst[o] = '\0';
	return dst;
}
