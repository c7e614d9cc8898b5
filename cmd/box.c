/* ward box: manage boxes by hand. */
#include "cmd/cmd.h"
#include "cmd/flagtab.h"
#include "cmd/term.h"
#include "cmd/box-flags.h"
#include "cmd/box-image.h"
#include "cmd/box-ls.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/jsonstrict.h"
#include "base/parse.h"
#include "base/utf8.h"
#include "sandbox/box.h"
#include "tools/tool.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

struct box_sub {
	const char *name;
	const char *args;
	const char *summary;
	int (*run)(int argc, char **argv);
	bool flags;		/* it parses flags itself */
};

static int do_create(struct box_opts *o, char *name, size_t n)
{
	struct err e = { 0 };
	o->guest_path = cmd_guest_path();
	o->keeper_path = cmd_keeper_path();
	struct box_image img;
	int r = box_image_resolve(o, true, false, &img);
	if (r)
		return r;
	r = box_create(o, name, n, &e);
	box_image_release(&img);
	if (r < 0) {
		cmd_error("cannot create the box: %s", e.msg);
		return r == -EINVAL ? EXIT_USAGE : r == -ENOENT && o->workspace ? EXIT_NOINPUT : EXIT_NOBOX;
	}
	/* A ceiling asked for that nothing here enforces is said, not taken
	 * silently. */
	struct box_conn *c;
	cJSON *info = NULL;
	if (o->lim.cpus_milli && box_connect(name, &c, NULL) == 0) {
		box_info(c, &info, NULL);
		box_disconnect(c);
		const char *by = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(info, "limits"), "cpu_by"));
		if (by && strcmp(by, "cgroup"))
			cmd_error("warning: --cpus %.2f is not enforced on this machine (no writable cgroup v2 cpu "
				  "controller; see ward doctor): a busy command uses a whole core until its time-out",
				  o->lim.cpus_milli / 1000.0);
		cJSON_Delete(info);
	}
	return 0;
}

static int sub_create(int argc, char **argv)
{
	struct box_opts o;
	box_opts_default(&o);
	int i = box_flags_parse(&flagtab_box_create, argc, argv, &o, NULL, NULL);
	if (i < 0)
		return EXIT_USAGE;
	if (i < argc) {
		cmd_error("box create: unexpected argument \"%s\"", argv[i]);
		return EXIT_USAGE;
	}
	char ws[PATH_MAX];
	if (box_flags_workspace(&o, ws, sizeof(ws)) < 0)
		return EXIT_NOINPUT;
	/* A box made from a shell belongs to that shell unless persistent. */
	o.owner = getppid();
	char name[BOX_NAME_MAX + 1];
	int r = do_create(&o, name, sizeof(name));
	if (r)
		return r;
	printf("%s\n", name);
	return 0;
}

static void print_out(const char *p, size_t n, void *ud)
{
	fdio_write_full(STDOUT_FILENO, p, n);
}

/* Quote argv for bash -c: each word in single quotes. */
static char *join_command(int argc, char **argv)
{
	struct buf b;
	buf_init(&b, 1u << 20);
	for (int i = 0; i < argc; i++) {
		if (i)
			buf_append(&b, " ", 1);
		bool plain = *argv[i] != 0;
		for (const char *p = argv[i]; *p; p++)
			if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%", *p))
				plain = false;
		if (argc == 1 || plain) {
			/* A single word is a shell command line as it stands. */
			buf_append(&b, argv[i], strlen(argv[i]));
			continue;
		}
		buf_append(&b, "'", 1);
		for (const char *p = argv[i]; *p; p++)
			if (*p == '\'')
				buf_append(&b, "'\\''", 4);
			else
				buf_append(&b, p, 1);
		buf_append(&b, "'", 1);
	}
	if (buf_cstr(&b) < 0) {
		buf_free(&b);
		return NULL;
	}
	return b.data;
}

