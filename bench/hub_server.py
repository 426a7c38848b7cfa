#!/usr/bin/env python3
"""A Hugging Face hub on 127.0.0.1 for bench/hub_download.sh: serves the files of REPO_DIR as
the repository ORG/NAME (HEAD/GET /ORG/NAME/resolve/<rev>/<file>, X-Repo-Commit, ETag = the
file's SHA-256 as for an LFS file, X-Linked-Size, Range requests), bodies sent with sendfile.

  hub_server.py PORT ORG/NAME REPO_DIR
"""
import hashlib
import http.server
import os
import socketserver
import sys

PORT, REPO, ROOT = int(sys.argv[1]), sys.argv[2], sys.argv[3]
COMMIT = "a" * 40
ETAGS = {}


def etag(path):
    if path not in ETAGS:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for b in iter(lambda: f.read(1 << 20), b""):
                h.update(b)
        ETAGS[path] = h.hexdigest()
    return ETAGS[path]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, body):
        prefix = f"/{REPO}/resolve/"
        if not self.path.startswith(prefix):
            return self.send_error(404)
        name = self.path[len(prefix):].split("/", 1)[1]
        path = os.path.join(ROOT, name)
        if "/.." in "/" + name or not os.path.isfile(path):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            return self.end_headers()
        size = os.path.getsize(path)
        start = 0
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            start = int(rng[6:].split("-")[0])
        self.send_response(206 if start else 200)
        self.send_header("X-Repo-Commit", COMMIT)
        self.send_header("ETag", f'"{etag(path)}"')
        self.send_header("X-Linked-Size", str(size))
        self.send_header("Content-Length", str(size - start))
        if start:
            self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
        self.end_headers()
        if body:
            self.wfile.flush()
            with open(path, "rb") as f:
                off = start
                while off < size:
                    off += os.sendfile(self.connection.fileno(), f.fileno(), off, size - off)

    def do_HEAD(self):
        self.answer(False)

    def do_GET(self):
        self.answer(True)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


Server(("127.0.0.1", PORT), Handler).serve_forever()
