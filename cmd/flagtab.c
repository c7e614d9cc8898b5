/* Every flag of ward's commands: the one place that names them, says what
 * they take, what they default to (the constant in force, never a copy of
 * it) and what they do. To add a flag: a row in its command's table (or in
 * a group the command shares), a case where the command parses it, and,
 * for a flag of ward run that is a setting, a row in task/settings.c's
 * table. --help, the man pages, the README's lists and the completion
 * follow by themselves (tests/integration/flags.sh checks they do). */
#include "cmd/flagtab.h"
#include "cmd/run-flags.h"
#include "sandbox/box.h"
#include "proto/budget.h"
#include "tools/bash.h"
#include "turn/agent.h"
#include "turn/compact.h"
#include "turn/retry.h"
#include "turn/window.h"
#include "image/image.h"

#define HELP { "help", 'h', 'h', NULL, .help = "print this help and exit" }
#define END { 0 }

/* The model, the budgets and the box: ward run's, the session's, ward
 * config's and ward acp's (their letters are run_flag's). */
static const struct flag run_model[] = {
	{ "model", 0, 'm', "M", FLAG_DEFAULT_NONE,
	  .dnote = "the provider's: " RUN_DEFAULT_ANTHROPIC_MODEL ", " RUN_DEFAULT_OPENAI_MODEL " (openai), "
		   RUN_DEFAULT_OPENAI_RESPONSES_MODEL " (openai-responses)",
	  .help = "the model; replay:FILE plays a recorded script" },
	{ "provider", 0, 'p', "P", FLAG_DEFAULT_TEXT, .dtext = RUN_DEFAULT_PROVIDER,
	  .help = "anthropic, openai (Chat Completions: any compatible server with --base-url) or "
		  "openai-responses (the Responses API)" },
	{ "base-url", 0, 'u', "URL", .dnote = "the provider's", .help = "the API's address" },
	END,
};

/* --approve, whose default is the command's. */
static const struct flag run_approve_auto[] = {
	{ "approve", 0, 'a', "MODE", FLAG_DEFAULT_GATE, .dnum = RUN_APPROVE_DEFAULT,
	  .help = "ask, edits or auto (auto: everything runs inside the box)" },
	END,
};
static const struct flag run_approve_edits[] = {
	{ "approve", 0, 'a', "MODE", FLAG_DEFAULT_GATE, .dnum = CHAT_APPROVE_DEFAULT,
	  .help = "ask, edits or auto (edits: file changes go to the copy-on-write workspace, commands are "
		  "asked; ask with --rw)" },
	END,
};

static const struct flag run_bounds[] = {
	{ "allow", 0, 'A', "RULE", .help = "allow TOOL or TOOL:GLOB, e.g. 'bash:git status*' (repeatable)" },
	{ "deny", 0, 'D', "RULE", .help = "deny likewise; deny rules are checked first (repeatable)" },
	{ "deadline", 0, 'd', "DUR", FLAG_DEFAULT_TEXT, .dtext = "none",
	  .help = "the time limit of the run (of each message in the session, each prompt in acp), e.g. 10m; "
		  "each call's limit is clamped to what is left" },
	{ "max-rounds", 0, 'R', "N", FLAG_DEFAULT_TEXT, .dtext = "none", .help = "at most N model rounds" },
	{ "max-calls", 0, 'C', "N", FLAG_DEFAULT_TEXT, .dtext = "none", .help = "at most N tool calls" },
	{ "max-tokens", 0, 'T', "N", FLAG_DEFAULT_TEXT, .dtext = "none",
	  .help = "at most N tokens (input + output)" },
	{ "max-cost", 0, '$', "USD", FLAG_DEFAULT_TEXT, .dtext = "none",
	  .help = "at most this much, for models whose prices ward knows (each budget is the whole task's: the "
		  "run and its subagents together)" },
	{ "idle-timeout", 0, 'I', "DUR", FLAG_DEFAULT_MS, .dnum = TURN_IDLE_MS_DEFAULT,
	  .help = "end a stream with no bytes for DUR" },
	{ "retries", 0, 'Y', "N", FLAG_DEFAULT_NUM, .dnum = RETRY_MAX_DEFAULT,
	  .help = "provider retries; with --deadline and no --retries, as many as the deadline leaves room for" },
	{ "context-window", 0, 'W', "N", FLAG_DEFAULT_NUM, .dnum = WINDOW_DEFAULT,
	  .dnote = "the model's in ward's table, else", .help = "the model's context window in tokens" },
	{ "compact-at", 0, '%', "PCT", FLAG_DEFAULT_NUM, .dnum = COMPACT_AT_DEFAULT,
	  .help = "compact the conversation when a prompt reaches PCT% of the context window" },
	{ "cache-ttl", 0, 'c', "T", FLAG_DEFAULT_TEXT, .dtext = RUN_DEFAULT_CACHE_TTL,
	  .help = "prompt caching (anthropic): 5m, 1h or off" },
	{ "no-project-instructions", 0, 'n', NULL,
	  .help = "do not read AGENTS.md / CLAUDE.md into the system prompt" },
	END,
};

