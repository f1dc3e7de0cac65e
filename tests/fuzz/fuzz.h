/*
 * fuzz.h - what the libFuzzer targets in tests/fuzz/ share: the entry
 * point's declaration, and REQUIRE, which aborts with the failed invariant
 * so that libFuzzer reports it as a crash and keeps the input.
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(cond)                                                      \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "%s:%d: invariant failed: %s\n",   \
				__FILE__, __LINE__, #cond);                \
			abort();                                           \
		}                                                          \
	} while (0)

/* The input as a C string of its own, in a heap block of exactly size + 1
 * bytes so that ASan sees a read past the terminator. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s == NULL)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

#endif /* FUZZ_H */
