/*
 * errors.c - what an error reply means to users: a code (unavailable,
 * refused by an ACL, bad data at rlock's keys, a usage error) and a
 * message naming what they can act on, with a script's own error mapped
 * to its line in lib/scripts/.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "keys.h"
#include "reply.h"
#include "request.h"

/*
 * Turn an error reply into a code and a message naming what users can act
 * on.  Script errors carry a " script: ..." tail that means nothing to
 * them, so only the first words are kept.
 */
/* What the scripts call, for the ACL rule that lets them. */
#define SCRIPT_COMMANDS "+evalsha +eval +get +set +pexpire +pexpireat " \
	"+pttl +hget +hmget +hset +hdel +hlen +hkeys +hgetall +incr +del " \
	"+exists +publish +rpush +lset +time " \
	"+zadd +zrem +zrange +zrangebyscore +zrank +zscore +zcard +zcount " \
	"+xadd +xrange +xrevrange"

/*
 * Whether the error reply says an ACL refused something: by its kind,
 * NOPERM, where the server says one; a call inside a script is refused in
 * each server's own words, "ERR ACL failure in script: ..." (Valkey, Redis
 * 7.2 and later) or "ERR The user executing the script can't ..." (Redis
 * 7.0), which are recognised both, as entry.lua does.
 */
int rl_acl_refusal(const redisReply *r)
{
	return r->type == REDIS_REPLY_ERROR &&
	       (rl_reply_starts_with(r, "NOPERM") ||
		memmem(r->str, r->len, "ACL failure in script", 21) != NULL ||
		memmem(r->str, r->len, "user executing the script can",
		       29) != NULL);
}

/*
 * The tail Redis 7 and Valkey put after a script's error, " script: SHA,
 * on @user_script:N.", NULL when there is none.  The last " script: " that
 * 40 hex digits follow: the error itself may say "script: " too ("ERR ACL
 * failure in script: User ...").
 */
const char *rl_script_tail(const char *s, size_t n)
{
	static const char mark[] = " script: ";
	const size_t ml = sizeof(mark) - 1;
	const char *found = NULL, *p = s, *at;

	while ((at = memmem(p, (size_t)(s + n - p), mark, ml)) != NULL) {
		size_t k = 0;

		while (k < 40 && at + ml + k < s + n &&
		       strchr("0123456789abcdef", at[ml + k]) != NULL &&
		       at[ml + k] != '\0')
			k++;
		if (k == 40)
			found = at;
		p = at + 1;
	}
	return found;
}

int rl_scripts_unavailable(const redisReply *r, char *why, size_t len)
{
	static const char unknown[] = "ERR unknown command ";
	static const char *const cmd[2] = { "EVALSHA", "EVAL" };
	static const char needs[] = "rlock needs EVAL and EVALSHA";
	size_t at = sizeof(unknown) - 1;

	if (r->type != REDIS_REPLY_ERROR)
		return 0;
	/* Quoted with ' from Redis 6.2, with ` before. */
	if (rl_reply_starts_with(r, unknown) && r->len > at &&
	    (r->str[at] == '\'' || r->str[at] == '`')) {
		for (int i = 0; i < 2; i++) {
			size_t n = strlen(cmd[i]);

			if (r->len > at + 1 + n &&
			    strncasecmp(r->str + at + 1, cmd[i], n) == 0 &&
			    r->str[at + 1 + n] == r->str[at]) {
				snprintf(why, len, "cannot run Lua scripts (%s is "
					 "an unknown command): %s", cmd[i], needs);
				return 1;
			}
		}
	}
	/* rlock's scripts have no shebang: the engine asked for is Lua. */
	if (rl_reply_starts_with(r, "ERR Could not find scripting engine")) {
		snprintf(why, len, "cannot run Lua scripts (no Lua engine is "
			 "loaded): %s", needs);
		return 1;
	}
	return 0;
}

/* The commands that read the history: log reads with XREVRANGE and
 * follows with XRANGE, so a rule naming only the one refused would fail
 * again at the other. */
#define HISTORY_READS "+xrange +xrevrange"

static int history_read(const char *cmd, size_t len)
{
	return (len == 6 && strncasecmp(cmd, "xrange", 6) == 0) ||
	       (len == 9 && strncasecmp(cmd, "xrevrange", 9) == 0);
}

