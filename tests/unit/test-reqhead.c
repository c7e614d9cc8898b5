/* Request heads a box may send its proxy: the two forms taken (CONNECT,
 * absolute-form for plain HTTP), the head rebuilt for upstream, and each
 * refusal with its reason, smuggling patterns first; then chunked bodies,
 * re-framed, ending exactly where they end. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "net/chunked.h"
#include "net/reqhead.h"
#include "tap.h"

static struct net_reqhead h;
static struct err e;

static int parse(const char *s)
{
	e = (struct err){ 0 };
	int r = net_reqhead_parse(s, strlen(s), &h, &e);
	return r;
}

/* The reason a head is refused, or "" when it is taken. */
static const char *why(const char *s)
{
	int r = parse(s);
	if (r == 0) {
		net_reqhead_free(&h);
		return "";
	}
	return r == -EAGAIN ? "(incomplete)" : e.msg;
}

static bool all_prefixes_incomplete(const char *s)
{
	size_t n = strlen(s);
	for (size_t i = 0; i < n; i++) {
		int r = net_reqhead_parse(s, i, &h, &e);
		if (r != -EAGAIN) {
			printf("#   prefix %zu: %d %s\n", i, r, e.msg);
			if (r == 0)
				net_reqhead_free(&h);
			return false;
		}
	}
	return true;
}

/* A strict decoder for the re-framed output: sizes in lower-case hex, no
 * extensions, no trailers. Returns the data length or -1. */
