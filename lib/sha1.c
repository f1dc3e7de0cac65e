/*
 * sha1.c - SHA-1 (FIPS 180-4), for the digests of our Lua scripts, which
 * EVALSHA names a script by: the build computes them with it
 * (lib/scripts/luagen.c), and the unit tests check them.
 * Not for anything that needs collision resistance.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rlock_int.h"

static uint32_t rol(uint32_t x, int n)
{
	return (x << n) | (x >> (32 - n));
}

static void block(uint32_t h[5], const unsigned char *p)
{
	uint32_t w[80], a, b, c, d, e, f, k, t;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
	for (i = 16; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	a = h[0];
	b = h[1];
	c = h[2];
	d = h[3];
	e = h[4];
	for (i = 0; i < 80; i++) {
		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5a827999;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ed9eba1;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8f1bbcdc;
		} else {
			f = b ^ c ^ d;
			k = 0xca62c1d6;
		}
		t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol(b, 30);
		b = a;
		a = t;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

void rl_sha1_hex(const void *data, size_t len, char out[41])
{
	uint32_t h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
			  0xc3d2e1f0 };
	const unsigned char *p = data;
	unsigned char tail[128];
	uint64_t bits = (uint64_t)len * 8;
	size_t n = len, rest, tlen, i;

	for (; n >= 64; n -= 64, p += 64)
		block(h, p);
	/* The rest, a 1 bit, zeros, and the length in bits: one block or
	 * two. */
	rest = n;
	memset(tail, 0, sizeof(tail));
	memcpy(tail, p, rest);
	tail[rest] = 0x80;
	tlen = rest + 1 + 8 <= 64 ? 64 : 128;
	for (i = 0; i < 8; i++)
		tail[tlen - 1 - i] = (unsigned char)(bits >> (8 * i));
	block(h, tail);
	if (tlen == 128)
		block(h, tail + 64);
	for (i = 0; i < 5; i++)
		snprintf(out + 8 * i, 9, "%08x", h[i]);
}
