/*
 * handle.c - the handle: made from a configuration (its servers, TLS,
 * timeouts, prefix, history), freed, and what every verb asks of it (who
 * we are, a lock's key names).
 */

#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "handle.h"
#include "keys.h"
#include "node.h"

/* Make the TLS context when a URL asks for TLS. */
static int setup_tls(struct rlock *rl, const struct rlock_config *cfg,
		     char *err, size_t errlen)
{
	struct tls_opts o;
	size_t i;

	for (i = 0; i < rl->nnode; i++) {
		if (rl->node[i].url.tls)
			break;
	}
	if (i == rl->nnode)
		return RLOCK_OK;
	o.cacert = cfg->tls_cacert;
	o.cacertdir = cfg->tls_cacertdir;
	o.cert = cfg->tls_cert;
	o.key = cfg->tls_key;
	o.sni = cfg->tls_sni;
	o.insecure = cfg->tls_insecure;
	return rl_tls_ctx_get(&o, &rl->copts.tls, err, errlen);
}

/* Whether two URLs name one server (whatever their db or scheme); two
 * sentinel URLs, one master of the same sentinels. */
static int same_server(const struct rlock_url *a, const struct rlock_url *b)
{
	if ((a->kind == RLOCK_URL_UNIX) != (b->kind == RLOCK_URL_UNIX) ||
	    (a->kind == RLOCK_URL_SENTINEL) != (b->kind == RLOCK_URL_SENTINEL))
		return 0;
	if (a->kind == RLOCK_URL_UNIX)
		return strcmp(a->path, b->path) == 0;
	if (a->kind == RLOCK_URL_SENTINEL && strcmp(a->master, b->master) != 0)
		return 0;
	return a->hosts[0].port == b->hosts[0].port &&
	       strcasecmp(a->hosts[0].host, b->hosts[0].host) == 0;
}

struct rlock *rlock_new(const struct rlock_config *cfg, int *code, char *err,
			size_t errlen)
{
	struct sentinel_auth sa;
	struct rlock *rl;
	size_t i;

	*code = RLOCK_EUSAGE;
	if (cfg->nurls == 0 || cfg->nurls > RLOCK_MAX_SERVERS) {
		rl_set_error(err, errlen, "between 1 and %d servers needed",
			     RLOCK_MAX_SERVERS);
		return NULL;
	}
	if (cfg->nurls == 2) {
		rl_set_error(err, errlen, "two servers cannot form a quorum: "
			     "give one URL, or three or more independent masters");
		return NULL;
	}
	if (cfg->prefix != NULL && strlen(cfg->prefix) >= sizeof(rl->prefix)) {
		rl_set_error(err, errlen, "prefix longer than %zu bytes",
			     sizeof(rl->prefix) - 1);
		return NULL;
	}
	rl = calloc(1, sizeof(*rl));
	if (rl != NULL)
		rl->node = calloc(cfg->nurls, sizeof(*rl->node));
	if (rl == NULL || rl->node == NULL) {
		free(rl);
		goto oom;
	}
	rl->copts.connect_timeout_ms = cfg->connect_timeout_ms > 0 ?
		cfg->connect_timeout_ms : 2000;
	rl->copts.io_timeout_ms = cfg->io_timeout_ms > 0 ?
		cfg->io_timeout_ms : 2000;
	if (cfg->password != NULL) {
		rlock_strlcpy(rl->password, cfg->password,
			      sizeof(rl->password));
		rl->copts.password = rl->password;
	}
	rlock_strlcpy(rl->prefix, cfg->prefix != NULL ? cfg->prefix :
		      "rlock:", sizeof(rl->prefix));
	rl->hist.max = cfg->no_log ? 0 : cfg->log_max > 0 ? cfg->log_max :
		       RLOCK_LOG_MAX_DEFAULT;
	rl->hist.ttl_ms = (cfg->log_days > 0 ? cfg->log_days :
			   RLOCK_LOG_DAYS_DEFAULT) * 86400000LL;
	for (i = 0; i < cfg->nurls; i++) {
		const char *why = NULL;
		struct rlock_url *u = &rl->node[i].url;

		if (rl_url_parse(cfg->urls[i], u, &why) != 0) {
			rl_set_error(err, errlen, "invalid URL '%s': %s",
				     cfg->urls[i], why);
			goto fail;
		}
		rl->nnode++;
	}
	for (i = 0; i < rl->nnode; i++) {
		for (size_t j = 0; j < i; j++) {
			if (same_server(&rl->node[i].url, &rl->node[j].url)) {
				rl_set_error(err, errlen, "%s and %s are the "
					     "same server: a quorum needs "
					     "independent masters",
					     cfg->urls[j], cfg->urls[i]);
				goto fail;
			}
		}
	}
	*code = setup_tls(rl, cfg, err, errlen);
	if (*code != RLOCK_OK)
		goto fail;
	rl->copts.want_peer = rl->nnode > 1;
	sa.user = cfg->sentinel_user;
	sa.password = cfg->sentinel_password;
	for (i = 0; i < rl->nnode; i++) {
		if (rl_node_init(&rl->node[i], &rl->copts, &sa) != RLOCK_OK) {
			rlock_free(rl);
			goto oom;
		}
	}
	rl->quorum = rl->nnode / 2 + 1;
	return rl;
oom:
	*code = RLOCK_ESYS;
	rl_set_error(err, errlen, "out of memory");
	return NULL;
fail:
	rlock_free(rl);
	return NULL;
}

