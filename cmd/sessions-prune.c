#include "cmd/sessions-prune.h"
#include "base/json.h"
#include "cmd/cmd.h"
#include "cmd/flagtab.h"
#include "cmd/session.h"
#include "cmd/term.h"
#include "base/cleanup.h"
#include "base/parse.h"
#include "sandbox/box.h"
#include "workspace/checkpoint.h"
#include "workspace/layers.h"
#include "base/state.h"
#include "turn/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint64_t du_sum;
static int du_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)p, (void)flag, (void)f;
	du_sum += (uint64_t)st->st_blocks * 512;
	return 0;
}

/* The bytes a path holds on the disk (a sparse image counts what it
 * uses); a mounted image's mount is not crossed. */
static uint64_t du(const char *path)
{
	du_sum = 0;
	struct stat st;
	if (lstat(path, &st) < 0)
		return 0;
	if (!S_ISDIR(st.st_mode))
		return (uint64_t)st.st_blocks * 512;
	nftw(path, du_one, 16, FTW_PHYS | FTW_MOUNT);
	return du_sum;
}

static void human(uint64_t b, char *out, size_t n)
{
	const char *u = "KMGT";
	double v = (double)b;
	if (b < 1024) {
		snprintf(out, n, "%lluB", (unsigned long long)b);
		return;
	}
	int k = -1;
	while (v >= 1024 && k < 3)
		v /= 1024, k++;
	snprintf(out, n, "%.1f%c", v, u[k]);
}

/* The bytes of session id: its journal, layers (the directory or the
 * image), base record and checkpoints. */
static uint64_t session_bytes(const char *jdir, const char *id)
{
	char p[PATH_MAX], name[BOX_NAME_MAX + 1];
	uint64_t sum = 0;
	snprintf(p, sizeof(p), "%s/%s.jsonl", jdir, id);
	sum += du(p);
	snprintf(name, sizeof(name), "s-%s", id);
	if (state_layers_dir(name, p, sizeof(p) - 8, NULL) == 0) {
		size_t l = strlen(p);
		sum += du(p);
		snprintf(p + l, sizeof(p) - l, ".img");
		sum += du(p);
	}
	if (checkpoint_dir(name, p, sizeof(p), NULL) == 0)
		sum += du(p);
	return sum;
}

static bool in_use(const char *jdir, const char *id)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s.jsonl", jdir, id);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	/* A ward that has the session open holds this lock (turn/journal.h). */
	return fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
}

int sessions_prune(int argc, char **argv)
{
	int64_t older_ms = -1;
	const char *states[16];
	size_t nstates = 0;
	bool all = false, dry = false;
	optind = 1;
	opterr = 0;
	int c;
	struct flags_getopt g;
	flags_getopt_init(&g, &flagtab_sessions_prune);
	while ((c = getopt_long(argc, argv, g.shorts, g.opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (parse_duration_ms(optarg, &older_ms) < 0 || older_ms <= 0) {
				cmd_error("sessions prune: --older-than \"%s\" is not a duration with a unit (e.g. 168h, 30m)",
					  optarg);
				return EXIT_USAGE;
			}
			break;
		case 's':
			if (nstates == ARRAY_SIZE(states) || !*optarg) {
				cmd_error("sessions prune: --state: give a stop's name (done, cancelled, ...), at most 16");
				return EXIT_USAGE;
			}
			states[nstates++] = optarg;
			break;
		case 'a':
			all = true;
			break;
		case 'n':
			dry = true;
			break;
		case 'h':
			flags_help(stdout, &flagtab_sessions_prune);
			return 0;
		default:
			return cmd_bad_flag("sessions prune", c, argv);
		}
	}
	if (optind != argc) {
		cmd_error("sessions prune takes no operands; see `ward sessions prune --help`");
		return EXIT_USAGE;
	}
	if (all == (older_ms > 0 || nstates)) {
		cmd_error("sessions prune: say which sessions: --older-than DUR, --state STOP, or --all (alone)");
		return EXIT_USAGE;
	}
	struct err e = { 0 };
	char jdir[PATH_MAX];
	cJSON *list = NULL, *boxes = NULL;
	if (journal_dir(jdir, sizeof(jdir), &e) < 0 || session_list(&list, &e) < 0) {
		cmd_error("%s", e.msg);
		return EXIT_FAIL;
	}
	/* A kept box (a terminal session's, hibernated) holds the session's
	 * changes and may be woken by --resume: its session stays. */
	if (box_list(&boxes, &e) < 0)
		boxes = cJSON_CreateArray();
	time_t now = time(NULL);
	size_t pruned = 0, left = 0;
	uint64_t bytes = 0;
	const cJSON *x;
	cJSON_ArrayForEach(x, list) {
		const char *id = json_str(x, "session"), *stop = json_str(x, "stop");
		const cJSON *mt = cJSON_GetObjectItemCaseSensitive(x, "mtime");
		if (!id)
			continue;
		bool want = all;
		if (!all) {
			bool age = older_ms <= 0 ||
				   (cJSON_IsNumber(mt) && (double)now - mt->valuedouble >= (double)older_ms / 1000);
			bool state = !nstates;
			for (size_t i = 0; i < nstates && !state; i++)
				state = !strcmp(states[i], stop && strcmp(stop, "-") ? stop : "none");
			want = age && state;
		}
		if (!want)
			continue;
		char bname[BOX_NAME_MAX + 1];
		snprintf(bname, sizeof(bname), "s-%s", id);
		bool boxed = false;
		const cJSON *b;
		cJSON_ArrayForEach(b, boxes) boxed |= json_str(b, "name") && !strcmp(json_str(b, "name"), bname);
		if (boxed || in_use(jdir, id)) {
			term_printf(stderr, "ward: %s left: %s\n", id,
				    boxed ? "its box is kept (ward box destroy it first, or --resume it)"
					  : "a ward has it open now");
			left++;
			continue;
		}
		uint64_t n = session_bytes(jdir, id);
		char h[32];
		human(n, h, sizeof(h));
		term_printf(stdout, "%s %s (%s, %s)\n", dry ? "would prune" : "pruned", id, stop ? stop : "-", h);
		bytes += n;
		pruned++;
		if (dry)
			continue;
		char p[PATH_MAX];
		layers_drop(bname);
		if (checkpoint_dir(bname, p, sizeof(p), NULL) == 0)
			checkpoint_drop_after(p, 0);
		snprintf(p, sizeof(p), "%s/%s.jsonl", jdir, id);
		unlink(p);
	}
	char h[32];
	human(bytes, h, sizeof(h));
	term_printf(stderr, "ward: %s %zu session%s (%s)%s\n", dry ? "would prune" : "pruned", pruned,
		    pruned == 1 ? "" : "s", h, left ? "; some were left (above)" : "");
	cJSON_Delete(list);
	cJSON_Delete(boxes);
	return 0;
}
