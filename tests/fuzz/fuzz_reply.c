/*
 * fuzz_reply.c - replies from a server rlock does not trust: the input is
 * a byte stream as read(2) would give it.  Its first byte picks where the
 * stream is split; the rest goes through the reply guard (lib/resp.c) in
 * those pieces, then, while the guard lets it pass, through hiredis's
 * reader, and every reply through the acquire script's decoders
 * (rl_decode_grant, rl_parse_busy, rl_elem_num: lib/lock.c), the baton message's
 * (rl_decode_baton, of each string), the holder layout's (rl_parse_holder), the force script's
 * (rl_decode_force: lib/scripts/force.c), a sentinel's +switch-master
 * message's (rl_node_is_switch: lib/node.c) and an error's text as messages
 * show it (rl_acl_refusal, rl_script_tail, rl_server_text).
 *
 * Beyond not crashing: the guard answers the same whatever the split; a
 * declared array or string past the bounds is refused before hiredis
 * sees it (so hiredis never holds an array longer than the bound); a
 * grant that decodes has a fence in 1..2^53-1 and recorded in -1..2; a
 * busy answer that decodes has a place >= -1 and a holder count >= 0;
 * rl_elem_num never returns a value outside the range asked.
 */
#include "fuzz.h"
#include "node.h"
#include "reply.h"
#include "request.h"

/* The guard's verdict on the stream fed in pieces of step bytes. */
static const char *guarded(const uint8_t *d, size_t n, size_t step)
{
	struct resp_guard g;
	const char *why = NULL;

	memset(&g, 0, sizeof(g));
	for (size_t i = 0; i < n && why == NULL; i += step)
		why = rl_resp_guard_feed(&g, (const char *)d + i,
					 n - i < step ? n - i : step);
	return why;
}

static void walk(const redisReply *r, int depth)
{
	REQUIRE(depth <= RESP_GUARD_DEPTH + 1);
	if (r->type == REDIS_REPLY_ARRAY) {
		REQUIRE(r->elements <= RLOCK_REPLY_MAX_ELEMENTS);
		for (size_t i = 0; i < r->elements; i++)
			walk(r->element[i], depth + 1);
	} else if (r->type == REDIS_REPLY_STRING ||
		   r->type == REDIS_REPLY_STATUS ||
		   r->type == REDIS_REPLY_ERROR) {
		REQUIRE((long long)r->len <= RLOCK_REPLY_MAX_BULK);
	}
}

static void decode(const redisReply *r)
{
	struct rlock_holder h;
	struct force_reply fr;
	long long fence, v, arrival;
	struct baton b;
	int recorded, joined = 0, slot;

	walk(r, 1);
	if (rl_decode_grant(r, &fence, &recorded, &slot) == 0) {
		REQUIRE(fence >= 1 && fence < (1LL << 53));
		REQUIRE(recorded >= -1 && recorded <= 2);
		REQUIRE(slot >= -1 && slot < RLOCK_LIMIT_MAX);
	}
	if (r->type == REDIS_REPLY_ARRAY) {
		static struct rlock_member m[RLOCK_COUNT_MAX];
		const char *why;
		int n = rl_decode_members(r, m, RLOCK_COUNT_MAX, &why);

		REQUIRE(n >= -1 && n <= RLOCK_COUNT_MAX);
		for (int i = 0; i < n; i++)
			REQUIRE(m[i].name[0] != '\0' &&
				strchr(m[i].name, '\n') == NULL);
	}
	memset(&h, 0, sizeof(h));
	arrival = 0;
	if (r->type == REDIS_REPLY_ARRAY &&
	    rl_parse_busy(r, &h, &joined, &arrival) == 0) {
		REQUIRE(h.place >= -1);
		REQUIRE(h.nholders >= 0);
		REQUIRE(joined == 0 || joined == 1);
		REQUIRE(arrival >= 0 && arrival <= FENCE_LIMIT);
		REQUIRE((arrival != 0) == joined);
	}
	/* A sentinel's +switch-master: only ["message", "+switch-master",
	 * "NAME ..."] for the name asked. */
	if (rl_node_is_switch(r, "mymaster")) {
		REQUIRE(r->type == REDIS_REPLY_ARRAY && r->elements == 3);
		REQUIRE(r->element[2]->len > 9 &&
			memcmp(r->element[2]->str, "mymaster ", 9) == 0);
	}
	/* An error's text as a message shows it: the server's bytes, whole
	 * up to the bound, else cut before a word or character with
	 * "..."; a script's tail is inside the text with its digest. */
	if (r->type == REDIS_REPLY_ERROR &&
	    memchr(r->str, '\0', r->len) == NULL) {
		char text[SERVER_TEXT_MAX + 1];
		const char *tail = rl_script_tail(r->str, r->len);
		size_t k;

		(void)rl_acl_refusal(r);
		REQUIRE(tail == NULL ||
			(tail >= r->str && tail + 49 <= r->str + r->len));
		rl_server_text(text, sizeof(text), r->str, r->len);
		k = strlen(text);
		REQUIRE(k <= SERVER_TEXT_MAX);
		if (r->len <= SERVER_TEXT_MAX) {
			REQUIRE(k == r->len && memcmp(text, r->str, k) == 0);
		} else {
			REQUIRE(k >= 3 && memcmp(text + k - 3, "...", 3) == 0);
			REQUIRE(memcmp(text, r->str, k - 3) == 0);
			REQUIRE(((unsigned char)r->str[k - 3] & 0xc0) != 0x80);
		}
	}
	if (r->type == REDIS_REPLY_STRING &&
	    rl_decode_baton(r->str, r->len, &b) == 0) {
		REQUIRE(b.fence >= 1 && b.fence < FENCE_LIMIT);
		REQUIRE(b.stamp >= 0 && b.age >= 0);
		REQUIRE(b.recorded >= -1 && b.recorded <= 2);
	}
	for (size_t i = 0; i < 4; i++) {
		if (rl_elem_num(r, i, -5, 5, &v) == 0)
			REQUIRE(v >= -5 && v <= 5);
	}
	memset(&h, 0, sizeof(h));
	(void)rl_parse_holder(r, &h);
	memset(&h, 0, sizeof(h));
	if (rl_decode_force(r, &fr, &h) == RLOCK_OK) {
		REQUIRE(fr.held == 0 || fr.held == 1);
		REQUIRE(fr.junk >= 0 && fr.junk <= 9);
		REQUIRE(fr.held ? fr.holders >= 1 : fr.holders == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *whole, *why;
	redisReader *rd;
	size_t step;
	void *r;

	if (size < 1)
		return 0;
	step = 1 + data[0] % 16;
	data++;
	size--;
	whole = guarded(data, size, size > 0 ? size : 1);
	why = guarded(data, size, step);
	/* The same verdict however the bytes arrive. */
	REQUIRE((whole == NULL) == (why == NULL));
	if (why != NULL)
		return 0;
	rd = redisReaderCreate();
	if (rd == NULL)
		abort();
	for (size_t i = 0; i < size; i += step) {
		if (redisReaderFeed(rd, (const char *)data + i,
				    size - i < step ? size - i : step) != 0)
			break;
		for (;;) {
			r = NULL;
			if (redisReaderGetReply(rd, &r) != REDIS_OK ||
			    r == NULL)
				break;
			decode(r);
			freeReplyObject(r);
		}
		if (rd->err != 0)
			break;
	}
	redisReaderFree(rd);
	return 0;
}
