#!/usr/bin/env python3
"""Memory of one warm worker (runner/warm_workers.hpp) as calls go by.

Starts loopr-runner for the no-net lane on a Unix socket, plays the daemon's
side of the runner protocol (DESIGN.md section 4: 4-byte big-endian length,
then a JSON object), sends file-tool jobs for one worktree and prints the
worker's VmRSS/VmHWM (/proc/PID/status) after each batch. Run by hand:

  bench/warm_worker_memory.py build/bin
"""
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

bin_dir = sys.argv[1] if len(sys.argv) > 1 else "build/bin"
base = tempfile.mkdtemp(prefix="loopr-worker-memory-")
root = os.path.join(base, "root")
worktree = os.path.join(root, "wt")
os.makedirs(os.path.join(worktree, "tree"))
for i in range(2000):
    with open(os.path.join(worktree, "tree", f"f{i}.c"), "w") as out:
        out.write(f"int x{i};\n" * 200)
with open(os.path.join(worktree, "big.txt"), "w") as out:
    out.write("line\n" * 2_000_000)
sock_path = os.path.join(base, "runner.sock")
runner = subprocess.Popen(
    [os.path.join(bin_dir, "loopr-runner"), "--lane", "no-net", "--socket", sock_path,
     "--tool", os.path.join(bin_dir, "loopr-tool"), "--root", root, "--memory-mb", "1024"],
    stderr=subprocess.DEVNULL)
try:
    for _ in range(200):
        if os.path.exists(sock_path):
            break
        time.sleep(0.05)  # waiting for the runner to listen
    link = socket.socket(socket.AF_UNIX)
    link.connect(sock_path)
    pending = b""

    def receive():
        global pending
        while True:
            if len(pending) >= 4:
                size = struct.unpack(">I", pending[:4])[0]
                if len(pending) >= 4 + size:
                    message = json.loads(pending[4:4 + size])
                    pending = pending[4 + size:]
                    return message
            pending += link.recv(1 << 20)

    def send(message):
        data = json.dumps(message).encode()
        link.sendall(struct.pack(">I", len(data)) + data)

    receive()  # handshake
    send({"type": "handshake_ack", "accepted": True, "slots": 1})
    calls = 0

    def call(tool, args):
        global calls
        calls += 1
        send({"type": "job", "job_id": f"j{calls}", "tool": tool, "args": args,
              "worktree": worktree, "cwd": worktree, "env": {}, "timeout_ms": 60000,
              "max_output_bytes": 100000})
        while True:
            message = receive()
            if message["type"] == "result":
                if message["status"] != "success":
                    sys.exit(f"{tool} failed: {message}")
                return

    def worker_memory():
        # The worker gives memory back after it has replied: let it.
        time.sleep(0.2)
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read()
                if b"--serve" not in cmdline or worktree.encode() not in cmdline:
                    continue
                with open(f"/proc/{pid}/status") as f:
                    fields = dict(line.split(":", 1) for line in f.read().splitlines())
                return f"VmRSS {fields['VmRSS'].strip()} (anon {fields['RssAnon'].strip()}), VmHWM {fields['VmHWM'].strip()}, threads {fields['Threads'].strip()}"
            except OSError:
                continue
        return "no worker found"

    call("read_file", {"path": "big.txt", "limit": 10})
    print("after 1 read_file:                   ", worker_memory())
    for i in range(200):
        call("read_file", {"path": f"tree/f{i}.c"})
    print("after 200 read_file:                 ", worker_memory())
    for _ in range(20):
        call("grep", {"pattern": "x1", "path": "."})
    print("after 20 grep over 2,000 files:      ", worker_memory())
    call("read_file", {"path": "big.txt"})
    print("after read_file of a 10 MB file:     ", worker_memory())
    call("write_file", {"path": "w.txt", "content": "y" * (8 << 20)})
    print("after an 8 MiB write_file:           ", worker_memory())
    for _ in range(20):
        call("glob", {"pattern": "**/*.c"})
    print("after 20 glob:                       ", worker_memory())
finally:
    runner.kill()
    runner.wait()
    shutil.rmtree(base, ignore_errors=True)
