/* ward box ls and ward box info: what boxes there are, and one box's
 * state, limits and what enforces them. */
#include "cmd/box-ls.h"
#include "cmd/cmd.h"
#include "cmd/flagtab.h"
#include "cmd/term.h"
#include "base/cleanup.h"
#include "base/utf8.h"
#include "sandbox/box.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* A time in milliseconds as --ttl and --idle write one: its two largest
 * units (2d3h, 7h59m, 4m10s, 12s); "-" where the box cannot say. */
static void ls_duration(const cJSON *b, const char *key, char *out, size_t n)
{
	const cJSON *v = cJSON_GetObjectItem(b, key);
	if (!cJSON_IsNumber(v) || v->valuedouble != v->valuedouble || v->valuedouble < 0) {
		snprintf(out, n, "-");
		return;
	}
	long long s = (long long)(v->valuedouble / 1000);
	long long d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
	if (d)
		snprintf(out, n, "%lldd%lldh", d, h);
	else if (h)
		snprintf(out, n, "%lldh%lldm", h, m);
	else if (m)
		snprintf(out, n, "%lldm%llds", m, sec);
	else
		snprintf(out, n, "%llds", sec);
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

int box_ls_main(int argc, char **argv)
{
	bool json = false;
	const char *want[BOX_LABELS_MAX];
	size_t nwant = 0;
	struct flags_getopt g;
	flags_getopt_init(&g, &flagtab_box_ls);
	optind = 1;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, g.shorts, g.opts, NULL)) != -1) {
		if (c == 'h') {
			flags_help(stdout, &flagtab_box_ls);
			return 0;
		}
		if (c == 'j') {
			json = true;
			continue;
		}
		if (c != 'L')
			return cmd_bad_flag("box ls", c, argv);
		struct err le = { 0 };
		if (box_label_check(optarg, &le) < 0) {
			cmd_error("box ls: --%s", le.msg);
			return EXIT_USAGE;
		}
		if (nwant == BOX_LABELS_MAX) {
			cmd_error("box ls: at most %d --label filters", BOX_LABELS_MAX);
			return EXIT_USAGE;
		}
		want[nwant++] = optarg;
	}
	if (optind != argc) {
		cmd_error("box ls: unknown argument %s; it takes --json and --label KEY=VALUE", argv[optind]);
		return EXIT_USAGE;
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
		term_printf(stdout, "%-*s %-10s %-7s %8s %9s %5s %8s  %-20s %s\n", nw, "NAME", "STATE", "BACKEND", "UPTIME",
		       "ENDS-IN", "CALLS", "DISK", "LABELS", "WORKSPACE");
		cJSON_ArrayForEach(b, arr) {
			const char *st = cJSON_IsTrue(cJSON_GetObjectItem(b, "alive")) ?
						 cJSON_GetStringValue(cJSON_GetObjectItem(b, "state")) : "dead";
			/* A dead box's keeper cannot say these: "-", not a NaN. */
			char up[24], ends[24], calls[16];
			ls_duration(b, "uptime_ms", up, sizeof(up));
			ls_duration(b, "ends_in_ms", ends, sizeof(ends));
			ls_number(b, "calls_running", 1, "", calls, sizeof(calls));
			char disk[24];
			const cJSON *db = cJSON_GetObjectItem(b, "disk_bytes");
			if (cJSON_IsNumber(db))
				ls_size((uint64_t)db->valuedouble, disk, sizeof(disk));
			else
				snprintf(disk, sizeof(disk), "-");
			char labels[512];
			ls_labels(b, labels, sizeof(labels));
			term_printf(stdout, "%-*s %-10s %-7s %8s %9s %5s %8s  %-20s %s\n", nw,
			       cJSON_GetStringValue(cJSON_GetObjectItem(b, "name")), st ? st : "?",
			       cJSON_GetStringValue(cJSON_GetObjectItem(b, "backend")) ?: "-", up, ends, calls, disk, labels,
			       cJSON_GetStringValue(cJSON_GetObjectItem(b, "workspace")) ?: "-");
		}
	}
	cJSON_Delete(arr);
	return 0;
}

int box_ls_info(int argc, char **argv)
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
