/* Fuzz target for the SigV4 re-signer: whatever head a box sends, the
 * Authorization parse and the re-signing stay within its bytes, answer
 * one of their documented results, leave the head as it was unless they
 * re-signed it, and a re-signed head (an Authorization's or a presigned
 * URL's) names the real key and never the placeholder's. Built with libFuzzer when -Dfuzz=true (clang); otherwise
 * main() replays the corpus as a test. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/sigv4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PH "ward-secret-0123456789abcdef0123456789abcdef"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *p = malloc(size ? size : 1);
	memcpy(p, data, size);
	struct net_sigv4_auth a;
	char why[320];
	int r = net_sigv4_auth_parse(p, size, &a, why, sizeof(why));
	if (r != 0 && r != -EBADMSG)
		abort();
	if (r == 0 && (strlen(a.signature) != 64 || strlen(a.date) != 8))
		abort();
	struct buf b;
	buf_init(&b, 32 * 1024);
	if (buf_append(&b, p, size) == 0) {
		struct net_sigv4_keys k = { .ph_key = PH, .ph_secret = PH, .ph_token = PH, .key = "AKIDREAL",
					    .secret = "real/secret", .token = "REALTOKEN" };
		r = net_sigv4_resign(&b, &k, NET_SIGV4_EMPTY_HASH, NULL, why, sizeof(why));
		if (r != 1 && r != 0 && r != -EPERM && r != -EBADMSG && r != -ENOBUFS)
			abort();
		if (r != 1 && (b.len != size || (size && memcmp(b.data, p, size))))
			abort();
		if (r == 1 && (memmem(b.data, b.len, PH, strlen(PH)) ||
			       (!memmem(b.data, b.len, "Credential=AKIDREAL/", 20) &&
				!memmem(b.data, b.len, "X-Amz-Credential=AKIDREAL%2F", 28))))
			abort();
	}
	buf_free(&b);
	free(p);
	return 0;
}

#include "replay.h"
