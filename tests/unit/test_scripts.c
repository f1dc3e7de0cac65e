/*
 * test_scripts.c - every Lua script's digest, written by hand in
 * scripts.c, is the SHA-1 of its body: EVALSHA would otherwise always
 * miss and pay a NOSCRIPT and an EVAL.
 */
#include <string.h>

#include "harness.h"
#include "lock_int.h"

void test_scripts(void)
{
	char hex[41];

	for (int i = 0; i < RLOCK_SCRIPT_COUNT; i++) {
		const struct rlock_script *s = &rlock_scripts[i];

		unit_context("script %s", s->name);
		CHECK(s->body != NULL && s->sha != NULL);
		rlock_sha1_hex(s->body, strlen(s->body), hex);
		CHECK_STR(s->sha, hex);
	}
	unit_context(NULL);
}
