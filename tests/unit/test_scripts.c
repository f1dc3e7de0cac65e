/*
 * test_scripts.c - every Lua script's digest, written by hand in
 * scripts.c, is the SHA-1 of its body: EVALSHA would otherwise always
 * miss and pay a NOSCRIPT and an EVAL.  And the cluster slot of a key,
 * which must be the server's or every request would be redirected.
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

static int slot_of(const char *key)
{
	return key_slot(key, strlen(key));
}

/* The examples of the Redis Cluster specification, and CLUSTER KEYSLOT's
 * answers on Redis 7.0.15 for rlock's own keys. */
void test_slots(void)
{
	CHECK_INT(slot_of("123456789"), 0x31c3 % 16384);
	CHECK_INT(slot_of("foo"), 12182);
	CHECK_INT(slot_of("{user1000}.following"), slot_of("user1000"));
	CHECK_INT(slot_of("{user1000}.followers"), slot_of("user1000"));
	/* An empty tag: the whole key. */
	CHECK_INT(slot_of("foo{}{bar}"), 8363);
	/* The tag ends at the first '}' after the first '{'. */
	CHECK_INT(slot_of("foo{{bar}}zap"), slot_of("{bar"));
	CHECK_INT(slot_of("foo{bar}{zap}"), slot_of("bar"));
	CHECK_INT(slot_of("foo{"), slot_of("foo{"));
	/* Every key of a lock, and its channel, in one slot. */
	CHECK_INT(slot_of("rlock:{job}"), slot_of("job"));
	CHECK_INT(slot_of("rlock:{job}:meta"), slot_of("job"));
	CHECK_INT(slot_of("rlock:{job}:released"), slot_of("job"));
	CHECK_INT(slot_of("rlock:{job}"), 2906);
	CHECK_INT(slot_of(""), 0);
}