static int exit_for(const cJSON *res)
{
	const char *o = cJSON_GetStringValue(cJSON_GetObjectItem(res, "outcome"));
	enum outcome oc = OUTCOME_UNKNOWN;
	outcome_from_name(o, &oc);
	const cJSON *ec = cJSON_GetObjectItem(res, "exit_code"), *sig = cJSON_GetObjectItem(res, "signal");
	switch (oc) {
	case OUTCOME_OK:
		return 0;
	case OUTCOME_FAILED:
		if (cJSON_IsNumber(sig))
			return 128 + sig->valueint;
		if (cJSON_IsNumber(ec) && ec->valueint > 0 && ec->valueint < 256)
			return ec->valueint;
		return EXIT_FAIL;
	case OUTCOME_BAD_INPUT:
		return EXIT_BADINPUT;
	case OUTCOME_TIMED_OUT:
		return EXIT_TIMEOUT;
	case OUTCOME_CANCELLED:
		return EXIT_CANCELLED;
	default:
		return EXIT_FAIL;
	}
}

static int cancel_signalfd(void)
{
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, SIGINT);
	sigaddset(&m, SIGTERM);
	sigaddset(&m, SIGHUP);
	sigprocmask(SIG_BLOCK, &m, NULL);
	return signalfd(-1, &m, SFD_CLOEXEC);
}

static int exec_in(const char *name, int argc, char **argv, int64_t timeout_s, int64_t idle_s)
{
	struct err e = { 0 };
	struct box_conn *c;
	if (box_connect(name, &c, &e) < 0) {
		cmd_error("%s", e.msg);
		return EXIT_UNKNOWN_BOX;
	}
	_cleanup_free_ char *cmd = join_command(argc, argv);
	cJSON *args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "command", cmd ? cmd : "");
	if (timeout_s)
		cJSON_AddNumberToObject(args, "timeout", (double)timeout_s);
	if (idle_s)
		cJSON_AddNumberToObject(args, "idle_timeout", (double)idle_s);
	int sfd = cancel_signalfd();
	cJSON *res = NULL;
	const struct box_call_req rq = { .tool = "bash", .args = args, .left_ms = -1, .stream = true };
	int r = box_call(c, &rq, print_out, NULL, sfd, &res, &e);
	cJSON_Delete(args);
	box_disconnect(c);
	if (sfd >= 0)
		close(sfd);
	if (r < 0) {
		cmd_error("%s", e.msg);
		return EXIT_FAIL;
	}
	int code = exit_for(res);
	const char *o = cJSON_GetStringValue(cJSON_GetObjectItem(res, "outcome"));
	bool ran = cJSON_IsNumber(cJSON_GetObjectItem(res, "exit_code")) || cJSON_IsNumber(cJSON_GetObjectItem(res, "signal"));
	if (o && strcmp(o, "ok") && (strcmp(o, "failed") || !ran)) {
		/* The model's text is the clearest account: time-out, tail, hint;
		 * a failure with no exit code is the box's (a wake that failed). */
		const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(res, "text"));
		term_printf(stderr, "ward: %s: %s", o, t ? t : "\n");
	}
	cJSON_Delete(res);
	return code;
}

static int sub_exec(int argc, char **argv)
{
	int64_t timeout_s = 0, idle_s = 0;
	struct box_opts o;
	box_opts_default(&o);
	if (argc < 2) {
		cmd_error("usage: ward box exec BOX [--timeout DUR] [--idle-timeout DUR] -- CMD...");
		return EXIT_USAGE;
	}
	const char *name = argv[1];
	int i = box_flags_parse(&flagtab_box_exec, argc - 1, argv + 1, &o, &timeout_s, &idle_s);
	if (i < 0)
		return EXIT_USAGE;
	i += 1;
	if (i >= argc) {
		cmd_error("box exec: no command given; usage: ward box exec BOX -- CMD...");
		return EXIT_USAGE;
	}
	return exec_in(name, argc - i, argv + i, timeout_s, idle_s);
}

static int sub_run(int argc, char **argv)
{
	int64_t timeout_s = 0, idle_s = 0;
	struct box_opts o;
	box_opts_default(&o);
	int i = box_flags_parse(&flagtab_box_run, argc, argv, &o, &timeout_s, &idle_s);
	if (i < 0)
		return EXIT_USAGE;
	if (i >= argc) {
		cmd_error("box run: no command given; usage: ward box run [FLAGS] -- CMD...");
		return EXIT_USAGE;
	}
	char ws[PATH_MAX];
	if (box_flags_workspace(&o, ws, sizeof(ws)) < 0)
		return EXIT_NOINPUT;
	o.owner = getpid();
	o.persistent = false;
	char name[BOX_NAME_MAX + 1];
	int r = do_create(&o, name, sizeof(name));
	if (r)
		return r;
	r = exec_in(name, argc - i, argv + i, timeout_s, idle_s);
	struct err e = { 0 };
	if (box_destroy(name, &e) < 0)
		cmd_error("could not destroy box %s: %s", name, e.msg);
	return r;
}

