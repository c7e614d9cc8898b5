/* The ns backend's root, driven without a keeper: a box made over TREE
 * (a directory standing for an image's unpacked tree; "-": the host
 * view), its root's changes in LAYER (kept between runs: a box made
 * again over the same layer is that box woken), and the given calls made
 * in it, each result printed as one JSON line. For tests of what an image
 * of any kind gives a box (a busybox-only tree, a setuid-root file, a
 * device node) that no image store has to make.
 *   usage: ns-root TREE LAYER [--user U] [--env K=V]... [--workspace DIR]
 *          [--rw] -- TOOL JSON [TOOL JSON]...
 * WARD_GUEST names the guest. Exit 0 when every call got a result. */
#include "sandbox/hostview.h"
#include "sandbox/ns.h"
#include "base/state.h"
#include "proto/budget.h"
#include "proto/proto.h"
#include "base/cleanup.h"
#include "base/timeutil.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int usage(void)
{
	fprintf(stderr, "usage: ns-root TREE LAYER [--user U] [--env K=V]... [--workspace DIR] [--rw] -- TOOL JSON...\n");
	return 64;
}

static int call(int fd, uint32_t id, const char *tool, const char *args)
{
	cJSON *req = cJSON_CreateObject();
	cJSON *a = cJSON_Parse(args);
	if (!a) {
		fprintf(stderr, "ns-root: %s: not JSON\n", args);
		cJSON_Delete(req);
		return -EINVAL;
	}
	cJSON_AddStringToObject(req, "tool", tool);
	cJSON_AddItemToObject(req, "args", a);
	struct budget b = budget_make(60000, 0, -1, 0);
	cJSON_AddItemToObject(req, "budget", budget_to_json(&b));
	char key[32];
	snprintf(key, sizeof(key), "ns-root-%u", id);
	cJSON_AddStringToObject(req, "key", key);
	_cleanup_free_ char *s = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	int r = proto_send(fd, PROTO_CALL, 0, id, s, strlen(s));
	while (r >= 0) {
		struct frame f;
		uint8_t *p = NULL;
		r = proto_recv(fd, now_ms() + 90000, &f, &p);
		if (r < 0)
			break;
		if (f.type == PROTO_RESULT && f.id == id) {
			printf("%.*s\n", (int)f.len, (const char *)p);
			fflush(stdout);
			free(p);
			return 0;
		}
		if (f.type == PROTO_ERROR)
			fprintf(stderr, "ns-root: the guest says: %.*s\n", (int)f.len, (const char *)p);
		free(p);
	}
	fprintf(stderr, "ns-root: no result for %s: %s\n", tool, strerror(-r));
	return r;
}

int main(int argc, char **argv)
{
	if (argc < 5)
		return usage();
	char treep[PATH_MAX], layerp[PATH_MAX];
	if (mkdir(argv[2], 0700) < 0 && errno != EEXIST)
		return 1;
	if ((strcmp(argv[1], "-") && !realpath(argv[1], treep)) || !realpath(argv[2], layerp)) {
		fprintf(stderr, "ns-root: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	const char *tree = strcmp(argv[1], "-") ? treep : "-", *layer = layerp, *user = NULL, *ws = NULL;
	static const char *env[300];
	size_t nenv = 0;
	bool rw = false;
	int i = 3;
	for (; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--user") && i + 1 < argc)
			user = argv[++i];
		else if (!strcmp(argv[i], "--env") && i + 1 < argc && nenv < 300)
			env[nenv++] = argv[++i];
		else if (!strcmp(argv[i], "--workspace") && i + 1 < argc)
			ws = argv[++i];
		else if (!strcmp(argv[i], "--rw"))
			rw = true;
		else
			return usage();
	}
	if (i >= argc || (argc - i - 1) % 2)
		return usage();
	const char *guest = getenv("WARD_GUEST");
	if (!guest)
		return usage();
	struct err e = { 0 };
	char hv[PATH_MAX];
	bool host = !strcmp(tree, "-");
	if (host && hostview_get(hv, sizeof(hv), &e) < 0) {
		fprintf(stderr, "ns-root: %s\n", e.msg);
		return 1;
	}
	/* The keeper's part: the root layer, owned by the box's root; the
	 * workspace's upper and work beside it. */
	char why[160], root[PATH_MAX], up[PATH_MAX], work[PATH_MAX];
	uid_t owner;
	ns_uid_range(&owner, why, sizeof(why));
	snprintf(root, sizeof(root), "%s/root", layer);
	snprintf(up, sizeof(up), "%s/upper", layer);
	snprintf(work, sizeof(work), "%s/work", layer);
	if (state_mkdir_p(root, 0700) < 0 || state_mkdir_p(up, 0755) < 0 || state_mkdir_p(work, 0700) < 0 ||
	    chown(root, owner, owner) < 0 || chown(up, owner, owner) < 0 || chown(work, owner, owner) < 0) {
		fprintf(stderr, "ns-root: %s: %s\n", layer, strerror(errno));
		return 1;
	}
	char stage[] = "/tmp/ward-ns-root-XXXXXX";
	if (!mkdtemp(stage))
		return 1;
	struct ns_spec s = {
		.root_dir = stage, .guest_path = guest, .workspace = ws, .upper_dir = up, .work_dir = work,
		.root_layer = root, .image_root = host ? NULL : tree, .hostview = host ? hv : NULL,
		.env = env, .nenv = nenv, .user = user, .cwd = "/workspace", .workspace_rw = rw, .git_rw = true,
	};
	struct ns_box b;
	if (ns_start(&s, &b, &e) < 0) {
		fprintf(stderr, "ns-root: %s\n", e.msg);
		rmdir(stage);
		return 1;
	}
	fprintf(stderr, "ns-root: the box's root: %s\n", b.uid_why);
	struct frame f;
	uint8_t *p = NULL, hello[8];
	int r = proto_recv(b.chan_fd, now_ms() + 10000, &f, &p);
	if (r >= 0)
		r = f.type == PROTO_HELLO ? proto_hello_check(&f) : -EPROTO;
	free(p);
	proto_hello_payload(hello);
	if (r >= 0)
		r = proto_send(b.chan_fd, PROTO_HELLO, 0, 0, hello, sizeof(hello));
	uint32_t id = 1;
	for (i++; r >= 0 && i + 1 < argc; i += 2)
		r = call(b.chan_fd, id++, argv[i], argv[i + 1]);
	ns_kill(&b);
	rmdir(stage);
	return r < 0 ? 1 : 0;
}