/* Which box and workspace, and which session. */
static const struct flag run_target[] = {
	{ "box", 0, 'b', "NAME", .dnote = "a new one for the run", .help = "use this existing box" },
	{ "workspace", 0, 'w', "DIR", .dnote = "the current directory",
	  .help = "the task's directory, copy-on-write in the box" },
	{ "resume", 0, 'S', "ID", .help = "continue session ID (ward run: with TASK as the next instruction)" },
	END,
};

/* ward acp refuses them: the editor says the directory (cmd/acp.c). */
static const struct flag acp_refused[] = {
	{ "box", 0, 'b', "NAME", .hidden = true },
	{ "workspace", 0, 'w', "DIR", .hidden = true },
	{ "resume", 0, 'S', "ID", .hidden = true },
	END,
};

/* The box a command makes. */
static const struct flag run_box[] = {
	{ "image", 0, 'i', "REF",
	  .help = "the box's root: an image (pulled when not here; see ward image) instead of the host's own /usr" },
	{ "backend", 0, 'B', "B", FLAG_DEFAULT_TEXT, .dtext = BOX_DEFAULT_BACKEND,
	  .help = "the box's backend: ns (namespaces), vm (a QEMU microVM), or auto (vm with KVM, else ns)" },
	{ "rw", 0, 'r', NULL, .help = "let the box change DIR directly" },
	{ "allow-git-changes", 0, 'g', NULL,
	  .help = "let the box change DIR's git directories (.git: hooks, config), and apply or patch those "
		  "changes too (else .git is read-only in the box and its changes are listed apart, never "
		  "applied)" },
	{ "disk", 0, 'K', "SIZE", FLAG_DEFAULT_SIZE, .dnum = BOX_DEFAULT_DISK,
	  .help = "disk ceiling of the box's changes to DIR (see ward doctor)" },
	END,
};

/* The network of a box a command makes (netflag_parse's letters). */
static const struct flag net_flags[] = {
	{ "allow-host", 0, 'H', "PAT",
	  .help = "let the box reach PAT through ward's egress proxy (repeatable): a name (ports 443 and 80), "
		  "*.example.org, name:port, an address, or name=ADDR:PORT to connect name to that address (the "
		  "only way to a loopback or private address); nothing else is reachable" },
	{ "net", 0, 'N', "MODE", FLAG_DEFAULT_TEXT, .dtext = "none",
	  .help = "none (no network, or only the --allow-host ones) or host (the host's whole network, ns "
		  "only; nothing is filtered)" },
	{ "net-max-bytes", 0, 'Q', "SIZE", FLAG_DEFAULT_SIZE, .dnum = BOX_NET_MAX_BYTES_DEFAULT,
	  .help = "what the egress proxy carries, up and down, over the box's life; past it, tunnels end and "
		  "new connections are refused" },
	{ "secret", 0, 'k', "NAME@HOST[,HOST...]",
	  .help = "a credential the box never sees (repeatable): the box's $NAME is a placeholder, and the "
		  "egress proxy puts the value ($NAME of ward's environment, or NAME=@FILE@HOST to read FILE) on "
		  "requests to HOST only (added to the allow-list); it refuses the placeholder or the value to "
		  "any other host, and another credential to HOST. HTTPS to HOST is terminated at the proxy (a "
		  "CA made for the box, in its trust store). aws@HOST: AWS's keys (AWS_ACCESS_KEY_ID, "
		  "AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), placeholders in the box; the proxy checks each "
		  "request's SigV4 signature and signs it again with the real keys" },
	{ "secret-other-keys", 0, 'V', NULL, FLAG_DEFAULT_TEXT, .dtext = "off",
	  .help = "carry a credential that is not a secret's placeholder (an Authorization, an AWS signature by "
		  "another key) to a secret's host as it is (else refused, as the box's own key there could take "
		  "the user's data to an account of someone else's)" },
	{ "secret-ca", 0, 'q', "FILE",
	  .help = "trust FILE's certificates (PEM), beside the host's CAs, for a secret's host (a test "
		  "server, a private CA)" },
	END,
};

