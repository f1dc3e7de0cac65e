/*
 * test_decoders.c - the scripts' answers, decoded strictly (lib/scripts/
 * NAME.c): the shapes the scripts write, as Redis 7 sends them, and ones
 * they never write, which are protocol errors, never a default.
 */
#include <string.h>

#include "harness.h"
#include "reply.h"
#include "request.h"

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
		{ "*2\r\n:0\r\n:13\r\n", RLOCK_EPROTO, 0, 0, 0 },
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
		CHECK_INT(rl_decode_force(r, &fr, &h), t[i].rc);
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
		CHECK_INT(rl_decode_extend(r, &held), t[i].extend);
		if (t[i].extend == RLOCK_OK)
			CHECK_INT(held, t[i].held);
		CHECK_INT(rl_decode_fence(r), t[i].fence);
		freeReplyObject(r);
	}
	unit_context(NULL);
}

/* The shortest path's grant is its history entry's id, "MS-SEQ": the
 * fence is (MS + 1) * 1000 + SEQ; any other string is no grant. */
static void grant_ids(void)
{
	static const struct {
		const char *resp;
		int rc;
		long long fence;
	} t[] = {
		{ "$15\r\n1795771430791-0\r\n", 0, 1795771430792000LL },
		{ "$17\r\n1795771430791-999\r\n", 0, 1795771430792999LL },
		{ "$17\r\n9007199253690-999\r\n", 0, 9007199253691999LL },
		/* SEQ past 999, MS not 13 digits, signs, spaces, junk. */
		{ "$18\r\n1795771430791-1000\r\n", -1, 0 },
		{ "$14\r\n179577143079-1\r\n", -1, 0 },
		{ "$16\r\n17957714307910-1\r\n", -1, 0 },
		{ "$15\r\n9007199253691-0\r\n", -1, 0 },
		{ "$14\r\n1795771430791-\r\n", -1, 0 },
		{ "$16\r\n1795771430791-+1\r\n", -1, 0 },
		{ "$16\r\n1795771430791- 1\r\n", -1, 0 },
		{ "$15\r\n1795771430791_1\r\n", -1, 0 },
		{ "$15\r\n+795771430791-1\r\n", -1, 0 },
		{ "$0\r\n\r\n", -1, 0 },
		{ "+1795771430791-0\r\n", -1, 0 },
		/* The script's array, as before. */
		{ "*3\r\n:1\r\n:1795771430791150\r\n:1\r\n", 0,
		  1795771430791150LL },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		redisReply *r = unit_reply(t[i].resp);
		long long fence = 0;
		int recorded = -5;

		unit_context("grant id %zu", i);
		CHECK(r != NULL);
		if (r == NULL)
			continue;
		CHECK_INT(rl_decode_grant(r, &fence, &recorded, NULL), t[i].rc);
		if (t[i].rc == 0) {
			CHECK_INT(fence, t[i].fence);
			CHECK_INT(recorded, 1);
		}
		freeReplyObject(r);
	}
}

/* A semaphore's grant, {1, fence, recorded, slot}: recorded -1 when the
 * history was not asked, the slot 0..RLOCK_LIMIT_MAX-1; a slot of another
 * type or out of range is no grant, never slot 0. */
