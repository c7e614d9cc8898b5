/* The server name a TLS client asks for, from the first bytes it sends into a
 * CONNECT tunnel: the ClientHello's server_name extension (RFC 6066), read
 * across as many handshake records and reads as it takes, up to 64 KiB.
 * Nothing is decrypted: only the first ClientHello is seen, so what a
 * client names after a HelloRetryRequest, in a renegotiation or in an
 * encrypted inner ClientHello (ECH) is beyond this check. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NET_SNI_MAX_HELLO (64 * 1024)
#define NET_SNI_NAME_MAX 255

enum net_sni_result {
	NET_SNI_FOUND,		/* the whole ClientHello is in; name holds the host_name */
	NET_SNI_MORE,		/* not enough bytes yet */
	NET_SNI_NOT_TLS,	/* the bytes do not begin a TLS handshake */
	NET_SNI_NONE,		/* a whole ClientHello with no host_name */
	NET_SNI_MALFORMED,	/* a length that does not fit, a duplicate, over 64 KiB */
};

/* Parse all the bytes the client has sent so far (buf[0..len)), from the
 * first. name gets NET_SNI_NAME_MAX + 1 bytes: the host_name as sent, NUL-
 * terminated, when NET_SNI_FOUND. */
enum net_sni_result net_sni_parse(const uint8_t *buf, size_t len, char *name);
const char *net_sni_result_name(enum net_sni_result r);

/* Whether a ClientHello may have all come, found by walking only the
 * bytes not walked before: record headers and the handshake's length. A
 * client dripping a byte at a time then costs a walk of each byte once and
 * a net_sni_parse or two, not a parse per byte. When it says true,
 * net_sni_parse has an answer other than NET_SNI_MORE (or, for the first
 * five bytes, a cheap one). Zero the struct before the first call. */
struct net_sni_scan {
	size_t pos;		/* next byte to walk */
	size_t rec_left;	/* payload left in the record being walked */
	size_t hs_have;		/* handshake bytes walked */
	uint8_t hs_hdr[4];	/* msg_type and length */
};
bool net_sni_ready(struct net_sni_scan *s, const uint8_t *buf, size_t len);