/*
 * Who we are, for the holder's metadata: looked up at the first acquire
 * only, since a renewal thread, release, extend and status never need it.
 * $USER spares the NSS look-up, which would cost more than the lock itself
 * on loopback; so does /etc/passwd read directly, as for root in a
 * systemd unit without User=, which sets no $USER.  The name is shown to
 * people, never trusted.
 */
void rl_identify(struct rlock *rl)
{
	const char *env;
	struct passwd *pw;

	if (rl->host[0] != '\0')
		return;
	if (gethostname(rl->host, sizeof(rl->host)) != 0)
		rlock_strlcpy(rl->host, "unknown", sizeof(rl->host));
	rl->host[sizeof(rl->host) - 1] = '\0';
	env = getenv("USER");
	if (env == NULL || *env == '\0')
		env = getenv("LOGNAME");
	if (env != NULL && *env != '\0') {
		rlock_strlcpy(rl->user, env, sizeof(rl->user));
	} else if (rl_passwd_name("/etc/passwd", geteuid(), rl->user,
				  sizeof(rl->user)) == 0) {
		/* NSS's first source everywhere, read without NSS. */
	} else if ((pw = getpwuid(geteuid())) != NULL) {
		rlock_strlcpy(rl->user, pw->pw_name, sizeof(rl->user));
	} else {
		/* A uid with no name: a container's, say. */
		rl->user[rlock_utoa(rl->user, geteuid())] = '\0';
	}
}

void rlock_free(struct rlock *rl)
{
	if (rl == NULL)
		return;
	for (size_t i = 0; i < rl->nnode; i++)
		rl_node_free(&rl->node[i]);
	free(rl->node);
	free(rl->holders);
	free(rl->granted);
	free(rl->with);
	rl_tls_ctx_put(rl->copts.tls);
	explicit_bzero(rl->password, sizeof(rl->password));
	free(rl);
}

const char *rlock_errstr(const struct rlock *rl)
{
	return rl->err;
}

const char *rlock_key(struct rlock *rl, const char *name)
{
	rl_lock_key(rl->keybuf, sizeof(rl->keybuf), rl->prefix, name, "");
	return rl->keybuf;
}

size_t rlock_nservers(const struct rlock *rl)
{
	return rl->nnode;
}

int rl_make_names(struct rlock *rl, const char *name, struct lock_keys *n)
{
	const char *why;

	if (rlock_check_name(name, &why) != RLOCK_OK) {
		rl_set_error(rl->err, sizeof(rl->err),
			     "invalid lock name: %s", why);
		return RLOCK_EUSAGE;
	}
	rl_lock_keys_init(n, rl->prefix, name);
	return RLOCK_OK;
}

