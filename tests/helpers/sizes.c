/*
 * sizes.c - print the size of one of librlock's private structures, for
 * tests that make one chosen allocation fail (tests/shim/failcalloc.c).
 *
 *	sizes rlock	the handle that rlock_new allocates
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
	if (argc == 2 && strcmp(argv[1], "rlock") == 0) {
		printf("%zu\n", sizeof(struct rlock));
		return 0;
	}
	fprintf(stderr, "usage: sizes rlock\n");
	return 64;
}
