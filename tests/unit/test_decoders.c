/*
 * test_decoders.c - the scripts' answers, decoded strictly (lib/scripts/
 * NAME.c): the shapes the scripts write, as Redis 7 sends them, and ones
 * they never write, which are protocol errors, never a default.
 */
#include <string.h>

#include "harness.h"
#include "lock_int.h"

#define HOLDER "$4\r\nhost\r\n$3\r\n123\r\n$4\r\nuser\r\n$4\r\ntrue\r\n" \
	"$13\r\n1700000000000\r\n$16\r\n1700000000000000\r\n" \
	"$8\r\nabcdef01\r\n$1\r\n0\r\n"

static void force(void)
{
	static const struct {
		const char *resp;
		int rc, held;
		long long holders, junk;
	} t[] = {
		/* Nothing held; nothing held but two keys of junk. */
		{ "*2\r\n:0\r\n:0\r\n", RLOCK_OK, 0, 0, 0 },
		{ "*2\r\n:0\r\n:2\r\n", RLOCK_OK, 0, 0, 2 },
		/* The holder removed, with three shared holders in all. */
		{ "*12\r\n:1\r\n:0\r\n" HOLDER ":1\r\n:0\r\n", RLOCK_OK, 1,
		  1, 0 },
		{ "*12\r\n:1\r\n:0\r\n" HOLDER ":3\r\n:1\r\n", RLOCK_OK, 1,
		  3, 1 },
		/* Never written: a count of the wrong length, a flag or a
		 * number out of range, a holder layout cut short. */
		{ "*3\r\n:0\r\n:0\r\n:0\r\n", RLOCK_EPROTO, 0, 0, 0 },
		{ "*2\r\n:2\r\n:0\r\n", RLOCK_EPROTO, 0, 0, 0 },
		{ "*2\r\n:0\r\n:10\r\n", RLOCK_EPROTO, 0, 0, 0 },
		{ "*2\r\n:0\r\n$1\r\nx\r\n", RLOCK_EPROTO, 0, 0, 0 },
		{ "*12\r\n:1\r\n:0\r\n" HOLDER ":0\r\n:0\r\n", RLOCK_EPROTO,
		  0, 0, 0 },
		{ "*11\r\n:1\r\n:0\r\n" HOLDER ":1\r\n", RLOCK_EPROTO, 0, 0,
		  0 },
		{ "*1\r\n:1\r\n", RLOCK_EPROTO, 0, 0, 0 },
		{ ":1\r\n", RLOCK_EPROTO, 0, 0, 0 },
		{ "$1\r\n1\r\n", RLOCK_EPROTO, 0, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		redisReply *r = unit_reply(t[i].resp);
		struct force_reply fr;
		struct rlock_holder h;

		unit_context("force %zu", i);
		CHECK(r != NULL);
		if (r == NULL)
			continue;
		memset(&h, 0, sizeof(h));
		CHECK_INT(decode_force(r, &fr, &h), t[i].rc);
		if (t[i].rc == RLOCK_OK) {
			CHECK_INT(fr.held, t[i].held);
			CHECK_INT(fr.holders, t[i].holders);
			CHECK_INT(fr.junk, t[i].junk);
		}
		if (t[i].rc == RLOCK_OK && t[i].held) {
			CHECK_STR(h.host, "host");
			CHECK_INT(h.pid, 123);
			CHECK_INT(h.fence, 1700000000000000LL);
			CHECK_STR(h.token_prefix, "abcdef01");
		}
		freeReplyObject(r);
	}
	unit_context(NULL);
}

/* extend: 1 or 0; fence: 1; anything else is a protocol error. */
static void integers(void)
{
	static const struct {
		const char *resp;
		int extend, held, fence;
	} t[] = {
		{ ":1\r\n", RLOCK_OK, 1, RLOCK_OK },
		{ ":0\r\n", RLOCK_OK, 0, RLOCK_EPROTO },
		{ ":2\r\n", RLOCK_EPROTO, 0, RLOCK_EPROTO },
		{ ":-1\r\n", RLOCK_EPROTO, 0, RLOCK_EPROTO },
		{ "$1\r\n1\r\n", RLOCK_EPROTO, 0, RLOCK_EPROTO },
		{ "+OK\r\n", RLOCK_EPROTO, 0, RLOCK_EPROTO },
		{ "*1\r\n:1\r\n", RLOCK_EPROTO, 0, RLOCK_EPROTO },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		redisReply *r = unit_reply(t[i].resp);
		int held = -1;

		unit_context("%s", t[i].resp);
		CHECK(r != NULL);
		if (r == NULL)
			continue;
		CHECK_INT(decode_extend(r, &held), t[i].extend);
		if (t[i].extend == RLOCK_OK)
			CHECK_INT(held, t[i].held);
		CHECK_INT(decode_fence(r), t[i].fence);
		freeReplyObject(r);
	}
	unit_context(NULL);
}

void test_decoders(void)
{
	force();
	integers();
}