/*
 * An ACL refusal, with the rule that would allow it: keys and channels
 * under the key's prefix, the history's two reads together, or the
 * command named.  user is the URL's ("" is the default user).
 */
static void acl_error(const redisReply *r, int n, const char *addr,
		      const char *user, const char *key,
		      struct rlock_result *res)
{
	static const char cmd_end[] = "' command";
	const char *brace = strchr(key, '{');
	const char *q1 = NULL, *q2 = NULL, *p = r->str, *at;
	int plen = brace != NULL ? (int)(brace - key) : (int)strlen(key);
	char rule[240], text[SERVER_TEXT_MAX + 1];

	if (user[0] == '\0')
		user = "default";
	/* The command refused, as every server names it: "... to run the
	 * 'xadd' command".  The last such: a user's name may hold a quote. */
	while ((at = memmem(p, (size_t)(r->str + n - p), cmd_end,
			    sizeof(cmd_end) - 1)) != NULL) {
		q2 = at;
		p = at + 1;
	}
	if (q2 != NULL) {
		size_t k = (size_t)(q2 - r->str);

		while (k > 0 && r->str[k - 1] != '\'')
			k--;
		if (k > 0)
			q1 = r->str + k - 1;
		else
			q2 = NULL;
	}
	if (q2 != NULL && history_read(q1 + 1, (size_t)(q2 - q1 - 1)))
		snprintf(rule, sizeof(rule), "%s", HISTORY_READS);
	else if (q2 != NULL)
		snprintf(rule, sizeof(rule), "+%.*s",
			 (int)(q2 - q1 - 1) > 60 ? 60 : (int)(q2 - q1 - 1),
			 q1 + 1);
	else if (memmem(r->str, (size_t)n, "channel", 7) != NULL)
		snprintf(rule, sizeof(rule), "&%.*s*", plen > 100 ? 100 : plen,
			 key);
	else if (memmem(r->str, (size_t)n, "key", 3) != NULL)
		snprintf(rule, sizeof(rule), "~%.*s*", plen > 100 ? 100 : plen,
			 key);
	else
		snprintf(rule, sizeof(rule), "%s", SCRIPT_COMMANDS);
	res->rc = RLOCK_ENOPERM;
	snprintf(res->err, sizeof(res->err), "%.100s: permission refused to "
		 "user '%.40s' (%s): allow it with ACL SETUSER %.40s %s%s",
		 addr, user, rl_server_text(text, sizeof(text), r->str, (size_t)n),
		 user, rule, rule[0] == '~' || rule[0] == '&' ?
		 ", or use a --prefix the user's keys are under" : "");
}

/* The type rlock keeps at a key, by its suffix (the longest that ends
 * it after the name's closing brace). */
static const char *kept_type(const char *key)
{
	static const struct {
		const char *suffix, *type;
	} kept[] = {
		{ "}", "string" }, { "}" KEY_META, "string" },
		{ "}" KEY_FENCE, "string" }, { "}" KEY_HOLDERS, "zset" },
		{ "}" KEY_HMETA, "hash" }, { "}" KEY_LINE, "zset" },
		{ "}" KEY_LEASE, "zset" }, { "}" KEY_WHO, "hash" },
		{ "}" KEY_LOG, "stream" }, { "}" KEY_ONCE, "hash" },
		{ "}" KEY_LAST, "hash" }, { "}" KEY_GRANT, "string" },
		{ "}" KEY_HOLD, "string" }, { "}" KEY_LOG_COPY, "stream" },
	};
	size_t len = strlen(key);

	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		size_t sl = strlen(kept[i].suffix);

		if (len >= sl && strcmp(key + len - sl, kept[i].suffix) == 0)
			return kept[i].type;
	}
	return NULL;
}

void rl_explain_wrongtype(struct rlock_conn *c, const struct request *q,
			  const char *prefix, int64_t deadline,
			  struct rlock_result *res)
{
	int first = q->script == REQ_COMMAND ? 1 : 0;
	int last = q->script == REQ_COMMAND ? 2 : q->nkeys;
	const char *const *keys = q->argv;
	int nargs = q->argc;

