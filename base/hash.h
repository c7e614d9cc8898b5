/* SHA-1 and SHA-256, streaming, from libmd. SHA-1 only where a format
 * fixes it (git's object ids in a patch); what ward records for itself is
 * SHA-256. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <sha1.h>
#include <sha2.h>

#define HASH_SHA1_LEN SHA1_DIGEST_LENGTH
#define HASH_SHA256_LEN SHA256_DIGEST_LENGTH

struct hash_sha1 {
	SHA1_CTX c;
};

struct hash_sha256 {
	SHA2_CTX c;
};

void hash_sha1_init(struct hash_sha1 *c);
void hash_sha1_update(struct hash_sha1 *c, const void *p, size_t n);
void hash_sha1_final(struct hash_sha1 *c, uint8_t out[HASH_SHA1_LEN]);

void hash_sha256_init(struct hash_sha256 *c);
void hash_sha256_update(struct hash_sha256 *c, const void *p, size_t n);
void hash_sha256_final(struct hash_sha256 *c, uint8_t out[HASH_SHA256_LEN]);

/* n bytes as 2n lowercase hex digits and a NUL. */
void hash_hex(const uint8_t *d, size_t n, char *out);
#define HASH_SHA256_HEX (2 * HASH_SHA256_LEN + 1)
/* SHA-256 of n bytes, in hex. */
void hash_sha256_hex(const void *p, size_t n, char out[HASH_SHA256_HEX]);
/* SHA-256 of what fd holds from where it is to its end, in hex: 0, or the
 * read's -errno. */
int hash_sha256_fd_hex(int fd, char out[HASH_SHA256_HEX]);
