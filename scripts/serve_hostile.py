#!/usr/bin/env python3
"""`openclip serve` under hostile clients (docs/SERVE.md, "Under attack"; issue 25's probes):
for each case, a fresh server (test-tiny, random weights, default limits), the answer the
client got, and the server's peak RSS (VmHWM) over its baseline after one warm request.
Usage: scripts/serve_hostile.py build/openclip   (stdlib + Debian's python3-pil)"""
import base64, io, json, os, re, socket, subprocess, sys, tempfile, threading, time, zlib

BIN = sys.argv[1] if len(sys.argv) > 1 else 'build/openclip'
WORK = tempfile.mkdtemp(prefix='serve_hostile_')


def status_of(pid, key):
    for line in open(f'/proc/{pid}/status'):
        if line.startswith(key + ':'):
            return int(line.split()[1]) / 1024  # MB
    return 0.0


class Server:
    def __init__(self, *args):
        self.p = subprocess.Popen([BIN, 'serve', '--model', 'test-tiny', '--random-init', '--port', '0', *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
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

    def stop(self):
        t = time.time()
        self.p.terminate()
        self.p.wait(120)
        return time.time() - t


def raw(port, data, timeout=60, chunks=None):
    """Sends data (or an iterable of chunks, from a thread), reads until close.
    Returns (status or 'reset'/'timeout', seconds)."""
    t = time.time()
    s = socket.create_connection(('127.0.0.1', port))
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
    m = re.match(rb'HTTP/1\.1 (\d+)', got)
    return (int(m.group(1)) if m else 'none'), time.time() - t


def connections(port, n, first_bytes, read_answer=False):
    """n connections that sent first_bytes (and read the answer when asked)."""
    out = []
    for _ in range(n):
        c = socket.create_connection(('127.0.0.1', port))
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
    print(f'== hostile clients  {time.strftime("%F %T")}  load: {open("/proc/loadavg").read().strip()}')
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


main()
