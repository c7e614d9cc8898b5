/* The flags that make a box, shared by ward box create, run and pool. */
#include "cmd/box-flags.h"
#include "cmd/cmd.h"
#include "cmd/flagtab.h"
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

int box_flags_parse(const struct flag_cmd *t, int argc, char **argv, struct box_opts *o, int64_t *timeout_s, int64_t *idle_s)
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
	struct flags_getopt g;
	flags_getopt_init(&g, t);
	while ((c = getopt_long(argc, argv, g.shorts, g.opts, NULL)) != -1) {
		if (c == '?' || c == ':') {
			cmd_bad_flag(t->name, c, argv);
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
			o->disk_given = true;
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
			flags_help(stdout, t);
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
