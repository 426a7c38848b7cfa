#!/usr/bin/python3
"""Reference side of tests/download: hand-built Parquet fixtures, a loopback HTTP server that
serves generated images and every failure `openclip data download` must record, a URL list
with the expected img2dataset stats, and a checker for the produced shards.

  parquet OUTDIR                         write the Parquet fixtures + <name>.json expectations
  serve --port-file F [--slow S]         serve on 127.0.0.1 (port and a refused port go to F)
  urllist --port P --refused Q --out DIR [--images N] [--shard-size K]
  check --out DIR --expected E           verify shards, stats and sizes.json against E

Parquet files are built by hand (Thrift compact protocol written here) so that every path the
C++ reader has is exercised: PLAIN and dictionary encodings, optional columns with nulls,
data pages v1 and v2, uncompressed / snappy (literal-only stream) / gzip / zstd (CLI), several
row groups and several pages per chunk.
"""
import argparse, gzip, http.server, io, json, os, random, socket, socketserver, struct, subprocess, sys
import tarfile, threading, time, zlib
from urllib.parse import quote

# ---------------------------------------------------------------- thrift compact writer
I32, I64, BIN, LIST, STRUCT, TRUE, FALSE = 5, 6, 8, 9, 12, 1, 2


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def zz(n):
    return (n << 1) ^ (n >> 63)


def enc_value(t, v):
    if t in (I32, I64):
        return varint(zz(v))
    if t == BIN:
        v = v.encode() if isinstance(v, str) else v
        return varint(len(v)) + v
    if t == STRUCT:
        return v  # already encoded
    if t == LIST:
        et, items = v
        n = len(items)
        head = bytes([(n << 4) | et]) if n < 15 else bytes([0xF0 | et]) + varint(n)
        return head + b"".join(enc_value(et, x) for x in items)
    raise ValueError(t)


def tstruct(fields):
    """fields: [(id, type, value)] in increasing id order; bool fields carry their type."""
    out, last = bytearray(), 0
    for fid, t, v in fields:
        d = fid - last
        out += bytes([(d << 4) | t]) if 0 < d <= 15 else bytes([t]) + varint(zz(fid))
        if t not in (TRUE, FALSE):
            out += enc_value(t, v)
        last = fid
    out.append(0)
    return bytes(out)


# ---------------------------------------------------------------- parquet pieces
CODECS = {"none": 0, "snappy": 1, "gzip": 2, "zstd": 6}


def snappy_literal(data):
    out = bytearray(varint(len(data)))
    for i in range(0, len(data), 60000):
        chunk = data[i:i + 60000]
        n = len(chunk) - 1
        if n < 60:
            out.append(n << 2)
        else:
            out.append(61 << 2)
            out += struct.pack("<H", n)
        out += chunk
    return bytes(out)


def compress(codec, data):
    if codec == "none":
        return data
    if codec == "snappy":
        return snappy_literal(data)
    if codec == "gzip":
        return gzip.compress(data)
    if codec == "zstd":
        return subprocess.run(["zstd", "-q", "-c"], input=data, stdout=subprocess.PIPE, check=True).stdout
    raise ValueError(codec)


def plain(values):
    return b"".join(struct.pack("<I", len(v.encode())) + v.encode() for v in values)


def rle_runs(values, width):
    """RLE runs only (as definition levels are usually written)."""
    out, i, nb = bytearray(), 0, (width + 7) // 8
    while i < len(values):
        j = i
        while j < len(values) and values[j] == values[i]:
            j += 1
        out += varint((j - i) << 1) + values[i].to_bytes(nb, "little")
        i = j
    return bytes(out)


