/* What the keeper says of its box: info (ward box info and ls), the
 * evidence it adds to the guest's, and the files it leaves in the box's
 * runtime dir for a ward whose keeper is gone (info.json, keeper.pid). */
#include "sandbox/keeper-int.h"
#include "net/secret.h"
#include "sandbox/box.h"
#include "sandbox/vm.h"
#include "base/cleanup.h"
#include "base/fdio.h"
#include "base/timeutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void keeper_augment_evidence(cJSON *j)
{
	if (K.inst.held.memory)
		cJSON_AddNumberToObject(j, "box_memory_bytes", (double)cgroup_memory_current(&K.cg));
	if (K.inst.held.pids)
		cJSON_AddNumberToObject(j, "box_pids", (double)cgroup_pids_current(&K.cg));
}

/* The box's labels, {key: value}, into j. */
static void keeper_labels(cJSON *j)
{
	cJSON *l = cJSON_AddObjectToObject(j, "labels");
	for (size_t i = 0; i < K.o->nlabels; i++) {
		const char *kv = K.o->labels[i], *eq = strchr(kv, '=');
		char key[64];
		snprintf(key, sizeof(key), "%.*s", (int)(eq - kv), kv);
		cJSON_DeleteItemFromObjectCaseSensitive(l, key);	/* a key given again: the last one */
		cJSON_AddStringToObject(l, key, eq + 1);
	}
}

