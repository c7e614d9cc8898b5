/* ward image: the images a box's root can be (image/image.h): pulled from a
 * registry, imported from an archive, listed, removed. (The vm backend's
 * own kernel and initramfs are `ward vm-image`'s: cmd/vmimage.c.) */
#include "cmd/cmd.h"
#include "cmd/flagtab.h"
#include "cmd/term.h"
#include "base/jsonprint.h"
#include "base/parse.h"
#include "image/image.h"
#include "image/ref.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void say_line(void *ud, const char *line)
{
	term_printf(stderr, "ward: %s\n", line);
}

static const struct image_say say_stderr = { .say = say_line };

/* A name or a file that is not there: 66; anything else (an image
 * refused, a registry's no): 1. */
static int exit_for(int r)
{
	return r == -ENOENT ? EXIT_NOINPUT : EXIT_FAIL;
}

static void print_digest(const char *digest, bool json)
{
	if (json) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "digest", digest);
		char *t = jsonprint_text(j);
		printf("%s\n", t ? t : "{}");
		free(t);
		cJSON_Delete(j);
	} else {
		printf("%s\n", digest);
	}
}

/* The flags an unpack takes (pull and import): 1 handled, 0 not one, -1 bad. */
static int limit_flag(int c, const char *arg, struct image_limits *l)
{
	uint64_t v;
	if (c == 'F') {
		if (parse_u64(arg, &v) < 0 || v < 1) {
			cmd_error("--max-files: \"%s\" is not a number of entries (e.g. 2000000)", arg);
			return -1;
		}
		l->max_files = v;
		return 1;
	}
	if (c == 'Z') {
		if (parse_size(arg, &v) < 0 || v < 1) {
			cmd_error("--max-size: \"%s\" is not a size (e.g. 100G)", arg);
			return -1;
		}
		l->max_bytes = v;
		return 1;
	}
	return 0;
}

static int sub_pull(int argc, char **argv)
{
	struct image_limits lim;
	image_limits_default(&lim);
	struct image_pull_opts o = { .tls_verify = -1, .lim = &lim };
	bool json = false;
	int c;
	optind = 1;
	opterr = 0;
	struct flags_getopt g;
	flags_getopt_init(&g, &flagtab_image_pull);
	while ((c = getopt_long(argc, argv, g.shorts, g.opts, NULL)) != -1) {
		int k = limit_flag(c, optarg, &lim);
		if (k < 0)
			return EXIT_USAGE;
		if (k)
			continue;
		switch (c) {
		case 'a':
			if (access(optarg, R_OK) < 0) {
				cmd_error("--authfile %s: %s", optarg, strerror(errno));
				return EXIT_USAGE;
			}
			o.authfile = optarg;
			break;
		case 't':
			if (optarg && strcmp(optarg, "true") && strcmp(optarg, "false")) {
				cmd_error("--tls-verify=%s: give true or false", optarg);
				return EXIT_USAGE;
			}
			o.tls_verify = !optarg || !strcmp(optarg, "true");
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			flags_help(stdout, &flagtab_image_pull);
			return 0;
		default:
			return cmd_bad_flag("image pull", c, argv);
		}
	}
	if (optind != argc - 1) {
		cmd_error("image pull: give one image reference (usage: ward image pull REF [FLAGS])");
		return EXIT_USAGE;
	}
	char digest[IMAGE_DIGEST_MAX];
	struct err e = { 0 };
	struct image_ref ref;
	if (image_ref_parse(argv[optind], &ref, &e) < 0) {
		cmd_error("image pull: %s", e.msg);
		return EXIT_USAGE;
	}
	int r = image_pull(argv[optind], &o, json ? NULL : &say_stderr, digest, &e);
	if (r < 0) {
		cmd_error("cannot pull %s: %s", argv[optind], e.msg);
		return exit_for(r);
	}
	print_digest(digest, json);
	return 0;
}

static int sub_import(int argc, char **argv)
{
	struct image_limits lim;
	image_limits_default(&lim);
	const char *name = NULL;
	bool json = false;
	int c;
	optind = 1;
	opterr = 0;
	struct flags_getopt g;
	flags_getopt_init(&g, &flagtab_image_import);
	while ((c = getopt_long(argc, argv, g.shorts, g.opts, NULL)) != -1) {
		int k = limit_flag(c, optarg, &lim);
		if (k < 0)
			return EXIT_USAGE;
		if (k)
			continue;
		switch (c) {
		case 'n':
			name = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			flags_help(stdout, &flagtab_image_import);
			return 0;
		default:
			return cmd_bad_flag("image import", c, argv);
		}
	}
	if (optind != argc - 1) {
		cmd_error("image import: give one file (usage: ward image import FILE [--name NAME])");
		return EXIT_USAGE;
	}
	char digest[IMAGE_DIGEST_MAX];
	struct err e = { 0 };
	struct image_ref ref;
	if (name && image_ref_parse(name, &ref, &e) < 0) {
		cmd_error("image import: --name: %s", e.msg);
		return EXIT_USAGE;
	}
	int r = image_import(argv[optind], name, &lim, json ? NULL : &say_stderr, digest, &e);
	if (r < 0) {
		cmd_error("cannot import %s: %s", argv[optind], e.msg);
		return exit_for(r);
	}
	print_digest(digest, json);
	return 0;
}

static void when(double t, char *out, size_t n)
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (!t || !localtime_r(&tt, &tm) || !strftime(out, n, "%Y-%m-%d %H:%M", &tm))
		snprintf(out, n, "never");
}