	/* A script in its short layout names its other keys itself: the
	 * whole layout has them all. */
	if (q->script != REQ_COMMAND && q->wargc > 0) {
		keys = q->wargv;
		last = q->wnkeys;
		nargs = q->wargc;
	}
	for (int k = first; k < last && k < nargs; k++) {
		const char *argv[2] = { "TYPE", keys[k] }, *want;
		char vis[RLOCK_KEY_MAX * 4 + 1], name[RLOCK_KEY_MAX * 4 + 1];
		const char *open, *close;
		redisReply *r = NULL;
		size_t plen = strlen(prefix);

		want = kept_type(keys[k]);
		if (want == NULL ||
		    rl_conn_call(c, deadline, -1, 2, argv, NULL, &r) != RLOCK_OK)
			continue;
		if (r->type != REDIS_REPLY_STATUS || strcmp(r->str, "none") == 0 ||
		    strcmp(r->str, want) == 0 || r->len > 32) {
			freeReplyObject(r);
			continue;
		}
		/* prefix{NAME}suffix: the name, for the fix. */
		open = keys[k] + plen;
		close = strrchr(keys[k], '}');
		if (strncmp(keys[k], prefix, plen) != 0 || *open != '{' ||
		    close == NULL || close <= open)
			snprintf(name, sizeof(name), "NAME");
		else
			snprintf(name, sizeof(name), "%.*s",
				 (int)(close - open - 1), open + 1);
		snprintf(vis, sizeof(vis), "%s", keys[k]);
		snprintf(res->err, sizeof(res->err), "%.300s holds a %.32s, "
			 "not the %s rlock keeps there (another client's "
			 "data): 'rlock release --force %.200s' removes it",
			 vis, r->str, want, name);
		freeReplyObject(r);
		return;
	}
}

int rl_script_source(const struct rlock_script *s, unsigned long line,
		     const char **file, unsigned long *src)
{
	const char *p;
	unsigned long lines = 0;
	size_t i;

	for (p = s->body; (p = strchr(p, '\n')) != NULL; p++)
		lines++;
	if (line == 0 || line > lines || s->nspan == 0)
		return -1;
	for (i = 1; i < s->nspan && s->span[i].line <= line; i++)
		;
	*file = s->span[i - 1].file;
	*src = s->span[i - 1].src + (line - s->span[i - 1].line);
	return 0;
}

/* The script whose digest is in s: after Redis 7's tail (rl_script_tail) or
 * "f_" (Redis 6: "call to f_SHA"); NULL when none of rlock's. */
static const struct rlock_script *named_script(const char *s, size_t n)
{
	const char *tail = rl_script_tail(s, n);
	const char *at = memmem(s, n, "f_", 2);
	const char *digest = tail != NULL ? tail + 9 :
			     at != NULL && (size_t)(s + n - at) >= 42 ? at + 2 :
			     NULL;

	if (digest == NULL)
		return NULL;
	for (int i = 0; i < RLOCK_SCRIPT_COUNT; i++)
		if (memcmp(digest, rlock_scripts[i].sha, 40) == 0)
			return &rlock_scripts[i];
	return NULL;
}

/* The length of "user_script:N" at s (end: the text's end), 0 when it is
 * not there; *line gets N. */
static size_t user_line(const char *s, const char *end, unsigned long *line)
{
	const char *p = s + 12;

	*line = 0;
	if ((size_t)(end - s) < 12 || memcmp(s, "user_script:", 12) != 0)
		return 0;
	for (; p < end && *p >= '0' && *p <= '9' && *line < 1000000; p++)
		*line = *line * 10 + (unsigned long)(*p - '0');
	return *line > 0 ? (size_t)(p - s) : 0;
}

