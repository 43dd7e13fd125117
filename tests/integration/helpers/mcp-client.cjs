// An MCP client made with the official TypeScript SDK (@modelcontextprotocol/sdk, installed by
// scripts/dev.sh mcp-sdk; NODE_PATH finds it) that spawns `$AIRLOCK mcp ARGS...` over stdio and
// plays a scenario. What it sees is printed as one JSON object on stdout, for the test to check;
// the server's stderr goes to the file $MCP_STDERR.
//
// Usage: node mcp-client.cjs SCENARIO [ARGS FOR airlock mcp...]
//   main     tools, run_code, a violation, a session's files and commands, a cancelled call,
//            calls at once, session_stop, a session left running at the end
//   limits   a call's policy, workspace and session ids, under the operator's options
'use strict';

const fs = require('fs');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const { LATEST_PROTOCOL_VERSION } = require('@modelcontextprotocol/sdk/types.js');

const [scenario, ...serverArgs] = process.argv.slice(2);
const seen = {};

function text(r) {
	return r.content && r.content[0] && r.content[0].text;
}

async function call(client, name, args, options) {
	return client.callTool({ name, arguments: args }, undefined, options);
}

async function main(client) {
	const tools = await client.listTools();
	seen.tools = tools.tools.map((t) => t.name).sort();
	seen.run_code_has_policy = 'policy' in tools.tools.find((t) => t.name === 'run_code').inputSchema.properties;

	let r = await call(client, 'run_code', { language: 'python', code: 'print(6 * 7)' });
	seen.python = { isError: r.isError, exit_code: r.structuredContent.exit_code, stdout: r.structuredContent.stdout };

	r = await call(client, 'run_code', {
		language: 'python',
		code: 'import ctypes\nprint(ctypes.CDLL(None).mount(b"x", b"/tmp", b"tmpfs", 0, None))\nraise SystemExit(5)',
	});
	seen.violation = {
		isError: r.isError,
		exit_code: r.structuredContent.exit_code,
		violations: r.structuredContent.violations.map((v) => v.kind + ':' + v.detail),
	};

	r = await call(client, 'session_start', { ttl: '10m' });
	const id = r.structuredContent.session_id;
	seen.session = { isError: r.isError, id };

	r = await call(client, 'write_file', { session_id: id, path: 'src/hello.txt', content: 'hi from mcp\n' });
	seen.write = { isError: r.isError, size: r.structuredContent.size };
	r = await call(client, 'read_file', { session_id: id, path: 'src/hello.txt' });
	seen.read = { isError: r.isError, content: r.structuredContent.content };
	r = await call(client, 'list_files', { session_id: id, path: 'src' });
	seen.list = r.structuredContent.entries.map((e) => e.name + ':' + e.type);

	r = await call(client, 'session_exec', {
		session_id: id,
		command: 'cat src/hello.txt; echo made > made.txt; exit 3',
	});
	seen.exec = { isError: r.isError, exit_code: r.structuredContent.exit_code, stdout: r.structuredContent.stdout };
	r = await call(client, 'read_file', { session_id: id, path: 'made.txt' });
	seen.made = r.structuredContent.content;
	r = await call(client, 'session_exec', { session_id: id, argv: ['/bin/sh', '-c', 'echo $0 $1', 'a', 'b'] });
	seen.argv = r.structuredContent.stdout;

	// A cancelled call: the client gives up after 1s, the server kills the command.
	const t0 = Date.now();
	try {
		await call(client, 'session_exec', { session_id: id, command: 'echo started > cancelled; sleep 60' },
			{ signal: AbortSignal.timeout(1000) });
		seen.cancel = 'answered';
	} catch (e) {
		seen.cancel = 'aborted';
	}
	await new Promise((res) => setTimeout(res, 1500));
	r = await call(client, 'session_exec', { session_id: id, command: 'ps -e -o comm= | grep -c "^sleep$" || true' });
	seen.sleeps_after_cancel = r.structuredContent.stdout.trim();
	seen.cancel_ms = Date.now() - t0;

	// Calls at once: each sleeps 2s.
	const t1 = Date.now();
	const both = await Promise.all([1, 2].map((i) =>
		call(client, 'run_code', { language: 'shell', code: `sleep 2; echo ${i}` })));
	seen.parallel = { outputs: both.map((b) => b.structuredContent.stdout.trim()), ms: Date.now() - t1 };

	r = await call(client, 'remove_file', { session_id: id, path: 'made.txt' });
	seen.removed = r.structuredContent.removed;
	r = await call(client, 'session_stop', { session_id: id });
	seen.stop = { isError: r.isError, stopped: r.structuredContent.stopped };
	r = await call(client, 'read_file', { session_id: id, path: 'src/hello.txt' });
	seen.after_stop = { isError: r.isError, text: text(r) };

	// Left running: the server stops it when the client goes.
	r = await call(client, 'session_start', {});
	seen.left_running = r.structuredContent.session_id;
	await client.ping();
	seen.ping = 'ok';
}

