#!/usr/bin/env python3
"""Writes a small WASI (preview 1) module, in base64, for the exec tests: wasm has no compiler on
Debian 12, so the modules are assembled here byte by byte (the binary format, version 1).

  make-wasm.py hello   prints "hello from wasm N" (N its argument count) to stdout, exits 3
  make-wasm.py hog     grows its memory 1 MiB at a time, writing every byte, until growing
                       fails (then exits 7) or it is killed
"""
import base64
import sys


def leb_u(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def leb_s(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if (n == 0 and not b & 0x40) or (n == -1 and b & 0x40):
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


def vec(items):
    return leb_u(len(items)) + b"".join(items)


def name(s):
    return leb_u(len(s)) + s.encode()


def section(sid, body):
    return bytes([sid]) + leb_u(len(body)) + body


I32 = 0x7F


def functype(params, results):
    return b"\x60" + vec([bytes([p]) for p in params]) + vec([bytes([r]) for r in results])


def i32_const(n):
    return b"\x41" + leb_s(n)


def call(f):
    return b"\x10" + leb_u(f)


def module(body, locals_, data):
    types = vec([
        functype([I32] * 4, [I32]),   # 0: fd_write(fd, iovs, iovs_len, nwritten) -> errno
        functype([I32], []),          # 1: proc_exit(code)
        functype([], []),             # 2: _start
        functype([I32, I32], [I32]),  # 3: args_sizes_get(argc, argv_buf_size) -> errno
    ])
    wasi = "wasi_snapshot_preview1"
    imports = vec([
        name(wasi) + name("fd_write") + b"\x00" + leb_u(0),
        name(wasi) + name("proc_exit") + b"\x00" + leb_u(1),
        name(wasi) + name("args_sizes_get") + b"\x00" + leb_u(3),
    ])
    funcs = vec([leb_u(2)])                       # function 3 (after 3 imports): _start
    memory = vec([b"\x00" + leb_u(1)])            # one page, no maximum
    exports = vec([name("memory") + b"\x02" + leb_u(0), name("_start") + b"\x00" + leb_u(3)])
    code = vec([leb_u(len(locals_ + body)) + locals_ + body])
    datas = vec([b"\x00" + i32_const(0) + b"\x0b" + vec([bytes([c]) for c in data])])
    return (b"\x00asm\x01\x00\x00\x00" + section(1, types) + section(2, imports) +
            section(3, funcs) + section(5, memory) + section(7, exports) +
            section(10, code) + section(11, datas))


def hello():
    # Memory: 0 iovec {16, 18}; 8 nwritten; 12 argc; 16 "hello from wasm ?\n" (the ? at 32).
    text = b"hello from wasm ?\n"
    data = (16).to_bytes(4, "little") + len(text).to_bytes(4, "little") + bytes(8) + text
    body = (
        i32_const(12) + i32_const(8) + call(2) + b"\x1a" +             # args_sizes_get; drop
        i32_const(32) +                                                # address of '?'
        i32_const(12) + b"\x28\x02\x00" +                              # i32.load argc
        i32_const(ord("0")) + b"\x6a" +                                # + '0'
        b"\x3a\x00\x00" +                                              # i32.store8
        i32_const(1) + i32_const(0) + i32_const(1) + i32_const(8) + call(0) + b"\x1a" +
        i32_const(3) + call(1) + b"\x0b")
    return module(body, vec([]), data)


def hog():
    body = (
        b"\x03\x40" +                                                  # loop
        i32_const(16) + b"\x40\x00" + b"\x22\x00" +                    # memory.grow 16; tee 0
        i32_const(-1) + b"\x46" + b"\x04\x40" +                        # == -1: if
        i32_const(7) + call(1) + b"\x0b" +                             #   proc_exit(7) end
        b"\x20\x00" + i32_const(16) + b"\x74" +                        # old pages << 16
        i32_const(1) + i32_const(16 << 16) + b"\xfc\x0b\x00" +         # memory.fill 1 MiB
        b"\x0c\x00" + b"\x0b" + b"\x0b")                               # br 0; end; end
    return module(body, vec([leb_u(1) + bytes([I32])]), b"")


if __name__ == "__main__":
    kind = sys.argv[1] if len(sys.argv) > 1 else "hello"
    print(base64.b64encode({"hello": hello, "hog": hog}[kind]()).decode())