static void pool_say(const char *msg)
{
	term_printf(stderr, "ward: pool: %s\n", msg);
}

/* ward box pool --size N [create flags]: until SIGINT or SIGTERM. */
static int sub_pool(int argc, char **argv)
{
	uint64_t size = 0;
	char *args[argc + 1];
	int n = 0;
	for (int i = 0; i < argc; i++) {
		const char *v = !strcmp(argv[i], "--size") && i + 1 < argc ? argv[++i]
				: !strncmp(argv[i], "--size=", 7) ? argv[i] + 7 : NULL;
		if (!v) {
			args[n++] = argv[i];
			continue;
		}
		if (parse_u64(v, &size) < 0 || size < 1 || size > 64) {
			cmd_error("box pool: --size: \"%s\" is not a number of boxes from 1 to 64", v);
			return EXIT_USAGE;
		}
	}
	args[n] = NULL;
	struct box_opts o;
	box_opts_default(&o);
	int i = box_flags_parse(&flagtab_box_pool, n, args, &o, NULL, NULL);
	if (i < 0)
		return EXIT_USAGE;
	if (i < n) {
		cmd_error("box pool: unexpected argument %s; usage: ward box pool --size N [FLAGS]", args[i]);
		return EXIT_USAGE;
	}
	if (o.npublish) {
		cmd_error("box pool: --publish is for one box: publish its ports once it is made (ward box port)");
		return EXIT_USAGE;
	}
	if (!size) {
		cmd_error("box pool: --size N is needed (how many boxes to keep ready)");
		return EXIT_USAGE;
	}
	if (o.no_snapshot || o.name) {
		cmd_error("box pool: --no-snapshot and --name do not go with a pool (its boxes are made ahead and named by it)");
		return EXIT_USAGE;
	}
	char ws[PATH_MAX];
	if (box_flags_workspace(&o, ws, sizeof(ws)) < 0)
		return EXIT_NOINPUT;
	o.guest_path = cmd_guest_path();
	o.keeper_path = cmd_keeper_path();
	/* The pool's boxes hold the image themselves; this resolution is
	 * held for as long as the pool runs. */
	struct box_image img;
	int ir = box_image_resolve(&o, true, false, &img);
	if (ir)
		return ir;
	int sfd = cancel_signalfd();
	struct err e = { 0 };
	term_printf(stderr, "ward: pool: keeping %llu box%s ready; `ward box create` with the same flags takes one; "
		"Ctrl-C or SIGTERM ends the pool and its boxes\n", (unsigned long long)size, size == 1 ? "" : "es");
	int r = box_pool(&o, (unsigned)size, sfd, pool_say, &e);
	close(sfd);
	box_image_release(&img);
	if (r < 0) {
		cmd_error("box pool: %s", e.msg);
		return EXIT_NOBOX;
	}
	return 0;
}