void keeper_info(struct kclient *c, uint32_t id)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "name", K.name);
	keeper_labels(j);
	cJSON_AddBoolToObject(j, "restored", K.inst.restored);
	cJSON_AddStringToObject(j, "backend", K.be->name);
	cJSON_AddStringToObject(j, "state", box_state_name(K.state));
	cJSON_AddNumberToObject(j, "disk_bytes", (double)keeper_disk_bytes());
	cJSON *hb = cJSON_AddObjectToObject(j, "hibernate");
	cJSON_AddStringToObject(hb, "on_idle", K.o->on_idle == BOX_IDLE_HIBERNATE ? "hibernate" : "destroy");
	cJSON_AddStringToObject(hb, "keeps", "the workspace's changes and /tmp (the home)");
	if (keeper_saved() ? K.hib.kept : K.inst.keeps_ram)
		cJSON_AddStringToObject(hb, "loses", "nothing: its whole machine (memory, processes, devices) is saved, "
				       "and a wake goes on where it stopped");
	else
		cJSON_AddStringToObject(hb, "loses", K.be == &vm_backend ?
					"every process: QEMU cannot save a guest with 9p mounts (/usr without --image, "
					"a --workspace), so a wake is a new guest over the same files" :
					"every process: a wake is a new box over the same files");
	if (K.o->cold_after_ms)
		cJSON_AddNumberToObject(hb, "cold_after_ms", (double)K.o->cold_after_ms);
	if (K.state == BOX_ST_COLD)
		cJSON_AddNumberToObject(hb, "stored_bytes", (double)K.hib.stored);
	if (keeper_saved()) {
		cJSON_AddNumberToObject(hb, "state_bytes", (double)K.hib.bytes);
		cJSON_AddNumberToObject(hb, "for_ms", (double)(now_ms() - K.hib.at_ms));
	}
	cJSON_AddNumberToObject(hb, "wakes", K.hib.wakes);
	cJSON_AddNumberToObject(j, "keeper_pid", getpid());
	cJSON_AddNumberToObject(j, "guest_pid", K.inst.pid);
	cJSON_AddNumberToObject(j, "created", (double)K.created_wall);
	cJSON_AddNumberToObject(j, "uptime_ms", (double)(now_ms() - K.created_ms));
	if (K.ttl_at)
		cJSON_AddNumberToObject(j, "ttl_left_ms", (double)(K.ttl_at - now_ms()));
	/* When it dies if nothing more happens: its TTL, or its idle timeout
	 * counted from the last work (a running call holds the clock). */
	int64_t ends = K.ttl_at;
	if (K.o->idle_ms && !K.calls && K.o->on_idle == BOX_IDLE_DESTROY && !keeper_saved()) {
		int64_t idle_at = K.last_activity + K.o->idle_ms;
		if (!ends || idle_at < ends)
			ends = idle_at;
	}
	if (ends)
		cJSON_AddNumberToObject(j, "ends_in_ms", (double)MAX(ends - now_ms(), 0));
	if (K.o->idle_ms)
		cJSON_AddNumberToObject(j, "idle_ms", (double)K.o->idle_ms);
	cJSON_AddBoolToObject(j, "persistent", K.o->persistent || K.kept);
	static const char *const nets[] = { [BOX_NET_NONE] = "none", [BOX_NET_HOST] = "host",
					    [BOX_NET_ALLOW] = "allow-list" };
	cJSON_AddStringToObject(j, "network", nets[K.o->net]);
	if (K.o->net == BOX_NET_HOST)
		cJSON_AddStringToObject(j, "network_warning",
					"the box shares the host's network: it reaches whatever the host reaches, "
					"loopback services and the cloud metadata address included");
	if (K.o->net == BOX_NET_ALLOW) {
		cJSON *al = cJSON_AddArrayToObject(j, "allow_hosts");
		for (size_t i = 0; i < K.o->nallow; i++)
			cJSON_AddItemToArray(al, cJSON_CreateString(K.o->allow[i]));
		/* Secrets by name and host; never a value, nor its placeholder. */
		cJSON *sl = cJSON_AddArrayToObject(j, "secrets");
		for (size_t i = 0; sl && i < K.o->nsecrets; i++) {
			const char *spec = K.o->secrets[i], *at = strchr(spec, '@');
			cJSON *so = cJSON_CreateObject();
			char name[NET_SECRET_NAME_MAX + 1];
			snprintf(name, sizeof(name), "%.*s", at ? (int)(at - spec) : 0, spec);
			cJSON_AddStringToObject(so, "name", name);
			cJSON_AddStringToObject(so, "hosts", at ? at + 1 : "");
			cJSON_AddItemToArray(sl, so);
		}
		cJSON *eg = cJSON_AddObjectToObject(j, "egress");
		cJSON_AddStringToObject(eg, "proxy", egress_running(&K.eg) ? "running" : "not running");
		if (egress_running(&K.eg))
			cJSON_AddNumberToObject(eg, "proxy_pid", K.eg.pid);
		cJSON_AddStringToObject(eg, "address", "127.0.0.1:" NET_PROXY_PORT_S);
		cJSON_AddNumberToObject(eg, "connections", (double)K.eg.conns);
		cJSON_AddNumberToObject(eg, "refused", (double)K.eg.refused);
		cJSON_AddNumberToObject(eg, "bytes_up", (double)K.eg.up);
		cJSON_AddNumberToObject(eg, "bytes_down", (double)K.eg.down);
		cJSON_AddNumberToObject(eg, "max_bytes",
					(double)(K.o->net_max_bytes ? K.o->net_max_bytes : BOX_NET_MAX_BYTES_DEFAULT));
	}
	/* Ports opened to the host: their connections and bytes. */
	keeper_port_list(j);
	keeper_jobs_info(j);
	keeper_fork_info(j);
	if (K.o->image)
		cJSON_AddStringToObject(j, "image", K.o->image);
	if (K.o->workspace) {
		cJSON_AddStringToObject(j, "workspace", K.o->workspace);
		cJSON_AddStringToObject(j, "workspace_mode", K.o->rw ? "read-write" : "copy-on-write");
		cJSON_AddStringToObject(j, "workspace_git", K.o->git_rw ? "writable" : "read-only");
		if (!K.o->rw)
			cJSON_AddStringToObject(j, "workspace_changes", K.upper);
	}
	if (K.root_layer) {
		cJSON_AddStringToObject(j, "root", "copy-on-write");
		cJSON_AddStringToObject(j, "root_user", K.inst.pid > 0 && K.inst.uid_why[0] ? K.inst.uid_why : K.root_by);
		/* What caps the root's changes: the layers' image, where they
		 * are on it (root/), with the workspace's. */
		char by[sizeof(K.layers.disk_by) + 160];
		if (K.layers.image && K.layers.root_image)
			snprintf(by, sizeof(by), "the layers image (disk_bytes, with the workspace's changes): %s",
				 K.layers.fuse ? "fuse-overlayfs over fuse2fs" : "overlayfs over its loop mount");
		else if (K.layers.image || (geteuid() != 0 && !K.o->disk_given))
			snprintf(by, sizeof(by), "not enforced: without root, the root's changes are capped only where a "
				 "ceiling is asked for (--disk, or the config key disk), not by the default one");
		else
			snprintf(by, sizeof(by), "%s", K.layers.disk_by);
		cJSON_AddStringToObject(j, "root_changes_by", by);
	}
	cJSON *lim = cJSON_AddObjectToObject(j, "limits");
	cJSON_AddNumberToObject(lim, "memory_bytes", (double)K.o->lim.memory);
	/* What holds the box's processes, not what was made: a group the
	 * box is not in holds nothing (the backend checked where it is). */
	cJSON_AddStringToObject(lim, "memory_by", K.inst.held.memory ? "cgroup" :
				K.inst.rlimit_memory ? "rlimit (per process)" : "not enforced");
	cJSON_AddNumberToObject(lim, "disk_bytes", (double)K.layers.disk);
	cJSON_AddStringToObject(lim, "disk_by", K.layers.disk_by);
	cJSON_AddNumberToObject(lim, "pids", (double)K.o->lim.pids);
	cJSON_AddStringToObject(lim, "pids_by", K.inst.held.pids ? "cgroup" :
				K.inst.rlimit_pids ? "rlimit (per user namespace)" : "not enforced");
	cJSON_AddStringToObject(lim, "cpu_by", K.inst.held.cpu ? "cgroup" : "not enforced");
	cJSON_AddStringToObject(lim, "kill_by", K.inst.held.kill ? "cgroup.kill and the PID namespace" : "the PID namespace");
	/* Each weaker ceiling, and why: the group the box could not be put
	 * in, or what this user has no group for. */
	struct cgroup_caps caps;
	bool probed = false;
	static const struct { const char *ctl, *key; } gaps[] = {
		{ "memory", "memory_why" }, { "pids", "pids_why" }, { "cpu", "cpu_why" }, { "kill", "kill_why" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(gaps); i++) {
		bool held = i == 0 ? K.inst.held.memory : i == 1 ? K.inst.held.pids : i == 2 ? K.inst.held.cpu : K.inst.held.kill;
		bool asked = i == 0 ? K.o->lim.memory : i == 1 ? K.o->lim.pids : i == 2 ? K.o->lim.cpus_milli : true;
		if (held || !asked || K.inst.pid <= 0)
			continue;
		if (!probed)
			cgroup_probe(&caps);
		probed = true;
		char gap[PATH_MAX * 2 + 256];
		cgroup_gap(&caps, gaps[i].ctl, gap, sizeof(gap));
		cJSON_AddStringToObject(lim, gaps[i].key, gap[0] ? gap : "the box's processes could not be put in its group");
	}
	keeper_augment_evidence(j);
	int n = 0;
	for (struct kcall *k = K.calls; k; k = k->next)
		n++;
	cJSON_AddNumberToObject(j, "calls_running", n);
	keeper_ws_info(j);
	cJSON_AddNumberToObject(j, "restarts", K.restarts);
	kclient_send_json(c, PROTO_INFO, id, j);
	cJSON_Delete(j);
}