static void grant_slots(void)
{
	static const struct {
		const char *resp;
		int rc, recorded, slot;
	} t[] = {
		{ "*4\r\n:1\r\n:17957714307911\r\n:1\r\n:0\r\n", 0, 1, 0 },
		{ "*4\r\n:1\r\n:17957714307911\r\n:-1\r\n:99999\r\n", 0, -1,
		  99999 },
		{ "*3\r\n:1\r\n:17957714307911\r\n:-1\r\n", 0, -1, -1 },
		{ "*2\r\n:1\r\n:17957714307911\r\n", 0, -1, -1 },
		{ "*4\r\n:1\r\n:17957714307911\r\n:1\r\n:100000\r\n", -1, 0,
		  0 },
		{ "*4\r\n:1\r\n:17957714307911\r\n:1\r\n:-1\r\n", -1, 0, 0 },
		{ "*4\r\n:1\r\n:17957714307911\r\n:1\r\n$1\r\n0\r\n", -1, 0,
		  0 },
		{ "*4\r\n:1\r\n:17957714307911\r\n:-2\r\n:0\r\n", -1, 0, 0 },
		{ "*5\r\n:1\r\n:17957714307911\r\n:1\r\n:0\r\n:0\r\n", -1, 0,
		  0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		redisReply *r = unit_reply(t[i].resp);
		long long fence = 0;
		int recorded = -5, slot = -5;

		unit_context("grant slot %zu", i);
		CHECK(r != NULL);
		if (r == NULL)
			continue;
		CHECK_INT(rl_decode_grant(r, &fence, &recorded, &slot), t[i].rc);
		if (t[i].rc == 0) {
			CHECK_INT(fence, 17957714307911LL);
			CHECK_INT(recorded, t[i].recorded);
			CHECK_INT(slot, t[i].slot);
		}
		freeReplyObject(r);
	}
	unit_context(NULL);
}

/* A pool's grant, {1, fence, recorded, {member, properties, ...}}: the
 * members and their KEY=VALUE lines, checked as rlock writes them; a
 * member or property another client wrote is no grant. */
static void pool_members(void)
{
	static const struct {
		const char *resp;
		int n;
	} t[] = {
		{ "*4\r\n$5\r\nenv-a\r\n$7\r\nurl=x y\r\n$5\r\nenv-b\r\n"
		  "$0\r\n\r\n", 2 },
		{ "*2\r\n$1\r\na\r\n$10\r\nurl=1\n_k9=\r\n", 1 },
		{ "*0\r\n", 0 },
		/* An odd count, a name empty or with a control character,
		 * properties that are not KEY=VALUE lines. */
		{ "*3\r\n$1\r\na\r\n$0\r\n\r\n$1\r\nb\r\n", -1 },
		{ "*2\r\n$0\r\n\r\n$0\r\n\r\n", -1 },
		{ "*2\r\n$3\r\na\nb\r\n$0\r\n\r\n", -1 },
		{ "*2\r\n$1\r\na\r\n$3\r\nurl\r\n", -1 },
		{ "*2\r\n$1\r\na\r\n$5\r\nurl=\n\r\n", -1 },
		{ "*2\r\n$1\r\na\r\n$4\r\n1u=x\r\n", -1 },
		{ "*2\r\n$1\r\na\r\n$5\r\nu-r=x\r\n", -1 },
		{ "*2\r\n$1\r\na\r\n$5\r\nu=a\tb\r\n", -1 },
		{ "*2\r\n:1\r\n$0\r\n\r\n", -1 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		redisReply *r = unit_reply(t[i].resp);
		struct rlock_member m[4];
		const char *why = NULL;

		unit_context("pool members %zu", i);
		CHECK(r != NULL);
		if (r == NULL)
			continue;
		CHECK_INT(rl_decode_members(r, m, 4, &why), t[i].n);
		if (t[i].n == 2) {
			CHECK(strcmp(m[0].name, "env-a") == 0);
			CHECK(strcmp(m[0].props, "url=x y") == 0);
			CHECK(strcmp(m[1].props, "") == 0);
		}
		freeReplyObject(r);
	}
	unit_context("pool kinds");
	CHECK_INT(rl_pool_kind("p"), 1);
	CHECK_INT(rl_pool_kind("p2"), 2);
	CHECK_INT(rl_pool_kind("p64"), 64);
	CHECK_INT(rl_pool_kind("p65"), 0);
	CHECK_INT(rl_pool_kind("p0"), 0);
	CHECK_INT(rl_pool_kind("px"), 0);
	CHECK_INT(rl_pool_kind("3"), 0);
	unit_context(NULL);
}

/* A packed history entry: "a1" a grant whose fence is its id's, unless a
 * "fence" field says another; "r1" a release.  A value of the wrong shape
 * is marked as not rlock's. */
static void packed_entries(void)
{
	redisReply *r;
	struct rlock_event ev;

	unit_context("packed grant");
	r = unit_reply("*2\r\n$15\r\n1795771430791-7\r\n*2\r\n$2\r\na1\r\n"
		       "$45\r\nx\n12\nabcdef01\n4321\nhost\nuser\nnote\ncmd\nwith nl\r\n");
	CHECK(r != NULL);
	if (r != NULL) {
		CHECK_INT(rl_decode_entry(r, &ev), 0);
		CHECK_STR(ev.event, "acquired");
		CHECK_STR(ev.kind, "x");
		CHECK_INT(ev.waited_ms, 12);
		CHECK_STR(ev.token, "abcdef01");
		CHECK_INT(ev.pid, 4321);
		CHECK_STR(ev.host, "host");
		CHECK_STR(ev.user, "user");
		CHECK_STR(ev.note, "note");
		CHECK_STR(ev.command, "cmd\nwith nl");
		CHECK_INT(ev.fence, 1795771430792007LL);
		CHECK_INT(ev.bad, 0);
		freeReplyObject(r);
	}
	unit_context("packed grant with a fence of its own");
	r = unit_reply("*2\r\n$15\r\n1795771430791-7\r\n*4\r\n$2\r\na1\r\n"
		       "$21\r\ns\n0\nabcdef01\n1\nh\nu\n\nc\r\n$5\r\nfence\r\n$2\r\n42\r\n");
	CHECK(r != NULL);
	if (r != NULL) {
		CHECK_INT(rl_decode_entry(r, &ev), 0);
		CHECK_STR(ev.kind, "s");
		CHECK_INT(ev.fence, 42);
		freeReplyObject(r);
	}
	unit_context("packed release");
	r = unit_reply("*2\r\n$15\r\n1795771430791-8\r\n*2\r\n$2\r\nr1\r\n"
		       "$17\r\nabcdef01\n143\nTERM\r\n");
	CHECK(r != NULL);
	if (r != NULL) {
		CHECK_INT(rl_decode_entry(r, &ev), 0);
		CHECK_STR(ev.event, "released");
		CHECK_STR(ev.token, "abcdef01");
		CHECK_INT(ev.exit, 143);
		CHECK_STR(ev.signal, "TERM");
		CHECK_INT(ev.fence, -1);
		CHECK_INT(ev.bad, 0);
		freeReplyObject(r);
	}
	unit_context("packed release, exit and signal not known");
	r = unit_reply("*2\r\n$15\r\n1795771430791-8\r\n*2\r\n$2\r\nr1\r\n"
		       "$10\r\nabcdef01\n\n\r\n");
	CHECK(r != NULL);
	if (r != NULL) {
		CHECK_INT(rl_decode_entry(r, &ev), 0);
		CHECK_INT(ev.exit, -1);
		CHECK_STR(ev.signal, "");
		CHECK_INT(ev.bad, 0);
		freeReplyObject(r);
	}
	unit_context("packed values of the wrong shape");
	r = unit_reply("*2\r\n$15\r\n1795771430791-8\r\n*2\r\n$2\r\na1\r\n"
		       "$5\r\nx\n0\nz\r\n");
	CHECK(r != NULL);
	if (r != NULL) {
		rl_decode_entry(r, &ev);
		CHECK(ev.bad != 0);
		freeReplyObject(r);
	}
	r = unit_reply("*2\r\n$15\r\n1795771430791-8\r\n*2\r\n$2\r\nr1\r\n"
		       "$11\r\nabcdef01\nxx\r\n");
	CHECK(r != NULL);
	if (r != NULL) {
		rl_decode_entry(r, &ev);
		CHECK(ev.bad != 0);
		freeReplyObject(r);
	}
	/* A grant's id that gives no fence: none taken from it. */
	r = unit_reply("*2\r\n$18\r\n1795771430791-1000\r\n*2\r\n$2\r\na1\r\n"
		       "$21\r\nx\n0\nabcdef01\n1\nh\nu\n\nc\r\n");
	CHECK(r != NULL);
	if (r != NULL) {
		CHECK_INT(rl_decode_entry(r, &ev), 0);
		CHECK_INT(ev.fence, -1);
		freeReplyObject(r);
	}
}

/* A leader's step-down (rlock lead): the event "stepped-down", twelve
 * characters, in an entry and in the record of the last runs, with its
 * reason; it ends a run and is no success.  An event name longer than
 * the room for one is another client's. */
static void stepped_down(void)
{
	static const char run[] = "1\n1795771430791-9\nstepped-down\nx\n143"
				  "\nTERM\nabcdef01\n--health failed 3 times "
				  "in a row\n42\n\n0\n4321\nh\nu\n\nlead: cmd";
	redisReply *r;
	struct rlock_event ev;

	unit_context("stepped-down entry");
	r = unit_reply("*2\r\n$15\r\n1795771430791-9\r\n*6\r\n"
		       "$5\r\nevent\r\n$12\r\nstepped-down\r\n"
		       "$6\r\nreason\r\n$20\r\n--health failed once\r\n"
		       "$5\r\ntoken\r\n$8\r\nabcdef01\r\n");
	CHECK(r != NULL);
	if (r != NULL) {
		CHECK_INT(rl_decode_entry(r, &ev), 0);
		CHECK_STR(ev.event, "stepped-down");
		CHECK_STR(ev.reason, "--health failed once");
		CHECK_INT(ev.bad, 0);
		CHECK_INT(rlock_event_ok(&ev), 0);
		freeReplyObject(r);
	}
	unit_context("stepped-down run record");
	CHECK_INT(rl_decode_run(run, sizeof(run) - 1, &ev), 0);
	CHECK_STR(ev.event, "stepped-down");
	CHECK_STR(ev.reason, "--health failed 3 times in a row");
	CHECK_INT(ev.exit, 143);
	CHECK_STR(ev.command, "lead: cmd");
	CHECK_INT(ev.bad, 0);
	CHECK_INT(rlock_event_ok(&ev), 0);
	unit_context("an event name too long");
	r = unit_reply("*2\r\n$15\r\n1795771430791-9\r\n*2\r\n"
		       "$5\r\nevent\r\n$16\r\nstepped-down-now\r\n");
	CHECK(r != NULL);
	if (r != NULL) {
		rl_decode_entry(r, &ev);
		CHECK(ev.bad != 0);
		freeReplyObject(r);
	}
	unit_context(NULL);
}

/* with.lua's acquire answer (--with): a fence per name, or busy with the
 * holder of the first lock held when details were asked. */
static void with_answers(void)
{
	static const struct {
		const char *resp;
		int rc, granted, held;
		long long fence1, place;
	} t[] = {
		{ "*3\r\n:1\r\n:1700000000000001\r\n:1700000000000002\r\n",
		  0, 1, 0, 1700000000000002, 0 },
		{ "*5\r\n:0\r\n:2500\r\n:0\r\n:1\r\n:2\r\n", 0, 0, 0, 0, 0 },
		{ "*5\r\n:0\r\n:-1\r\n:-1\r\n:0\r\n:0\r\n", 0, 0, 0, 0,
		  -1 },
		{ "*13\r\n:0\r\n:2500\r\n:3\r\n:1\r\n:2\r\n" HOLDER, 0, 0,
		  1, 0, 3 },
		/* Never written: a fence of 0 or past 2^53, one fence
		 * short, a lock held past the set's names, a holder with
		 * no lock held, a holder layout cut short, a flag of 2. */
		{ "*3\r\n:1\r\n:1\r\n:0\r\n", -1, 0, 0, 0, 0 },
		{ "*3\r\n:1\r\n:1\r\n:9007199254740992\r\n", -1, 0, 0, 0,
		  0 },
		{ "*2\r\n:1\r\n:1\r\n", -1, 0, 0, 0, 0 },
		{ "*5\r\n:0\r\n:2500\r\n:0\r\n:1\r\n:3\r\n", -1, 0, 0, 0,
		  0 },
		{ "*13\r\n:0\r\n:2500\r\n:3\r\n:1\r\n:0\r\n" HOLDER, -1, 0,
		  0, 0, 0 },
		{ "*12\r\n:0\r\n:2500\r\n:3\r\n:1\r\n:1\r\n$4\r\nhost\r\n"
		  "$3\r\n123\r\n$4\r\nuser\r\n$4\r\ntrue\r\n"
		  "$13\r\n1700000000000\r\n$1\r\n5\r\n$8\r\nabcdef01\r\n",
		  -1, 0, 0, 0, 0 },
		{ "*5\r\n:2\r\n:2500\r\n:0\r\n:1\r\n:2\r\n", -1, 0, 0, 0, 0 },
		{ ":1\r\n", -1, 0, 0, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		redisReply *r = unit_reply(t[i].resp);
		struct with_reply wr;
		struct rlock_holder h;

		unit_context("with acquire %zu", i);
		CHECK(r != NULL);
		if (r == NULL)
			continue;
		memset(&h, 0, sizeof(h));
		CHECK_INT(rl_decode_with_acquire(r, 2, &wr, &h), t[i].rc);
		if (t[i].rc == 0) {
			CHECK_INT(wr.granted, t[i].granted);
			CHECK_INT(h.held, t[i].held);
			if (t[i].granted)
				CHECK_INT(wr.fence[1], t[i].fence1);
			else
				CHECK_INT(wr.place, t[i].place);
		}
		if (t[i].held)
			CHECK_STR(h.host, "host");
		freeReplyObject(r);
	}
}

/* The set's record, P{N}:with. */
static void with_records(void)
{
	static const struct {
		const char *v;
		int rc;
		size_t n;
	} t[] = {
		{ "0123456789abcdef0123456789abcdef\ndb\n17\ncache\n18", 0, 2 },
		{ "0123456789abcdef0123456789abcdef\ndb\n17", 0, 1 },
		{ "0123456789abcdef0123456789abcdef\n{g}a b\n1", 0, 1 },
		{ "0123456789abcdef0123456789abcdef\ndb\n17\n", -1, 0 },
		{ "0123456789abcdef0123456789abcdef\ndb", -1, 0 },
		{ "0123456789abcdef0123456789abcdef\ndb\n0", -1, 0 },
		{ "0123456789abcdef0123456789abcdef\ndb\n9007199254740992", -1,
		  0 },
		{ "0123456789abcdef0123456789abcdef\n\n17", -1, 0 },
		{ "0123456789ABCDEF0123456789abcdef\ndb\n17", -1, 0 },
		{ "0123456789abcdef0123456789abcde\ndb\n17", -1, 0 },
		{ "0123456789abcdef0123456789abcdef\nd\tb\n17", -1, 0 },
		{ "", -1, 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct rlock_with w;

		unit_context("with record %zu", i);
		CHECK_INT(rl_decode_with_record(t[i].v, strlen(t[i].v), &w),
			  t[i].rc);
		CHECK_INT(w.n, t[i].n);
		if (t[i].rc == 0)
			CHECK_STR(w.name[0], t[i].n == 1 && t[i].v[33] == '{' ?
				  "{g}a b" : "db");
	}
}

/* The check of the record of the last success against one server's
 * history (XREVRANGE LOG ID - COUNT 1), and the server's clock (TIME):
 * what the history answers, and shapes no server sends, which are -1. */
static void ok_checks(void)
{
#define REL(id, v) "*1\r\n*2\r\n$15\r\n" id "\r\n*2\r\n$2\r\nr1\r\n$" v
	static const struct {
		const char *resp;
		int want;
	} t[] = {
		/* The success itself; a plain release (exit not known). */
		{ REL("1795771430791-8", "11\r\nabcdef01\n0\n\r\n"), OKREC_ENTRY },
		{ REL("1795771430791-8", "10\r\nabcdef01\n\n\r\n"), OKREC_ENTRY },
		/* Nothing at or before it: the history starts after it. */
		{ "*0\r\n", OKREC_TRIMMED },
		/* Its entry, a failure, a signal, a grant, a junk exit. */
		{ REL("1795771430791-8", "11\r\nabcdef01\n1\n\r\n"), OKREC_FAILED },
		{ REL("1795771430791-8", "15\r\nabcdef01\n0\nTERM\r\n"),
		  OKREC_FAILED },
		{ REL("1795771430791-8", "12\r\nabcdef01\nxx\n\r\n"), OKREC_FAILED },
		{ "*1\r\n*2\r\n$15\r\n1795771430791-8\r\n*2\r\n$2\r\na1\r\n"
		  "$21\r\ns\n0\nabcdef01\n1\nh\nu\n\nc\r\n", OKREC_FAILED },
		/* An entry with no event of rlock's. */
		{ "*1\r\n*2\r\n$15\r\n1795771430791-8\r\n*2\r\n$1\r\nx\r\n$1\r\n"
		  "y\r\n", OKREC_FAILED },
		/* One before it: no entry of that ID, success or not. */
		{ REL("1795771430791-7", "11\r\nabcdef01\n0\n\r\n"), OKREC_NONE },
		{ REL("0795771430791-8", "11\r\nabcdef01\n0\n\r\n"), OKREC_NONE },
		/* Never: two entries, not an array, not an entry. */
		{ "*2\r\n*0\r\n*0\r\n", -1 },
		{ ":0\r\n", -1 },
		{ "$-1\r\n", -1 },
		{ "*1\r\n:1\r\n", -1 },
		{ "*1\r\n*2\r\n$3\r\nabc\r\n*0\r\n", -1 },
	};
	static const struct {
		const char *resp;
		int rc;
		long long ms;
	} tt[] = {
		{ "*2\r\n$10\r\n1795771430\r\n$6\r\n791999\r\n", 0,
		  1795771430791LL },
		{ "*2\r\n$1\r\n0\r\n$1\r\n0\r\n", 0, 0 },
		{ "*2\r\n$10\r\n1795771430\r\n$7\r\n1000000\r\n", -1, 0 },
		{ "*2\r\n$11\r\n99999999999\r\n$1\r\n0\r\n", -1, 0 },
		{ "*2\r\n$2\r\n-1\r\n$1\r\n0\r\n", -1, 0 },
		{ "*2\r\n:1795771430\r\n:0\r\n", -1, 0 },
		{ "*3\r\n$1\r\n1\r\n$1\r\n0\r\n$1\r\n0\r\n", -1, 0 },
		{ "*1\r\n$1\r\n1\r\n", -1, 0 },
		{ "$10\r\n1795771430\r\n", -1, 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		redisReply *r = unit_reply(t[i].resp);
		struct rlock_event ev;

		unit_context("ok check %zu", i);
		CHECK(r != NULL);
		if (r == NULL)
			continue;
		CHECK_INT(rl_decode_ok_check(r, "1795771430791-8", &ev), t[i].want);
		if (t[i].want == OKREC_ENTRY) {
			CHECK_STR(ev.id, "1795771430791-8");
			CHECK_INT(rlock_event_ok(&ev), 1);
		}
		freeReplyObject(r);
	}
	for (size_t i = 0; i < sizeof(tt) / sizeof(tt[0]); i++) {
		redisReply *r = unit_reply(tt[i].resp);
		long long ms = -7;

		unit_context("time %zu", i);
		CHECK(r != NULL);
		if (r == NULL)
			continue;
		CHECK_INT(rl_decode_time(r, &ms), tt[i].rc);
		CHECK_INT(ms, tt[i].rc == 0 ? tt[i].ms : -7);
		freeReplyObject(r);
	}
	unit_context(NULL);
#undef REL
}

void test_decoders(void)
{
	ok_checks();
	grant_ids();
	grant_slots();
	pool_members();
	packed_entries();
	stepped_down();
	force();
	integers();
	with_answers();
	with_records();
}
