/* The hashes are libmd's; this is the one place ward names them. */
#include "base/hash.h"

void hash_sha1_init(struct hash_sha1 *c)
{
	SHA1Init(&c->c);
}

void hash_sha1_update(struct hash_sha1 *c, const void *p, size_t n)
{
	SHA1Update(&c->c, p, n);
}

void hash_sha1_final(struct hash_sha1 *c, uint8_t out[HASH_SHA1_LEN])
{
	SHA1Final(out, &c->c);
}

void hash_sha256_init(struct hash_sha256 *c)
{
	SHA256Init(&c->c);
}

void hash_sha256_update(struct hash_sha256 *c, const void *p, size_t n)
{
	SHA256Update(&c->c, p, n);
}

void hash_sha256_final(struct hash_sha256 *c, uint8_t out[HASH_SHA256_LEN])
{
	SHA256Final(out, &c->c);
}

void hash_hex(const uint8_t *d, size_t n, char *out)
{
	static const char x[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = x[d[i] >> 4];
		out[2 * i + 1] = x[d[i] & 15];
	}
	out[2 * n] = 0;
}
