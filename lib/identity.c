/*
 * identity.c - which server each URL reaches: several masters vote only
 * once each, so each is identified (INFO's run_id, else an identity key
 * of its own) on the connection its vote comes on, again whenever that
 * connection is made again, and two URLs of one server are refused.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fanout.h"
#include "handle.h"
#include "identity.h"
#include "node.h"
#include "request.h"

/* u as a URL without its credentials, for messages. */
static const char *url_text(const struct rlock_url *u, char *buf,
			    size_t len)
{
	const char *host = u->hosts[0].host;
	int v6 = strchr(host, ':') != NULL;

	if (u->kind == RLOCK_URL_UNIX)
		snprintf(buf, len, "unix://%s", u->path);
	else if (u->kind == RLOCK_URL_SENTINEL)
		snprintf(buf, len, "%s://%s%s%s:%d#%s", u->tls ?
			 "rediss-sentinel" : "redis-sentinel", v6 ? "[" : "",
			 host, v6 ? "]" : "", u->hosts[0].port, u->master);
	else
		snprintf(buf, len, "%s://%s%s%s:%d", u->tls ? "rediss" : "redis",
			 v6 ? "[" : "", host, v6 ? "]" : "", u->hosts[0].port);
	return buf;
}

/*
 * Several URLs must be independent masters, which the URLs alone cannot
 * tell (127.0.0.1 and 127.0.0.2, a unix socket and a port, rediss and
 * redis, nodes of one cluster, sentinels of one master): a quorum counted
 * on one server twice is no quorum.  So no server votes before it is
 * identified, on the connection the vote comes on: by the run_id of INFO
 * server where the user may ask it, and else by the identity key, P + "id",
 * which the first URL to reach a server writes (a random value, kept a
 * day past its last use) and every other URL of that server then reads.
 */

/* The identity key's script: its value, made ARGV[1] when there is none
 * or it is not one (another client's junk), kept ARGV[2] ms. */
static const char ident_script[] =
	"local v = redis.call('GET', KEYS[1]) "
	"if type(v) ~= 'string' or #v ~= 32 or string.find(v, '[^0-9a-f]') "
	"then v = ARGV[1] redis.call('SET', KEYS[1], v) end "
	"redis.call('PEXPIRE', KEYS[1], ARGV[2]) return v";

#define IDENT_KEEP_MS "86400000"

/* Ask every server the request argv, which tells who it is, and hand each
 * answer to cb.  nonce_at >= 0: argv[nonce_at] is a random value of each
 * server's own.  Returns RLOCK_OK, or RLOCK_ESYS with the reason. */
static int probe_all(struct rlock *rl, int argc, const char **argv,
		     int nonce_at,
		     void (*cb)(struct rlock_node *, const struct rlock_result *))
{
	struct probe {
		struct fan f;
		struct request q[RLOCK_MAX_SERVERS];
		char nonce[RLOCK_MAX_SERVERS][RLOCK_TOKEN_LEN + 1];
	} *p;

	if ((p = malloc(sizeof(*p))) == NULL) {
		rl_set_error(rl->err, sizeof(rl->err), "out of memory");
		return RLOCK_ESYS;
	}
	rl_fan_init(&p->f, rl);
	p->f.probe = 1;
	for (size_t i = 0; i < rl->nnode; i++) {
		if (nonce_at >= 0) {
			if (rlock_make_token(p->nonce[i]) != 0) {
				rl_set_error(rl->err, sizeof(rl->err), "cannot "
					     "make a random value: %s",
					     strerror(errno));
				free(p);
				return RLOCK_ESYS;
			}
			argv[nonce_at] = p->nonce[i];
		}
		rl_req_command(&p->q[i], argc, argv, -1);
		p->f.slot[i].req = &p->q[i];
	}
	rl_fan_run(rl, &p->f);
	for (size_t i = 0; i < p->f.n; i++)
		cb(&rl->node[i], &p->f.slot[i].res);
	rl_fan_done(&p->f);
	free(p);
	return RLOCK_OK;
}

static void got_info(struct rlock_node *n, const struct rlock_result *res)
{
	n->run_id[0] = '\0';
	n->kid[0] = '\0';
	n->id_conn = NULL;
	n->probe_rc = res->rc;
	memcpy(n->probe_err, res->err, sizeof(n->probe_err));
	if (res->rc == RLOCK_OK && res->r->type == REDIS_REPLY_STRING)
		rl_read_run_id(res->r->str, res->r->len, n->run_id);
}

static void got_kid(struct rlock_node *n, const struct rlock_result *res)
{
	const redisReply *r = res->r;
	char ub[1200];

	if (res->rc == RLOCK_EUNAVAIL) {
		n->probe_rc = res->rc;
		memcpy(n->probe_err, res->err, sizeof(n->probe_err));
		return;
	}
	if (res->rc != RLOCK_OK) {
		n->probe_rc = res->rc;
		rl_set_error(n->probe_err, sizeof(n->probe_err), "%s: cannot tell "
			     "which server this is, so it does not vote (no run_id, "
			     "and the identity key: %s)",
			     url_text(&n->url, ub, sizeof(ub)), res->err);
		return;
	}
	if (r->type == REDIS_REPLY_STRING && r->len == RLOCK_TOKEN_LEN &&
	    strspn(r->str, "0123456789abcdef") == RLOCK_TOKEN_LEN) {
		memcpy(n->kid, r->str, RLOCK_TOKEN_LEN + 1);
		return;
	}
	n->probe_rc = RLOCK_EPROTO;
	rl_set_error(n->probe_err, sizeof(n->probe_err), "%s: cannot tell which "
		     "server this is, so it does not vote (an unexpected answer to "
		     "the identity script)", url_text(&n->url, ub, sizeof(ub)));
}

