/* ward box: manage boxes by hand. */
#include "cmd/cmd.h"
#include "cmd/netflag.h"
#include "base/cleanup.h"
#include "base/utf8.h"
#include "base/fdio.h"
#include "base/parse.h"
#include "sandbox/box.h"
#include "store/store.h"
#include "tools/tool.h"

#include <errno.h>
#include <getopt.h>
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

static const struct option create_opts[] = {
	{ "name", required_argument, NULL, 'n' },
	{ "ttl", required_argument, NULL, 't' },
	{ "idle", required_argument, NULL, 'i' },
	{ "persistent", no_argument, NULL, 'p' },
	{ "memory", required_argument, NULL, 'm' },
	{ "pids", required_argument, NULL, 'P' },
	{ "cpus", required_argument, NULL, 'c' },
	{ "disk", required_argument, NULL, 'K' },
	NETFLAG_OPTIONS,
	{ "workspace", required_argument, NULL, 'w' },
	{ "rw", no_argument, NULL, 'r' },
	{ "grace", required_argument, NULL, 'g' },
	{ "backend", required_argument, NULL, 'b' },
	{ "no-snapshot", no_argument, NULL, 'S' },
	{ "label", required_argument, NULL, 'L' },
	{ "on-idle", required_argument, NULL, 'O' },
	{ "cold-after", required_argument, NULL, 'C' },
	{ "store", required_argument, NULL, 'D' },
	{ "timeout", required_argument, NULL, 'T' },
	{ "idle-timeout", required_argument, NULL, 'I' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static const char create_help[] =
	"  --name NAME        box name (default: generated)\n"
	"  --ttl DUR          destroy after DUR (default 8h; 0 = never)\n"
	"  --idle DUR         after DUR idle, --on-idle's action (default 30m; 0 = never); idle is no\n"
	"                     call and, for destroy, no client attached\n"
	"  --on-idle ACTION   destroy or hibernate: keep /workspace's changes and /tmp on disk, end\n"
	"                     every process; the next call wakes the box (default: hibernate for a\n"
	"                     --persistent box, else destroy)\n"
	"  --cold-after DUR   a box hibernated this long has its saved state compressed and moved\n"
	"                     to the store (default: never)\n"
	"  --store WHERE      where cold state goes: a directory (default: the state dir's cold/)\n"
	"                     or s3://BUCKET/PREFIX (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,\n"
	"                     AWS_REGION; WARD_S3_ENDPOINT for an S3-compatible server)\n"
	"  --persistent       outlive the process that created it (default: dies with it)\n"
	"  --memory SIZE      memory ceiling (default 1G)\n"
	"  --pids N           process ceiling (default 512)\n"
	"  --cpus N           CPU ceiling in CPUs, e.g. 1 or 0.5 (cgroup v2 only)\n"
	"  --disk SIZE        disk ceiling of the copy-on-write workspace's changes (default 10G;\n"
	"                     enforced where ward runs as root with loop devices; see ward doctor)\n"
	NETFLAG_HELP
	"  --workspace DIR    the task's directory at /workspace (copy-on-write)\n"
	"  --rw               make /workspace a live read-write view of DIR instead\n"
	"  --grace DUR        SIGTERM-to-SIGKILL grace on cancel (default 2s)\n"
	"  --backend B        ns (namespaces, default), vm (a QEMU microVM), or auto (vm with KVM, else ns)\n"
	"  --no-snapshot      vm: cold-boot instead of restoring the cached snapshot\n"
	"  --label KEY=VALUE  metadata the box carries (repeatable): shown by ls and info, kept in\n"
	"                     every record of the journal of each session that uses the box;\n"
	"                     ls --label filters\n";

/* Parse box-creation flags (and exec's --timeout for `box run`). Returns
 * the index of the first non-option argument, or -1 after printing. */
static int parse_create(const char *cmd, int argc, char **argv, struct box_opts *o, int64_t *timeout_s, int64_t *idle_s)
{
	optind = 1;
	opterr = 0;
	int c;
	/* The patterns point into argv, which outlives the box's creation. */
	static struct netflag nf;
	memset(&nf, 0, sizeof(nf));
	static const char *labels[BOX_LABELS_MAX];
	size_t nlabels = 0;
	bool on_idle_given = false;
	while ((c = getopt_long(argc, argv, "+:h", create_opts, NULL)) != -1) {
		if (c == '?' || c == ':') {
			cmd_bad_flag(cmd, c, argv);
			return -1;
		}
		int nr = netflag_parse(&nf, c, optarg);
		if (nr < 0)
			return -1;
		if (nr > 0)
			continue;
		int64_t ms;
		uint64_t v;
		switch (c) {
		case 'n':
			o->name = optarg;
			break;
		case 'C':
			if (parse_duration_ms(optarg, &ms) < 0) {
				cmd_error("--cold-after: \"%s\" is not a duration with a unit (e.g. 30m, 1d; 0 for never)", optarg);
				return -1;
			}
			o->cold_after_ms = ms;
			break;
		case 'D': {
			struct store *st;
			struct err se = { 0 };
			if (store_open(optarg, &st, &se) < 0) {
				cmd_error("--store: %s", se.msg);
				return -1;
			}
			store_free(st);
			o->store = optarg;
			break;
		}
		case 't':
		case 'i':
		case 'g':
			if (parse_duration_ms(optarg, &ms) < 0) {
				cmd_error("--%s: \"%s\" is not a duration with a unit (e.g. 90s, 10m, 1h30m; 0 for none)",
					  c == 't' ? "ttl" : c == 'i' ? "idle" : "grace", optarg);
				return -1;
			}
			if (c == 't')
				o->ttl_ms = ms;
			else if (c == 'i')
				o->idle_ms = ms;
			else
				o->grace_ms = ms;
			break;
		case 'T':
		case 'I':
			if (!timeout_s || parse_duration_ms(optarg, &ms) < 0 || ms < 1000) {
				cmd_error("--%s: \"%s\" is not a duration of at least 1s, with a unit (e.g. 90s, 2m)", c == 'T' ? "timeout" : "idle-timeout", optarg);
				return -1;
			}
			*(c == 'T' ? timeout_s : idle_s) = ms / 1000;
			break;
		case 'p':
			o->persistent = true;
			break;
		case 'O':
			if (strcmp(optarg, "destroy") && strcmp(optarg, "hibernate")) {
				cmd_error("--on-idle: \"%s\" is not an action; use destroy or hibernate", optarg);
				return -1;
			}
			o->on_idle = !strcmp(optarg, "hibernate") ? BOX_IDLE_HIBERNATE : BOX_IDLE_DESTROY;
			on_idle_given = true;
			break;
		case 'L': {
			struct err le = { 0 };
			if (box_label_check(optarg, &le) < 0) {
				cmd_error("--%s", le.msg);
				return -1;
			}
			if (nlabels == BOX_LABELS_MAX) {
				cmd_error("--label: at most %d labels", BOX_LABELS_MAX);
				return -1;
			}
			labels[nlabels++] = optarg;
			o->labels = labels;
			o->nlabels = nlabels;
			break;
		}
		case 'm':
			if (parse_size(optarg, &v) < 0 || v < (16u << 20)) {
				cmd_error("--memory: \"%s\" is not a size of at least 16M (e.g. 512M, 2G)", optarg);
				return -1;
			}
			o->lim.memory = v;
			break;
		case 'K':
			if (parse_size(optarg, &v) < 0 || v < (16u << 20)) {
				cmd_error("--disk: \"%s\" is not a size of at least 16M (e.g. 512M, 10G)", optarg);
				return -1;
			}
			o->lim.disk = v;
			break;
		case 'P':
			if (parse_u64(optarg, &v) < 0 || v < 8 || v > 1000000) {
				cmd_error("--pids: \"%s\" is not a number from 8 to 1000000", optarg);
				return -1;
			}
			o->lim.pids = v;
			break;
		case 'c': {
			char *end;
			double d = strtod(optarg, &end);
			if (*end || d <= 0 || d > 1024) {
				cmd_error("--cpus: \"%s\" is not a number of CPUs (e.g. 1, 0.5)", optarg);
				return -1;
			}
			o->lim.cpus_milli = (uint32_t)(d * 1000);
			break;
		}
		case 'w':
			o->workspace = optarg;
			break;
		case 'r':
			o->rw = true;
			break;
		case 'b':
			if (!box_backend_known(optarg)) {
				cmd_error("--backend: \"%s\" is not a backend; use ns, vm or auto", optarg);
				return -1;
			}
			o->backend = optarg;
			break;
		case 'S':
			o->no_snapshot = true;
			break;
		case 'h':
			printf("flags:\n%s", create_help);
			if (timeout_s)
				printf("  --timeout DUR      the command's time limit (default 120s)\n"
				       "  --idle-timeout DUR stop the command after DUR without output\n");
			exit(0);
		default:
			return -1;
		}
	}
	if (netflag_finish(&nf, o) < 0)
		return -1;
	/* A box meant to outlive its maker is meant to be used again: idle,
	 * it hibernates rather than goes. */
	if (o->persistent && !on_idle_given)
		o->on_idle = BOX_IDLE_HIBERNATE;
	return optind;
}

static int resolve_workspace(struct box_opts *o, char *buf, size_t n)
{
	if (!o->workspace)
		return 0;
	if (!realpath(o->workspace, buf)) {
		cmd_error("workspace %s does not exist; create it or pass another --workspace", o->workspace);
		return -1;
	}
	o->workspace = buf;
	(void)n;
	return 0;
}

static int do_create(struct box_opts *o, char *name, size_t n)
{
	struct err e = { 0 };
	o->guest_path = cmd_guest_path();
	int r = box_create(o, name, n, &e);
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
	int i = parse_create("box create", argc, argv, &o, NULL, NULL);
	if (i < 0)
		return EXIT_USAGE;
	if (i < argc) {
		cmd_error("box create: unexpected argument \"%s\"", argv[i]);
		return EXIT_USAGE;
	}
	char ws[PATH_MAX];
	if (resolve_workspace(&o, ws, sizeof(ws)) < 0)
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
		fprintf(stderr, "ward: %s: %s", o, t ? t : "\n");
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
	int i = parse_create("box exec", argc - 1, argv + 1, &o, &timeout_s, &idle_s);
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
	int i = parse_create("box run", argc, argv, &o, &timeout_s, &idle_s);
	if (i < 0)
		return EXIT_USAGE;
	if (i >= argc) {
		cmd_error("box run: no command given; usage: ward box run [FLAGS] -- CMD...");
		return EXIT_USAGE;
	}
	char ws[PATH_MAX];
	if (resolve_workspace(&o, ws, sizeof(ws)) < 0)
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
	fprintf(stderr, "ward: pool: %s\n", msg);
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
	int i = parse_create("box pool", n, args, &o, NULL, NULL);
	if (i < 0)
		return EXIT_USAGE;
	if (i < n) {
		cmd_error("box pool: unexpected argument %s; usage: ward box pool --size N [FLAGS]", args[i]);
		return EXIT_USAGE;
	}
	if (!size) {
		cmd_error("box pool: --size N is needed (how many boxes to keep ready)");
		return EXIT_USAGE;
	}
	if (strcmp(o.backend, "vm") && strcmp(o.backend, "auto")) {
		cmd_error("box pool: a pool keeps restored VMs waiting; it takes --backend vm");
		return EXIT_USAGE;
	}
	if (o.no_snapshot || o.name) {
		cmd_error("box pool: --no-snapshot and --name do not go with a pool (its boxes are restored and named by it)");
		return EXIT_USAGE;
	}
	char ws[PATH_MAX];
	if (resolve_workspace(&o, ws, sizeof(ws)) < 0)
		return EXIT_NOINPUT;
	o.guest_path = cmd_guest_path();
	int sfd = cancel_signalfd();
	struct err e = { 0 };
	fprintf(stderr, "ward: pool: keeping %llu box%s ready; `ward box create` with the same flags takes one; "
		"Ctrl-C or SIGTERM ends the pool and its boxes\n", (unsigned long long)size, size == 1 ? "" : "es");
	int r = box_pool(&o, (unsigned)size, sfd, pool_say, &e);
	close(sfd);
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
	cJSON *args = cJSON_Parse(argv[3]);
	if (!args) {
		cmd_error("box tool: the arguments are not valid JSON near: %.40s", cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : argv[3]);
		return EXIT_USAGE;
	}
	if (!tool_lookup(argv[2])) {
		cmd_error("box tool: unknown tool \"%s\"; the tools are read, write, edit, grep, find, ls, bash", argv[2]);
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

static int sub_destroy(int argc, char **argv)
{
	if (argc < 2) {
		cmd_error("usage: ward box destroy BOX...");
		return EXIT_USAGE;
	}
	int rc = 0;
	for (int i = 1; i < argc; i++) {
		struct err e = { 0 };
		if (box_destroy(argv[i], &e) < 0) {
			cmd_error("%s", e.msg);
			rc = EXIT_UNKNOWN_BOX;
		}
	}
	return rc;
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
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "already")))
			printf("%s: already %s\n", argv[i], wake ? "running" : "hibernated");
		else if (wake)
			printf("%s: woken in %.0f ms\n", argv[i], cJSON_IsNumber(ms) ? ms->valuedouble : 0);
		else
			printf("%s: hibernated in %.0f ms, %.0f bytes saved\n", argv[i],
			       cJSON_IsNumber(ms) ? ms->valuedouble : 0, cJSON_IsNumber(b) ? b->valuedouble : 0);
		cJSON_Delete(j);
	}
	return rc;
}