async function limits(client) {
	const tools = await client.listTools();
	const props = tools.tools.find((t) => t.name === 'run_code').inputSchema.properties;
	seen.schema = { policy: 'policy' in props, workspace: 'workspace' in props };
	const attempts = {
		policy_name: ['run_code', { language: 'shell', code: 'echo ran', policy: 'strict.json' }],
		policy_object: ['run_code', { language: 'shell', code: 'echo ran', policy: { labels: ['from-the-client'] } }],
		workspace: ['run_code', { language: 'shell', code: 'echo ran', workspace: process.env.CLIENT_WORKSPACE || '/etc' }],
		session_workspace: ['session_start', { workspace: '/etc' }],
		session_policy: ['session_start', { policy: { mounts: [{ source: '/', target: '/host', writable: true }] } }],
		traversal: ['run_code', { language: 'shell', code: 'echo ran', policy: '../escape.json' }],
		not_ours: ['read_file', { session_id: process.env.FOREIGN_SESSION || 's-00000000', path: 'secret.txt' }],
		foreign_exec: ['session_exec', { session_id: process.env.FOREIGN_SESSION || 's-00000000', command: 'cat secret.txt' }],
		foreign_stop: ['session_stop', { session_id: process.env.FOREIGN_SESSION || 's-00000000' }],
		bad_path: ['write_file', { session_id: 's-00000000', path: '../x', content: 'x' }],
	};
	for (const [k, [name, args]] of Object.entries(attempts)) {
		const r = await call(client, name, args);
		seen[k] = {
			isError: !!r.isError,
			text: text(r),
			stdout: r.structuredContent && r.structuredContent.stdout,
		};
	}
	try {
		await call(client, 'no_such_tool', {});
		seen.unknown_tool = 'answered';
	} catch (e) {
		seen.unknown_tool = String(e.code);
	}
}

(async () => {
	const transport = new StdioClientTransport({
		command: process.env.AIRLOCK,
		args: ['mcp', ...serverArgs],
		stderr: 'pipe',
		env: { ...process.env },
	});
	const errs = [];
	transport.stderr.on('data', (d) => errs.push(d));
	const client = new Client({ name: 'airlock-test', version: '1.0.0' });
	await client.connect(transport);
	seen.server = client.getServerVersion().name;
	seen.client_protocol = LATEST_PROTOCOL_VERSION;
	seen.server_pid = transport.pid;
	if (scenario === 'main')
		await main(client);
	else
		await limits(client);
	const t = Date.now();
	await client.close();
	seen.close_ms = Date.now() - t;
	if (process.env.MCP_STDERR)
		fs.writeFileSync(process.env.MCP_STDERR, Buffer.concat(errs));
	process.stdout.write(JSON.stringify(seen) + '\n');
})().catch((e) => {
	seen.exception = String(e && e.stack || e);
	process.stdout.write(JSON.stringify(seen) + '\n');
	process.exit(1);
});
