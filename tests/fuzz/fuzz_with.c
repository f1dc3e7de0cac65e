/*
 * fuzz_with.c - the record of a set of locks held together (--with),
 * P{N}:with, which another client can write: rl_decode_with_record on the
 * input's bytes, in a heap block of exactly their size.
 *
 * Beyond not crashing: a record that decodes has a token of 32 lower-case
 * hex digits, 1 to RLOCK_WITH_MAX names that are each a lock name, and a
 * fence for each in 1..2^53 - 2^20; one that does not decode leaves
 * nothing behind (no name, no count).
 */
#include "fuzz.h"
#include "request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rlock_with w;
	char *s = malloc(size > 0 ? size : 1);

	if (s == NULL)
		abort();
	memcpy(s, data, size);
	if (rl_decode_with_record(s, size, &w) == 0) {
		REQUIRE(strlen(w.token) == RLOCK_TOKEN_LEN);
		REQUIRE(strspn(w.token, "0123456789abcdef") == RLOCK_TOKEN_LEN);
		REQUIRE(w.n >= 1 && w.n <= RLOCK_WITH_MAX);
		for (size_t i = 0; i < w.n; i++) {
			REQUIRE(rlock_check_name(w.name[i], NULL) == RLOCK_OK);
			REQUIRE(w.fence[i] >= 1 && w.fence[i] < FENCE_LIMIT);
		}
	}
	free(s);
	return 0;
}
