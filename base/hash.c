/* The hashes are libmd's, streamed; a whole buffer's or file's SHA-256
 * is libcrypto's (EVP), which uses the CPU's SHA extensions where it has
 * them (about six times libmd's speed on 4 KiB files here), and libmd's
 * where libcrypto fails or cannot be loaded (a process whose root is a
 * box's, which need not have it). This is the one place ward names them. */
#include "base/hash.h"
#include "base/fdio.h"
#include "base/osslso.h"

#include <errno.h>
#include <string.h>

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

void hash_sha256_hex(const void *p, size_t n, char out[HASH_SHA256_HEX])
{
	uint8_t d[HASH_SHA256_LEN];
	unsigned dn = 0;
	if (osslso_load(NULL) < 0 || EVP_Digest(p, n, d, &dn, EVP_sha256(), NULL) != 1 || dn != sizeof(d)) {
		struct hash_sha256 h;
		hash_sha256_init(&h);
		hash_sha256_update(&h, p, n);
		hash_sha256_final(&h, d);
	}
	hash_hex(d, sizeof(d), out);
}

int hash_sha256_fd_hex(int fd, char out[HASH_SHA256_HEX])
{
	uint8_t d[HASH_SHA256_LEN];
	char b[65536];
	ssize_t n;
	EVP_MD_CTX *c = osslso_load(NULL) == 0 ? EVP_MD_CTX_new() : NULL;
	if (c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1) {
		bool ok = true;
		while ((n = fdio_read_some(fd, b, sizeof(b))) > 0 && ok)
			ok = EVP_DigestUpdate(c, b, (size_t)n) == 1;
		unsigned dn = 0;
		if (!ok || EVP_DigestFinal_ex(c, d, &dn) != 1) {
			memset(d, 0, sizeof(d));
			n = -EIO;
		}
		EVP_MD_CTX_free(c);
	} else {
		if (c)
			EVP_MD_CTX_free(c);
		struct hash_sha256 h;
		hash_sha256_init(&h);
		while ((n = fdio_read_some(fd, b, sizeof(b))) > 0)
			hash_sha256_update(&h, b, (size_t)n);
		hash_sha256_final(&h, d);
	}
	hash_hex(d, sizeof(d), out);
	return n < 0 ? (int)n : 0;
}
