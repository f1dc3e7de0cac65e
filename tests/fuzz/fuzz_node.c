/*
 * fuzz_node.c - what a server says of where another server is (lib/node.c):
 * the input's first byte picks the reader.  0: the rest is the text of a
 * MOVED or ASK error, for rl_decode_redirect.  Otherwise the rest is RESP,
 * read by hiredis (after the reply guard, as the transport does), and each
 * reply goes to rl_decode_master_addr (SENTINEL GET-MASTER-ADDR-BY-NAME),
 * element by element to rl_decode_slot_range (CLUSTER SLOTS), and a string to
 * rl_read_run_id (INFO server: the run_id that tells two URLs of one server
 * apart).
 *
 * Beyond not crashing: an address that decodes has a host of at most 255
 * printable bytes, no space, terminated in its buffer; a port in
 * 1..65535; slots in 0..16383 with lo <= hi (or -1, -1 for a master's
 * address); a run_id of 40 hex digits or none.
 */
#include "fuzz.h"
#include "reply.h"

static void check(const struct peer_addr *a, int slots)
{
	size_t n = strnlen(a->host, sizeof(a->host));

	REQUIRE(n < sizeof(a->host));
	for (size_t i = 0; i < n; i++)
		REQUIRE((unsigned char)a->host[i] > 0x20 &&
			(unsigned char)a->host[i] < 0x7f);
	REQUIRE(a->port >= 1 && a->port <= 65535);
	if (slots) {
		REQUIRE(a->lo >= 0 && a->lo <= a->hi && a->hi < 16384);
	} else {
		REQUIRE(n > 0);
		REQUIRE(a->lo == -1 && a->hi == -1);
	}
}

/* INFO server's text: its run_id is 40 hex digits or nothing. */
static void run_id(const char *info, size_t len)
{
	char id[41];

	memset(id, 'Z', sizeof(id));
	rl_read_run_id(info, len, id);
	REQUIRE(strnlen(id, sizeof(id)) == 0 || strnlen(id, sizeof(id)) == 40);
	for (size_t i = 0; id[i] != '\0'; i++)
		REQUIRE((id[i] >= '0' && id[i] <= '9') ||
			(id[i] >= 'a' && id[i] <= 'f') ||
			(id[i] >= 'A' && id[i] <= 'F'));
}

static void replies(const char *d, size_t n)
{
	struct resp_guard g;
	struct peer_addr a;
	redisReader *rd;
	void *r;

	memset(&g, 0, sizeof(g));
	if (rl_resp_guard_feed(&g, d, n) != NULL)
		return;
	rd = redisReaderCreate();
	if (rd == NULL)
		abort();
	if (redisReaderFeed(rd, d, n) == REDIS_OK) {
		for (;;) {
			const redisReply *x;

			r = NULL;
			if (redisReaderGetReply(rd, &r) != REDIS_OK || r == NULL)
				break;
			x = r;
			memset(&a, 0x55, sizeof(a));
			if (rl_decode_master_addr(x, &a) == 0)
				check(&a, 0);
			if (x->type == REDIS_REPLY_STRING)
				run_id(x->str, x->len);
			for (size_t i = 0; x->type == REDIS_REPLY_ARRAY &&
					   i < x->elements; i++) {
				memset(&a, 0x55, sizeof(a));
				if (rl_decode_slot_range(x->element[i], &a) == 0)
					check(&a, 1);
			}
			freeReplyObject(r);
		}
	}
	redisReaderFree(rd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct peer_addr a;
	char *s;

	if (size < 1)
		return 0;
	if (data[0] == 0) {
		/* Exactly the error's bytes: ASan sees a read past them. */
		s = malloc(size - 1 > 0 ? size - 1 : 1);
		if (s == NULL)
			abort();
		memcpy(s, data + 1, size - 1);
		memset(&a, 0x55, sizeof(a));
		if (rl_decode_redirect(s, size - 1, &a) == 0) {
			REQUIRE(a.lo == a.hi);
			check(&a, 1);
		}
		free(s);
		return 0;
	}
	replies((const char *)data + 1, size - 1);
	return 0;
}