static long dechunk(const char *s, size_t n, char *out)
{
	size_t i = 0, o = 0;
	for (;;) {
		size_t sz = 0, d = 0;
		while (i < n && ((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
			sz = sz * 16 + (size_t)(s[i] <= '9' ? s[i] - '0' : s[i] - 'a' + 10);
			i++, d++;
		}
		if (!d || i + 2 > n || s[i] != '\r' || s[i + 1] != '\n')
			return -1;
		i += 2;
		if (sz == 0)
			return i + 2 == n && s[i] == '\r' && s[i + 1] == '\n' ? (long)o : -1;
		if (i + sz + 2 > n || s[i + sz] != '\r' || s[i + sz + 1] != '\n')
			return -1;
		memcpy(out + o, s + i, sz);
		o += sz;
		i += sz + 2;
	}
}

static void test_connect(void)
{
	const char *s = "CONNECT Example.ORG:443 HTTP/1.1\r\nHost: example.org:443\r\nUser-Agent: curl\r\n\r\nTLS";
	is_int(parse(s), 0, "CONNECT host:port");
	ok(h.kind == NET_REQ_CONNECT && !strcmp(h.host.name, "example.org") && h.port == 443,
	   "kind, canonical host, port");
	is_int(h.head_len, strlen(s) - 3, "the head ends at its blank line; what follows is the caller's");
	net_reqhead_free(&h);
	is_int(parse("CONNECT [::1]:8443 HTTP/1.0\r\n\r\n"), 0, "CONNECT [v6]:port, HTTP/1.0");
	ok(h.host.kind == NET_HOST_IPV6 && h.port == 8443, "an IPv6 host");
	net_reqhead_free(&h);
	ok(all_prefixes_incomplete("CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n"),
	   "each prefix of a good head is incomplete, never refused");

	like(why("CONNECT a.example HTTP/1.1\r\n\r\n"), "port", "CONNECT without a port");
	like(why("CONNECT http://a.example:443/ HTTP/1.1\r\n\r\n"), "not a URL", "CONNECT with a URL");
	like(why("CONNECT u@a.example:443 HTTP/1.1\r\n\r\n"), "userinfo", "CONNECT with userinfo");
	like(why("CONNECT a.example:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"), "no body", "CONNECT with a body");
	is_str(why("CONNECT a.example:443 HTTP/1.1\r\nContent-Length: 0\r\n\r\n"), "", "(Content-Length: 0 is no body)");
	like(why("CONNECT a.example:0 HTTP/1.1\r\n\r\n"), "1 to 65535", "port 0");
	like(why("CONNECT a.example:65536 HTTP/1.1\r\n\r\n"), "1 to 65535", "port 65536");
	like(why("CONNECT a.example:+443 HTTP/1.1\r\n\r\n"), "not a number", "port +443");
	like(why("CONNECT 2130706433:443 HTTP/1.1\r\n\r\n"), "dotted-quad", "an integer IPv4 host");
	like(why("CONNECT 0x7f.1:443 HTTP/1.1\r\n\r\n"), "dotted-quad", "a hex IPv4 host");
	like(why("CONNECT b\xc3\xbc\x63her.example:443 HTTP/1.1\r\n\r\n"), "punycode", "a non-ASCII host");
}

static void test_forward(void)
{
	const char *s =
		"GET http://Example.org:8080/p/a?q=1 HTTP/1.1\r\n"
		"Host: evil.example\r\n"
		"User-Agent: t\r\n"
		"Proxy-Authorization: Basic eDp5\r\n"
		"Proxy-Connection: keep-alive\r\n"
		"Connection: keep-alive, X-Secret\r\n"
		"X-Secret: 1\r\n"
		"Keep-Alive: 5\r\n"
		"TE: trailers\r\n"
		"Upgrade: websocket\r\n"
		"Accept:   */*  \r\n"
		"\r\n";
	is_int(parse(s), 0, "GET http://host:port/path");
	ok(h.kind == NET_REQ_FORWARD && h.port == 8080 && h.body == NET_BODY_NONE, "forwarded, port 8080, no body");
	is_str(h.upstream.data,
	       "GET /p/a?q=1 HTTP/1.1\r\n"
	       "Host: example.org:8080\r\n"
	       "User-Agent: t\r\n"
	       "Accept: */*\r\n"
	       "Connection: close\r\n"
	       "\r\n",
	       "upstream: origin-form, Host from the target, hop-by-hop and named headers gone, Connection: close");
	net_reqhead_free(&h);

	is_int(parse("GET http://a.example HTTP/1.0\r\n\r\n"), 0, "no path");
	is_str(h.upstream.data, "GET / HTTP/1.0\r\nHost: a.example\r\nConnection: close\r\n\r\n", "becomes /");
	net_reqhead_free(&h);
	is_int(parse("GET http://a.example?x=1 HTTP/1.1\r\n\r\n"), 0, "a query without a path");
	like(h.upstream.data, "GET /?x=1 HTTP/1.1", "becomes /?x=1");
	net_reqhead_free(&h);
	is_int(parse("GET HTTP://[::1]:81/ HTTP/1.1\r\n\r\n"), 0, "an IPv6 host, scheme in capitals");
	like(h.upstream.data, "Host: [::1]:81\r\n", "Host in brackets with its port");
	net_reqhead_free(&h);

	is_int(parse("POST http://a.example/ HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET"), 0, "a body by length");
	ok(h.body == NET_BODY_LENGTH && h.length == 5, "of 5 bytes");
	like(h.upstream.data, "Content-Length: 5\r\n", "sent on as one Content-Length");
	net_reqhead_free(&h);
	is_int(parse("POST http://a.example/ HTTP/1.1\r\nContent-Length: 5, 5\r\nContent-Length: 5\r\n\r\n"), 0,
	       "repeated equal Content-Lengths");
	ok(h.length == 5 && !strstr(h.upstream.data, "5, 5"), "collapse to one");
	net_reqhead_free(&h);
	is_int(parse("POST http://a.example/ HTTP/1.1\r\nContent-Length: 0\r\n\r\n"), 0, "Content-Length: 0");
	like(h.upstream.data, "Content-Length: 0\r\n", "is kept (servers want it on a POST)");
	net_reqhead_free(&h);
	is_int(parse("POST http://a.example/ HTTP/1.1\r\nTransfer-Encoding: gzip, Chunked\r\nTrailer: X\r\n\r\n"), 0,
	       "a body chunked last");
	ok(h.body == NET_BODY_CHUNKED, "chunked");
	like(h.upstream.data, "Transfer-Encoding: gzip, chunked\r\n", "codings sent on");
	unlike(h.upstream.data, "Trailer", "Trailer dropped (trailers are)");
	net_reqhead_free(&h);

	is_int(parse("GET http://a.example/ HTTP/1.1\r\n\r\nGET http://b.example/ HTTP/1.1\r\nHost: c\r\n\r\n"), 0,
	       "two pipelined requests");
	is_int(h.head_len, strlen("GET http://a.example/ HTTP/1.1\r\n\r\n"), "only the first is this head");
	unlike(h.upstream.data, "b.example", "and the upstream head is the first's alone");
	net_reqhead_free(&h);
}

static void test_refusals(void)
{
	like(why("GET / HTTP/1.1\r\nHost: a.example\r\n\r\n"), "whole URL", "origin-form");
	like(why("GET https://a.example/ HTTP/1.1\r\n\r\n"), "CONNECT", "https:// says use CONNECT");
	like(why("GET ftp://a.example/ HTTP/1.1\r\n\r\n"), "only http://", "ftp://");
	like(why("OPTIONS * HTTP/1.1\r\n\r\n"), "not a URL", "asterisk-form");
	like(why("GET http://u:p@a.example/ HTTP/1.1\r\n\r\n"), "userinfo", "userinfo");
	like(why("GET http://a.example/#f HTTP/1.1\r\n\r\n"), "fragment", "a fragment");
	like(why("GET http://a.example/a b HTTP/1.1\r\n\r\n"), "one space", "a space in the target");
	like(why("GET  http://a.example/ HTTP/1.1\r\n\r\n"), "one space", "two spaces");
	like(why("GET http://a.example/\x01 HTTP/1.1\r\n\r\n"), "URL cannot have", "a control byte in the target");
	like(why("GET http://a.example/\xff HTTP/1.1\r\n\r\n"), "not ASCII", "a high byte in the target");
	like(why("GET http://a.example/ HTTP/1.2\r\n\r\n"), "HTTP/1.0 or HTTP/1.1", "HTTP/1.2");
	like(why("GET http://a.example/ http/1.1\r\n\r\n"), "HTTP/1.0 or HTTP/1.1", "a lower-case version");
	like(why("GET http://a.example/ HTTP/2.0\r\n\r\n"), "HTTP/2", "HTTP/2.0 in a request line");
	like(why("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), "HTTP/2", "the HTTP/2 preface");
	is_str(why("PRI * HTTP/2"), "(incomplete)", "(a prefix of it waits)");
	like(why("\x16\x03\x01\x02\x00\x01"), "TLS", "TLS sent to the proxy: says the URL is http://");
	like(why("\x01GET"), "not an HTTP request", "a binary first byte: refused at once");
	like(why("GETTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTT http://a.example/ HTTP/1.1\r\n\r\n"), "method",
	     "a method of 40 characters");
	like(why("G(T http://a.example/ HTTP/1.1\r\n\r\n"), "method", "a method that is not a token");
	like(why("GET http://a.example/ HTTP/1.1\nHost: x\r\n\r\n"), "CRLF", "a bare LF");
	like(why("GET http://a.example/ HTTP/1.1\r\nHost: x\ry\r\n\r\n"), "bare CR", "a bare CR");
	{
		const char s[] = "GET http://a.example/ HTTP/1.1\r\nX: a\0b\r\n\r\n";
		e = (struct err){ 0 };
		ok(net_reqhead_parse(s, sizeof(s) - 1, &h, &e) == -EBADMSG && strstr(e.msg, "NUL"), "a NUL in a header");
	}
	like(why("GET http://a.example/ HTTP/1.1\r\nX: a\x7f\r\n\r\n"), "control", "DEL in a header value");
	like(why("GET http://a.example/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n"), "obs-fold", "obs-fold");
	like(why("GET http://a.example/ HTTP/1.1\r\nHost : x\r\n\r\n"), "colon", "a space before the colon");
	like(why("GET http://a.example/ HTTP/1.1\r\nX-A\r\n\r\n"), "without a colon", "a line without a colon");
	like(why("GET http://a.example/ HTTP/1.1\r\nX(: 1\r\n\r\n"), "token", "a header name that is not a token");
	like(why("GET http://a.example/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), "several Host", "two Host headers");
	like(why("\r\nGET http://a.example/ HTTP/1.1\r\n\r\n"), "not an HTTP request", "a leading empty line");

	/* Smuggling. */
	like(why("POST http://a.example/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"),
	     "both", "Content-Length with Transfer-Encoding");
	like(why("POST http://a.example/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"), "differ",
	     "two differing Content-Lengths");
	like(why("POST http://a.example/ HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\n"), "differ",
	     "differing values in one header");
	like(why("POST http://a.example/ HTTP/1.1\r\nContent-Length: +5\r\n\r\n"), "not a number", "Content-Length: +5");
	like(why("POST http://a.example/ HTTP/1.1\r\nContent-Length: 5,\r\n\r\n"), "not a number",
	     "an empty element");
	like(why("POST http://a.example/ HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n"), "18 digits",
	     "a Content-Length of 20 digits");
	like(why("POST http://a.example/ HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"), "end in chunked",
	     "Transfer-Encoding: gzip");
	like(why("POST http://a.example/ HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"), "end in chunked",
	     "chunked not last");
	like(why("POST http://a.example/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
	     "more than once", "chunked twice");
	like(why("POST http://a.example/ HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n"), "end in chunked",
	     "xchunked");
	like(why("POST http://a.example/ HTTP/1.1\r\nTransfer-Encoding: chunked;q=1\r\n\r\n"), "token",
	     "a coding with parameters");
	like(why("POST http://a.example/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"), "HTTP/1.0",
	     "Transfer-Encoding in HTTP/1.0");
	like(why("POST http://a.example/ HTTP/1.1\r\nConnection: Content-Length\r\nContent-Length: 5\r\n\r\n"),
	     "cannot drop", "Connection naming Content-Length");
	like(why("POST http://a.example/ HTTP/1.1\r\nConnection: transfer-encoding\r\n\r\n"), "cannot drop",
	     "Connection naming Transfer-Encoding");
	like(why("GET http://a.example/ HTTP/1.1\r\nConnection: host\r\n\r\n"), "cannot drop", "Connection naming Host");

	/* Caps. */
	char big[NET_REQHEAD_MAX + 100];
	strcpy(big, "GET http://a.example/ HTTP/1.1\r\nX: ");
	memset(big + strlen(big), 'a', NET_REQHEAD_MAX);
	big[NET_REQHEAD_MAX + 40] = 0;
	is_int(parse(big), -EMSGSIZE, "a head over 16 KiB");
	like(e.msg, "16 KiB", "says so");
	char many[8192] = "GET http://a.example/ HTTP/1.1\r\n";
	for (int i = 0; i < 100; i++)
		strcat(many, "X: 1\r\n");
	strcat(many, "\r\n");
	is_int(parse(many), 0, "100 header lines");
	net_reqhead_free(&h);
	many[strlen(many) - 2] = 0;
	strcat(many, "X: 1\r\n\r\n");
	is_int(parse(many), -EMSGSIZE, "101 header lines");
	like(e.msg, "100", "says the cap");
}

static void test_chunked(void)
{
	struct net_chunked c;
	struct buf out;
	size_t used;
	char data[4096];

	buf_init(&out, 4096);
	net_chunked_init(&c);
	const char *s = "5;name=\"v\"\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\nGET http://evil/ HTTP/1.1\r\n\r\n";
	is_int(net_chunked_feed(&c, s, strlen(s), &out, &used), 1, "a chunked body ends");
	is_int(used, strlen(s) - strlen("GET http://evil/ HTTP/1.1\r\n\r\n"), "at its last CRLF, not a byte past");
	buf_cstr(&out);
	is_str(out.data, "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "re-framed: no extension, no trailer");
	buf_free(&out);

	/* Byte by byte: the same data, framed one chunk per byte. */
	buf_init(&out, 4096);
	net_chunked_init(&c);
	int r = 0;
	size_t total = 0;
	for (size_t i = 0; i < strlen(s) && r == 0; i++) {
		r = net_chunked_feed(&c, s + i, 1, &out, &used);
		total += used;
	}
	is_int(r, 1, "fed a byte at a time, it ends");
	is_int(total, strlen(s) - strlen("GET http://evil/ HTTP/1.1\r\n\r\n"), "at the same byte");
	long dl = dechunk(out.data, out.len, data);
	ok(dl == 11 && !memcmp(data, "hello world", 11), "and decodes to the same data");
	buf_free(&out);

	/* Upper-case hex and leading zeros come out as plain sizes. */
	buf_init(&out, 4096);
	net_chunked_init(&c);
	s = "000A\r\n0123456789\r\n0000\r\n\r\n";
	is_int(net_chunked_feed(&c, s, strlen(s), &out, &used), 1, "000A, 0000");
	buf_cstr(&out);
	is_str(out.data, "a\r\n0123456789\r\n0\r\n\r\n", "become a and 0");
	buf_free(&out);

	/* Out of room: stops, and goes on when there is room. */
	buf_init(&out, 40);
	net_chunked_init(&c);
	s = "20\r\n0123456789abcdef0123456789abcdef\r\n0\r\n\r\n";
	is_int(net_chunked_feed(&c, s, strlen(s), &out, &used), 0, "a small out buffer: not ended yet");
	ok(used < strlen(s) && out.len <= 40, "took what fitted (%zu bytes)", used);
	char acc[4096];
	size_t acc_len = 0, off = used;
	memcpy(acc, out.data, out.len);
	acc_len = out.len;
	out.len = 0;
	while (off < strlen(s)) {
		r = net_chunked_feed(&c, s + off, strlen(s) - off, &out, &used);
		memcpy(acc + acc_len, out.data, out.len);
		acc_len += out.len;
		out.len = 0;
		off += used;
		if (r)
			break;
	}
	dl = dechunk(acc, acc_len, data);
	ok(r == 1 && dl == 32 && !memcmp(data, "0123456789abcdef0123456789abcdef", 32), "the rest after draining");
	buf_free(&out);

	static const char *const bad[] = {
		"x\r\n",			/* not hex */
		"\r\n",				/* no size */
		"5 \r\nhello\r\n0\r\n\r\n",	/* a space after the size */
		" 5\r\nhello\r\n0\r\n\r\n",	/* before it */
		"5\nhello\r\n0\r\n\r\n",		/* bare LF */
		"5\r\nhelloX\r\n0\r\n\r\n",	/* data longer than its size */
		"-5\r\n",
		"0x5\r\n",
		"1000000000000000\r\n",		/* 16 digits */
		"5;a\x01\r\n",			/* a control byte in an extension */
		"0\r\nX: 1\n\r\n",		/* a bare LF in a trailer */
		"0\r\n\r\r",			/* no LF at the end */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_init(&out, 4096);
		net_chunked_init(&c);
		is_int(net_chunked_feed(&c, bad[i], strlen(bad[i]), &out, &used), -EBADMSG, "malformed chunked %zu", i);
		buf_free(&out);
	}
	buf_init(&out, 4096);
	net_chunked_init(&c);
	s = "fffffff\r\nabc";
	is_int(net_chunked_feed(&c, s, strlen(s), &out, &used), 0, "a large chunk, begun: more");
	buf_free(&out);
	/* Trailers have a cap. */
	buf_init(&out, 4096);
	net_chunked_init(&c);
	static char tr[NET_CHUNKED_MAX_TRAILERS + 100];
	strcpy(tr, "0\r\nX: ");
	memset(tr + 6, 'a', NET_CHUNKED_MAX_TRAILERS);
	tr[NET_CHUNKED_MAX_TRAILERS + 6] = 0;
	is_int(net_chunked_feed(&c, tr, strlen(tr), &out, &used), -EBADMSG, "trailers over 16 KiB");
	buf_free(&out);
}

int main(void)
{
	test_connect();
	test_forward();
	test_refusals();
	test_chunked();
	return tap_done();
}
