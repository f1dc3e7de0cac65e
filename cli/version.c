/*
 * version.c - what "rlock --version" prints: the release, from the file
 * VERSION; the git commit the binary was built from, when it was built in a
 * git checkout ("-dirty" if tracked files had local changes); and how it
 * speaks TLS.  The Makefile writes version.h from VERSION and git.
 */
#include <stdio.h>

#include "cli.h"
#include "version.h"

void cli_print_version(void)
{
	if (RLOCK_COMMIT[0] != '\0')
		printf("rlock %s (git %s)\n", RLOCK_VERSION, RLOCK_COMMIT);
	else
		printf("rlock %s\n", RLOCK_VERSION);
	/*
	 * What the build will load, not whether this host has it: loading
	 * libssl and libcrypto here would cost more than the rest of the
	 * command, and the first rediss:// URL says whether they load.
	 */
	printf("TLS: OpenSSL (%s, loaded at the first rediss:// URL)\n",
	       RLOCK_TLS_LIBRARY);
}
