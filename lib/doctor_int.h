/*
 * doctor_int.h - the parts of doctor that read what a server said, with
 * no connection: private to the library and its unit tests.
 */
#ifndef DOCTOR_INT_H
#define DOCTOR_INT_H

/* What a server is, in its own words. */
struct server_id {
	char product[16];	/* "redis", "valkey": lower case, as said */
	char title[16];		/* "Redis", "Valkey": for messages */
	char version[32];	/* the product's own version */
	char compat[32];	/* the Redis version whose features it has */
};

/*
 * Tell which server this is, and its version, from INFO's text (NULL when
 * INFO was refused) and HELLO's "server" and "version" fields ("" when
 * HELLO was not answered).  Valkey keeps Redis's fields for the Redis
 * version it is compatible with (INFO's redis_version is 7.2.4; from 8.0
 * HELLO too says "redis" and 7.2.4 when extended-redis-compatibility is
 * on) and names itself in INFO's server_name and valkey_version, and in
 * HELLO from 8.0 (7.2.x said "redis" there with its own version).  So
 * INFO's server_name and <server_name>_version come first, then HELLO,
 * then redis_version.  Returns 0, or -1 when no version is known (id's
 * version is then "").
 */
int server_identify(const char *info, const char *hello_server,
		    const char *hello_version, struct server_id *id);

#endif /* DOCTOR_INT_H */
