/*
 * fuzz_held.c - held_next (cli/held.c) over the input as RLOCK_HELD, the
 * variable a nested run inherits and any process could have written.
 *
 * Beyond not crashing: every entry it gives lies within the input, has a
 * key of the length it says, a kind that is a terminated string with no
 * tab or newline, a pid in range, and a token of 32 lower-case hex digits
 * that the input holds; and the walk ends, each step moving forward.
 */
#include <limits.h>

#include "cli.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = fuzz_cstr(data, size);
	const char *p = in, *before;
	struct held_entry h;
	size_t len = strlen(in);

	for (;;) {
		before = p;
		if (!held_next(&p, &h))
			break;
		REQUIRE(p == NULL || (p > before && p <= in + len));
		REQUIRE(h.key >= in && h.key + h.keylen <= in + len);
		REQUIRE(h.keylen > 0 && h.keylen < RLOCK_KEY_MAX);
		REQUIRE(memchr(h.key, '\t', h.keylen) == NULL);
		REQUIRE(memchr(h.key, '\n', h.keylen) == NULL);
		REQUIRE(h.kind[0] != '\0' && strlen(h.kind) < sizeof(h.kind));
		REQUIRE(strpbrk(h.kind, "\t\n") == NULL);
		REQUIRE(h.pid >= 2 && h.pid <= INT_MAX && h.start >= 0);
		REQUIRE(strlen(h.token) == RLOCK_TOKEN_LEN);
		REQUIRE(strspn(h.token, "0123456789abcdef") == RLOCK_TOKEN_LEN);
		REQUIRE(strstr(in, h.token) != NULL);
		if (p == NULL)
			break;
	}
	free(in);
	return 0;
}
