#!/usr/bin/env python3
"""A byte pipe between TCP and a Unix socket, for the cluster tests: a worker
in a network namespace of its own reaches NATS only through it.

  nats_bridge.py host UNIX_PATH NATS_PORT    listens on UNIX_PATH (host side),
                                             connects each client to 127.0.0.1:NATS_PORT
  nats_bridge.py inside PORT UNIX_PATH       listens on 127.0.0.1:PORT (in the
                                             namespace), connects to UNIX_PATH
"""
import os
import socket
import sys
import threading


def pipe(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(listener, connect):
    while True:
        client, _ = listener.accept()
        try:
            upstream = connect()
        except OSError:
            client.close()
            continue
        threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()


def exit_with_parent():
    parent = os.getppid()

    def watch():
        while True:
            if os.getppid() != parent:
                os._exit(0)
            threading.Event().wait(0.3)

    threading.Thread(target=watch, daemon=True).start()


def main():
    exit_with_parent()
    mode = sys.argv[1]
    if mode == "host":
        path, port = sys.argv[2], int(sys.argv[3])
        if os.path.exists(path):
            os.unlink(path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(16)
        serve(listener, lambda: socket.create_connection(("127.0.0.1", port)))
    else:
        port, path = int(sys.argv[2]), sys.argv[3]
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(16)

        def connect():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            return s

        serve(listener, connect)


if __name__ == "__main__":
    main()