def bitpacked(values, width):
    """One bit-packed run (values padded to a multiple of 8)."""
    vals = list(values) + [0] * (-len(values) % 8)
    acc = nbits = 0
    out = bytearray(varint(((len(vals) // 8) << 1) | 1))
    for v in vals:
        acc |= v << nbits
        nbits += width
        while nbits >= 8:
            out.append(acc & 0xFF)
            acc >>= 8
            nbits -= 8
    return bytes(out)


def page_header(ptype, usize, csize, sub_id, sub):
    return tstruct([(1, I32, ptype), (2, I32, usize), (3, I32, csize), (sub_id, STRUCT, sub)])


def column_chunk(values, optional, codec, encoding, version, rows_per_page, file_pos):
    """Returns (bytes, ColumnMetaData fields) for one column chunk starting at file_pos."""
    out = bytearray()
    dict_off = None
    dictionary = []
    if encoding == "dict":
        for v in values:
            if v is not None and v not in dictionary:
                dictionary.append(v)
        raw = plain(dictionary)
        comp = compress(codec, raw)
        dict_off = file_pos
        out += page_header(2, len(raw), len(comp), 7, tstruct([(1, I32, len(dictionary)), (2, I32, 0)])) + comp
    data_off = file_pos + len(out)
    for p in range(0, len(values), rows_per_page):
        page = values[p:p + rows_per_page]
        present = [v for v in page if v is not None]
        defs = rle_runs([0 if v is None else 1 for v in page], 1) if optional else b""
        if encoding == "dict":
            width = max(1, (len(dictionary) - 1).bit_length())
            vals = bytes([width]) + bitpacked([dictionary.index(v) for v in present], width)
            enc = 8
        else:
            vals, enc = plain(present), 0
        if version == 1:
            raw = (struct.pack("<I", len(defs)) + defs if optional else b"") + vals
            comp = compress(codec, raw)
            sub = tstruct([(1, I32, len(page)), (2, I32, enc), (3, I32, 3), (4, I32, 3)])
            out += page_header(0, len(raw), len(comp), 5, sub) + comp
        else:
            comp = compress(codec, vals)
            nulls = len(page) - len(present)
            sub = tstruct([(1, I32, len(page)), (2, I32, nulls), (3, I32, len(page)), (4, I32, enc),
                           (5, I32, len(defs)), (6, I32, 0), (7, TRUE, None)])
            out += page_header(3, len(defs) + len(vals), len(defs) + len(comp), 8, sub) + defs + comp
    return bytes(out), data_off, dict_off, enc if encoding == "dict" else 0


def write_parquet(path, columns, codec="none", encoding="plain", version=1, row_group_rows=1000, rows_per_page=1000):
    """columns: [(name, values, optional)]."""
    n = len(columns[0][1])
    buf = bytearray(b"PAR1")
    row_groups = []
    for g in range(0, n, row_group_rows):
        chunks = []
        for name, values, optional in columns:
            start = len(buf)
            data, data_off, dict_off, _ = column_chunk(values[g:g + row_group_rows], optional, codec, encoding,
                                                       version, rows_per_page, start)
            buf += data
            md = [(1, I32, 6), (2, LIST, (I32, [0, 3] + ([8] if encoding == "dict" else []))), (3, LIST, (BIN, [name])),
                  (4, I32, CODECS[codec]), (5, I64, len(values[g:g + row_group_rows])), (6, I64, len(data)),
                  (7, I64, len(data)), (9, I64, data_off)]
            if dict_off is not None:
                md.append((11, I64, dict_off))
            chunks.append(tstruct([(2, I64, start), (3, STRUCT, tstruct(md))]))
        rows = min(row_group_rows, n - g)
        row_groups.append(tstruct([(1, LIST, (STRUCT, chunks)), (2, I64, 0), (3, I64, rows)]))
    schema = [tstruct([(4, BIN, "schema"), (5, I32, len(columns))])]
    for name, _, optional in columns:
        schema.append(tstruct([(1, I32, 6), (3, I32, 1 if optional else 0), (4, BIN, name), (6, I32, 0)]))
    meta = tstruct([(1, I32, 1), (2, LIST, (STRUCT, schema)), (3, I64, n), (4, LIST, (STRUCT, row_groups)),
                    (6, BIN, "openclip-cpp download_ref.py")])
    buf += meta + struct.pack("<I", len(meta)) + b"PAR1"
    with open(path, "wb") as f:
        f.write(buf)


def cmd_parquet(a):
    os.makedirs(a.outdir, exist_ok=True)
    rng = random.Random(1)
    words = ["a", "dog", "cat", "on", "the", "grass", "sofa", "with", "red", "ball", "ünïcode", "photo"]

    def caption(i):
        return " ".join(rng.choice(words) for _ in range(rng.randint(0, 8)))

    specs = [  # name, rows, codec, encoding, version, rows per group, rows per page, caption nulls
        ("plain_none_v1", 37, "none", "plain", 1, 1000, 1000, False),
        ("dict_snappy_v1", 250, "snappy", "dict", 1, 100, 40, True),
        ("plain_gzip_v2", 120, "gzip", "plain", 2, 50, 16, True),
        ("dict_zstd_v2", 90, "zstd", "dict", 2, 60, 25, True),
        ("plain_zstd_v1", 20, "zstd", "plain", 1, 7, 3, False),
    ]
    for name, n, codec, enc, ver, rg, rp, nulls in specs:
        urls = ["http://example.com/img/%d.jpg" % (i % max(1, n // 3) if enc == "dict" else i) for i in range(n)]
        caps = [None if nulls and i % 7 == 3 else caption(i) for i in range(n)]
        write_parquet(os.path.join(a.outdir, name + ".parquet"), [("URL", urls, False), ("TEXT", caps, nulls)],
                      codec, enc, ver, rg, rp)
        with open(os.path.join(a.outdir, name + ".json"), "w") as f:
            json.dump({"URL": urls, "TEXT": caps}, f, ensure_ascii=False)


# ---------------------------------------------------------------- images and the server
def image_size(i):
    return 24 + (i * 37) % 150, 20 + (i * 53) % 140


_cache, _lock, _flaky = {}, threading.Lock(), {}


def image_bytes(i, fmt):
    with _lock:
        if (i, fmt) in _cache:
            return _cache[(i, fmt)]
    from PIL import Image
    w, h = image_size(i)
    w, h = int(w * Handler.scale), int(h * Handler.scale)
    mode = "RGBA" if fmt == "png" and i % 5 == 0 else "RGB"
    im = Image.new(mode, (w, h), ((i * 40) % 256, (i * 90) % 256, (i * 150) % 256) + ((128,) if mode == "RGBA" else ()))
    for x in range(0, w, 4):
        im.putpixel((x, (x * 3 + i) % h), (255, 255, 255) + ((255,) if mode == "RGBA" else ()))
    b = io.BytesIO()
    im.save(b, "JPEG" if fmt == "jpg" else "PNG", quality=90)
    with _lock:
        _cache[(i, fmt)] = b.getvalue()
    return b.getvalue()


def png_bomb():
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    ihdr = struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 1000)) + chunk(b"IEND", b"")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    slow_s = 5.0
    scale = 1.0  # serve: --scale 4 gives MSCOCO-like 100..700 px images for throughput runs

    def log_message(self, *args):
        pass

    def send(self, code, body, ctype="image/jpeg", headers=(), length=None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(body)
            self.wfile.flush()
        except OSError:
            pass

    def do_GET(self):
        p = self.path.split("?")[0].strip("/").split("/")
        try:
            if p[0] == "img":  # img/<i>.<jpg|png>
                i, fmt = p[1].split(".")
                return self.send(200, image_bytes(int(i), fmt), "image/" + fmt)
            if p[0] == "status":  # status/<code>
                return self.send(int(p[1]), b"error page", "text/html")
            if p[0] == "redirect":  # redirect/<n>/<i>: n hops, then image i
                n, i = int(p[1]), int(p[2])
                self.send_response(302)
                self.send_header("Location", "/redirect/%d/%d" % (n - 1, i) if n > 1 else "/img/%d.jpg" % i)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if p[0] == "slow":
                time.sleep(self.slow_s)
                return self.send(200, image_bytes(0, "jpg"))
            if p[0] == "truncated":
                body = image_bytes(1, "jpg")
                self.send(200, body[:len(body) // 2], length=len(body))
                self.close_connection = True
                return
            if p[0] == "text":
                return self.send(200, b"<html><body>not an image</body></html>", "text/html")
            if p[0] == "huge":  # 2 MB; "huge/chunked" has no Content-Length
                body = b"\xff\xd8" + b"\0" * (2 << 20)
                if len(p) > 1:
                    self.send_response(200)
                    self.send_header("Content-Type", "image/jpeg")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.close_connection = True
                    try:
                        self.wfile.write(body)
                    except OSError:
                        pass
                    return
                return self.send(200, body)
            if p[0] == "flaky":  # flaky/<id>/<i>: 503 on the first request for <id>, then image i
                with _lock:
                    _flaky[p[1]] = _flaky.get(p[1], 0) + 1
                    first = _flaky[p[1]] == 1
                if first:
                    return self.send(503, b"try again", "text/html")
                return self.send(200, image_bytes(int(p[2]), "jpg"))
            if p[0] == "bomb":
                return self.send(200, png_bomb(), "image/png")
            if p[0] == "robots":  # robots/<header value>/<i>
                from urllib.parse import unquote
                return self.send(200, image_bytes(int(p[2]), "jpg"), headers=[("X-Robots-Tag", unquote(p[1]))])
        except Exception as e:  # noqa: a test server must answer
            return self.send(500, str(e).encode(), "text/plain")
        return self.send(404, b"not found", "text/html")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 1024


def cmd_serve(a):
    Handler.slow_s = a.slow
    Handler.scale = a.scale
    srv = Server(("127.0.0.1", 0), Handler)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    refused = s.getsockname()[1]
    s.close()  # nothing listens there any more: connection refused
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d %d\n" % (srv.server_address[1], refused))
    os.rename(tmp, a.port_file)
    srv.serve_forever()


# ---------------------------------------------------------------- URL list + expectations
def cases(port, refused, n_images):
    base = "http://127.0.0.1:%d" % port
    rows = []  # (url, caption, expected status, error, original (w, h) or None)
    for i in range(n_images):
        fmt = "png" if i % 3 == 0 else "jpg"
        rows.append((base + "/img/%d.%s" % (i, fmt), "caption %d" % i, "success", None, image_size(i)))
    F, R = "failed_to_download", "failed_to_resize"
    rows += [
        (base + "/status/404", "c404", F, "HTTP Error 404", None),
        (base + "/status/500", "c500", F, "HTTP Error 500", None),
        (base + "/status/403", "c403", F, "HTTP Error 403", None),
        (base + "/redirect/3/7", "redir ok", "success", None, image_size(7)),
        (base + "/redirect/30/8", "redir loop", F, "Number of redirects hit maximum amount", None),
        (base + "/slow", "slow", F, "Timeout was reached", None),
        (base + "/truncated", "trunc", F, "Transferred a partial file", None),
        (base + "/text", "html", R, "Image decoding error", None),
        (base + "/huge", "huge", F, "response body over 1000000 bytes", None),
        (base + "/huge/chunked", "huge chunked", F, "response body over 1000000 bytes", None),
        (base + "/bomb", "bomb", R, "image area too large", None),
        (base + "/robots/noai/9", "robots", F, "Use of image disallowed by X-Robots-Tag directive", None),
        (base + "/robots/%s/10" % quote("NoIndex, nofollow", safe=""), "robots2", F, "Use of image disallowed by X-Robots-Tag directive", None),
        (base + "/robots/%s/11" % quote("otherbot: noai", safe=""), "robots other ua", "success", None, image_size(11)),
        (base + "/robots/nofollow/12", "robots allowed", "success", None, image_size(12)),
        ("http://127.0.0.1:%d/x.jpg" % refused, "refused", F, "Couldn't connect to server", None),
        ("not a url", "bad url", F, "URL using bad/illegal format or missing URL", None),
    ]
    return rows


def cmd_urllist(a):
    rows = cases(a.port, a.refused, a.images)
    if a.only_images:  # throughput runs: every row is an image
        rows = rows[:a.images]
    random.Random(0).shuffle(rows)
    os.makedirs(a.out, exist_ok=True)
    # Every URL a second time with another caption: --first-caption-only keeps the first row.
    urls, caps = [], []
    for k, r in enumerate(rows):
        urls.append(r[0])
        caps.append(r[1])
        if k % 4 == 0:
            urls.append(r[0])
            caps.append("second caption")
    write_parquet(os.path.join(a.out, "urls.parquet"), [("URL", urls, False), ("TEXT", caps, True)],
                  "snappy", "dict", 1, 128, 50)
    shards = []
    for s in range(0, len(rows), a.shard_size):
        part = rows[s:s + a.shard_size]
        sd = {}
        for r in part:
            k = "success" if r[2] == "success" else r[3]
            sd[k] = sd.get(k, 0) + 1
        shards.append({"count": len(part), "successes": sum(r[2] == "success" for r in part),
                       "failed_to_download": sum(r[2] == "failed_to_download" for r in part),
                       "failed_to_resize": sum(r[2] == "failed_to_resize" for r in part), "status_dict": sd,
                       "samples": [[r[0], r[1], r[2], r[4]] for r in part]})
    with open(os.path.join(a.out, "expected.json"), "w") as f:
        json.dump({"shard_size": a.shard_size, "image_size": a.image_size, "shards": shards}, f)


def cmd_check(a):
    from PIL import Image
    exp = json.load(open(a.expected))
    k = 0
    n = exp["shard_size"]
    while 10 ** k < n:
        k += 1
    errs = []
    sizes = json.load(open(os.path.join(a.out, "sizes.json")))
    for s, sh in enumerate(exp["shards"]):
        st = json.load(open(os.path.join(a.out, "%05d_stats.json" % s)))
        for f in ("count", "successes", "failed_to_download", "failed_to_resize", "status_dict"):
            if st[f] != sh[f]:
                errs.append("shard %d %s: got %r want %r" % (s, f, st[f], sh[f]))
        if sizes.get("%05d.tar" % s) != sh["successes"]:
            errs.append("sizes.json %05d.tar: %r" % (s, sizes.get("%05d.tar" % s)))
        tf = tarfile.open(os.path.join(a.out, "%05d.tar" % s))
        members = {m.name: tf.extractfile(m).read() for m in tf.getmembers()}
        want = set()
        for i, (url, cap, status, orig) in enumerate(sh["samples"]):
            key = "%0*d" % (k + 5, s * 10 ** k + i)
            if status != "success":
                continue
            want |= {key + ".jpg", key + ".txt", key + ".json"}
            if key + ".jpg" not in members:
                errs.append("missing " + key)
                continue
            im = Image.open(io.BytesIO(members[key + ".jpg"]))
            if im.size != (exp["image_size"], exp["image_size"]) or im.format != "JPEG":
                errs.append("%s: %s %s" % (key, im.format, im.size))
            if members[key + ".txt"].decode() != cap:
                errs.append("%s caption %r want %r" % (key, members[key + ".txt"], cap))
            j = json.loads(members[key + ".json"])
            wantj = {"url": url, "caption": cap, "key": key, "status": "success", "error_message": None,
                     "width": exp["image_size"], "height": exp["image_size"], "original_width": orig[0],
                     "original_height": orig[1]}
            for f, v in wantj.items():
                if j.get(f) != v:
                    errs.append("%s json %s: %r want %r" % (key, f, j.get(f), v))
        if set(members) != want:
            errs.append("shard %d members differ: extra %s missing %s" % (s, sorted(set(members) - want)[:5],
                                                                          sorted(want - set(members))[:5]))
    print("\n".join(errs[:40]) if errs else "OK")
    return 1 if errs else 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("parquet"); p.add_argument("outdir")
    p = sub.add_parser("serve"); p.add_argument("--port-file", required=True); p.add_argument("--slow", type=float, default=5)
    p.add_argument("--scale", type=float, default=1)
    p = sub.add_parser("urllist"); p.add_argument("--port", type=int, required=True)
    p.add_argument("--refused", type=int, required=True); p.add_argument("--out", required=True)
    p.add_argument("--images", type=int, default=300); p.add_argument("--shard-size", type=int, default=100)
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--only-images", action="store_true")
    p = sub.add_parser("check"); p.add_argument("--out", required=True); p.add_argument("--expected", required=True)
    a = ap.parse_args()
    return {"parquet": cmd_parquet, "serve": cmd_serve, "urllist": cmd_urllist, "check": cmd_check}[a.cmd](a) or 0


if __name__ == "__main__":
    sys.exit(main())