/* Bytes as ls shows them: 0, 812K, 37M, 1.2G. */
static void ls_size(uint64_t v, char *out, size_t n)
{
	static const char u[] = "KMGT";
	double d = (double)v;
	int i = -1;
	while (d >= 1024 && i < 3) {
		d /= 1024;
		i++;
	}
	if (i < 0)
		snprintf(out, n, "%llu", (unsigned long long)v);
	else
		snprintf(out, n, d < 10 ? "%.1f%c" : "%.0f%c", d, u[i]);
}

static void ls_number(const cJSON *b, const char *key, double unit, const char *suffix, char *out, size_t n)
{
	const cJSON *v = cJSON_GetObjectItem(b, key);
	if (cJSON_IsNumber(v) && v->valuedouble == v->valuedouble)
		snprintf(out, n, "%.0f%s", v->valuedouble / unit, suffix);
	else
		snprintf(out, n, "-");
}

/* KEY=VALUE,KEY=VALUE of a box's labels, into out. */
static void ls_labels(const cJSON *b, char *out, size_t n)
{
	size_t k = 0;
	out[0] = 0;
	const cJSON *l;
	cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(b, "labels")) {
		if (!cJSON_IsString(l) || k >= n)
			continue;
		_cleanup_free_ char *v = utf8_term_safe(l->valuestring, strlen(l->valuestring));
		k += (size_t)snprintf(out + k, n - k, "%s%s=%s", k ? "," : "", l->string, v ? v : "");
	}
	if (!out[0])
		snprintf(out, n, "-");
}