void keeper_write_files(void)
{
	char p[PATH_MAX + 32], s[32];
	snprintf(p, sizeof(p), "%s/keeper.pid", K.boxdir);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0) {
		int n = snprintf(s, sizeof(s), "%d\n", getpid());
		fdio_write_full(fd, s, (size_t)n);
		close(fd);
	}
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "name", K.name);
	keeper_labels(j);
	cJSON_AddBoolToObject(j, "restored", K.inst.restored);
	cJSON_AddStringToObject(j, "backend", K.be->name);
	cJSON_AddNumberToObject(j, "created", (double)K.created_wall);
	cJSON_AddBoolToObject(j, "persistent", K.o->persistent);
	cJSON_AddBoolToObject(j, "keep_layers", K.o->keep_layers);
	if (K.o->workspace)
		cJSON_AddStringToObject(j, "workspace", K.o->workspace);
	if (K.o->image)
		cJSON_AddStringToObject(j, "image", K.o->image);
	cJSON_AddStringToObject(j, "layers", K.upper[0] ? K.upper : "");
	cJSON_AddStringToObject(j, "cgroup_v2", K.cg.v2);
	cJSON_AddStringToObject(j, "cgroup_memory", K.cg.mem1);
	cJSON_AddStringToObject(j, "cgroup_pids", K.cg.pids1);
	_cleanup_free_ char *txt = cJSON_Print(j);
	cJSON_Delete(j);
	snprintf(p, sizeof(p), "%s/info.json", K.boxdir);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0 && txt) {
		fdio_write_full(fd, txt, strlen(txt));
		close(fd);
	}
}