/* mcprun_flag's (cmd/mcprun.c). */
static const struct flag mcp_flags[] = {
	{ "mcp-config", 0, 'M', "FILE",
	  .help = "MCP servers ({\"mcpServers\": {...}}, .mcp.json's shape) to start in the box (repeatable); "
		  "their tools are mcp__SERVER__TOOL" },
	{ "trust-project-mcp", 0, 'E', NULL, .help = "start the servers of the workspace's .mcp.json without asking" },
	END,
};

static const struct flag run_own[] = {
	{ "approve-cmd", 0, 'G', "CMD",
	  .help = "a program that answers when a call needs approval: the call as JSON on stdin; exit 0 "
		  "allows, 2 stops the turn, else refuses" },
	{ "max-subagents", 0, FLAG_RUN_MAX_SUBAGENTS, "N", FLAG_DEFAULT_NUM, .dnum = AGENT_MAX_DEFAULT,
	  .help = "subagents (the task tool) running at once, the rest wait; 0: no task tool" },
	{ "json", 0, 'j', NULL,
	  .help = "one JSON event per line on stdout (else stdout is the final answer alone, and progress goes "
		  "to stderr)" },
	{ "output-last-message", 'o', 'o', "FILE", .help = "write the final answer to FILE too (0600)" },
	{ "apply", 0, 'X', NULL, .help = "apply the workspace changes to DIR at the end" },
	{ "patch", 0, 'P', "FILE", .help = "write the workspace changes to FILE as a patch" },
	{ "output-schema", 0, 'O', "FILE",
	  .help = "the final answer must be JSON matching the JSON Schema in FILE: checked, sent back once if "
		  "it does not match, then exit 1; it is the result's \"output\"" },
	{ "task-file", 0, FLAG_RUN_TASK_FILE, "FILE",
	  .help = "run one task of FILE (JSON Lines: {\"id\", \"task\", \"workspace\", and any of these flags' "
		  "long names with _ for -}) instead of TASK" },
	{ "task-index", 0, FLAG_RUN_TASK_INDEX, "I", .dnote = "SLURM_ARRAY_TASK_ID, then JOB_COMPLETION_INDEX",
	  .help = "which one (0 first)" },
	{ "out", 0, FLAG_RUN_OUT, "DIR",
	  .help = "with --task-file: results in DIR/ID/ (events.jsonl, result.json, patch.diff, journal.jsonl); "
		  "a task already finished there is skipped, one cut off resumes" },
	{ "task-root", 0, FLAG_RUN_TASK_ROOT, "DIR", .dnote = "the task file's directory",
	  .help = "with --task-file: the directory a line's workspace (and replay script) must lie under" },
	{ "keep-changes", 0, FLAG_RUN_KEEP_CHANGES, NULL,
	  .help = "with --task-file: keep a finished task's workspace changes (ward diff, ward apply) after its "
		  "patch.diff is written (else they go: the patch holds them)" },
	{ "trust-task-file", 0, FLAG_RUN_TRUST_TASKS, NULL,
	  .help = "a task's line may set any of these flags and name any path (else it only narrows: a model "
		  "no dearer, tighter bounds, approve, deny rules, net none, allow_hosts of public hosts, a "
		  "workspace under the task root)" },
	/* A subagent's, from its parent (turn/agent.c): not for people. */
	{ "agent-depth", 0, FLAG_RUN_AGENT_DEPTH, "N", .hidden = true },
	{ "agent-ledger", 0, FLAG_RUN_AGENT_LEDGER, "FD", .hidden = true },
	{ "agent-id", 0, FLAG_RUN_AGENT_ID, "ID", .hidden = true },
	{ "agent-parent", 0, FLAG_RUN_AGENT_PARENT, "ID", .hidden = true },
	{ "agent-session", 0, FLAG_RUN_AGENT_SESSION, "ID", .hidden = true },
	/* A subagent's own share of the task's budgets (its task call's). */
	{ "agent-max-calls", 0, FLAG_RUN_AGENT_MAX_CALLS, "N", .hidden = true },
	{ "agent-max-tokens", 0, FLAG_RUN_AGENT_MAX_TOKENS, "N", .hidden = true },
	{ "agent-max-cost", 0, FLAG_RUN_AGENT_MAX_COST, "USD", .hidden = true },
	HELP,
	END,
};