static int sub_tool(int argc, char **argv)
{
	if (argc != 4) {
		cmd_error("usage: ward box tool BOX NAME JSON (e.g. ward box tool b1 read '{\"path\":\"x\"}')");
		return EXIT_USAGE;
	}
	if (parse_json_has_nul(argv[3], strlen(argv[3]))) {
		cmd_error("box tool: the arguments hold a NUL character (\\u0000), which no path, command or "
			  "pattern may contain");
		return EXIT_BADINPUT;
	}
	/* Read as a model's are (base/jsonstrict.h). */
	cJSON *args = NULL;
	struct err pe = { 0 };
	if (jsonstrict_parse(argv[3], strlen(argv[3]), &args, &pe) < 0) {
		cmd_error("box tool: the arguments are not valid JSON: %s", pe.msg);
		return EXIT_USAGE;
	}
	if (!tool_lookup(argv[2])) {
		cmd_error("box tool: unknown tool \"%s\"; the tools are read, write, edit, grep, find, ls, bash, job_output, job_kill, job_list", argv[2]);
		cJSON_Delete(args);
		return EXIT_USAGE;
	}
	struct err e = { 0 };
	struct box_conn *c;
	if (box_connect(argv[1], &c, &e) < 0) {
		cmd_error("%s", e.msg);
		cJSON_Delete(args);
		return EXIT_UNKNOWN_BOX;
	}
	int sfd = cancel_signalfd();
	cJSON *res = NULL;
	const struct box_call_req rq = { .tool = argv[2], .args = args, .left_ms = -1 };
	int r = box_call(c, &rq, NULL, NULL, sfd, &res, &e);
	cJSON_Delete(args);
	box_disconnect(c);
	if (r < 0) {
		cmd_error("%s", e.msg);
		return EXIT_FAIL;
	}
	_cleanup_free_ char *s = cJSON_Print(res);
	printf("%s\n", s ? s : "{}");
	const char *o = cJSON_GetStringValue(cJSON_GetObjectItem(res, "outcome"));
	int code = !strcmp(o ? o : "", "ok") ? 0 : exit_for(res);
	if (!strcmp(o ? o : "", "failed") && !cJSON_GetObjectItem(res, "exit_code") && !cJSON_GetObjectItem(res, "signal"))
		code = EXIT_FAIL;
	cJSON_Delete(res);
	return code;
}

static void destroy_said(void *ud, const struct err *e)
{
	(void)ud;
	cmd_error("%s", e->msg);
}

static int sub_destroy(int argc, char **argv)
{
	if (argc < 2) {
		cmd_error("usage: ward box destroy BOX...");
		return EXIT_USAGE;
	}
	return box_destroy_each((const char *const *)argv + 1, (size_t)argc - 1, destroy_said, NULL) ? EXIT_UNKNOWN_BOX : 0;
}

/* The jobs a hibernate ended, one line each (the box's words, made safe
 * for a terminal). */
static void print_jobs_ended(const char *box, const cJSON *a)
{
	const cJSON *j;
	cJSON_ArrayForEach(j, a) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
		const char *cmd = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "command"));
		const char *how = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "how"));
		_cleanup_free_ char *c = utf8_term_safe(cmd ? cmd : "", strlen(cmd ? cmd : ""));
		_cleanup_free_ char *h = utf8_term_safe(how ? how : "ended", strlen(how ? how : "ended"));
		printf("%s: job %d %s: %s\n", box, cJSON_IsNumber(id) ? id->valueint : 0, h ? h : "", c ? c : "");
	}
}

/* ward box hibernate|wake BOX...: one line each says how long it took. */
static int sub_hibernate(int argc, char **argv)
{
	bool wake = !strcmp(argv[0], "wake");
	if (argc < 2) {
		cmd_error("usage: ward box %s BOX...", argv[0]);
		return EXIT_USAGE;
	}
	int rc = 0;
	for (int i = 1; i < argc; i++) {
		struct err e = { 0 };
		struct box_conn *c;
		cJSON *j = NULL;
		if (box_connect(argv[i], &c, &e) < 0) {
			cmd_error("%s", e.msg);
			rc = EXIT_UNKNOWN_BOX;
			continue;
		}
		int r = wake ? box_wake(c, &j, &e) : box_hibernate(c, &j, &e);
		box_disconnect(c);
		if (r < 0) {
			cmd_error("%s", e.msg);
			rc = EXIT_FAIL;
			continue;
		}
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(j, "ms"),
			    *b = cJSON_GetObjectItemCaseSensitive(j, "state_bytes");
		const char *pr = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "processes")),
			   *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "why"));
		bool kept = pr && !strcmp(pr, "kept");
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "already")))
			printf("%s: already %s\n", argv[i], wake ? "running" : "hibernated");
		else if (wake)
			printf("%s: woken in %.0f ms%s\n", argv[i], cJSON_IsNumber(ms) ? ms->valuedouble : 0,
			       kept ? ", its processes where they were" : "");
		else
			printf("%s: hibernated in %.0f ms, %.0f bytes saved%s\n", argv[i],
			       cJSON_IsNumber(ms) ? ms->valuedouble : 0, cJSON_IsNumber(b) ? b->valuedouble : 0,
			       kept ? ", its processes kept" : "");
		/* A person is told that running jobs did not survive, why, and
		 * which. */
		const cJSON *ended = cJSON_GetObjectItemCaseSensitive(j, "jobs_ended");
		int nended = cJSON_IsArray(ended) ? cJSON_GetArraySize(ended) : 0;
		if (!wake && !kept && why && nended > 0)
			fprintf(stderr, "ward: box %s's processes ended (%d running job%s): %s\n", argv[i], nended,
				nended == 1 ? "" : "s", why);
		print_jobs_ended(argv[i], ended);
		cJSON_Delete(j);
	}
	return rc;
}

