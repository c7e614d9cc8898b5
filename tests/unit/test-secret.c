/* net/secret.h: a secret's spec, value, placeholder, and what the proxy
 * asks of a request's bytes. Each refusal has its accepted twin. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "net/secret.h"
#include "tap.h"

static bool spec_ok(const char *spec, struct net_secret_spec *s)
{
	struct err e = { 0 };
	return net_secret_spec_parse(spec, s, &e) == 0;
}

static const char *spec_err(const char *spec)
{
	static struct err e;
	struct net_secret_spec s;
	memset(&e, 0, sizeof(e));
	return net_secret_spec_parse(spec, &s, &e) < 0 ? e.msg : NULL;
}

int main(void)
{
	/* Bounds are decisions: pinned here. */
	is_int(NET_SECRET_MAX, 16, "at most 16 secrets a box");
	is_int(NET_SECRET_HOSTS_MAX, 8, "at most 8 hosts a secret");
	is_int(NET_SECRET_VALUE_MAX, 4096, "a value of at most 4096 bytes");

	struct net_secret_spec s;
	ok(spec_ok("API_KEY@api.example.com", &s) && !strcmp(s.name, "API_KEY") && s.nhost == 1 &&
		   !strcmp(s.host[0].name, "api.example.com") && !s.path,
	   "NAME@HOST: the name, one host, the value from the environment");
	ok(spec_ok("K@A.Example.COM.,b.example:8443", &s) && s.nhost == 2 && !strcmp(s.host[0].name, "a.example.com") &&
		   !strcmp(s.host[1].name, "b.example"),
	   "NAME@HOST,HOST: hosts in canonical form, a port taken");
	ok(spec_ok("K=@/run/keys/k@x@api.test", &s) && s.path && s.path_len == strlen("/run/keys/k@x") &&
		   !strncmp(s.path, "/run/keys/k@x", s.path_len) && !strcmp(s.host[0].name, "api.test"),
	   "NAME=@FILE@HOST: the file up to the last @");
	like(spec_err("K"), "is not NAME@HOST", "no host: refused");
	like(spec_err("K@"), "names no host", "an empty host: refused");
	like(spec_err("1K@api.test"), "is not NAME@HOST", "a name starting with a digit: refused");
	like(spec_err("K-1@api.test"), "is not NAME@HOST", "a name with -: refused");
	like(spec_err("K=sk-live@api.test"), "never on the command line", "a value on the command line: refused");
	like(spec_err("K@*.example.com"), "named exactly", "a wildcard host: refused");
	like(spec_err("K@api.test=127.0.0.1:9"), "named exactly", "a pinned host: refused (pin with --allow-host)");
	like(spec_err("K@api.test,"), "ends with a comma", "a trailing comma: refused");
	like(spec_err("K@2130706433"), "\"K@2130706433\": ", "a host the allow-list refuses: its reason");

	struct err e = { 0 };
	ok(net_secret_value_check("K", "sk-123", 6, &e) == 0, "a value: taken");
	ok(net_secret_value_check("K", "a\r\nX-Evil: 1", 12, &e) < 0 && strstr(e.msg, "line break"),
	   "a value with CRLF (header injection): refused");
	ok(net_secret_value_check("K", "", 0, &e) < 0, "an empty value: refused");

	char ph[NET_SECRET_PH_LEN + 1], ph2[NET_SECRET_PH_LEN + 1];
	ok(net_secret_placeholder(ph, sizeof(ph)) == 0 && net_secret_is_placeholder(ph), "a placeholder: %s", ph);
	net_secret_placeholder(ph2, sizeof(ph2));
	ok(strcmp(ph, ph2) != 0, "two placeholders differ");
	ok(!net_secret_is_placeholder("ward-secret-XYZ"), "not one: refused");

	struct net_secret sec = { .name = "K", .value = "REAL-VALUE-42", .value_len = 13, .nhost = 1 };
	memcpy(sec.ph, ph, sizeof(ph));
	net_allow_host("api.test", 8, &sec.host[0], &e);
	struct net_host other;
	net_allow_host("other.test", 10, &other, &e);
	ok(net_secret_owns(&sec, &sec.host[0]) && !net_secret_owns(&sec, &other), "owns its host, not another");

	struct buf b;
	buf_init(&b, 4096);
	char head[512];
	snprintf(head, sizeof(head), "GET /?k=%s HTTP/1.1\r\nAuthorization: Bearer %s\r\n\r\n", ph, ph);
	buf_append(&b, head, strlen(head));
	ok(net_secret_carried(&sec, b.data, b.len), "a head with the placeholder carries it");
	ok(!net_secret_foreign_cred(&sec, b.data, b.len), "the placeholder's Authorization is not a foreign key");
	is_int(net_secret_substitute(&sec, &b), 2, "both placeholders replaced");
	buf_cstr(&b);
	ok(strstr(b.data, "Bearer REAL-VALUE-42\r\n") && strstr(b.data, "?k=REAL-VALUE-42 ") && !strstr(b.data, ph),
	   "the value where the placeholder was, no placeholder left");
	ok(net_secret_carried(&sec, b.data, b.len), "the value is carried too (a box that has it is caught)");
	const char *plain = "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n";
	ok(!net_secret_carried(&sec, plain, strlen(plain)), "twin: a head without either carries nothing");
	const char *atk = "GET / HTTP/1.1\r\nauthorization: Bearer attacker-key\r\n\r\n";
	ok(net_secret_foreign_cred(&sec, atk, strlen(atk)), "another Authorization: a foreign key");
	const char *xk = "GET / HTTP/1.1\r\nX-API-Key: attacker-key\r\n\r\n";
	ok(net_secret_foreign_cred(&sec, xk, strlen(xk)), "another X-Api-Key: a foreign key");
	ok(!net_secret_foreign_cred(&sec, plain, strlen(plain)), "twin: no credential is not a foreign key");
	buf_free(&b);
	buf_init(&b, 50);
	snprintf(head, sizeof(head), "%s", ph);
	buf_append(&b, head, strlen(head));
	sec.value = "a value far too long for this buffer's cap of fifty bytes";
	sec.value_len = strlen(sec.value);
	ok(net_secret_substitute(&sec, &b) == -ENOBUFS && b.len == NET_SECRET_PH_LEN, "past the cap: refused, b unchanged");
	buf_free(&b);

	/* aws: the value's form, and what the proxy holds of it. */
	char v[NET_SECRET_VALUE_MAX + 1];
	ok(net_secret_is_aws("aws") && !net_secret_is_aws("AWS") && !net_secret_is_aws("aws2"), "the name aws, exactly");
	ok(net_secret_aws_value("AKIDX", "se/cr+et", NULL, v, sizeof(v), &e) == 0 && !strcmp(v, "AKIDX:se/cr+et"),
	   "an aws value: KEY_ID:SECRET_KEY");
	ok(net_secret_aws_value("AKIDX", "s", "TOK=", v, sizeof(v), &e) == 0 && !strcmp(v, "AKIDX:s:TOK="),
	   "with a session token: KEY_ID:SECRET_KEY:TOKEN");
	ok(net_secret_aws_value(NULL, "s", NULL, v, sizeof(v), &e) < 0 && strstr(e.msg, "needs AWS_ACCESS_KEY_ID"),
	   "no key id: refused, named (%s)", e.msg);
	ok(net_secret_aws_value("A:B", "s", NULL, v, sizeof(v), &e) < 0 && strstr(e.msg, "AWS_ACCESS_KEY_ID holds"),
	   "a ':' in a key: refused (%s)", e.msg);
	struct net_secret aw = { .name = "aws", .nhost = 1 };
	memcpy(aw.ph, ph, sizeof(ph));
	aw.value = strdup("AKIDREAL:real/secret:REALTOKEN");
	aw.value_len = strlen(aw.value);
	ok(net_secret_load(&aw) == 0 && aw.aws && !strcmp(aw.aws_key, "AKIDREAL") && !strcmp(aw.aws_secret, "real/secret") &&
		   !strcmp(aw.aws_token, "REALTOKEN"),
	   "loaded: its three parts");
	const char *leak = "GET /?s=real/secret HTTP/1.1\r\n\r\n";
	ok(net_secret_carried(&aw, leak, strlen(leak)), "the real secret key alone is carried (caught)");
	ok(!net_secret_carried(&aw, plain, strlen(plain)), "twin: a head without any part carries nothing");

	/* A response masked as it streams: every whole value (an aws
	 * secret's parts too), wherever the reads split it, as many '*'. */
	sec.value = "REAL-VALUE-42";
	sec.value_len = strlen(sec.value);
	struct net_secret two[2] = { sec, aw };
	const char *resp = "HTTP/1.1 200 OK\r\nX: REAL-VALUE-42\r\n\r\nkey REAL-VALUE-42, id AKIDREAL, token REALTOKEN;"
			   " REAL-VALUE-4 stays";
	const char *want = "HTTP/1.1 200 OK\r\nX: *************\r\n\r\nkey *************, id ********, token *********;"
			   " REAL-VALUE-4 stays";
	size_t rl = strlen(resp);
	bool every = true;
	for (size_t cut = 1; cut < rl; cut++) {
		struct net_secret_mask m;
		net_secret_mask_init(&m, two, 2);
		char buf[256], out[256];
		size_t held = 0, o = 0;
		/* Two reads, split at cut, the way a proxy's loop feeds it. */
		const char *part[2] = { resp, resp + cut };
		size_t pl[2] = { cut, rl - cut };
		for (int k = 0; k < 2; k++) {
			memcpy(buf + held, part[k], pl[k]);
			size_t all = held + pl[k], go = net_secret_mask(&m, buf, all, k == 1);
			memcpy(out + o, buf, go);
			o += go;
			memmove(buf, buf + go, all - go);
			held = all - go;
		}
		out[o] = 0;
		if (strcmp(out, want) || m.masked != 4) {
			every = false;
			printf("# split at %zu: \"%s\" (%llu masked)\n", cut, out, (unsigned long long)m.masked);
			break;
		}
	}
	ok(every, "a response masked at every split of two reads: each value, as many '*'; the rest as it was");
	struct net_secret ov[2] = { { .name = "A", .value = "abc123", .value_len = 6 },
				    { .name = "B", .value = "abc123.sig", .value_len = 10 } };
	struct net_secret_mask mo;
	net_secret_mask_init(&mo, ov, 2);
	char both[] = "[abc123.sig] [abc123]";
	ok(net_secret_mask(&mo, both, strlen(both), true) == strlen(both) && !strcmp(both, "[**********] [******]"),
	   "a value that begins another: both masked whole, the longer too (%s)", both);
	struct net_secret_mask m1;
	net_secret_mask_init(&m1, &sec, 1);
	char few[] = "REAL-VAL";
	ok(net_secret_mask(&m1, few, strlen(few), false) == 0, "what may begin a value is held back until more comes");
	ok(net_secret_mask(&m1, few, strlen(few), true) == strlen(few) && !strcmp(few, "REAL-VAL"),
	   "and at the end it goes as it was");
	char tail[] = "a response that ends as values do not begin";
	ok(net_secret_mask(&m1, tail, strlen(tail), false) == strlen(tail),
	   "twin: bytes that begin no value are not held (a response's last bytes do not wait)");
	char part[] = "ends with REAL-";
	ok(net_secret_mask(&m1, part, strlen(part), false) == strlen(part) - 5, "only the bytes that may begin one are");
	net_secret_wipe(&aw);
	struct net_secret bad = { .name = "aws" };
	bad.value = strdup("no-colon");
	bad.value_len = strlen(bad.value);
	ok(net_secret_load(&bad) < 0, "an aws value without KEY_ID:SECRET_KEY: not loaded");
	net_secret_wipe(&bad);
	return tap_done();
}