static const struct flag help_only[] = { HELP, END };

#define SETTINGS_FOOTER                                                                                     \
	"Settings also come from ~/.config/ward/config.json, the project's .ward/config.json and the "   \
	"environment, under the flags: see `ward config --help`, and `ward config` for what is in force.\n"

const struct flag_cmd flagtab_run = {
	.name = "run",
	.page = "ward-run",
	.synopsis = "ward run [FLAGS] \"TASK\"   (or - to read the task from stdin)",
	.summary = "run one task in a new box and print the answer",
	.groups = { { run_model, true }, { run_approve_auto, true }, { run_bounds, true }, { run_target, true }, { run_box, true },
		    { net_flags, true }, { mcp_flags }, { run_own } },
	.footer = SETTINGS_FOOTER
	"exit codes: 0 done, 1 error, 2 a bound was hit, 3 refused, 4 no box, 5 the model declined, 6 the API "
	"refused the key, 64 usage, 66 no such workspace, 69 no such box, 75 the task or session is held by "
	"another ward (try later), 130 cancelled\n",
	.optprefix = "+:",
};

const struct flag_cmd flagtab_chat = {
	.name = "chat",
	.page = "ward",
	.synopsis = "ward [chat] [FLAGS]   (at a terminal)",
	.summary = "the interactive session",
	.about = "An interactive session: type a task, watch the model work in its box, approve what needs "
		 "approving, interrupt with Esc or Ctrl-C, and keep going.\n",
	.groups = { { run_model, true }, { run_approve_edits, true }, { run_bounds, true }, { run_target, true }, { run_box, true },
		    { net_flags, true }, { mcp_flags }, { help_only } },
	.footer = SETTINGS_FOOTER,
	.optprefix = "+:",
};

const struct flag_cmd flagtab_acp = {
	.name = "acp",
	.page = "ward-acp",
	.synopsis = "ward acp [FLAGS]   (started by an editor: Zed, JetBrains, any ACP client)",
	.summary = "ward as an Agent Client Protocol agent on stdin and stdout",
	.about = "A session/new makes a session and its box over the editor's directory (copy-on-write), a "
		 "prompt is a turn in it, the approvals are the editor's dialogs. Logs go to stderr. The bounds "
		 "(--deadline, --max-*) are each prompt's.\n",
	.groups = { { run_model, true }, { run_approve_edits, true }, { run_bounds, true }, { run_box, true },
		    { net_flags, true }, { mcp_flags }, { acp_refused }, { help_only } },
	.footer = SETTINGS_FOOTER
	"The changes a session made stay in its layers: `ward diff` and `ward apply` show and apply them.\n",
	.optprefix = "+:",
};

static const struct flag mcp_list_own[] = {
	{ "json", 0, 'j', NULL, .help = "one JSON array: [{name, transport, state, why?, restarts, tools}]" },
	HELP,
	END,
};

const struct flag_cmd flagtab_mcp_list = {
	.name = "mcp list",
	.page = "ward-mcp",
	.synopsis = "ward mcp list [--json] [FLAGS of ward run]",
	.summary = "the MCP servers a run would start, and their tools",
	.about = "Start the MCP servers ward run would start (your config file's \"mcpServers\", the workspace's "
		 ".mcp.json once trusted, --mcp-config files) in a box of their own, and show each one's state "
		 "and tools (as the model sees them: mcp__SERVER__TOOL). The box is destroyed after. A server's "
		 "stdio process runs inside the box, with its limits and network rules; an HTTP server is reached "
		 "through the box's egress proxy (allow its host with --allow-host). Tools need approval unless "
		 "the server marks them read-only.\n",
	.groups = { { run_model, true }, { run_approve_auto, true }, { run_bounds, true }, { run_target, true }, { run_box, true },
		    { net_flags, true }, { mcp_flags }, { mcp_list_own } },
	.optprefix = "+:",
};