/* One port a line: "PORT ADDRESS", the address as a browser takes it. */
static void print_port(const cJSON *p)
{
	const cJSON *port = cJSON_GetObjectItemCaseSensitive(p, "port");
	const char *addr = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "address"));
	if (cJSON_IsNumber(port) && addr)
		printf("%d %s\n", port->valueint, addr);
}

/* ward box port BOX [[[ADDR:]HOSTPORT:]PORT]: open one and print where
 * (ADDRESS:HOSTPORT alone), or list them. */
static int sub_port(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		cmd_error("usage: ward box port BOX [[[ADDR:]HOSTPORT:]PORT]");
		return EXIT_USAGE;
	}
	struct box_port_spec s;
	struct err e = { 0 };
	if (argc == 3 && box_port_parse(argv[2], &s, &e) < 0) {
		cmd_error("box port: %s", e.msg);
		return EXIT_USAGE;
	}
	struct box_conn *c;
	if (box_connect(argv[1], &c, &e) < 0) {
		cmd_error("%s", e.msg);
		return EXIT_UNKNOWN_BOX;
	}
	cJSON *j = NULL;
	int r = argc == 3 ? box_port_open(c, &s, &j, &e) : box_ports(c, &j, &e);
	box_disconnect(c);
	if (r < 0) {
		cmd_error("box port: %s", e.msg);
		return r == -EINVAL || r == -EEXIST ? EXIT_USAGE : EXIT_FAIL;
	}
	if (argc == 3) {
		const char *addr = cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "port"), "address"));
		printf("%s\n", addr ? addr : "");
	} else {
		const cJSON *p;
		cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(j, "ports"))
			print_port(p);
	}
	cJSON_Delete(j);
	return 0;
}

/* ward box fork BOX [NAME]: the new box's name on stdout, what was
 * copied (and what was not) on stderr. */
static int sub_fork(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		cmd_error("usage: ward box fork BOX [NAME]");
		return EXIT_USAGE;
	}
	char name[BOX_NAME_MAX + 1];
	cJSON *j = NULL;
	struct err e = { 0 };
	/* A fork made from a shell belongs to that shell, as a create's box. */
	int r = box_fork(argv[1], argc == 3 ? argv[2] : NULL, getppid(), name, sizeof(name), &j, &e);
	if (r < 0) {
		cmd_error("cannot fork box %s: %s", argv[1], e.msg);
		return r == -EINVAL || r == -EEXIST ? EXIT_USAGE : r == -ENOENT ? EXIT_UNKNOWN_BOX : EXIT_FAIL;
	}
	const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(j, "bytes_copied"),
		    *ms = cJSON_GetObjectItemCaseSensitive(j, "ms");
	printf("%s\n", name);
	const char *pr = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "processes"));
	if (pr && !strcmp(pr, "carried")) {
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "state_bytes"),
			    *dk = cJSON_GetObjectItemCaseSensitive(j, "disk_bytes"),
			    *pm = cJSON_GetObjectItemCaseSensitive(j, "parent_paused_ms");
		fprintf(stderr, "ward: forked %s as %s in %.0f ms (%s stood still %.0f ms): its machine (%.0f bytes of "
			"state) and its disk (%.0f bytes) copied; its processes run on in both, its ports were not "
			"carried\n", argv[1], name, cJSON_IsNumber(ms) ? ms->valuedouble : 0, argv[1],
			cJSON_IsNumber(pm) ? pm->valuedouble : 0, cJSON_IsNumber(st) ? st->valuedouble : 0,
			cJSON_IsNumber(dk) ? dk->valuedouble : 0);
		cJSON_Delete(j);
		return 0;
	}
	const char *how = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "copied"));
	bool image = how && !strcmp(how, "image");
	const cJSON *count = cJSON_GetObjectItemCaseSensitive(j, image ? "entries" : "files");
	fprintf(stderr, "ward: forked %s as %s in %.0f ms: %s%.0f %s, %.0f bytes copied%s; its processes, /tmp and "
		"ports were not carried (the fork starts with none running)\n", argv[1], name,
		cJSON_IsNumber(ms) ? ms->valuedouble : 0, image ? "its layers image whole, " : "",
		cJSON_IsNumber(count) ? count->valuedouble : 0, image ? "entries" : "files",
		cJSON_IsNumber(bytes) ? bytes->valuedouble : 0,
		cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "frozen")) ? ""
		: " (the parent could not be frozen: a file it wrote during the copy may be copied mid-change)");
	cJSON_Delete(j);
	return 0;
}

