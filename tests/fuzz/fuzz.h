/*
 * fuzz.h - what the libFuzzer targets in tests/fuzz/ share: the entry
 * point's declaration, and REQUIRE, which aborts with the failed invariant
 * so that libFuzzer reports it as a crash and keeps the input.
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(cond)                                                      \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "%s:%d: invariant failed: %s\n",   \
				__FILE__, __LINE__, #cond);                \
			abort();                                           \
		}                                                          \
	} while (0)

/* The input as a C string of its own, in a heap block of exactly size + 1
 * bytes so that ASan sees a read past the terminator. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s == NULL)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/*
 * The length of the well-formed UTF-8 sequence at s (n bytes there) and
 * its code point, or 0: written from the Unicode Standard's table 3-7 of
 * well-formed byte sequences, apart from lib/util.c's decoder, so that
 * the one checks the other.
 */
static inline size_t fuzz_utf8(const unsigned char *s, size_t n,
			       uint32_t *cp)
{
	unsigned char b = s[0], lo = 0x80, hi = 0xbf;
	size_t len;

	if (n == 0)
		return 0;
	if (b <= 0x7f) {
		*cp = b;
		return 1;
	}
	if (b >= 0xc2 && b <= 0xdf)
		len = 2;
	else if (b >= 0xe0 && b <= 0xef)
		len = 3;
	else if (b >= 0xf0 && b <= 0xf4)
		len = 4;
	else
		return 0;
	/* The second byte's range depends on the first. */
	if (b == 0xe0)
		lo = 0xa0;
	else if (b == 0xed)
		hi = 0x9f;
	else if (b == 0xf0)
		lo = 0x90;
	else if (b == 0xf4)
		hi = 0x8f;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	*cp = len == 2 ? (uint32_t)(b & 0x1f) << 6 | (s[1] & 0x3f) :
	      len == 3 ? (uint32_t)(b & 0x0f) << 12 |
			 (uint32_t)(s[1] & 0x3f) << 6 | (s[2] & 0x3f) :
			 (uint32_t)(b & 0x07) << 18 |
			 (uint32_t)(s[1] & 0x3f) << 12 |
			 (uint32_t)(s[2] & 0x3f) << 6 | (s[3] & 0x3f);
	return len;
}

/* Whether the n bytes at s are what a terminal may be given: valid UTF-8
 * with no C0 control, DEL, C1 control, and none of the characters that
 * reorder text (bidi embeddings, overrides and isolates, LRM, RLM) or
 * separate lines (U+2028, U+2029). */
static inline int fuzz_shown(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, k;
	uint32_t c;

	while (i < n) {
		k = fuzz_utf8(p + i, n - i, &c);
		if (k == 0 || c < 0x20 || c == 0x7f ||
		    (c >= 0x80 && c <= 0x9f) || c == 0x200e || c == 0x200f ||
		    (c >= 0x2028 && c <= 0x202e) ||
		    (c >= 0x2066 && c <= 0x2069))
			return 0;
		i += k;
	}
	return 1;
}

#endif /* FUZZ_H */
