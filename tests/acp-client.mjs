// An editor's side of ACP, driven by the protocol's own TypeScript library
// (@agentclientprotocol/sdk, resolved from NODE_PATH's package), against
// `ward acp` with a replayed model. What it saw goes to a JSON file that
// tests/integration/acp.sh checks:
//   node acp-client.mjs SDK_DIR RESULT.json CWD -- COMMAND...
// COMMAND is ward acp (through a tee of its stdout, so the test can check
// every line ward wrote). The replay script's turns are acp.sh's.
import { spawn, execFileSync } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [sdkDir, resultPath, cwd, sep, ...cmd] = process.argv.slice(2);
if (sep !== "--" || !cmd.length) {
	console.error("usage: acp-client.mjs SDK_DIR RESULT.json CWD -- COMMAND...");
	process.exit(64);
}
const acp = await import(pathToFileURL(path.join(sdkDir, "node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js")));

const res = { updates: [], permissions: [], prompts: {}, fsReads: [], order: [], sids: [] };
// The editor's unsaved buffers, by absolute path (ACP_BUFFERS, JSON); a
// file with none is read from disk, as an editor does.
const buffers = JSON.parse(process.env.ACP_BUFFERS ?? "{}");
const save = () => writeFileSync(resultPath, JSON.stringify(res, null, 1));
// Answers for the permission requests, in order.
const answers = ["allow_once", "allow_once", "reject_once"];
let waiters = [];
let agentCtx = null;
let slowRead = false;
const seen = (pred) =>
	new Promise((resolve, reject) => {
		if (res.updates.some(pred)) return resolve();
		const t = setTimeout(() => reject(new Error("timed out waiting for an update")), 20000);
		waiters.push({ pred, resolve: () => { clearTimeout(t); resolve(); } });
	});

