"""Steady-state throughput of one `openclip serve` endpoint, for scripts/bench_serve.sh FIGURE=1:
CONNECTIONS keep-alive clients each POST the same JSON body in a loop for SECONDS. The rate is
counted between the first and the last answer (inputs answered after the first one, over that
interval), so neither the start nor the requests cut off at the end move it by a whole request
(wrk's requests/s at ~1 request/s of 64 images is that coarse).
  python3 scripts/serve_throughput.py URL BODY.json INPUTS_PER_REQUEST CONNECTIONS SECONDS
Prints one JSON line: inputs_per_second, requests, seconds, errors (non-200 answers or failures)."""
import http.client
import json
import sys
import threading
import time
import urllib.parse


def main():
    url, body_path, per_req, conns, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    body = open(body_path, "rb").read()
    u = urllib.parse.urlsplit(url)
    done, errors, lock = [], [], threading.Lock()
    stop_at = time.monotonic() + secs

    def client():
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
        while time.monotonic() < stop_at:
            try:
                c.request("POST", u.path, body, {"Content-Type": "application/json"})
                r = c.getresponse()
                r.read()
                ok = r.status == 200
            except (OSError, http.client.HTTPException) as e:
                ok = False
                c.close()
                c = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
                with lock:
                    errors.append(str(e))
            with lock:
                (done if ok else errors).append(time.monotonic())

    threads = [threading.Thread(target=client) for _ in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.sort()
    span = done[-1] - done[0] if len(done) > 1 else 0.0
    rate = (len(done) - 1) * per_req / span if span > 0 else 0.0
    print(json.dumps({"inputs_per_second": rate, "requests": len(done), "seconds": span, "errors": len(errors)}))


if __name__ == "__main__":
    main()
