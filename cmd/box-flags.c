/* The flags that make a box, shared by ward box create, run and pool. */
#include "cmd/box-flags.h"
#include "cmd/cmd.h"
#include "cmd/netflag.h"
#include "base/parse.h"
#include "sandbox/box.h"
#include "store/store.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	{ "image", required_argument, NULL, 'M' },
	{ "rw", no_argument, NULL, 'r' },
	{ "allow-git-changes", no_argument, NULL, 'G' },
	{ "grace", required_argument, NULL, 'g' },
	{ "backend", required_argument, NULL, 'b' },
	{ "no-snapshot", no_argument, NULL, 'S' },
	{ "label", required_argument, NULL, 'L' },
	{ "publish", required_argument, NULL, 'U' },
	{ "on-idle", required_argument, NULL, 'O' },
	{ "cold-after", required_argument, NULL, 'C' },
	{ "store", required_argument, NULL, 'D' },
	{ "timeout", required_argument, NULL, 'T' },
	{ "idle-timeout", required_argument, NULL, 'I' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

const char box_flags_help[] =
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
	"  --disk SIZE        disk ceiling of the workspace's and the root's changes (default 10G;\n"
	"                     enforced where ward runs as root with loop devices; see ward doctor)\n"
	NETFLAG_HELP
	"  --workspace DIR    the task's directory at /workspace (copy-on-write)\n"
	"  --image REF        the box's root: an image (ward image ls; pulled when not here) instead of\n"
	"                     the host's own /usr; the box is tied to its digest\n"
	"  --rw               make /workspace a live read-write view of DIR instead\n"
	"  --allow-git-changes  leave DIR's git directories (.git) writable in the box (else read-only)\n"
	"  --grace DUR        SIGTERM-to-SIGKILL grace on cancel (default 2s)\n"
	"  --backend B        ns (namespaces, default), vm (a QEMU microVM), or auto (vm with KVM, else ns)\n"
	"  --no-snapshot      vm: cold-boot instead of restoring the cached snapshot\n"
	"  --label KEY=VALUE  metadata the box carries (repeatable): shown by ls and info, kept in\n"
	"                     every record of the journal of each session that uses the box;\n"
	"                     ls --label filters\n"
	"  --publish [[ADDR:]HOSTPORT:]PORT  open the box's PORT to the host (repeatable; ns only):\n"
	"                     at 127.0.0.1 unless ADDR is given, on a port the kernel picks unless\n"
	"                     HOSTPORT is; ward box port BOX says where\n";

int box_flags_parse(const char *cmd, int argc, char **argv, struct box_opts *o, int64_t *timeout_s, int64_t *idle_s)
{
	optind = 1;
	opterr = 0;
	int c;
	/* The patterns point into argv, which outlives the box's creation. */
	static struct netflag nf;
	memset(&nf, 0, sizeof(nf));
	static const char *labels[BOX_LABELS_MAX];
	static const char *publish[BOX_PORTS_MAX];
	size_t npublish = 0;
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
		case 'U': {
			struct box_port_spec ps;
			struct err pe = { 0 };
			if (box_port_parse(optarg, &ps, &pe) < 0) {
				cmd_error("--publish: %s", pe.msg);
				return -1;
			}
			if (npublish == BOX_PORTS_MAX) {
				cmd_error("--publish: at most %d ports", BOX_PORTS_MAX);
				return -1;
			}
			publish[npublish++] = optarg;
			o->publish = publish;
			o->npublish = npublish;
			break;
		}
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
			if (box_flag_size("memory", optarg, "512M, 2G", &v) < 0)
				return -1;
			o->lim.memory = v;
			break;
		case 'K':
			if (box_flag_size("disk", optarg, "512M, 10G", &v) < 0)
				return -1;
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
		case 'M':
			o->image = optarg;	/* a reference: box_image_resolve makes it a digest */
			break;
		case 'r':
			o->rw = true;
			break;
		case 'G':
			o->git_rw = true;
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
			printf("flags:\n%s", box_flags_help);
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

int box_flags_workspace(struct box_opts *o, char *buf, size_t n)
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

int box_flag_size(const char *flag, const char *arg, const char *eg, uint64_t *ret)
{
	if (parse_size(arg, ret) < 0 || *ret < BOX_SIZE_MIN) {
		cmd_error("--%s: \"%s\" is not a size of at least %uM (e.g. %s)", flag, arg, BOX_SIZE_MIN >> 20, eg);
		return -1;
	}
	return 0;
}