static int sub_ls(int argc, char **argv)
{
	bool json = false;
	const char *want[BOX_LABELS_MAX];
	size_t nwant = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: ward box ls [--json] [--label KEY=VALUE ...]\n"
			       "  --label KEY=VALUE  only the boxes with this label (repeatable: all of them)\n");
			return 0;
		}
		if (!strcmp(argv[i], "--json")) {
			json = true;
			continue;
		}
		const char *kv = !strcmp(argv[i], "--label") && i + 1 < argc ? argv[++i]
				 : !strncmp(argv[i], "--label=", 8) ? argv[i] + 8 : NULL;
		struct err le = { 0 };
		if (kv && box_label_check(kv, &le) < 0) {
			cmd_error("box ls: --%s", le.msg);
			return EXIT_USAGE;
		}
		if (!kv || nwant == BOX_LABELS_MAX) {
			cmd_error("box ls: unknown argument %s; it takes --json and --label KEY=VALUE", argv[i]);
			return EXIT_USAGE;
		}
		want[nwant++] = kv;
	}
	struct err e = { 0 };
	cJSON *arr;
	if (box_list(&arr, &e) < 0) {
		cmd_error("%s", e.msg);
		return EXIT_FAIL;
	}
	/* Only the boxes with every label asked for. */
	for (int i = cJSON_GetArraySize(arr) - 1; i >= 0; i--) {
		const cJSON *b = cJSON_GetArrayItem(arr, i);
		bool keep = true;
		for (size_t k = 0; k < nwant && keep; k++)
			keep = box_has_label(b, want[k]);
		if (!keep)
			cJSON_DeleteItemFromArray(arr, i);
	}
	if (json) {
		_cleanup_free_ char *s = cJSON_Print(arr);
		printf("%s\n", s ? s : "[]");
	} else {
		/* Columns as wide as the longest name; the workspace last, whole. */
		int nw = 4;
		const cJSON *b;
		cJSON_ArrayForEach(b, arr) {
			const char *n = cJSON_GetStringValue(cJSON_GetObjectItem(b, "name"));
			if (n && (int)strlen(n) > nw)
				nw = (int)strlen(n);
		}
		printf("%-*s %-10s %-7s %8s %9s %5s %8s  %-20s %s\n", nw, "NAME", "STATE", "BACKEND", "UPTIME",
		       "ENDS-IN", "CALLS", "DISK", "LABELS", "WORKSPACE");
		cJSON_ArrayForEach(b, arr) {
			const char *st = cJSON_IsTrue(cJSON_GetObjectItem(b, "alive")) ?
						 cJSON_GetStringValue(cJSON_GetObjectItem(b, "state")) : "dead";
			/* A dead box's keeper cannot say these: "-", not a NaN. */
			char up[24], ends[24], calls[16];
			ls_number(b, "uptime_ms", 1000, "s", up, sizeof(up));
			ls_number(b, "ends_in_ms", 1000, "s", ends, sizeof(ends));
			ls_number(b, "calls_running", 1, "", calls, sizeof(calls));
			char disk[24];
			const cJSON *db = cJSON_GetObjectItem(b, "disk_bytes");
			if (cJSON_IsNumber(db))
				ls_size((uint64_t)db->valuedouble, disk, sizeof(disk));
			else
				snprintf(disk, sizeof(disk), "-");
			char labels[512];
			ls_labels(b, labels, sizeof(labels));
			printf("%-*s %-10s %-7s %8s %9s %5s %8s  %-20s %s\n", nw,
			       cJSON_GetStringValue(cJSON_GetObjectItem(b, "name")), st ? st : "?",
			       cJSON_GetStringValue(cJSON_GetObjectItem(b, "backend")) ?: "-", up, ends, calls, disk, labels,
			       cJSON_GetStringValue(cJSON_GetObjectItem(b, "workspace")) ?: "-");
		}
	}
	cJSON_Delete(arr);
	return 0;
}

