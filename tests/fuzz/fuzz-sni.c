/* Fuzz target for the ClientHello parser: the whole input, and every split
 * of it a client could send in two reads, must parse within its bytes; a
 * name found is NUL-terminated and within its cap; net_sni_ready never says
 * ready while the parse would still want more. Built with libFuzzer when
 * -Dfuzz=true (clang); otherwise main() replays the corpus as a test. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/sni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[NET_SNI_NAME_MAX + 1];
	enum net_sni_result whole = net_sni_parse(data, size, name);
	if (whole == NET_SNI_FOUND && strnlen(name, sizeof(name)) > NET_SNI_NAME_MAX)
		abort();
	/* A prefix of the input is what a first read may have brought: it must
	 * never give an answer the whole input contradicts. */
	for (size_t cut = 0; cut < size && cut < 512; cut++) {
		uint8_t *p = malloc(cut ? cut : 1);
		memcpy(p, data, cut);
		enum net_sni_result r = net_sni_parse(p, cut, name);
		free(p);
		if (r != NET_SNI_MORE && r != whole && size < NET_SNI_MAX_HELLO)
			abort();
	}
	/* The cheap walk, fed the input a few bytes at a time as reads would
	 * bring it: whenever it says ready, a parse has its answer. */
	struct net_sni_scan scan = { 0 };
	for (size_t len = 0; len <= size; len += 1 + len / 16) {
		if (net_sni_ready(&scan, data, len) && len >= 5 && net_sni_parse(data, len, name) == NET_SNI_MORE)
			abort();
	}
	return 0;
}

#include "replay.h"