const child = spawn(cmd[0], cmd.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const app = acp
	.client({ name: "ward-test" })
	.onRequest("session/request_permission", async ({ params }) => {
		// As an editor does when the person cancels while it asks: the
		// cancel, then the pending request answered cancelled.
		if (String(params.toolCall?.rawInput?.command ?? "").includes("canary-perm")) {
			res.permissions.push({ params, answered: "cancelled" });
			await agentCtx.notify("session/cancel", { sessionId: params.sessionId });
			return { outcome: { outcome: "cancelled" } };
		}
		const optionId = answers[res.permissions.length] ?? "reject_once";
		res.permissions.push({ params, answered: optionId });
		return { outcome: { outcome: "selected", optionId } };
	})
	.onRequest("fs/read_text_file", async ({ params }) => {
		res.fsReads.push(params);
		if (slowRead) {
			// The person cancels while the editor is slow to answer.
			slowRead = false;
			await agentCtx.notify("session/cancel", { sessionId: params.sessionId });
			await new Promise((r) => setTimeout(r, 3000));
		}
		if (params.path in buffers) return { content: buffers[params.path] };
		return { content: readFileSync(params.path, "utf8") };
	})
	.onNotification("session/update", ({ params }) => {
		res.updates.push(params.update);
		res.sids.push(params.sessionId);
		waiters = waiters.filter((w) => (w.pred(params.update) ? (w.resolve(), false) : true));
	});

const timed = async (name, p) => {
	const t0 = Date.now();
	try {
		const r = await p;
		res.prompts[name] = { stopReason: r.stopReason, ms: Date.now() - t0 };
	} catch (e) {
		res.prompts[name] = { error: String(e?.message ?? e), ms: Date.now() - t0 };
	}
	save();
};

try {
	await app.connectWith(stream, async (ctx) => {
		agentCtx = ctx;
		const multi = !!process.env.ACP_MULTI;
		const init = await ctx.request("initialize", {
			protocolVersion: acp.PROTOCOL_VERSION,
			clientCapabilities: multi ? { fs: { readTextFile: true, writeTextFile: false } } : {},
		});
		res.initialize = init;
		if (multi) {
			// Two sessions over one directory, each its own box; their
			// prompts sent at once (the second waits for the first), a
			// queued one cancelled, then /diff and /apply.
			const a = await ctx.request("session/new", { cwd, mcpServers: [] });
			const b = await ctx.request("session/new", { cwd, mcpServers: [] });
			res.sessions = [a.sessionId, b.sessionId];
			const ask = (sessionId, text) => ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
			const pa = timed("a", ask(a.sessionId, "look")).then(() => res.order.push("a"));
			const pb = timed("b", ask(b.sessionId, "look")).then(() => res.order.push("b"));
			await Promise.all([pa, pb]);
			// A prompt waiting for another session's, cancelled: answered
			// cancelled at once, the running one goes on.
			const pa2 = timed("a2", ask(a.sessionId, "wait")).then(() => res.order.push("a2"));
			await seen((u) => u.sessionUpdate === "tool_call" && u.rawInput?.command === "sleep 2");
			const pc = timed("queuedCancel", ask(b.sessionId, "never")).then(() => res.order.push("queuedCancel"));
			await new Promise((r) => setTimeout(r, 200));
			await ctx.notify("session/cancel", { sessionId: b.sessionId });
			await Promise.all([pa2, pc]);
			const box = (sid, f) =>
				execFileSync(process.env.WARD, ["box", "exec", "s-" + sid, "--", "cat", "/workspace/" + f]).toString();
			res.boxA = box(a.sessionId, "unsaved.txt");
			res.boxB = box(b.sessionId, "unsaved.txt");
			res.treeBefore = readFileSync(path.join(cwd, "unsaved.txt"), "utf8");
			const cmd = async (name, text) => {
				const n = res.updates.length;
				await timed(name, ask(a.sessionId, text));
				res[name + "Text"] = res.updates.slice(n).filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");
			};
			await cmd("diff", "/diff");
			res.treeAfterDiff = readFileSync(path.join(cwd, "unsaved.txt"), "utf8");
			await cmd("apply", "/apply");
			res.treeAfterApply = readFileSync(path.join(cwd, "unsaved.txt"), "utf8");
			// A cancel while ward waits for the editor's buffer.
			const c3 = await ctx.request("session/new", { cwd, mcpServers: [] });
			slowRead = true;
			await timed("fsCancel", ask(c3.sessionId, "look"));
			return;
		}
		if (process.env.ACP_EXTRA) {
			// The task tool's children, a background job, /jobs and
			// /rewind, over one session.
			const s = await ctx.request("session/new", { cwd, mcpServers: [] });
			res.sessionId = s.sessionId;
			const ask = (text) => ctx.request("session/prompt", { sessionId: s.sessionId, prompt: [{ type: "text", text }] });
			const cmd = async (name, text) => {
				const n = res.updates.length;
				await timed(name, ask(text));
				res[name + "Text"] = res.updates.slice(n).filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");
			};
			await timed("agents", ask("agents"));
			await timed("job", ask("job"));
			await cmd("jobs", "/jobs");
			await cmd("jobsBad", "/jobs kill x");
			await cmd("rewindList", "/rewind");
			await cmd("rewind", "/rewind 2");
			await cmd("diff", "/diff");
			await cmd("notCommand", "/diff job");
			return;
		}
		const mcp = process.env.ACP_MCP;
		if (mcp) {
			// The editor's MCP servers: one ward would read another way
			// (${...}) refused, then the given ones started in the box.
			try {
				await ctx.request("session/new", {
					cwd,
					mcpServers: [{ name: "bad", command: "sh", args: ["-c", "echo ${ANTHROPIC_API_KEY}"], env: [] }],
				});
				res.badMcp = "answered";
			} catch (e) {
				res.badMcp = String(e?.message ?? e) + " " + JSON.stringify(e?.data ?? "");
			}
			const s = await ctx.request("session/new", { cwd, mcpServers: JSON.parse(mcp) });
			res.sessionId = s.sessionId;
			await timed("mcp", ctx.request("session/prompt", { sessionId: s.sessionId, prompt: [{ type: "text", text: "mcp" }] }));
			return;
		}
		const load = process.env.ACP_LOAD;
		if (load) {
			// session/load: a bad ID, the wrong directory, then the session.
			const tryLoad = async (sessionId, dir) => {
				try {
					await ctx.request("session/load", { sessionId, cwd: dir, mcpServers: [] });
					return "loaded";
				} catch (e) {
					return String(e?.message ?? e) + " " + JSON.stringify(e?.data ?? "");
				}
			};
			res.badLoad = await tryLoad("../" + load, cwd);
			res.wrongCwd = await tryLoad(load, "/");
			res.load = await tryLoad(load, cwd);
			return;
		}
		const s = await ctx.request("session/new", { cwd, mcpServers: [] });
		res.sessionId = s.sessionId;
		res.modes = s.modes;
		// A bad request: an error, and the connection goes on.
		try {
			await ctx.request("session/prompt", { sessionId: "no-such", prompt: [{ type: "text", text: "x" }] });
			res.badSession = "answered";
		} catch (e) {
			res.badSession = String(e?.message ?? e);
		}
		const prompt = (text) => ctx.request("session/prompt", { sessionId: s.sessionId, prompt: [{ type: "text", text }] });
		await timed("hello", prompt("hello"));
		await timed("change", prompt("change a file"));
		// Modes are ward's approval modes: auto runs the sleep unasked.
		try {
			await ctx.request("session/set_mode", { sessionId: s.sessionId, modeId: "nope" });
			res.badMode = "answered";
		} catch (e) {
			res.badMode = String(e?.message ?? e);
		}
		await ctx.request("session/set_mode", { sessionId: s.sessionId, modeId: "auto" });
		// The cancel: once the sleep runs in the box, session/cancel.
		const p = prompt("sleep");
		await seen((u) => u.sessionUpdate === "tool_call" && u.kind === "execute");
		const bash = res.updates.find((u) => u.sessionUpdate === "tool_call" && u.kind === "execute").toolCallId;
		await seen((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === bash && u.status === "in_progress");
		for (let i = 0; i < 100; i++) {
			try {
				execFileSync("pgrep", ["-f", "sleep 97.3"]);
				break;
			} catch {
				await new Promise((r) => setTimeout(r, 50));
			}
		}
		res.sleepSeen = true;
		const t0 = Date.now();
		await ctx.notify("session/cancel", { sessionId: s.sessionId });
		await timed("sleep", p);
		res.prompts.sleep.ms = Date.now() - t0;
		try {
			execFileSync("pgrep", ["-f", "sleep 97.3"]);
			res.sleepAfter = "running";
		} catch {
			res.sleepAfter = "gone";
		}
		// A cancel while a permission is asked: the call never runs.
		await ctx.request("session/set_mode", { sessionId: s.sessionId, modeId: "ask" });
		await timed("permCancel", prompt("ask again"));
		// The background child of the cancelled call would make the canary
		// 2 s after it started; 3 s on, ask the box whether it did.
		await new Promise((r) => setTimeout(r, 3000));
		const box = "s-" + s.sessionId;
		const ask = (f) =>
			execFileSync(process.env.WARD, ["box", "exec", box, "--", "sh", "-c", `test -e /workspace/${f} && echo made || echo absent`])
				.toString()
				.trim();
		res.canary = ask("canary-acp");
		res.canaryPerm = ask("canary-perm");
		res.written = ask("a.txt");
	});
} catch (e) {
	res.error = String(e?.stack ?? e);
}
save();
child.stdin.end();
const code = await new Promise((r) => child.on("exit", (c, sig) => r(sig ?? c)));
res.exit = code;
save();