int rl_identify_servers(struct rlock *rl)
{
	char key[sizeof(rl->prefix) + 4], ub[1200];
	const char *info[2] = { "INFO", "server" };
	const char *ident[6] = { "EVAL", ident_script, "1", key, NULL,
				 IDENT_KEEP_MS };
	size_t i;
	int rc, by_key = 0;

	if (rl->nnode == 1)
		return RLOCK_OK;
	for (i = 0; i < rl->nnode && rl_node_identified(&rl->node[i]); i++)
		;
	if (i == rl->nnode)
		return RLOCK_OK;
	/* Every server again, not only the new one: it is compared with
	 * the others as they are now. */
	if ((rc = probe_all(rl, 2, info, -1, got_info)) != RLOCK_OK)
		return rc;
	for (i = 0; i < rl->nnode; i++) {
		if (rl->node[i].run_id[0] == '\0' &&
		    rl->node[i].probe_rc != RLOCK_EUNAVAIL)
			by_key = 1;
	}
	/* A server that answered without a run_id (INFO refused to the
	 * user, or a proxy's): all are told by the key, which the same
	 * names on every server; those with a run_id are compared by it
	 * too (two dbs of one server). */
	if (by_key) {
		rlock_join(key, sizeof(key),
			   (const char *[]){ rl->prefix, "id", NULL });
		for (i = 0; i < rl->nnode; i++)
			rl->node[i].probe_rc = RLOCK_OK;
		if ((rc = probe_all(rl, 6, ident, 4, got_kid)) != RLOCK_OK)
			return rc;
	}
	for (i = 0; i < rl->nnode; i++) {
		struct rlock_node *n = &rl->node[i];

		if (n->probe_rc == RLOCK_OK &&
		    (by_key ? n->kid[0] : n->run_id[0]) != '\0') {
			n->id_conn = n->cmd;
			n->id_opens = rl_conn_opens(n->cmd);
			rlock_strlcpy(n->id_peer, rl_conn_peer(n->cmd),
				      sizeof(n->id_peer));
		} else if (n->probe_rc == RLOCK_OK) {
			n->probe_rc = RLOCK_EPROTO;
			rl_set_error(n->probe_err, sizeof(n->probe_err), "%s: "
				     "cannot tell which server this is, so it does "
				     "not vote (no run_id in INFO server)",
				     url_text(&n->url, ub, sizeof(ub)));
		}
	}
	return rlock_distinct(rl, rl->err, sizeof(rl->err));
}

/* The servers not identified on their connection (rl_identify_servers):
 * left out of f's request, with why as their error.  They are asked
 * again who they are before the next request. */
void rl_skip_unanswered(struct rlock *rl, struct fan *f)
{
	for (size_t i = 0; i < f->n && rl->nnode > 1; i++) {
		struct rlock_node *n = &rl->node[i];
		char ub[1200];

		if (rl_node_identified(n))
			continue;
		f->slot[i].preset = 1;
		f->slot[i].tries = 0;
		f->slot[i].answered = 0;
		f->slot[i].res.rc = n->probe_rc != RLOCK_OK ? n->probe_rc :
				    RLOCK_EUNAVAIL;
		if (n->probe_rc != RLOCK_OK)
			memcpy(f->slot[i].res.err, n->probe_err,
			       sizeof(f->slot[i].res.err));
		else
			rl_set_error(f->slot[i].res.err,
				     sizeof(f->slot[i].res.err), "%s: not "
				     "identified: it does not vote",
				     url_text(&n->url, ub, sizeof(ub)));
	}
}

const char *rlock_unidentified(const struct rlock *rl)
{
	for (size_t i = 0; i < rl->nnode && rl->nnode > 1; i++) {
		const struct rlock_node *n = &rl->node[i];

		if (!rl_node_identified(n) && n->probe_rc != RLOCK_EUNAVAIL &&
		    n->probe_rc != RLOCK_OK)
			return n->probe_err;
	}
	return NULL;
}

int rlock_distinct(struct rlock *rl, char *err, size_t len)
{
	for (size_t i = 1; i < rl->nnode; i++) {
		const struct rlock_node *a = &rl->node[i];

		for (size_t j = 0; j < i; j++) {
			const struct rlock_node *b = &rl->node[j];
			char ua[1200], ub[1200], how[700];

			if (a->run_id[0] != '\0' &&
			    strcmp(a->run_id, b->run_id) == 0)
				snprintf(how, sizeof(how), "run_id %.12s",
					 a->run_id);
			else if (a->kid[0] != '\0' &&
				 strcmp(a->kid, b->kid) == 0)
				snprintf(how, sizeof(how), "both read the "
					 "identity key %sid", rl->prefix);
			else if (rl_conn_is_up(a->cmd) && rl_conn_is_up(b->cmd) &&
				 rl_conn_peer(a->cmd)[0] != '\0' &&
				 strcmp(rl_conn_peer(a->cmd),
					rl_conn_peer(b->cmd)) == 0)
				snprintf(how, sizeof(how), "both reach %s",
					 rl_conn_peer(a->cmd));
			else
				continue;
			rl_set_error(err, len, "%s and %s reach one server (%s): "
				     "a quorum needs independent masters",
				     url_text(&b->url, ub, sizeof(ub)),
				     url_text(&a->url, ua, sizeof(ua)), how);
			return RLOCK_EUSAGE;
		}
	}
	return RLOCK_OK;
}

void rl_fan_ask(struct rlock *rl, struct fan *f, const struct request *q)
{
	rl_fan_init(f, rl);
	rl_fan_all(f, q);
	rl_skip_unanswered(rl, f);
	rl_fan_run(rl, f);
}
