#!/usr/bin/env python3
"""`openclip serve` under hostile clients (docs/SERVE.md, "Under attack"; issue 25's probes):
for each case, a fresh server (test-tiny, random weights, default limits), the answer the
client got, and the server's peak RSS (VmHWM) over its baseline after one warm request.
Usage: scripts/serve_hostile.py build/openclip [--round4]   (stdlib + Debian's python3-pil)
--round4: only issue 40's cases (and issue 42's server items), for before/after rows;
--gaps: only the cases of issue 40's second pass (rate limit, trickled bodies, clients that
do not read), for before/after rows;
--no-files: without the index/lock/HNSW cases."""
import base64, io, json, os, re, resource, socket, struct, subprocess, sys, tempfile, threading, time, zlib

BIN = sys.argv[1] if len(sys.argv) > 1 else 'build/openclip'
ROUND4 = '--round4' in sys.argv
GAPS = '--gaps' in sys.argv
WORK = tempfile.mkdtemp(prefix='serve_hostile_')


def status_of(pid, key):
    for line in open(f'/proc/{pid}/status'):
        if line.startswith(key + ':'):
            return int(line.split()[1]) / 1024  # MB
    return 0.0


class Server:
    def __init__(self, *args, nofile=None):
        limit = (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))) if nofile else None
        self.p = subprocess.Popen([BIN, 'serve', '--model', 'test-tiny', '--random-init', '--port', '0', *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=limit)
        for line in self.p.stdout:
            m = re.search(r'listening on http://127\.0\.0\.1:(\d+)/', line)
            if m:
                self.port = int(m.group(1))
                break
        threading.Thread(target=lambda: [None for _ in self.p.stdout], daemon=True).start()
        self.request('POST', '/v1/embed/text', json.dumps({'text': 'warm up'}))
        self.base = status_of(self.p.pid, 'VmHWM')

    def request(self, method, path, body='', headers='', timeout=60):
        return raw(self.port, f'{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n'
                   f'Content-Type: application/json\r\nContent-Length: {len(body)}\r\n{headers}\r\n'.encode() +
                   (body.encode() if isinstance(body, str) else body), timeout)

    def peak(self):
        return status_of(self.p.pid, 'VmHWM') - self.base

    def stop(self, limit=120):
        """SIGTERM; seconds to exit, or 'never' (SIGKILL after `limit` s)."""
        t = time.time()
        self.p.terminate()
        try:
            self.p.wait(limit)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            return 'never'
        return time.time() - t

    def cpu(self):
        return sum(int(x) for x in open(f'/proc/{self.p.pid}/stat').read().rsplit(')', 1)[1].split()[11:13]) / os.sysconf('SC_CLK_TCK')


def raw(port, data, timeout=60, chunks=None, source=None):
    """Sends data (or an iterable of chunks, from a thread) from the loopback address `source`,
    reads until close. Returns (status or 'reset'/'timeout', seconds)."""
    t = time.time()
    s = socket.create_connection(('127.0.0.1', port), source_address=(source, 0) if source else None)
    s.settimeout(timeout)

    def send():
        try:
            for c in (chunks if chunks is not None else [data]):
                s.sendall(c)
        except OSError:
            pass  # the server answered and closed before we were done: expected for refusals
    th = threading.Thread(target=send, daemon=True)
    th.start()
    got = b''
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except socket.timeout:
        return 'timeout', time.time() - t
    except OSError:
        if not got:
            return 'reset', time.time() - t
    s.close()
    got = re.sub(rb'^(HTTP/1\.1 1\d\d [^\r]*\r\n\r\n)+', b'', got)  # interim answers (100 Continue)
    m = re.match(rb'HTTP/1\.1 (\d+)', got)
    return (int(m.group(1)) if m else 'none'), time.time() - t


def connections(port, n, first_bytes, read_answer=False, source=None):
    """n connections (from the loopback address `source`) that sent first_bytes (and read the
    answer when asked)."""
    out = []
    for _ in range(n):
        c = socket.create_connection(('127.0.0.1', port), source_address=(source, 0) if source else None)
        c.sendall(first_bytes)
        if read_answer:
            c.recv(65536)
        out.append(c)
    return out


def report(name, answer, srv, extra=''):
    print(f'{name:44s} answer {str(answer):10s} peak RSS +{srv.peak():7.1f} MB over {srv.base:6.1f} MB {extra}', flush=True)


def zeros_gzip(n):
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    return b''.join(c.compress(block) for _ in range(n >> 20)) + c.flush()


def webp_bomb():
    from PIL import Image
    buf = io.BytesIO()
    Image.new('RGB', (5000, 5000), (7, 7, 7)).save(buf, 'WEBP', lossless=True)
    return buf.getvalue()


def main():
    print(f'== hostile clients  {time.strftime("%F %T")}  load: {open("/proc/loadavg").read().strip()}  {BIN}')
    if GAPS:
        return gaps()
    if ROUND4:
        return round4()
    s = Server()
    gz = zeros_gzip(1 << 30)
    report(f'gzip body {len(gz) >> 10} KB -> 1 GiB', s.request('POST', '/v1/embed/text', gz, 'Content-Encoding: gzip\r\n')[0], s)
    s.stop()

    s = Server()
    head = b'POST /v1/embed/text HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n'
    mib = b'100000\r\n' + b'a' * (1 << 20) + b'\r\n'
    report('chunked body 256 MiB (limit 32 MiB)', raw(s.port, None, chunks=[head] + [mib] * 256)[0], s)
    s.stop()

    s = Server()
    w = base64.b64encode(webp_bomb()).decode()
    body = json.dumps({'images': [w] * 16})
    report(f'16 WebP of 5000x5000 in {len(body) >> 10} KB', s.request('POST', '/v1/embed/image', body)[0], s)
    s.stop()

    from PIL import Image
    import random
    os.makedirs(f'{WORK}/img', exist_ok=True)
    Image.frombytes('RGB', (1000, 1000), random.Random(0).randbytes(3_000_000)).save(f'{WORK}/img/big.png')
    subprocess.run([BIN, 'index', 'build', '--model', 'test-tiny', '--random-init', '--images', f'{WORK}/img',
                    '--out', f'{WORK}/idx'], check=True, capture_output=True)
    s = Server('--index', f'{WORK}/idx')
    ranges = 'Range: bytes=' + ','.join(['0-'] * 200) + '\r\n'
    size = os.path.getsize(f'{WORK}/img/big.png')
    report(f'200 ranges on a {size / 1e6:.1f} MB image', s.request('GET', '/v1/images/0', '', ranges)[0], s)
    s.stop()

    s = Server()
    report('1 MB request line', raw(s.port, b'GET /' + b'a' * (1 << 20) + b' HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')[0], s)
    lines = [b'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n'] + [b'X-A: b\r\n' * 10000] * 200 + [b'\r\n']
    report('2,000,000 header lines', raw(s.port, None, chunks=lines)[0], s)
    s.stop()

    s = Server()
    stop = threading.Event()
    socks = connections(s.port, 200, b'POST /v1/embed/text HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ')

    def dribble():
        while not stop.is_set():
            for c in socks:
                try:
                    c.send(b'a')
                except OSError:
                    pass
            time.sleep(1)
    threading.Thread(target=dribble, daemon=True).start()
    lat = []
    for _ in range(8):
        lat.append(s.request('POST', '/v1/embed/text', json.dumps({'text': 'normal client'}))[1])
        time.sleep(1)
    stop.set()
    report('slowloris 200 conns, 1 byte/s each', 'served', s, f'normal request max {max(lat) * 1000:.0f} ms over 8')
    for c in socks:
        c.close()
    s.stop()

    s = Server()
    def overflows():
        t = open('/proc/net/netstat').read().split('\n')
        keys, vals = t[0].split(), t[1].split()
        return int(vals[keys.index('ListenOverflows')])
    before, answers = overflows(), [None] * 300
    def one(i):
        answers[i] = s.request('POST', '/v1/embed/text', json.dumps({'text': f'burst {i}'}), timeout=120)[0]
    ths = [threading.Thread(target=one, args=(i,)) for i in range(300)]
    [t.start() for t in ths]
    [t.join() for t in ths]
    counts = {k: answers.count(k) for k in set(answers)}
    report('300 concurrent requests', 'see ->', s, f'{counts}, ListenOverflows +{overflows() - before} (system-wide)')
    s.stop()

    s = Server()
    idle = connections(s.port, 120, b'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', read_answer=True)
    cpu = lambda: sum(int(x) for x in open(f'/proc/{s.p.pid}/stat').read().rsplit(')', 1)[1].split()[11:13])
    c0 = cpu()
    time.sleep(4)
    report('120 idle keep-alive conns', 'idle', s, f'CPU {(cpu() - c0) / os.sysconf("SC_CLK_TCK") / 4 * 100:.1f}% of a core')
    for c in idle:
        c.close()
    s.stop()

    s = Server()
    slow = connections(s.port, 5, b'POST /v1/embed/text HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a')
    time.sleep(0.5)
    print(f'{"SIGTERM, 5 slow clients (drain 10 s)":44s} exited after {s.stop():.1f} s', flush=True)


def normal(srv):
    """A normal text request from 127.0.0.1: (status, seconds)."""
    return srv.request('POST', '/v1/embed/text', json.dumps({'text': 'normal client'}), timeout=30)


def png_chunk(tag, data):
    return struct.pack('>I', len(data)) + tag + data + struct.pack('>I', zlib.crc32(tag + data))


def ztxt_png(n):
    """A 1x1 PNG with n zTXt chunks of 7.9 MB each (about 7.7 KB deflated each)."""
    text = png_chunk(b'zTXt', b'k\0\0' + zlib.compress(bytes(7_900_000), 9))
    ihdr = png_chunk(b'IHDR', struct.pack('>IIBBBBB', 1, 1, 8, 2, 0, 0, 0))
    idat = png_chunk(b'IDAT', zlib.compress(b'\0\0\0\0'))
    return b'\x89PNG\r\n\x1a\n' + ihdr + text * n + idat + png_chunk(b'IEND', b'')


def one_pixel_png():
    ihdr = png_chunk(b'IHDR', struct.pack('>IIBBBBB', 1, 1, 8, 2, 0, 0, 0))
    return b'\x89PNG\r\n\x1a\n' + ihdr + png_chunk(b'IDAT', zlib.compress(b'\0\0\0\0')) + png_chunk(b'IEND', b'')


def round4_index():
    """An index of one image, then that image replaced by a link to a file outside the folder."""
    from PIL import Image
    os.makedirs(f'{WORK}/r4/img', exist_ok=True)
    Image.new('RGB', (32, 32), (1, 2, 3)).save(f'{WORK}/r4/img/a.png')
    Image.new('RGB', (32, 32), (3, 2, 1)).save(f'{WORK}/r4/img/b.png')
    subprocess.run([BIN, 'index', 'build', '--model', 'test-tiny', '--random-init', '--images', f'{WORK}/r4/img',
                    '--out', f'{WORK}/r4/idx'], check=True, capture_output=True)
    open(f'{WORK}/r4/secret.txt', 'w').write('root:x:0:0:secret\n')
    os.remove(f'{WORK}/r4/img/a.png')
    os.symlink(f'{WORK}/r4/secret.txt', f'{WORK}/r4/img/a.png')
    return f'{WORK}/r4/idx'


def round4_files():
    """Issue 40 items 1-3 (the files, the lock, HNSW) outside the server."""
    idx = round4_index()
    s = Server('--index', idx)
    st, t = s.request('GET', '/v1/images/0')
    report('image replaced by a link to secret.txt', st, s, f'({t * 1000:.0f} ms; 200 = served)')
    s.stop()
    os.makedirs(f'{WORK}/r4/lockrun', exist_ok=True)
    open(f'{WORK}/r4/victim', 'w').write('precious\n')
    os.symlink(f'{WORK}/r4/victim', f'{WORK}/r4/lockrun/.lock')
    r = subprocess.run([BIN, 'index', 'build', '--model', 'test-tiny', '--random-init', '--images', f'{WORK}/r4/img',
                        '--out', f'{WORK}/r4/lockrun'], capture_output=True, text=True)
    print(f'{".lock -> victim, index build --out":44s} rc {r.returncode}, victim now {open(f"{WORK}/r4/victim").read()!r}', flush=True)
    os.remove(f'{WORK}/r4/img/a.png')
    subprocess.run([BIN, 'index', 'build', '--model', 'test-tiny', '--random-init', '--images', f'{WORK}/r4/img',
                    '--out', f'{WORK}/r4/hnsw', '--faiss', 'hnsw'], check=True, capture_output=True)
    meta = json.load(open(f'{WORK}/r4/hnsw/meta.json'))
    gen = f'{WORK}/r4/hnsw/gen-{meta["generation"]:06d}/'
    b = bytearray(open(gen + 'faiss.index', 'rb').read())
    at = 37
    for v in range(5):
        n = struct.unpack_from('<Q', b, at)[0]
        at += 8 + n * (8 if v in (0, 3) else 4)
    struct.pack_into('<i', b, at + 16, 2_000_000_000)  # upper_beam
    open(gen + 'faiss.index', 'wb').write(b)
    import hashlib
    meta['files']['faiss.index'] = hashlib.sha256(b).hexdigest()
    json.dump(meta, open(f'{WORK}/r4/hnsw/meta.json', 'w'))
    t = time.time()
    r = subprocess.run(['/usr/bin/time', '-f', '%M', BIN, 'index', 'search', f'{WORK}/r4/hnsw', '--text', 'hi'],
                       capture_output=True, text=True)
    err = [l for l in r.stderr.splitlines() if 'error' in l or 'terminate' in l][:1]
    print(f'{"HNSW upper_beam 2e9, index search":44s} rc {r.returncode} in {time.time() - t:.1f} s, '
          f'peak {int(r.stderr.split()[-1]) / 1024:.0f} MB: {err}', flush=True)


def round4():
    if '--no-files' not in sys.argv:  # (the HNSW case made a binary from before it allocate 20 GB)
        round4_files()

    s = Server()  # 1000 slots held by one address, one header byte each
    socks = connections(s.port, 1000, b'G', source='127.0.0.2')
    st, t = normal(s)
    report('1000 conns from one address, 1 byte each', st, s, f'normal request from another: {st} in {t * 1000:.0f} ms')
    [c.close() for c in socks]
    s.stop()

    s = Server()
    socks = connections(s.port, 32, b'POST /v1/embed/text HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n'
                        b'Content-Length: 33554432\r\n\r\n', source='127.0.0.3')
    st, t = normal(s)
    report('32 headers announcing 32 MiB, no body', st, s, f'normal request with a body: {st} in {t * 1000:.0f} ms')
    [c.close() for c in socks]
    s.stop()

    s = Server()
    body = json.dumps({'texts': ['abandoned work ' * 20] * 64})
    socks = []
    for _ in range(256):
        c = socket.create_connection(('127.0.0.1', s.port), source_address=('127.0.0.4', 0))
        c.sendall(f'POST /v1/embed/text HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n'
                  f'Content-Length: {len(body)}\r\n\r\n{body}'.encode())
        socks.append(c)
    [c.close() for c in socks]
    t0, first = time.time(), normal(s)[0]
    st = first
    while st != 200 and time.time() - t0 < 120:
        st = normal(s)[0]
    report('256 x 64 texts sent and dropped', first, s, f'first normal request {first}; a normal request served '
           f'{time.time() - t0:.1f} s after the drop ({st})')
    for c in range(256):
        c = socket.create_connection(('127.0.0.1', s.port), source_address=('127.0.0.4', 0))
        c.sendall(f'POST /v1/embed/text HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n'
                  f'Content-Length: {len(body)}\r\n\r\n{body}'.encode())
        socks.append(c)
    print(f'{"SIGTERM with 256 x 64 texts queued (drain 10 s)":44s} exited after {s.stop(60)} s', flush=True)
    [c.close() for c in socks]

    s = Server()
    one = base64.b64encode(one_pixel_png()).decode()
    body = json.dumps({'images': [one] * 256})
    ths = [threading.Thread(target=lambda: s.request('POST', '/v1/embed/image', body)) for _ in range(16)]
    [t.start() for t in ths]
    [t.join() for t in ths]
    report(f'16 x 256 copies of a 1x1 PNG ({len(body) >> 10} KB each)', 'done', s)
    s.stop()

    s = Server()
    png = base64.b64encode(ztxt_png(100)).decode()
    st, t = s.request('POST', '/v1/embed/image', json.dumps({'image': png}))
    report(f'1x1 PNG + 100 zTXt of 7.9 MB ({len(png) >> 10} KB)', st, s, f'{t:.1f} s')
    s.stop()

    s = Server()
    sts = []
    for total in (65536, 131072, 196608):
        head = (f'POST /v1/embed/text HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n'
                f'Content-Length: {{}}\r\n\r\n')
        text = json.dumps({'text': 'half-closed'})
        n = total - len(head.format(0)) - len(text)
        n -= len(str(len(text) + n)) - 1
        req = head.format(len(text) + n).encode() + text.encode() + b' ' * n
        c = socket.create_connection(('127.0.0.1', s.port))
        c.settimeout(10)
        c.sendall(req)
        c.shutdown(socket.SHUT_WR)
        got = b''
        try:
            while (b := c.recv(65536)):
                got += b
        except OSError:
            pass
        got = re.sub(rb'^(HTTP/1\.1 1\d\d [^\r]*\r\n\r\n)+', b'', got)  # an interim 100 Continue
        sts.append((len(req), int(got[9:12]) if got.startswith(b'HTTP/1.1 ') else 'none'))
    report('whole request then SHUT_WR, 64/128/192 KiB', sts, s)
    s.stop()

    per_client = ['--max-connections-per-client', '2000']  # the cap is not what is measured here
    if '--max-connections-per-client' not in subprocess.run([BIN, 'serve', '--help'], capture_output=True, text=True).stdout:
        per_client = []  # a binary from before the cap
    s = Server(*per_client, nofile=256)
    stop = threading.Event()
    def flood():
        held = []
        while not stop.is_set():
            held = [c for c in held if c.fileno() >= 0]
            while len(held) < 400 and not stop.is_set():
                try:
                    held.append(socket.create_connection(('127.0.0.1', s.port), timeout=1, source_address=('127.0.0.5', 0)))
                except OSError:
                    break
            for c in held[:50]:
                c.close()
            held = held[50:]
            time.sleep(0.05)
        [c.close() for c in held]
    th = threading.Thread(target=flood, daemon=True)
    th.start()
    time.sleep(1)
    c0 = s.cpu()
    time.sleep(3)
    cpu = (s.cpu() - c0) / 3 * 100
    took = s.stop(15)
    stop.set()
    print(f'{"ulimit -n 256, 400 conns reconnecting":44s} server CPU {cpu:.0f}% of a core; SIGTERM: exit after '
          f'{took if took == "never" else f"{took:.1f}"} s', flush=True)

    s = Server()
    big = json.dumps({'image': base64.b64encode(os.urandom(23 << 20)).decode()})
    for _ in range(40):
        s.request('POST', '/v1/embed/image', big)
    time.sleep(1)
    report('idle after 40 x 32 MB requests', 'VmRSS', s, f'RSS now {status_of(s.p.pid, "VmRSS"):.0f} MB')
    s.stop()


def has_flag(flag):
    return flag in subprocess.run([BIN, 'serve', '--help'], capture_output=True, text=True).stdout


def trickle(port, n, source, stop):
    """n connections (from `source`) that send a body header, then a byte per second each;
    returns [seconds until each was answered or closed] once `stop` is set or all were cut."""
    socks, t0 = [], time.time()
    for _ in range(n):
        c = socket.create_connection(('127.0.0.1', port), source_address=(source, 0))
        c.sendall(b'POST /v1/embed/text HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n'
                  b'Content-Length: 100000\r\n\r\n{"text": ')
        c.setblocking(False)
        socks.append(c)
    cut = [None] * n
    while not stop.is_set() and None in cut:
        for i, c in enumerate(socks):
            if cut[i] is not None:
                continue
            try:
                if c.recv(4096) is not None:
                    cut[i] = time.time() - t0
                    continue
            except BlockingIOError:
                pass
            except OSError:
                cut[i] = time.time() - t0
                continue
            try:
                c.send(b' ')
            except OSError:
                cut[i] = time.time() - t0
        time.sleep(1)
    [c.close() for c in socks]
    return cut


def gaps():
    """Issue 40's second pass: --rate-limit, --min-body-rate, --max-unsent-bytes."""
    rate = ['--rate-limit', '10'] if has_flag('--rate-limit') else []
    s = Server(*rate)
    health = b'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'
    sts = [raw(s.port, health, source='127.0.0.8')[0] for _ in range(200)]  # one address, back to back
    st, t = normal(s)
    report(f'200 requests back to back {" ".join(rate) or "(no limit)"}', f'{sts.count(200)}x200', s,
           f'{sts.count(429)} x 429; a normal request from another address {st} in {t * 1000:.0f} ms')
    s.stop()

    s = Server()
    stop = threading.Event()
    res = {}
    th = threading.Thread(target=lambda: res.update(cut=trickle(s.port, 50, '127.0.0.6', stop)), daemon=True)
    th.start()
    time.sleep(1)
    st, t = normal(s)
    t0 = time.time()
    while th.is_alive() and time.time() - t0 < 70:
        time.sleep(0.5)
    stop.set()
    th.join()
    cut = [c for c in res['cut'] if c is not None]
    report('50 bodies trickled at 1 byte/s', st, s, f'normal request {st} in {t * 1000:.0f} ms; {len(cut)}/50 cut off, '
           f'the last after {max(cut) if cut else float("nan"):.1f} s')
    s.stop()

    from PIL import Image
    os.makedirs(f'{WORK}/gaps/img', exist_ok=True)
    Image.new('RGB', (32, 32), (1, 2, 3)).save(f'{WORK}/gaps/img/a.png')
    Image.frombytes('RGB', (2000, 2000), os.urandom(12_000_000)).save(f'{WORK}/gaps/img/b.png', compress_level=1)
    subprocess.run([BIN, 'index', 'build', '--model', 'test-tiny', '--random-init', '--images', f'{WORK}/gaps/img',
                    '--out', f'{WORK}/gaps/idx'], check=True, capture_output=True)
    size = os.path.getsize(f'{WORK}/gaps/img/b.png') >> 20
    unsent = ['--max-unsent-bytes', '200000'] if has_flag('--max-unsent-bytes') else []
    s = Server('--index', f'{WORK}/gaps/idx', *unsent)
    readers = []
    for _ in range(100):
        c = socket.socket()
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        c.bind(('127.0.0.7', 0))
        c.connect(('127.0.0.1', s.port))
        c.sendall(b'GET /v1/images/1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
        readers.append(c)
    time.sleep(4)
    st, t = s.request('GET', '/v1/images/1')
    closed = 0
    for c in readers:
        c.settimeout(0.2)
        try:
            while c.recv(1 << 20):
                pass
            closed += 1
        except socket.timeout:
            pass
        except OSError:
            closed += 1
        c.close()
    report(f'100 non-reading clients of a {size} MB image {" ".join(unsent)}', st, s,
           f'a reading client {st} in {t * 1000:.0f} ms; {closed}/100 non-readers refused (503) or cut off')
    s.stop()


main()