static const struct flag config_own[] = {
	{ "json", 0, 'j', NULL, .help = "one JSON object" },
	HELP,
	END,
};

const struct flag_cmd flagtab_config = {
	.name = "config",
	.page = "ward-config",
	.synopsis = "ward config [--json] [FLAGS of ward run]",
	.summary = "the settings in force, and where each came from",
	.about = "The settings ward run would use, one a line: the value in force and where it came from (flag, "
		 "env VAR, user file PATH, project file PATH, or default). Give ward run's flags to see their "
		 "effect.\n",
	.groups = { { run_model, true }, { run_approve_auto, true }, { run_bounds, true }, { run_target, true }, { run_box, true },
		    { net_flags, true }, { config_own } },
	.optprefix = "+:",
};

/* What makes a box (box_flags_parse's letters). */
static const struct flag box_flags[] = {
	{ "name", 0, 'n', "NAME", .dnote = "generated", .help = "the box's name" },
	{ "ttl", 0, 't', "DUR", FLAG_DEFAULT_MS, .dnum = BOX_DEFAULT_TTL_MS, .help = "destroy after DUR; 0: never" },
	{ "idle", 0, 'i', "DUR", FLAG_DEFAULT_MS, .dnum = BOX_DEFAULT_IDLE_MS,
	  .help = "after DUR idle, --on-idle's action; 0: never. Idle is no call and, for destroy, no client "
		  "attached" },
	{ "on-idle", 0, 'O', "ACTION", .dnote = "hibernate for a --persistent box, else destroy",
	  .help = "destroy, or hibernate: keep /workspace's changes and /tmp on disk, end every process; the "
		  "next call wakes the box" },
	{ "cold-after", 0, 'C', "DUR", .dnote = "never",
	  .help = "a box hibernated this long has its saved state compressed and moved to the store" },
	{ "store", 0, 'D', "WHERE", .dnote = "the state dir's cold/",
	  .help = "where cold state goes: a directory or s3://BUCKET/PREFIX (AWS_ACCESS_KEY_ID, "
		  "AWS_SECRET_ACCESS_KEY, AWS_REGION; WARD_S3_ENDPOINT for an S3-compatible server)" },
	{ "persistent", 0, 'p', NULL, .help = "outlive the process that created it (else it dies with it)" },
	{ "memory", 0, 'm', "SIZE", FLAG_DEFAULT_SIZE, .dnum = BOX_DEFAULT_MEMORY, .help = "memory ceiling" },
	{ "pids", 0, 'P', "N", FLAG_DEFAULT_NUM, .dnum = BOX_DEFAULT_PIDS, .help = "process ceiling" },
	{ "cpus", 0, 'c', "N", .dnote = "no ceiling", .help = "CPU ceiling in CPUs, e.g. 1 or 0.5 (cgroup v2 only)" },
	{ "disk", 0, 'K', "SIZE", FLAG_DEFAULT_SIZE, .dnum = BOX_DEFAULT_DISK,
	  .help = "disk ceiling of the workspace's and the root's changes (enforced as root with loop devices; "
		  "without root, of the workspace's through fuse2fs and fuse-overlayfs; see ward doctor)" },
	{ "workspace", 0, 'w', "DIR", .help = "the task's directory at /workspace (copy-on-write)" },
	{ "image", 0, 'M', "REF",
	  .help = "the box's root: an image (ward image ls; pulled when not here) instead of the host's own "
		  "/usr; the box is tied to its digest" },
	{ "rw", 0, 'r', NULL, .help = "make /workspace a live read-write view of DIR instead" },
	{ "allow-git-changes", 0, 'G', NULL,
	  .help = "leave DIR's git directories (.git) writable in the box (else read-only)" },
	{ "grace", 0, 'g', "DUR", FLAG_DEFAULT_MS, .dnum = BUDGET_GRACE_MS, .help = "SIGTERM-to-SIGKILL grace on cancel" },
	{ "backend", 0, 'b', "B", FLAG_DEFAULT_TEXT, .dtext = BOX_DEFAULT_BACKEND,
	  .help = "ns (namespaces), vm (a QEMU microVM), or auto (vm with KVM, else ns)" },
	{ "no-snapshot", 0, 'S', NULL, .help = "vm: cold-boot instead of restoring the cached snapshot" },
	{ "label", 0, 'L', "KEY=VALUE",
	  .help = "metadata the box carries (repeatable): shown by ls and info, kept in every record of the "
		  "journal of each session that uses the box; ls --label filters" },
	{ "publish", 0, 'U', "[[ADDR:]HOSTPORT:]PORT",
	  .help = "open the box's PORT to the host (repeatable; ns only): at 127.0.0.1 unless ADDR is given, on "
		  "a port the kernel picks unless HOSTPORT is; ward box port BOX says where" },
	END,
};

