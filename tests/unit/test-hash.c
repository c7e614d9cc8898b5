/* SHA-1 and SHA-256 against FIPS 180 test vectors, whole and fed in
 * pieces that straddle the 64-byte blocks. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/hash.h"
#include "tap.h"

static const char two_blocks[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";

static void sha1_of(const char *s, size_t n, size_t piece, char *hex)
{
	struct hash_sha1 h;
	uint8_t d[HASH_SHA1_LEN];
	hash_sha1_init(&h);
	for (size_t i = 0; i < n; i += piece)
		hash_sha1_update(&h, s + i, n - i < piece ? n - i : piece);
	hash_sha1_final(&h, d);
	hash_hex(d, sizeof(d), hex);
}

static void sha256_of(const char *s, size_t n, size_t piece, char *hex)
{
	struct hash_sha256 h;
	uint8_t d[HASH_SHA256_LEN];
	hash_sha256_init(&h);
	for (size_t i = 0; i < n; i += piece)
		hash_sha256_update(&h, s + i, n - i < piece ? n - i : piece);
	hash_sha256_final(&h, d);
	hash_hex(d, sizeof(d), hex);
}

int main(void)
{
	char hex[2 * HASH_SHA256_LEN + 1];
	char *million = malloc(1000000);
	if (!million)
		return 1;
	memset(million, 'a', 1000000);

	sha1_of("", 0, 1, hex);
	is_str(hex, "da39a3ee5e6b4b0d3255bfef95601890afd80709", "sha1 of nothing");
	sha1_of("abc", 3, 3, hex);
	is_str(hex, "a9993e364706816aba3e25717850c26c9cd0d89d", "sha1 of abc");
	sha1_of(two_blocks, strlen(two_blocks), 7, hex);
	is_str(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1", "sha1 of 56 bytes (padding in a second block), in pieces");
	sha1_of(million, 1000000, 4093, hex);
	is_str(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f", "sha1 of a million a's");
	sha1_of("blob 0", 7, 7, hex);
	is_str(hex, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391", "git's id of the empty blob");

	sha256_of("", 0, 1, hex);
	is_str(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "sha256 of nothing");
	sha256_of("abc", 3, 1, hex);
	is_str(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "sha256 of abc, a byte at a time");
	sha256_of(two_blocks, strlen(two_blocks), 64, hex);
	is_str(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", "sha256 of 56 bytes");
	sha256_of(million, 1000000, 65536, hex);
	is_str(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", "sha256 of a million a's");
	char h2[HASH_SHA256_HEX];
	hash_sha256_hex(million, 1000000, h2);
	is_str(h2, hex, "hash_sha256_hex: the same, at once");
	char h0[HASH_SHA256_HEX];
	hash_sha256_hex("", 0, h0);
	is_str(h0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "hash_sha256_hex of nothing");
	FILE *f = tmpfile();
	fwrite(million, 1, 1000000, f);
	fflush(f);
	lseek(fileno(f), 0, SEEK_SET);
	is_int(hash_sha256_fd_hex(fileno(f), h2), 0, "hash_sha256_fd_hex of a file");
	is_str(h2, hex, "the same, read from the file");
	fclose(f);
	is_int(hash_sha256_fd_hex(-1, h2), -EBADF, "a descriptor that is not: its errno");
	free(million);
	return tap_done();
}
