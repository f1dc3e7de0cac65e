/*
 * fuzz_text.c - the ways out for text rlock did not write: rlock_vis (the
 * terminal's, lib/util.c), cli_json_str and cli_prom_str (cli/text.c), on
 * the input's bytes.
 *
 * Beyond not crashing:
 * - rlock_vis gives what a terminal may be given (fuzz_shown: valid UTF-8,
 *   no C0, DEL, C1 or bidi control), which undoes to the input exactly
 *   (\\ a backslash, \xNN a byte, the rest as it is); into a smaller
 *   buffer, a terminated prefix of that, cut between two characters or
 *   escapes, and no shorter than it must be;
 * - cli_json_str writes one JSON string literal (RFC 8259: no raw control,
 *   only its escapes, surrogates in pairs) that a terminal may be given
 *   too (fuzz_shown), which decodes to the input with each byte that is no UTF-8 as
 *   U+FFFD;
 * - cli_prom_str writes a quoted label value with only the escapes \\, \"
 *   and \n, in valid UTF-8 with no C0, DEL or C1, which decodes to printable
 *   ASCII input as it was.
 */
#include "cli.h"
#include "fuzz.h"

/* A lower-case hex digit's value, or 16. */
static unsigned lower_hex(char c)
{
	if (c >= '0' && c <= '9')
		return (unsigned)(c - '0');
	if (c >= 'a' && c <= 'f')
		return (unsigned)(c - 'a' + 10);
	return 16;
}

/* Undo rlock_vis on the len bytes at v into out (room for len bytes).
 * Returns the length, or -1 when v holds a backslash that starts no
 * escape rlock_vis writes. */
static long unvis(const char *v, size_t len, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned hi, lo;

		if (v[i] != '\\') {
			out[o++] = v[i];
			continue;
		}
		if (i + 1 < len && v[i + 1] == '\\') {
			out[o++] = '\\';
			i++;
			continue;
		}
		if (i + 3 >= len || v[i + 1] != 'x' ||
		    (hi = lower_hex(v[i + 2])) > 15 ||
		    (lo = lower_hex(v[i + 3])) > 15)
			return -1;
		out[o++] = (char)(hi << 4 | lo);
		i += 3;
	}
	return (long)o;
}

static void vis_checks(const uint8_t *data, size_t size)
{
	size_t big = 4 * size + 1, n;
	char *v = malloc(big), *u = malloc(size + 1), *small;
	long got;

	REQUIRE(v != NULL && u != NULL);
	rlock_vis(v, big, (const char *)data, size);
	n = strlen(v);
	REQUIRE(fuzz_shown(v, n));
	got = unvis(v, n, u);
	REQUIRE(got == (long)size && memcmp(u, data, size) == 0);

	/* A buffer of 1 to 64 bytes, the size taken from the input. */
	for (size_t len = 1; len <= 64; len += 1 + (size ? data[0] % 7 : 0)) {
		size_t m;

		small = malloc(len);	/* exactly: ASan sees past it */
		REQUIRE(small != NULL);
		rlock_vis(small, len, (const char *)data, size);
		m = strlen(small);
		REQUIRE(m < len);
		REQUIRE(memcmp(small, v, m) == 0);
		REQUIRE(fuzz_shown(small, m));
		got = unvis(small, m, u);
		REQUIRE(got >= 0 && memcmp(u, data, (size_t)got) == 0);
		/* Cut only where the next unit (at most 4 escapes of 4
		 * bytes) would not fit. */
		REQUIRE(m == n || m + 16 >= len - 1);
		free(small);
	}
	free(v);
	free(u);
}