void rl_script_error_text(const char *s, size_t n, char *buf, size_t len)
{
	const struct rlock_script *sc = named_script(s, n);
	const char *tail = rl_script_tail(s, n), *p = s, *end, *file;
	unsigned long line, src;
	size_t at = 0, skip;
	int named = 0, w;

	if (len == 0)
		return;
	end = tail != NULL ? tail : s + n;
	while (p < end && at + 1 < len) {
		skip = user_line(p, end, &line);
		if (sc != NULL && skip > 0 &&
		    rl_script_source(sc, line, &file, &src) == 0) {
			w = snprintf(buf + at, len - at, "%s:%lu", file, src);
			at = w < 0 ? at : at + (size_t)w < len ? at + (size_t)w :
			     len - 1;
			p += skip;
			named = 1;
		} else {
			buf[at++] = *p++;
		}
	}
	buf[at] = '\0';
	/* Redis 7 names the line only in the tail when redis.call raised the
	 * error: "..., on @user_script:12.".  Only for a plain ERR, a call
	 * the script got wrong: a state of the server (NOREPLICAS, MISCONF,
	 * OOM...) is no line's doing. */
	if (!named && sc != NULL && tail != NULL && n > 4 &&
	    memcmp(s, "ERR ", 4) == 0 &&
	    (p = memmem(tail, (size_t)(s + n - tail), "@user_script:", 13)) !=
		    NULL &&
	    user_line(p + 1, s + n, &line) > 0 &&
	    rl_script_source(sc, line, &file, &src) == 0)
		snprintf(buf + at, len - at, " (%s:%lu)", file, src);
}

/* An error about the data at the lock's keys: another client's, or a
 * limit reached.  Returns 1 when r is one (res set), else 0. */
static int data_error(const redisReply *r, int n, const char *key,
		      struct rlock_result *res)
{
	const char *bad;

	if (rl_reply_starts_with(r, "BADFENCE ")) {
		char v[300];

		res->rc = RLOCK_EPROTO;
		snprintf(v, sizeof(v), "%.*s", n - 9, r->str + 9);
		snprintf(res->err, sizeof(res->err), "%s:fence holds '%s', "
			 "which is not a fence rlock wrote (digits, below "
			 "2^53 - 2^20): no fence handed out, nothing granted",
			 key, v);
	} else if (rl_reply_starts_with(r, "FENCEMAX ")) {
		char v[300];

		/* A counter at the last fence there can be (fence_of.lua):
		 * the name can give no larger one, and a smaller one would
		 * be a fence going back. */
		res->rc = RLOCK_EPROTO;
		snprintf(v, sizeof(v), "%.*s", n - 9, r->str + 9);
		snprintf(res->err, sizeof(res->err), "%s:fence holds %s, "
			 "above which no fence can be handed out (fences stay "
			 "below 2^53 - 2^20, and a history's at or below "
			 "9007199253691999): nothing granted; take the lock "
			 "under another name or --prefix (deleting or "
			 "lowering the key would let fences go back)", key, v);
	} else if (rl_reply_starts_with(r, "BADSLOT ")) {
		char v[300];

		/* A semaphore holder's slot (lib/scripts/slot.lua). */
		res->rc = RLOCK_EPROTO;
		snprintf(v, sizeof(v), "%.*s", n - 8, r->str + 8);
		snprintf(res->err, sizeof(res->err), "%s:holders:meta holds "
			 "the slot '%s', which is not a slot rlock wrote "
			 "(digits, below the limit): nothing granted", key, v);
	} else if (rl_reply_starts_with(r, "POOLSMALL ")) {
		/* A pool with fewer members than --count asks for. */
		res->rc = RLOCK_EUSAGE;
		snprintf(res->err, sizeof(res->err), "%s:members has %.*s "
			 "member(s), fewer than --count asks for: add some "
			 "with 'rlock pool NAME add MEMBER'", key, n - 10,
			 r->str + 10);
	} else if (rl_reply_starts_with(r, "BADSTREAM ")) {
		char v[300];

		res->rc = RLOCK_EPROTO;
		snprintf(v, sizeof(v), "%.*s", n - 10, r->str + 10);
		/* Ids only go up: a stream past the last that gives a
		 * fence gives none ever after, and the history deleted would
		 * start again at the clock, below the fences it gave. */
		snprintf(res->err, sizeof(res->err), "%s:log gave the id '%s', "
			 "which gives no fence (its ms must be 13 digits, "
			 "before the year 2255, and its sequence number at "
			 "most 999): nothing granted, and no later "
			 "grant can have a larger fence; take the lock under "
			 "another name or --prefix (deleting the key would let "
			 "fences go back)", key, v);
	} else if ((bad = memmem(r->str, (size_t)n, "BADLINE ", 8)) != NULL) {
		char v[300];

		res->rc = RLOCK_EPROTO;
		snprintf(v, sizeof(v), "%.*s", (int)(r->str + n - bad - 8),
			 bad + 8);
		snprintf(res->err, sizeof(res->err), "%s:line holds '%s', "
			 "which is not a waiter rlock wrote (KIND:ID): the "
			 "line cannot be served", key, v);
	} else if (rl_reply_starts_with(r, "WRONGTYPE")) {
		res->rc = RLOCK_EPROTO;
		res->wrongtype = 1;
		snprintf(res->err, sizeof(res->err),
			 "%s: key holds the wrong kind of value (WRONGTYPE)",
			 key);
	} else {
		return 0;
	}
	return 1;
}

