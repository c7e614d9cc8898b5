/* Defaults are pinned here: changing one is a decision, and this test is
 * where it is made. */
#include <stdbool.h>
#include <string.h>

#include "base/account.h"
#include "guest/guest.h"
#include "image/image.h"
#include "image/layout.h"
#include "image/skopeo.h"
#include "image/unpack.h"
#include "sandbox/box.h"
#include "sandbox/ns.h"
#include "proto/budget.h"
#include "proto/proto.h"
#include "tools/bash.h"
#include "tools/job.h"
#include "turn/agent.h"
#include "workspace/wsmerge.h"
#include "tap.h"

int main(void)
{
	is_int(BASH_TIMEOUT_DEFAULT_S, 120, "bash default limit 120 s");
	is_int(AGENT_MAX_DEFAULT, 3, "--max-subagents: 3 children run at once");
	is_int(AGENT_DEPTH_MAX, 2, "a subagent's subagent is the deepest");
	is_int(AGENT_CHILDREN_MAX, 64, "at most 64 subagents over one run");
	is_int(AGENT_STOP_GRACE_MS, 5000, "a subagent asked to stop is killed 5 s later");
	is_int(WSMERGE_SHOW_MAX, 2000, "a conflict shows each version's first 2,000 bytes");
	is_int(WSMERGE_ENTRIES_MAX, 200000, "a merge reads layers of up to 200,000 entries");
	is_int(BASH_TIMEOUT_MAX_S, 600, "bash maximum limit 600 s");
	is_int(BASH_OUT_HEAD, 10000, "output head 10,000 bytes");
	is_int(BASH_OUT_TAIL, 20000, "output tail 20,000 bytes");
	is_int(BASH_TIMEOUT_TAIL, 2000, "time-out tail 2,000 bytes");
	is_int(BUDGET_GRACE_MS, 2000, "cancel grace 2 s");
	is_int(BUDGET_TIMEOUT_GRACE_MAX_MS, 500, "time-out grace at most 0.5 s");
	is_int(BUDGET_MARGIN_MS, 1000, "each outer layer waits 1 s longer");
	is_int(TOOL_FILE_TIMEOUT_MS, 30000, "file tools 30 s");
	is_int(BOX_CONNECT_TIMEOUT_MS, 2000, "a keeper answers a connect within 2 s");
	is_int(GUEST_VM_UIDS, 65536, "a vm box's calls map the VM's 65536 uids one to one (tool commands: its root)");
	is_int(NS_UID_BASE, 1879048192u, "an ns box's uids start at 0x70000000 on the host (root, idmapped mounts)");
	is_int(NS_UIDS, 65536, "and are 65536");
	is_int(GUEST_ENV_MAX, 256, "a box takes an image with at most 256 Env entries");
	is_int(GUEST_ENV_ENTRY_MAX, 32768, "each at most 32 KiB");
	is_int(ACCOUNT_FILE_MAX, 4u << 20, "an image's /etc/passwd and /etc/group are read up to 4 MiB");
	is_int(BOX_DEFAULT_MEMORY, 1ULL << 30, "box memory 1 GiB");
	is_int(BOX_DEFAULT_PIDS, 512, "box pids 512");
	is_int(BOX_DEFAULT_DISK, 10ULL << 30, "box disk (the workspace and root layers) 10 GiB");
	is_int(BOX_DEFAULT_TTL_MS, 8LL * 3600 * 1000, "box TTL 8 h");
	is_int(BOX_DEFAULT_IDLE_MS, 30LL * 60 * 1000, "box idle 30 min");
	is_int(PROTO_MAX_PAYLOAD, 1u << 20, "frame payload maximum 1 MiB");
	is_int(PROTO_VERSION, 2, "protocol version 2 (a call carries its budget)");
	is_int(BUDGET_LIMIT_MAX_MS, 366LL * 24 * 3600 * 1000, "a call's limit at most 366 days (long-lived calls)");
	is_int(GUEST_STREAM_QUEUE, 8u << 20, "output queued for the host before it is dropped (or paused) 8 MiB");
	is_int(GUEST_STDIN_PENDING, 16u << 20, "a stdin call's unread input at most 16 MiB");
	is_int(BOX_INPUT_MAX, 4u << 20, "one box_call_input at most 4 MiB");
	/* Background jobs (tools/job.h). */
	is_int(JOB_TIMEOUT_MAX_S, 86400, "a job's own limit at most a day");
	is_int(JOB_RUNNING_MAX, 16, "16 jobs running in a box at once");
	is_int(JOB_KEPT_MAX, 64, "64 jobs remembered, ended ones included");
	is_int(JOB_OUT_HEAD, 64u * 1024, "a job's output keeps its first 64 KiB");
	is_int(JOB_OUT_TAIL, 1024u * 1024, "and its last 1 MiB");
	is_int(JOB_READ_MAX, 30000, "one job_output gives 30,000 bytes at most");
	is_int(JOB_WAIT_MAX_S, 600, "job_output waits 600 s at most");
	is_int(JOB_KILL_GRACE_MS, 2000, "job_kill: SIGKILL 2 s after SIGTERM");
	is_int(JOB_TOLD_TAIL, 1500, "the model is told a job's last 1,500 bytes with its end");
	is_int(BOX_JOBS_TIMEOUT_MS, 3000, "ward run lists its box's jobs within 3 s");
	struct box_opts o;
	box_opts_default(&o);
	ok(!o.net && !o.rw && !o.persistent, "no network, copy-on-write, dies with its owner by default");
	is_int(o.grace_ms, 2000, "box grace 2 s");
	ok(!o.image, "a box's root is the host's view unless an image is given");

	/* What an image may hold. */
	is_int(IMAGE_MAX_FILES, 1000000, "an image: at most 1,000,000 entries");
	is_int(IMAGE_MAX_BYTES, 64ULL << 30, "an image: files of at most 64 GiB together");
	is_int(IMAGE_MAX_LAYERS, 128, "an image: at most 128 layers");
	is_int(IMAGE_MAX_RATIO, 1000, "a layer expands at most 1000 times its compressed size");
	is_int(IMAGE_RATIO_FREE, 64ULL << 20, "past its first 64 MiB");
	is_int(IMAGE_JSON_MAX, 4u << 20, "an index, manifest or config: at most 4 MiB");
	is_int(IMAGE_UNPACK_RESERVE, 256ULL << 20, "an unpack leaves 256 MiB of the disk free");
	struct image_limits il;
	image_limits_default(&il);
	ok(il.max_files == IMAGE_MAX_FILES && il.max_bytes == IMAGE_MAX_BYTES, "the limits' defaults are those");
	/* What skopeo gets of ward's environment: these, and nothing else
	 * (no API key reaches a registry's tool). */
	static const char *const skopeo_env[] = { "PATH", "HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "REGISTRY_AUTH_FILE",
						  "DOCKER_CONFIG", "CONTAINERS_REGISTRIES_CONF", "CONTAINERS_CONF", "HTTPS_PROXY",
						  "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",
						  "SSL_CERT_FILE", "SSL_CERT_DIR", NULL };
	bool same = true;
	size_t k = 0;
	for (; skopeo_env[k] || image_skopeo_env[k]; k++)
		if (!skopeo_env[k] || !image_skopeo_env[k] || strcmp(skopeo_env[k], image_skopeo_env[k]))
			same = false;
	ok(same, "skopeo is given the auth file's, the proxies', the CAs' and registries.conf's variables, and nothing else");
	return tap_done();
}