/* Four hex digits at s, or -1. */
static long hex4(const char *s)
{
	long v = 0;

	for (int i = 0; i < 4; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* Code point c as UTF-8 at out; returns its length. */
static size_t put_utf8(char *out, uint32_t c)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | c >> 6);
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | c >> 12);
		out[1] = (char)(0x80 | (c >> 6 & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | c >> 18);
	out[1] = (char)(0x80 | (c >> 12 & 0x3f));
	out[2] = (char)(0x80 | (c >> 6 & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/*
 * The tiny JSON checker: the len bytes at j are one string literal and
 * nothing else, in valid UTF-8 without DEL or C1; its value, as UTF-8,
 * into out.  Returns the value's length, or -1.
 */
static long json_string(const char *j, size_t len, char *out)
{
	const unsigned char *p = (const unsigned char *)j;
	size_t i = 1, o = 0, k;
	uint32_t c;

	if (len < 2 || j[0] != '"' || j[len - 1] != '"')
		return -1;
	while (i < len - 1) {
		if (p[i] == '"' || p[i] < 0x20 || p[i] == 0x7f)
			return -1;
		if (p[i] != '\\') {
			k = fuzz_utf8(p + i, len - 1 - i, &c);
			if (k == 0 || (c >= 0x80 && c <= 0x9f))
				return -1;
			memcpy(out + o, j + i, k);
			o += k;
			i += k;
			continue;
		}
		if (i + 1 >= len - 1)
			return -1;
		switch (j[i + 1]) {
		case '"': case '\\': case '/':
			out[o++] = j[i + 1];
			i += 2;
			continue;
		case 'b': out[o++] = '\b'; i += 2; continue;
		case 'f': out[o++] = '\f'; i += 2; continue;
		case 'n': out[o++] = '\n'; i += 2; continue;
		case 'r': out[o++] = '\r'; i += 2; continue;
		case 't': out[o++] = '\t'; i += 2; continue;
		case 'u':
			break;
		default:
			return -1;
		}
		long u, lo;

		if (i + 6 > len - 1 || (u = hex4(j + i + 2)) < 0)
			return -1;
		i += 6;
		if (u >= 0xdc00 && u <= 0xdfff)
			return -1;	/* a low surrogate alone */
		if (u >= 0xd800 && u <= 0xdbff) {
			if (i + 6 > len - 1 || j[i] != '\\' || j[i + 1] != 'u' ||
			    (lo = hex4(j + i + 2)) < 0xdc00 || lo > 0xdfff)
				return -1;
			u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
			i += 6;
		}
		o += put_utf8(out + o, (uint32_t)u);
	}
	return (long)o;
}

/* What the JSON value should be: s with each byte that is no UTF-8 as
 * U+FFFD. */
static size_t json_want(const char *s, char *out)
{
	size_t n = strlen(s), i = 0, o = 0, k;
	uint32_t c;

	while (i < n) {
		k = fuzz_utf8((const unsigned char *)s + i, n - i, &c);
		if (k == 0) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		} else {
			memcpy(out + o, s + i, k);
			o += k;
			i += k;
		}
	}
	return o;
}

static void json_checks(const char *s)
{
	char *j = NULL, *val = malloc(3 * strlen(s) + 1);
	char *want = malloc(3 * strlen(s) + 1);
	size_t jlen = 0, wlen;
	FILE *f = open_memstream(&j, &jlen);
	long got;

	REQUIRE(f != NULL && val != NULL && want != NULL);
	cli_json_str(f, s);
	REQUIRE(fclose(f) == 0);
	REQUIRE(strlen(j) == jlen);
	REQUIRE(fuzz_shown(j, jlen));
	got = json_string(j, jlen, val);
	REQUIRE(got >= 0);
	wlen = json_want(s, want);
	REQUIRE((size_t)got == wlen && memcmp(val, want, wlen) == 0);
	free(j);
	free(val);
	free(want);
}

static void prom_checks(const char *s)
{
	char *p = NULL, *val = malloc(3 * strlen(s) + 1);
	size_t plen = 0, o = 0, ascii = 1;
	FILE *f = open_memstream(&p, &plen);

	REQUIRE(f != NULL && val != NULL);
	cli_prom_str(f, s);
	REQUIRE(fclose(f) == 0);
	REQUIRE(plen >= 2 && p[0] == '"' && p[plen - 1] == '"');
	REQUIRE(fuzz_shown(p, plen));
	for (size_t i = 1; i < plen - 1; i++) {
		REQUIRE(p[i] != '"');
		if (p[i] != '\\') {
			val[o++] = p[i];
			continue;
		}
		i++;
		REQUIRE(i < plen - 1);
		REQUIRE(p[i] == '\\' || p[i] == '"' || p[i] == 'n');
		val[o++] = p[i] == 'n' ? '\n' : p[i];
	}
	for (const char *q = s; *q != '\0'; q++)
		if (*q < 0x20 || *q > 0x7e)
			ascii = 0;
	REQUIRE(!ascii || (o == strlen(s) && memcmp(val, s, o) == 0));
	free(p);
	free(val);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstr(data, size);

	vis_checks(data, size);
	/* The writers take C strings: the input up to its first NUL. */
	json_checks(s);
	prom_checks(s);
	free(s);
	return 0;
}