/* A command's limits, for box run and box exec. */
static const struct flag box_cmd_flags[] = {
	{ "timeout", 0, 'T', "DUR", FLAG_DEFAULT_MS, .dnum = BASH_TIMEOUT_DEFAULT_S * 1000LL,
	  .help = "the command's time limit" },
	{ "idle-timeout", 0, 'I', "DUR", .help = "stop the command after DUR without output" },
	END,
};

const struct flag_cmd flagtab_box_create = {
	.name = "box create",
	.page = "ward-box",
	.synopsis = "ward box create [FLAGS]",
	.summary = "create a box and print its name",
	.groups = { { box_flags }, { net_flags }, { help_only } },
	.optprefix = "+:",
};

const struct flag_cmd flagtab_box_run = {
	.name = "box run",
	.page = "ward-box",
	.synopsis = "ward box run [FLAGS] -- CMD...",
	.summary = "create a box, run a command, destroy the box",
	.groups = { { box_flags }, { net_flags }, { box_cmd_flags }, { help_only } },
	.optprefix = "+:",
};

const struct flag_cmd flagtab_box_exec = {
	.name = "box exec",
	.page = "ward-box",
	.synopsis = "ward box exec BOX [FLAGS] -- CMD...",
	.summary = "run a command in a box, streaming its output",
	.groups = { { box_cmd_flags }, { help_only } },
	.optprefix = "+:",
};

static const struct flag pool_own[] = {
	{ "size", 0, FLAG_BOX_SIZE, "N", .help = "how many boxes to keep ready (1 to 64)" },
	END,
};

const struct flag_cmd flagtab_box_pool = {
	.name = "box pool",
	.page = "ward-box",
	.synopsis = "ward box pool --size N [FLAGS]",
	.summary = "keep N boxes made ahead and ready for create",
	.about = "Until SIGINT or SIGTERM. A vm pool box is restored and waits for its guest's start; an ns pool box "
		 "is made whole. --publish, --name and --no-snapshot are for one box.\n",
	.groups = { { pool_own }, { box_flags }, { net_flags }, { help_only } },
	.optprefix = "+:",
};

static const struct flag report_own[] = {
	{ "json", 0, 'j', NULL, .help = "one JSON object: {\"tasks\": [...], \"totals\": {...}}" },
	{ "markdown", 0, 'm', NULL, .help = "a GitHub table and totals (for $GITHUB_STEP_SUMMARY)" },
	{ "junit", 0, 'J', "FILE",
	  .help = "JUnit XML into FILE (written whole, then renamed); - is stdout. A task not done is a "
		  "<failure>, one with no readable result an <error>; the classname is ward.TASKFILE (the task "
		  "file's name less .jsonl)" },
	{ "task-file", 0, 'F', "F",
	  .help = "the tasks that should be there: an id of F with no DIR/ID is \"missing\" (an array element "
		  "that never ran), not left out" },
	HELP,
	END,
};

const struct flag_cmd flagtab_report = {
	.name = "report",
	.page = "ward-report",
	.synopsis = "ward report [--json | --markdown] [--junit FILE] [--task-file F] DIR",
	.summary = "gather what a fleet's runs left in DIR",
	.about = "Gather what `ward run --task-file F --task-index I --out DIR` left in DIR: one row per task "
		 "directory DIR/ID (sorted by id) from its result.json, and the totals. A directory without "
		 "result.json is \"missing\", or \"unfinished\" when it has a journal.jsonl or events.jsonl (still "
		 "running, or killed); a result.json that is not valid JSON, lacks a field or is over 1 MiB is "
		 "\"unreadable\", with the reason.\n"
		 "Without --json or --markdown: a table: id, stop, exit code, rounds, calls, tokens (in+out), "
		 "cost, duration, files changed; why each task not done stopped; totals (per stop, done %, "
		 "tokens, cost, duration p50/p90/p99 by nearest rank).\n",
	.groups = { { report_own } },
	.footer = "Exit status: 0 when every task is done, 1 when one is not (or DIR has none), 64 usage.\n",
	.optprefix = ":",
};

