/*
 * scriptsha.c - print the SHA-1 of one of rlock's Lua scripts, which its
 * requests carry (EVALSHA): the fault proxy tells the scripts apart on
 * the wire by it (tests/proxy_helper.bash).
 *
 *	scriptsha acquire	(or extend, release, force, fence, status,
 *				leave, log, with)
 */
#include <stdio.h>
#include <string.h>

#include "fanout.h"
#include "handle.h"
#include "keys.h"
#include "lease.h"
#include "node.h"
#include "reply.h"
#include "request.h"
#include "wait.h"

int main(int argc, char **argv)
{
	for (int i = 0; argc == 2 && i < RLOCK_SCRIPT_COUNT; i++) {
		if (strcmp(argv[1], rlock_scripts[i].name) == 0) {
			printf("%s\n", rlock_scripts[i].sha);
			return 0;
		}
	}
	fprintf(stderr, "usage: scriptsha acquire|extend|release|force|"
		"fence|status|leave|log|with\n");
	return 64;
}