/* An error about the server's state: a replica, out of memory, no
 * password, loading, a slot migrating, full, down.  Returns 1 when r is
 * one (res set), else 0. */
static int server_error(const redisReply *r, int n, const char *addr,
			const char *key, struct rlock_result *res)
{
	char text[SERVER_TEXT_MAX + 1];

	if (rl_reply_starts_with(r, "READONLY")) {
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err),
			 "%s is a replica (READONLY): point rlock at the "
			 "master, or use a redis-sentinel:// URL", addr);
	} else if (rl_reply_starts_with(r, "OOM")) {
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err),
			 "%s: server out of memory (OOM)", addr);
	} else if (rl_reply_starts_with(r, "NOAUTH") ||
		   memmem(r->str, r->len, "unauthenticated", 15) != NULL) {
		/* Redis 7 refuses long commands before AUTH with a
		 * protocol error instead of NOAUTH. */
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err),
			 "%s: authentication required (NOAUTH): give a "
			 "password in the URL, --password-file or "
			 "REDISCLI_AUTH", addr);
	} else if (rl_reply_starts_with(r, "WRONGPASS")) {
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err),
			 "%s: authentication failed: %s", addr,
			 rl_server_text(text, sizeof(text), r->str, (size_t)n));
	} else if (rl_reply_starts_with(r, "LOADING")) {
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err),
			 "%s: server is loading its data (LOADING)", addr);
	} else if (rl_reply_starts_with(r, "TRYAGAIN")) {
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err), "%s: the lock's slot is "
			 "being migrated (TRYAGAIN)", addr);
	} else if (rl_reply_starts_with(r, "CROSSSLOT")) {
		res->rc = RLOCK_EUSAGE;
		snprintf(res->err, sizeof(res->err), "%s: the lock name has "
			 "an empty hash tag: on a cluster its keys would span "
			 "slots (CROSSSLOT); a name must not start with '}'",
			 key);
	} else if (memmem(r->str, r->len, "max number of clients", 21) !=
		   NULL) {
		/* Said on connecting, and read as the first reply. */
		res->rc = RLOCK_EUNAVAIL;
		res->full = 1;
		snprintf(res->err, sizeof(res->err), "%s: the server takes no "
			 "more clients (maxclients reached)", addr);
	} else if (rl_reply_starts_with(r, "MASTERDOWN") ||
		   rl_reply_starts_with(r, "CLUSTERDOWN") || rl_reply_starts_with(r, "BUSY")) {
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err), "%s: %s", addr,
			 rl_server_text(text, sizeof(text), r->str, (size_t)n));
	} else {
		return 0;
	}
	return 1;
}

void rl_classify_error(const redisReply *r, const struct rlock_conn *c,
		       const char *key, struct rlock_result *res)
{
	const char *addr = rl_conn_addr(c);
	int n = (int)r->len;
	const char *tail = rl_script_tail(r->str, r->len);
	char why[128], text[SERVER_TEXT_MAX + 1], named[1024];

	if (tail != NULL)
		n = (int)(tail - r->str);
	if (rl_acl_refusal(r)) {
		acl_error(r, n, addr, rl_conn_url(c)->user, key, res);
	} else if (rl_scripts_unavailable(r, why, sizeof(why))) {
		res->rc = RLOCK_EUNAVAIL;
		snprintf(res->err, sizeof(res->err), "%s %s", addr, why);
	} else if (!data_error(r, n, key, res) &&
		   !server_error(r, n, addr, key, res)) {
		/* A script's own error names its line in lib/scripts/. */
		rl_script_error_text(r->str, r->len, named, sizeof(named));
		res->rc = RLOCK_EPROTO;
		snprintf(res->err, sizeof(res->err), "%s: %s", addr,
			 rl_server_text(text, sizeof(text), named,
					strlen(named)));
	}
}
