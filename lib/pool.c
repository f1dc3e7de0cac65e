/*
 * pool.c - pools (issue 35): a pool is a lock whose holders each hold a
 * set of its members (lib/scripts/pool.lua); here is the members'
 * administration, one script each (lib/scripts/members.lua).  What a
 * member's name and properties may be is checked in reply.c, with the
 * other readers of what the scripts keep.  A pool needs one server, as a
 * semaphore does: several masters would each count their own holders.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "fanout.h"
#include "handle.h"
#include "reply.h"
#include "request.h"

size_t rlock_granted(const struct rlock *rl, const struct rlock_member **list)
{
	*list = rl->granted;
	return rl->ngranted;
}

/* Run the members script on the one server: what, member, props.  The
 * reply is f's (rl_fan_done frees it).  Returns RLOCK_OK or an error code. */
static int members_call(struct rlock *rl, const char *pool, const char *what,
			const char *member, const char *props,
			struct lock_keys *n, struct fan *f)
{
	struct request q;
	int rc;

	rc = rl_make_names(rl, pool, n);
	if (rc != RLOCK_OK)
		return rc;
	if (rl->nnode > 1) {
		rl_set_error(rl->err, sizeof(rl->err), "pools need one server "
			     "(or one Sentinel or Cluster URL): on several "
			     "independent masters a quorum could give a member "
			     "to two holders");
		return RLOCK_EUSAGE;
	}
	rl_req_members(&q, &n->v, what, member, props);
	rl_fan_init(f, rl);
	rl_fan_all(f, &q);
	rl_fan_run(rl, f);
	if (f->slot[0].res.rc != RLOCK_OK) {
		rc = rl_fan_first_error(rl, f, 1);
		rl_fan_done(f);
		return rc;
	}
	return RLOCK_OK;
}

int rlock_pool_add(struct rlock *rl, const char *pool, const char *member,
		   const char *props, int *added)
{
	struct lock_keys n;
	struct fan f;
	const redisReply *r;
	int rc;

	rc = members_call(rl, pool, "add", member, props, &n, &f);
	if (rc != RLOCK_OK)
		return rc;
	r = f.slot[0].res.r;
	if (r->type != REDIS_REPLY_INTEGER || r->integer < 0 ||
	    r->integer > 1) {
		rl_fan_unexpected(&f, 0, "pool add");
		rc = rl_fan_first_error(rl, &f, 1);
	} else {
		*added = (int)r->integer;
	}
	rl_fan_done(&f);
	return rc;
}

int rlock_pool_rm(struct rlock *rl, const char *pool, const char *member,
		  int *removed, struct rlock_holder *holder)
{
	struct lock_keys n;
	struct fan f;
	const redisReply *r;
	long long gone;
	int rc;

	memset(holder, 0, sizeof(*holder));
	rc = members_call(rl, pool, "rm", member, NULL, &n, &f);
	if (rc != RLOCK_OK)
		return rc;
	r = f.slot[0].res.r;
	/* {removed, holder's token prefix, holder's record}. */
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
	    rl_elem_num(r, 0, 0, 1, &gone) != 0 ||
	    r->element[1]->type != REDIS_REPLY_STRING ||
	    r->element[2]->type != REDIS_REPLY_STRING ||
	    r->element[1]->len > 8) {
		rl_fan_unexpected(&f, 0, "pool rm");
		rc = rl_fan_first_error(rl, &f, 1);
		rl_fan_done(&f);
		return rc;
	}
	*removed = (int)gone;
	if (r->element[1]->len > 0) {
		char *meta = strndup(r->element[2]->str, r->element[2]->len);

		holder->held = 1;
		memcpy(holder->token_prefix, r->element[1]->str,
		       r->element[1]->len);
		if (meta != NULL)
			rl_parse_meta(meta, 0, holder);
		free(meta);
	}
	rl_fan_done(&f);
	return RLOCK_OK;
}

/* One member of the list: {member, properties, holder's token prefix,
 * holder's record, removed '1' or '0'}.  Returns 0, or -1. */
static int list_entry(const redisReply *e, long long now,
		      struct rlock_member *m)
{
	const char *why;
	char *meta;

	memset(m, 0, sizeof(*m));
	if (e->type != REDIS_REPLY_ARRAY || e->elements != 5)
		return -1;
	for (size_t i = 0; i < 5; i++)
		if (e->element[i]->type != REDIS_REPLY_STRING)
			return -1;
	if (e->element[4]->len != 1 || (e->element[4]->str[0] != '0' &&
					e->element[4]->str[0] != '1'))
		return -1;
	m->removed = e->element[4]->str[0] == '1';
	if (e->element[0]->len > RLOCK_MEMBER_MAX ||
	    memchr(e->element[0]->str, '\0', e->element[0]->len) != NULL ||
	    e->element[2]->len > 8)
		return -1;
	memcpy(m->name, e->element[0]->str, e->element[0]->len);
	if (rlock_check_member(m->name, &why) != RLOCK_OK ||
	    !rl_props_ok(e->element[1]->str, e->element[1]->len))
		return -1;
	memcpy(m->props, e->element[1]->str, e->element[1]->len);
	if (e->element[2]->len == 0)
		return 0;
	m->held = 1;
	m->holder.held = 1;
	memcpy(m->holder.token_prefix, e->element[2]->str,
	       e->element[2]->len);
	meta = strndup(e->element[3]->str, e->element[3]->len);
	if (meta != NULL)
		rl_parse_meta(meta, now, &m->holder);
	free(meta);
	return 0;
}

int rlock_pool_list(struct rlock *rl, const char *pool,
		    struct rlock_member **list, size_t *n)
{
	struct lock_keys nm;
	struct fan f;
	const redisReply *r, *l;
	long long now;
	int rc;

	*list = NULL;
	*n = 0;
	rc = members_call(rl, pool, "list", NULL, NULL, &nm, &f);
	if (rc != RLOCK_OK)
		return rc;
	r = f.slot[0].res.r;
	/* {server ms, holders' kind, {member...}}. */
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
	    rl_elem_num(r, 0, 0, LLONG_MAX, &now) != 0 ||
	    r->element[1]->type != REDIS_REPLY_STRING ||
	    (l = r->element[2])->type != REDIS_REPLY_ARRAY)
		goto bad;
	if (r->element[1]->len > 0 && (r->element[1]->len != 1 ||
				       r->element[1]->str[0] != 'p')) {
		rl_set_error(rl->err, sizeof(rl->err), "%s: is held as a lock "
			     "of another kind, not a pool", pool);
		rl_fan_done(&f);
		return RLOCK_EUSAGE;
	}
	if (l->elements > 0 &&
	    (*list = calloc(l->elements, sizeof(**list))) == NULL) {
		rl_set_error(rl->err, sizeof(rl->err), "out of memory");
		rl_fan_done(&f);
		return RLOCK_ESYS;
	}
	for (size_t i = 0; i < l->elements; i++) {
		if (list_entry(l->element[i], now, &(*list)[i]) != 0) {
			free(*list);
			*list = NULL;
			goto bad;
		}
		(*n)++;
	}
	rl_fan_done(&f);
	return RLOCK_OK;
bad:
	rl_fan_unexpected(&f, 0, "pool (a member or a property that rlock "
			  "did not write)");
	rc = rl_fan_first_error(rl, &f, 1);
	rl_fan_done(&f);
	return rc;
}
