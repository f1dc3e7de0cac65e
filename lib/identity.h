/*
 * identity.h - which server each URL reaches, so that each votes once
 * (lib/identity.c), and the fan-out to the identified ones.
 */
#ifndef RLOCK_IDENTITY_H
#define RLOCK_IDENTITY_H

#include "fanout.h"
#include "handle.h"
#include "request.h"

/* Before each request of several masters: identify every server that was
 * not identified on the connection it uses now (a first request, or a
 * connection opened again since), and refuse two URLs of one server
 * (rlock_distinct).  Returns RLOCK_OK, RLOCK_EUSAGE or RLOCK_ESYS.  Then
 * rl_skip_unanswered leaves out of the fan-out f, with why, the servers that
 * are not identified: they have no vote; and rl_fan_run takes the vote from
 * an answer that came on a connection opened during the request. */
int rl_identify_servers(struct rlock *rl);
void rl_skip_unanswered(struct rlock *rl, struct fan *f);

/* Whether rl's servers, once their connections are open, are as many
 * as its URLs: RLOCK_OK, or RLOCK_EUSAGE with the two URLs that reach one
 * server named in err (doctor's check, and every request of several
 * masters). */
int rlock_distinct(struct rlock *rl, char *err, size_t len);

/* Send q to every server that was identified (rl_skip_unanswered) and wait
 * for their replies: rl_fan_init, rl_fan_all, rl_skip_unanswered and rl_fan_run. */
void rl_fan_ask(struct rlock *rl, struct fan *f, const struct request *q);

#endif
