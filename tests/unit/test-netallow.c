/* The allow-list: each pattern form with what it allows and what it does
 * not; refused patterns with a message that says what to write; the one
 * canonical form of a host shared by patterns and requests. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "net/allow.h"
#include "tap.h"

static struct net_allow list;

static const struct net_allow_rule *match(const char *host, unsigned port)
{
	struct net_host h;
	if (net_allow_host(host, strlen(host), &h, NULL) < 0)
		return NULL;
	return net_allow_match(&list, &h, (uint16_t)port);
}

static void load(const char *const *pats)
{
	net_allow_free(&list);
	for (; *pats; pats++) {
		struct err e = { 0 };
		if (net_allow_add(&list, *pats, &e) < 0)
			printf("# %s: %s\n", *pats, e.msg);
	}
}

static const char *refusal(const char *pattern)
{
	static struct err e;
	struct net_allow_rule r;
	e = (struct err){ 0 };
	if (net_allow_parse(pattern, &r, &e) == 0)
		return NULL;
	return e.msg;
}

static const char *canon(const char *s)
{
	static struct net_host h;
	static struct err e;
	e = (struct err){ 0 };
	if (net_allow_host(s, strlen(s), &h, &e) < 0)
		return NULL;
	return h.name;
}

int main(void)
{
	/* A name: ports 443 and 80, that name only. */
	load((const char *const[]){ "example.org", NULL });
	ok(match("example.org", 443) != NULL, "example.org allows example.org:443");
	ok(match("example.org", 80) != NULL, "and :80");
	ok(match("example.org", 8443) == NULL, "but not :8443");
	ok(match("www.example.org", 443) == NULL, "nor a name below it");
	ok(match("example.org.evil", 443) == NULL, "nor one that starts with it");
	ok(match("EXAMPLE.ORG.", 443) != NULL, "case and one trailing dot do not matter");
	ok(match("xexample.org", 443) == NULL, "a longer name ending the same is another name");

	/* A wildcard: one or more labels, not the apex. */
	load((const char *const[]){ "*.example.org", NULL });
	ok(match("a.example.org", 443) != NULL, "*.example.org allows a.example.org");
	ok(match("a.b.example.org", 80) != NULL, "and a.b.example.org");
	ok(match("example.org", 443) == NULL, "but not the apex");
	ok(match("aexample.org", 443) == NULL, "nor aexample.org");
	ok(match("a.example.org", 22) == NULL, "nor another port");
	ok(match("a.example.org.evil", 443) == NULL, "nor a name that only starts like one below it");
	ok(match("example.org.evil", 443) == NULL, "nor the apex followed by more");

	/* Ports. */
	load((const char *const[]){ "example.org:8443", "*.x.org:8443", NULL });
	ok(match("example.org", 8443) != NULL, "host:port allows that port");
	ok(match("example.org", 443) == NULL, "and not 443");
	ok(match("a.x.org", 8443) != NULL && match("a.x.org", 443) == NULL, "*.x.org:8443 likewise");

	/* Addresses: allowed as named, even loopback. */
	load((const char *const[]){ "127.0.0.1:8080", "[::1]:8443", "10.1.2.3", NULL });
	const struct net_allow_rule *r = match("127.0.0.1", 8080);
	ok(r && r->has_addr && r->addr.kind == NET_HOST_IPV4, "1.2.3.4:port names an address, to connect as is");
	ok(match("127.0.0.1", 80) == NULL, "only on its port");
	ok(match("127.0.0.2", 8080) == NULL, "only that address");
	ok(match("[::1]", 8443) != NULL, "[::1]:8443");
	ok(match("[0:0::1]", 8443) != NULL, "an IPv6 address is compared as an address, not text");
	ok(match("[::ffff:127.0.0.1]", 8080) == NULL, "a mapped address is another address");
	ok(match("10.1.2.3", 443) != NULL && match("10.1.2.3", 8443) == NULL, "a bare address: 443 and 80");
	ok(match("localhost", 8080) == NULL, "a name is not an address rule's");

	/* Pinned names. */
	load((const char *const[]){ "allowed.test=127.0.0.1:8443", "v6.test=[::1]", NULL });
	r = match("allowed.test", 8443);
	ok(r && r->has_addr && !strcmp(r->addr.name, "127.0.0.1"), "name=ADDR:PORT: connected to ADDR");
	ok(match("allowed.test", 443) == NULL, "on PORT only");
	r = match("v6.test", 443);
	ok(r && r->has_addr && r->addr.kind == NET_HOST_IPV6 && match("v6.test", 80), "name=[v6]: 443 and 80");
	ok(match("127.0.0.1", 8443) == NULL, "pinning a name does not allow the address itself");

	/* The most specific rule wins. */
	load((const char *const[]){ "*.example.org", "api.example.org", "api.example.org=192.0.2.7:443", NULL });
	r = match("api.example.org", 443);
	ok(r && r->has_addr, "a pinned exact rule wins over an exact one and a wildcard");
	r = match("api.example.org", 80);
	ok(r && !r->has_addr && !r->wildcard, "an exact name wins over a wildcard");

	/* Refused patterns, each with what to write instead. */
	like(refusal("exämple.org"), "punycode", "a non-ASCII name: use its punycode form");
	like(refusal("2130706433"), "127.0.0.1", "2130706433 is not a name (a resolver reads 127.0.0.1)");
	like(refusal("0x7f.1"), "dotted-quad", "0x7f.1 refused");
	like(refusal("127.1"), "dotted-quad", "127.1 refused");
	like(refusal("0177.0.0.1"), "dotted-quad", "0177.0.0.1 refused");
	like(refusal("foo.123"), "ends in a number", "a name whose last label is a number");
	like(refusal("*"), "first label", "a bare *");
	like(refusal("*.org"), "top-level domain", "*.org: a whole TLD");
	like(refusal("a.*.org"), "first label", "* in the middle");
	like(refusal("*example.org"), "first label", "* joined to a label");
	like(refusal("example.org:0"), "1 to 65535", "port 0");
	like(refusal("example.org:70000"), "1 to 65535", "port 70000");
	like(refusal("example.org:"), "not a port", "an empty port");
	like(refusal("::1"), "brackets", "an IPv6 address without brackets");
	like(refusal("[::1"), "closing", "an unclosed bracket");
	like(refusal("[fe80::1%eth0]:443"), "zone", "a zone index");
	like(refusal("a..b"), "empty label", "an empty label");
	like(refusal("-a.org"), "'-'", "a label starting with '-'");
	like(refusal("a b.org"), "character", "a space");
	like(refusal("a/b.org"), "character", "a slash");
	like(refusal("x=localhost"), "address", "name=NAME: pinning takes an address");
	like(refusal("*.x.org=1.2.3.4"), "one host", "a pinned wildcard");
	like(refusal("x:443=1.2.3.4"), "after the address", "name:port=ADDR");
	like(refusal("1.2.3.4=5.6.7.8"), "a name", "an address pinned");
	like(refusal("x=1.2.3.4:99999"), "port", "a pinned port out of range");
	like(refusal(""), "empty", "an empty pattern");
	char longname[300];
	memset(longname, 'a', 64);
	strcpy(longname + 64, ".org");
	like(refusal(longname), "63", "a label of 64 bytes");
	ok(refusal("a_b.example.org") == NULL, "underscore allowed");
	ok(refusal("xn--bcher-kva.example") == NULL, "punycode allowed");

	/* The canonical host, as a request is brought to it. */
	is_str(canon("Example.ORG."), "example.org", "lowercased, trailing dot dropped");
	is_str(canon("[0:0:0:0:0:0:0:1]"), "::1", "IPv6 written as inet_ntop does");
	is_str(canon("1.2.3.4"), "1.2.3.4", "a dotted quad");
	ok(canon("2130706433") == NULL, "2130706433 refused in a request");
	ok(canon("0x7f.0.0.1") == NULL, "0x7f.0.0.1 refused in a request");
	ok(canon("127.000.000.001") == NULL, "leading zeros refused in a request");
	ok(canon("example.org..") == NULL, "two trailing dots refused");
	ok(canon("exa%6dple.org") == NULL, "percent-encoding refused");
	ok(canon("a\tb") == NULL && canon("") == NULL, "a tab, and nothing, refused");
	memset(longname, 'a', 63);
	longname[63] = 0;
	char big[400] = "";
	for (int i = 0; i < 4; i++) {
		strcat(big, longname);
		strcat(big, ".");
	}
	big[253] = 0;
	ok(canon(big) != NULL, "a name of 253 bytes is fine");
	big[253] = '.';
	big[254] = 0;
	ok(canon(big) != NULL, "and with its trailing dot");
	big[253] = 'a';
	ok(canon(big) == NULL, "254 bytes are refused");

	char sug[300];
	struct net_host h;
	net_allow_host("evil.example", 12, &h, NULL);
	net_allow_suggest(&h, 443, sug, sizeof(sug));
	is_str(sug, "evil.example", "suggestion for :443 is the bare name");
	net_allow_suggest(&h, 8080, sug, sizeof(sug));
	is_str(sug, "evil.example:8080", "and for another port names it");
	net_allow_host("[::1]", 5, &h, NULL);
	net_allow_suggest(&h, 8443, sug, sizeof(sug));
	is_str(sug, "[::1]:8443", "an IPv6 address in brackets");

	net_allow_free(&list);
	return tap_done();
}
