// WebSocket over HTTP/2 (extended CONNECT, RFC 8441) with Node's own http2 module, for the egress
// tests; frames are written and read by hand (RFC 6455 5.2), small ones only.
//   node h2-ws.cjs server PORT CERT KEY LOG   answers CONNECT :protocol websocket with 200, logs
//                                             each text frame and the authorization it came with,
//                                             and echoes "got:<text>"; prints "ready"
//   node h2-ws.cjs client URL AUTH TEXT       sends one masked text frame, prints "status:<s>",
//                                             then "echo:<text>" or "close:<code>:<reason>"
'use strict';
const fs = require('fs');
const http2 = require('http2');
const crypto = require('crypto');

function frame(opcode, payload, masked) {
	const len = payload.length;
	const head = [0x80 | opcode];
	if (len < 126) head.push((masked ? 0x80 : 0) | len);
	else head.push((masked ? 0x80 : 0) | 126, len >> 8, len & 0xff);
	if (!masked) return Buffer.concat([Buffer.from(head), payload]);
	const mask = crypto.randomBytes(4);
	const body = Buffer.from(payload);
	for (let i = 0; i < body.length; i++) body[i] ^= mask[i % 4];
	return Buffer.concat([Buffer.from(head), mask, body]);
}

// Parses whole frames off buf; returns [frames, rest].
function parse(buf) {
	const out = [];
	for (;;) {
		if (buf.length < 2) break;
		const masked = (buf[1] & 0x80) !== 0;
		let len = buf[1] & 0x7f, off = 2;
		if (len === 126) { if (buf.length < 4) break; len = buf.readUInt16BE(2); off = 4; }
		else if (len === 127) { if (buf.length < 10) break; len = Number(buf.readBigUInt64BE(2)); off = 10; }
		const mask = masked ? buf.subarray(off, off + 4) : null;
		if (masked) off += 4;
		if (buf.length < off + len) break;
		const payload = Buffer.from(buf.subarray(off, off + len));
		if (mask) for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i % 4];
		out.push({fin: (buf[0] & 0x80) !== 0, opcode: buf[0] & 0x0f, payload});
		buf = buf.subarray(off + len);
	}
	return [out, buf];
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'server') {
	const [port, cert, key, log] = args;
	const server = http2.createSecureServer({key: fs.readFileSync(key), cert: fs.readFileSync(cert),
		settings: {enableConnectProtocol: true}});
	server.on('stream', (stream, headers) => {
		if (headers[':method'] !== 'CONNECT' || headers[':protocol'] !== 'websocket') {
			stream.respond({':status': 404});
			stream.end();
			return;
		}
		const auth = headers['authorization'] || '';
		const ext = headers['sec-websocket-extensions'] || '';
		stream.respond({':status': 200});
		let buf = Buffer.alloc(0), text = '';
		stream.on('data', (d) => {
			let frames;
			[frames, buf] = parse(Buffer.concat([buf, d]));
			for (const f of frames) {
				if (f.opcode === 8) { stream.end(frame(8, f.payload, false)); return; }
				text += f.payload.toString();
				if (!f.fin) continue;
				fs.appendFileSync(log, `auth=${auth} ext=${ext} text=${text}\n`);
				stream.write(frame(1, Buffer.from('got:' + text), false));
				text = '';
			}
		});
		stream.on('error', () => {});
	});
	server.listen(Number(port), '127.0.0.1', () => console.log('ready'));
} else {
	const [url, auth, text] = args;
	const u = new URL(url);
	const timer = setTimeout(() => { console.log('timeout'); process.exit(1); }, 10000);
	const session = http2.connect(u.origin);
	session.on('error', (e) => { console.log('error:' + e.code); process.exit(1); });
	let started = false;
	session.on('remoteSettings', (settings) => {
		if (started || !settings.enableConnectProtocol) return;
		started = true;
		const req = session.request({':method': 'CONNECT', ':protocol': 'websocket',
			':scheme': 'https', ':path': u.pathname, ':authority': u.host,
			'sec-websocket-version': '13', 'authorization': auth,
			'sec-websocket-extensions': 'permessage-deflate'});
		req.on('response', (h) => {
			console.log('status:' + h[':status']);
			if (h[':status'] !== 200) { clearTimeout(timer); session.close(); return; }
			// Two frames of one message, the text split between them.
			const half = Math.floor(text.length / 2);
			req.write(Buffer.concat([
				(() => { const f = frame(1, Buffer.from(text.slice(0, half)), true); f[0] &= 0x7f; return f; })(),
				(() => { const f = frame(0, Buffer.from(text.slice(half)), true); return f; })()]));
		});
		let buf = Buffer.alloc(0);
		req.on('data', (d) => {
			let frames;
			[frames, buf] = parse(Buffer.concat([buf, d]));
			for (const f of frames) {
				if (f.opcode === 1) console.log('echo:' + f.payload.toString());
				else if (f.opcode === 8) console.log('close:' + f.payload.readUInt16BE(0) + ':' + f.payload.subarray(2).toString());
				clearTimeout(timer);
				req.close();
				session.close();
			}
		});
		req.on('error', (e) => { console.log('stream-error:' + e.code); clearTimeout(timer); session.close(); });
	});
}
