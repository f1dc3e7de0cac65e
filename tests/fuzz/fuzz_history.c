/*
 * fuzz_history.c - what status, log and last read from a server and from
 * keys other clients can write: the input's first byte picks the decoder,
 * the rest is a reply (through the reply guard and hiredis's reader, as
 * a connection reads it) or a record's bytes.
 *
 *   0: the status script's answer (rl_decode_status), with its holders
 *   1: a history entry (rl_decode_entry), each element of an array reply
 *   2: a run of the record of the last runs (rl_decode_run)
 *   3: a stream id (rl_decode_id)
 *   4: a SCAN reply of a listing (rl_decode_scan), prefix "rlock:"
 *   5: the history at and before the ID the record of the last success
 *      names (rl_decode_ok_check), that ID "1795771430791-8"
 *   6: the server's clock (rl_decode_time)
 *
 * Beyond not crashing: every number that decodes is within the range its
 * field allows (a fence in 0..2^53, a pid positive, an exit 0..255); a
 * field that does not decode is unknown and marked; no success is made of
 * an event with a junk exit or signal; junk notes are bounded (they are
 * escaped where they are shown); the record's success is believed only of
 * its own entry, a success; a clock is within what a fence allows.
 */
#include "fuzz.h"
#include "keys.h"
#include "reply.h"

/* A note of junk: bounded, and ends where the buffer does. */
static void printable(const char *s)
{
	REQUIRE(strlen(s) < RLOCK_JUNK_MAX);
}

static void check_event(const struct rlock_event *e)
{
	REQUIRE(e->fence == -1 || (e->fence >= 1 && e->fence <= FENCE_LIMIT));
	REQUIRE(e->pid == -1 || e->pid >= 1);
	REQUIRE(e->exit >= -1 && e->exit <= 255);
	REQUIRE(e->waited_ms >= -1 && e->held_ms >= -1);
	REQUIRE(e->time_ms >= 0);
	printable(e->junk);
	REQUIRE((e->bad == 0) == (e->junk[0] == '\0'));
	if (rlock_event_ok(e)) {
		REQUIRE(strcmp(e->event, "released") == 0);
		REQUIRE(e->exit == 0 || (e->exit == -1 && e->reason[0] == '\0'));
		REQUIRE(e->signal[0] == '\0');
		REQUIRE((e->bad & (1u << EV_EXIT)) == 0);
	}
}

static void check_holder(const struct rlock_holder *h)
{
	REQUIRE(h->fence >= -1 && h->fence <= FENCE_LIMIT);
	REQUIRE(h->pid >= 0 && h->pid <= 0x7fffffff);
	REQUIRE(h->limit >= 0 && h->limit <= RLOCK_LIMIT_MAX);
	REQUIRE(h->age_ms >= 0);
	printable(h->junk);
}

static void reply(int what, const redisReply *r)
{
	struct rlock_holder h, *list = NULL;
	struct rlock_event e;
	size_t n = 0;

	if (what == 5) {
		static const char id[] = "1795771430791-8";
		int v = rl_decode_ok_check(r, id, &e);

		REQUIRE(v >= -1 && v <= OKREC_NONE);
		if (v == OKREC_ENTRY) {
			check_event(&e);
			REQUIRE(strcmp(e.id, id) == 0);
			REQUIRE(rlock_event_ok(&e));
		}
		return;
	}
	if (what == 6) {
		long long ms = -1;

		if (rl_decode_time(r, &ms) == 0)
			REQUIRE(ms >= 0 && ms <= FENCE_LIMIT / 1000);
		else
			REQUIRE(ms == -1);
		return;
	}

	if (what == 4) {
		char cursor[32];
		size_t nn, nj;

		if (rl_decode_scan(r, 6, cursor, &nn, &nj) == RLOCK_OK) {
			REQUIRE(strlen(cursor) >= 1 && strlen(cursor) <= 20);
			REQUIRE(strspn(cursor, "0123456789") == strlen(cursor));
		}
		return;
	}
	if (what == 0) {
		memset(&h, 0, sizeof(h));
		if (rl_decode_status(r, &h, &list, &n) == 0) {
			check_holder(&h);
			for (size_t i = 0; i < n; i++)
				check_holder(&list[i]);
			REQUIRE(n <= 100);
		}
		free(list);
		return;
	}
	if (rl_decode_entry(r, &e) == 0)
		check_event(&e);
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements;
	     i++)
		if (rl_decode_entry(r->element[i], &e) == 0)
			check_event(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	redisReader *rd;
	struct rlock_event e;
	unsigned long long seq;
	long long ms;
	void *r = NULL;
	int what;

	if (size < 1)
		return 0;
	what = data[0] % 7;
	data++;
	size--;
	if (what == 2) {
		char *s = fuzz_cstr(data, size);

		if (rl_decode_run(s, size, &e) == 0)
			check_event(&e);
		free(s);
		return 0;
	}
	if (what == 3) {
		if (rl_decode_id((const char *)data, size, &ms, &seq) == 0)
			REQUIRE(ms >= 0);
		return 0;
	}
	/* As a connection reads it: the reply guard first (lib/resp.c), so
	 * that hiredis never holds what no server may declare. */
	{
		struct resp_guard g;

		memset(&g, 0, sizeof(g));
		if (rl_resp_guard_feed(&g, (const char *)data, size) != NULL)
			return 0;
	}
	rd = redisReaderCreate();
	if (rd == NULL)
		abort();
	if (redisReaderFeed(rd, (const char *)data, size) == REDIS_OK &&
	    redisReaderGetReply(rd, &r) == REDIS_OK && r != NULL) {
		reply(what, r);
		freeReplyObject(r);
	}
	redisReaderFree(rd);
	return 0;
}