/* An image's unpack (pull and import). */
static const struct flag image_limits[] = {
	{ "max-files", 0, 'F', "N", FLAG_DEFAULT_NUM, .dnum = IMAGE_MAX_FILES,
	  .help = "refuse an image of more entries than N" },
	{ "max-size", 0, 'Z', "SIZE", FLAG_DEFAULT_SIZE, .dnum = IMAGE_MAX_BYTES,
	  .help = "refuse an image whose files hold more than SIZE" },
	{ "json", 0, 'j', NULL, .help = "print {\"digest\"} and nothing on stderr but errors" },
	HELP,
	END,
};

static const struct flag image_pull_own[] = {
	{ "authfile", 0, 'a', "FILE", .help = "the auth file to use" },
	{ "tls-verify", 0, 't', "BOOL", .optional = true, .dkind = FLAG_DEFAULT_TEXT, .dtext = "true",
	  .help = "false: talk plain HTTP, or HTTPS without checking the certificate" },
	END,
};

const struct flag_cmd flagtab_image_pull = {
	.name = "image pull",
	.page = "ward-image",
	.synopsis = "ward image pull REF [FLAGS]",
	.summary = "pull an image, verify and unpack it, and print its digest",
	.about = "Pull REF (e.g. debian:bookworm, ghcr.io/OWNER/NAME:TAG, NAME@sha256:...) through skopeo, for "
		 "linux/amd64, verify and unpack it, and print its digest. Registry logins are skopeo's and "
		 "podman's: the containers auth file ($REGISTRY_AUTH_FILE, else "
		 "$XDG_RUNTIME_DIR/containers/auth.json), and ~/.docker/config.json.\n",
	.groups = { { image_pull_own }, { image_limits } },
	.optprefix = ":",
};

static const struct flag image_import_own[] = {
	{ "name", 0, 'n', "NAME[:TAG]", .help = "name it so too" },
	END,
};

const struct flag_cmd flagtab_image_import = {
	.name = "image import",
	.page = "ward-image",
	.synopsis = "ward image import FILE [FLAGS]",
	.summary = "import an image from an archive or an OCI layout",
	.about = "Import an image from FILE: a `docker save` archive, an OCI archive (skopeo copy ... "
		 "oci-archive:FILE), either one compressed, or an OCI image layout directory. Every blob is "
		 "verified, the image unpacked, named as the archive names it, and its digest printed.\n",
	.groups = { { image_import_own }, { image_limits } },
	.optprefix = ":",
};

static const struct flag prune_own[] = {
	{ "older-than", 0, 'o', "DUR", .help = "sessions not written to for DUR (e.g. 168h for a week, 30m)" },
	{ "state", 0, 's', "STOP",
	  .help = "sessions whose last stop is STOP (done, cancelled, deadline, ...; none: never stopped); "
		  "repeatable, any of them" },
	{ "all", 0, 'a', NULL, .help = "every session (with neither of the above)" },
	{ "dry-run", 0, 'n', NULL, .help = "say what would go and how much it holds, remove nothing" },
	HELP,
	END,
};

const struct flag_cmd flagtab_sessions_prune = {
	.name = "sessions prune",
	.page = "ward-sessions",
	.synopsis = "ward sessions prune [--older-than DUR] [--state STOP]... [--all] [--dry-run]",
	.summary = "remove old sessions and their kept changes",
	.groups = { { prune_own } },
	.footer = "Each pruned session loses its journal, its kept workspace changes (ward diff and ward apply no "
		  "longer find them) and their checkpoints. A session whose box is kept, or that a ward has open, "
		  "is left, with a line saying why.\n",
	.optprefix = "+:",
};

static const struct flag json_help[] = {
	{ "json", 0, 'j', NULL, .help = "the list as JSON" },
	HELP,
	END,
};