static int sub_info(int argc, char **argv)
{
	if (argc != 2) {
		cmd_error("usage: ward box info BOX");
		return EXIT_USAGE;
	}
	struct err e = { 0 };
	struct box_conn *c;
	if (box_connect(argv[1], &c, &e) < 0) {
		cmd_error("%s", e.msg);
		return EXIT_UNKNOWN_BOX;
	}
	cJSON *info;
	int r = box_info(c, &info, &e);
	box_disconnect(c);
	if (r < 0) {
		cmd_error("%s", e.msg);
		return EXIT_UNKNOWN_BOX;
	}
	_cleanup_free_ char *s = cJSON_Print(info);
	printf("%s\n", s);
	cJSON_Delete(info);
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
	{ "ls", "[--json] [--label KEY=VALUE]", "list boxes", sub_ls, true },
	{ "info", "BOX", "a box's state, limits and what enforces them", sub_info, false },
	{ "exec", "BOX [--timeout D] -- CMD", "run a command in a box, streaming its output", sub_exec, true },
	{ "tool", "BOX NAME JSON", "call any tool; the result as JSON", sub_tool, false },
	{ "run", "[FLAGS] -- CMD", "create a box, run a command, destroy the box", sub_run, true },
	{ "pool", "--size N [FLAGS]", "keep N vm boxes restored and ready for create", sub_pool, true },
	{ "hibernate", "BOX...", "save a box's files to disk and end its processes", sub_hibernate, false },
	{ "wake", "BOX...", "start a hibernated box again (a call does it too)", sub_hibernate, false },
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
		fprintf(f, "\ncreate/run flags:\n%s", create_help);
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
		} else if (argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
			printf("usage: %s\n%s", usage, strcmp(subs[i].name, "ls") ? "\nflags:\n" : "");
			if (strcmp(subs[i].name, "ls"))
				fputs(create_help, stdout);
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