static int sub_ls(int argc, char **argv)
{
	bool json = false;
	struct flags_getopt g;
	flags_getopt_init(&g, &flagtab_image_ls);
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, g.shorts, g.opts, NULL)) != -1) {
		if (c == 'h') {
			flags_help(stdout, &flagtab_image_ls);
			return 0;
		}
		if (c != 'j')
			return cmd_bad_flag("image ls", c, argv);
		json = true;
	}
	if (optind != argc) {
		cmd_error("image ls takes no arguments; usage: ward image ls [--json]");
		return EXIT_USAGE;
	}
	cJSON *a = NULL;
	struct err e = { 0 };
	if (image_list(&a, &e) < 0) {
		cmd_error("%s", e.msg);
		return EXIT_FAIL;
	}
	if (json) {
		char *t = jsonprint_text(a);
		printf("%s\n", t ? t : "[]");
		free(t);
		cJSON_Delete(a);
		return 0;
	}
	printf("%-48s %-19s %9s  %s\n", "NAME", "DIGEST", "SIZE", "LAST USED");
	const cJSON *im;
	cJSON_ArrayForEach(im, a) {
		const char *dg = cJSON_GetStringValue(cJSON_GetObjectItem(im, "digest"));
		double size = cJSON_GetNumberValue(cJSON_GetObjectItem(im, "size"));
		const cJSON *used = cJSON_GetObjectItem(im, "used");
		char u[32];
		when(cJSON_IsNumber(used) ? used->valuedouble : 0, u, sizeof(u));
		bool busy = cJSON_IsTrue(cJSON_GetObjectItem(im, "in_use"));
		char sz[32];
		snprintf(sz, sizeof(sz), "%.1f MB", size / 1e6);
		const cJSON *names = cJSON_GetObjectItem(im, "names"), *n;
		if (!cJSON_GetArraySize(names)) {
			term_printf(stdout, "%-48s %.19s %9s  %s%s\n", "(no name)", dg, sz, u, busy ? " (in use)" : "");
			continue;
		}
		cJSON_ArrayForEach(n, names)
			term_printf(stdout, "%-48s %.19s %9s  %s%s\n", n->valuestring, dg, sz, u, busy ? " (in use)" : "");
	}
	cJSON_Delete(a);
	return 0;
}

static int sub_rm(int argc, char **argv)
{
	int r = cmd_operands_only(argc, argv, "image rm", "ward image rm REF...");
	if (r >= 0)
		return r;
	if (argc < 2) {
		cmd_error("image rm: give the images to remove (usage: ward image rm REF...)");
		return EXIT_USAGE;
	}
	int code = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			continue;
		struct err e = { 0 };
		bool gone = false;
		r = image_rm(argv[i], &gone, &e);
		if (r < 0) {
			cmd_error("cannot remove %s: %s", argv[i], e.msg);
			code = exit_for(r);
		} else if (!gone) {
			term_printf(stderr, "ward: %s: the name is removed; the image stays while a box uses it or another "
					    "name points to it (ward image prune removes it after)\n", argv[i]);
		}
	}
	return code;
}

static int sub_prune(int argc, char **argv)
{
	bool json = false;
	struct flags_getopt g;
	flags_getopt_init(&g, &flagtab_image_prune);
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, g.shorts, g.opts, NULL)) != -1) {
		if (c == 'h') {
			flags_help(stdout, &flagtab_image_prune);
			return 0;
		}
		if (c != 'j')
			return cmd_bad_flag("image prune", c, argv);
		json = true;
	}
	if (optind != argc) {
		cmd_error("image prune takes no arguments; usage: ward image prune [--json]");
		return EXIT_USAGE;
	}
	cJSON *a = NULL;
	uint64_t bytes = 0;
	struct err e = { 0 };
	if (image_prune(&a, &bytes, &e) < 0) {
		cmd_error("%s", e.msg);
		return EXIT_FAIL;
	}
	if (json) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddItemToObject(j, "removed", a);
		cJSON_AddNumberToObject(j, "bytes", (double)bytes);
		char *t = jsonprint_text(j);
		printf("%s\n", t ? t : "{}");
		free(t);
		cJSON_Delete(j);
		return 0;
	}
	const cJSON *d;
	cJSON_ArrayForEach(d, a)
		printf("removed %s\n", d->valuestring);
	printf("%d images removed, %.1f MB freed\n", cJSON_GetArraySize(a), (double)bytes / 1e6);
	cJSON_Delete(a);
	return 0;
}

static const struct {
	const char *name, *args, *summary;
	int (*run)(int argc, char **argv);
} subs[] = {
	{ "pull", "REF [FLAGS]", "pull an image from its registry (skopeo)", sub_pull },
	{ "import", "FILE [--name NAME]", "import a docker save or OCI archive", sub_import },
	{ "ls", "[--json]", "the images here: name, digest, size, last used", sub_ls },
	{ "rm", "REF...", "remove an image's name (and the image, once nothing uses it)", sub_rm },
	{ "prune", "[--json]", "remove what no name points to and no box uses", sub_prune },
};

static int image_run(int argc, char **argv)
{
	if (argc >= 2)
		for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
			if (!strcmp(argv[1], subs[i].name))
				return subs[i].run(argc - 1, argv + 1);
	bool help = argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
	if (argc >= 2 && !help)
		cmd_error("image: unknown subcommand \"%s\"%s", argv[1],
			  !strcmp(argv[1], "build") ? " (the vm backend's kernel and initramfs: ward vm-image build)" : "");
	FILE *f = help ? stdout : stderr;
	fprintf(f, "usage: ward image SUBCOMMAND\n\nA box's root (--image REF on box create, box run, run and the session):\n");
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		fprintf(f, "  %-7s %-20s %s\n", subs[i].name, subs[i].args, subs[i].summary);
	return help ? 0 : EXIT_USAGE;
}

const struct command cmd_image = {
	.name = "image", .args = "pull|import|ls|rm|prune", .summary = "container images, a box's root", .run = image_run,
};