const struct flag_cmd flagtab_sessions = {
	.name = "sessions",
	.page = "ward-sessions",
	.synopsis = "ward sessions [--json]",
	.summary = "list the sessions (ward run's and the terminal's), or prune them",
	.about = "Every session, when it was last written to, how it ended, how often it was compacted.\n",
	.groups = { { json_help } },
	.optprefix = ":",
};

static const struct flag diff_own[] = {
	{ "allow-git-changes", 0, 'g', NULL, .help = "show the changes under .git in full (else only named)" },
	HELP,
	END,
};

const struct flag_cmd flagtab_diff = {
	.name = "diff",
	.page = "ward-sessions",
	.synopsis = "ward diff [--allow-git-changes] SESSION",
	.summary = "show the workspace changes a run left",
	.groups = { { diff_own } },
	.optprefix = ":",
};

static const struct flag apply_own[] = {
	{ "force", 0, 'f', NULL, .help = "apply over files changed in the tree since the run (their edits are lost)" },
	{ "allow-git-changes", 0, 'g', NULL, .help = "apply the changes under .git too (hooks, config: git runs them)" },
	HELP,
	END,
};

const struct flag_cmd flagtab_apply = {
	.name = "apply",
	.page = "ward-sessions",
	.synopsis = "ward apply [--force] [--allow-git-changes] SESSION",
	.summary = "apply the workspace changes a run left",
	.groups = { { apply_own } },
	.optprefix = ":",
};

const struct flag_cmd flagtab_image_ls = {
	.name = "image ls",
	.page = "ward-image",
	.synopsis = "ward image ls [--json]",
	.summary = "list the images: names, digest, size, last use",
	.groups = { { json_help } },
	.optprefix = ":",
};

static const struct flag prune_json[] = {
	{ "json", 0, 'j', NULL, .help = "what was removed, and the bytes freed, as JSON" },
	HELP,
	END,
};

const struct flag_cmd flagtab_image_prune = {
	.name = "image prune",
	.page = "ward-image",
	.synopsis = "ward image prune [--json]",
	.summary = "remove the images no name points to and no box uses",
	.groups = { { prune_json } },
	.optprefix = ":",
};

static const struct flag box_ls_own[] = {
	{ "json", 0, 'j', NULL, .help = "the list as JSON" },
	{ "label", 0, 'L', "KEY=VALUE", .help = "only the boxes with this label (repeatable: all of them)" },
	HELP,
	END,
};

const struct flag_cmd flagtab_box_ls = {
	.name = "box ls",
	.page = "ward-box",
	.synopsis = "ward box ls [--json] [--label KEY=VALUE ...]",
	.summary = "list boxes",
	.groups = { { box_ls_own } },
	.optprefix = ":",
};

static const struct flag vm_image_own[] = {
	{ "force", 0, 'f', NULL, .help = "build it again even when the cache has one for this ward-guest" },
	HELP,
	END,
};

const struct flag_cmd flagtab_vm_image_build = {
	.name = "vm-image build",
	.page = "ward-vm-image",
	.synopsis = "ward vm-image build [--force]",
	.summary = "build the vm backend's kernel and initramfs (cached)",
	.about = "From the host's own kernel; vm boxes build it on first use too.\n",
	.groups = { { vm_image_own } },
	.optprefix = ":",
};

static const struct flag ward_own[] = {
	{ "version", 'V', 'V', NULL, .help = "print the version and exit" },
	HELP,
	END,
};

const struct flag_cmd flagtab_ward = {
	.name = "",
	.page = "ward",
	.synopsis = "ward COMMAND [ARGS]",
	.summary = "an agent turn-loop runtime: a model's tool calls run in a sandbox",
	.groups = { { ward_own } },
	.optprefix = "+:",
};

const struct flag_cmd *const flagtab_cmds[] = {
	&flagtab_ward,	     &flagtab_chat,	&flagtab_run,	   &flagtab_config, &flagtab_acp, &flagtab_mcp_list,
	&flagtab_box_create, &flagtab_box_run,	&flagtab_box_exec, &flagtab_box_pool, &flagtab_image_pull,
	&flagtab_box_ls, &flagtab_image_import, &flagtab_image_ls, &flagtab_image_prune, &flagtab_sessions,
	&flagtab_sessions_prune, &flagtab_diff, &flagtab_apply, &flagtab_report,
	&flagtab_vm_image_build,
	NULL,
};