static int sub_reap(int argc, char **argv)
{
	unsigned n = 0;
	struct err e = { 0 };
	if (box_reap(&n, &e) < 0) {
		cmd_error("%s", e.msg);
		return EXIT_FAIL;
	}
	printf("reaped %u box%s\n", n, n == 1 ? "" : "es");
	return 0;
}

static const struct box_sub subs[] = {
	{ "create", "[FLAGS]", "create a box and print its name", sub_create, true },
	{ "ls", "[--json] [--label KEY=VALUE]", "list boxes", box_ls_main, true },
	{ "info", "BOX", "a box's state, limits and what enforces them", box_ls_info, false },
	{ "exec", "BOX [--timeout D] -- CMD", "run a command in a box, streaming its output", sub_exec, true },
	{ "tool", "BOX NAME JSON", "call any tool; the result as JSON", sub_tool, false },
	{ "run", "[FLAGS] -- CMD", "create a box, run a command, destroy the box", sub_run, true },
	{ "pool", "--size N [FLAGS]", "keep N boxes made ahead and ready for create", sub_pool, true },
	{ "hibernate", "BOX...", "save a box's files to disk and end its processes", sub_hibernate, false },
	{ "wake", "BOX...", "start a hibernated box again (a call does it too)", sub_hibernate, false },
	{ "port", "BOX [[[ADDR:]HOSTPORT:]PORT]", "open a box's port to the host and print where; list them",
	  sub_port, false },
	{ "fork", "BOX [NAME]", "a new box going on from BOX's state (vm: its running machine; ns: its files)", sub_fork, false },
	{ "destroy", "BOX...", "destroy boxes", sub_destroy, false },
	{ "reap", "", "remove what boxes whose keeper died left behind", sub_reap, false },
};

static int box_run(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		FILE *f = argc < 2 ? stderr : stdout;
		fprintf(f, "usage: ward box SUBCOMMAND\n\n");
		for (size_t i = 0; i < ARRAY_SIZE(subs); i++)
			fprintf(f, "  %-9s %-26s %s\n", subs[i].name, subs[i].args, subs[i].summary);
		fputc('\n', f);
		flags_help(f, &flagtab_box_create);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(subs); i++) {
		if (strcmp(subs[i].name, argv[1]))
			continue;
		char cmd[32], usage[96];
		snprintf(cmd, sizeof(cmd), "box %s", subs[i].name);
		snprintf(usage, sizeof(usage), "ward box %s%s%s", subs[i].name, *subs[i].args ? " " : "", subs[i].args);
		if (!subs[i].flags) {
			int r = cmd_operands_only(argc - 1, argv + 1, cmd, usage);
			if (r >= 0)
				return r;
		} else if (argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")) && flags_cmd(cmd)) {
			flags_help(stdout, flags_cmd(cmd));
			return 0;
		} else if (argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
			printf("usage: %s\n", usage);
			return 0;
		}
		/* Every ward start sweeps boxes whose keeper is gone. */
		if (strcmp(argv[1], "reap"))
			box_reap(NULL, NULL);
		return subs[i].run(argc - 1, argv + 1);
	}
	cmd_error("unknown box subcommand \"%s\"; run `ward box --help`", argv[1]);
	return EXIT_USAGE;
}

const struct command cmd_box = {
	.name = "box",
	.args = "SUBCOMMAND ...",
	.summary = "create, use and destroy boxes by hand",
	.run = box_run,
};
