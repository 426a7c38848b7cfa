"""/v1/embeddings through OpenAI's Python SDK against our own /v1/embed/text, same server, same
run (and /v1/embeddings with the own route's plain urllib client, which separates the server's
cost from the SDK's): CONCURRENCY client threads each send REQUESTS requests of BATCH texts; the two clients
alternate for ROUNDS rounds (so load drifts hit both), and the median requests/s of each is
printed with the machine's load.

  build/venv-openai/bin/python bench/openai_embeddings_bench.py URL MODEL [--key K]
      [--concurrency 16] [--requests 20] [--batch 8] [--rounds 3]

(scripts/setup_openai_venv.sh makes the venv.) Each SDK request asks for float encoding, as the
own route answers, so both carry the same JSON numbers; the SDK's default (base64) is one more row.
"""
import argparse
import json
import os
import statistics
import threading
import time
import urllib.request

import openai


def run(fn, concurrency, requests):
    errors = []

    def worker(t):
        try:
            for r in range(requests):
                fn(t, r)
        except Exception as e:  # noqa: BLE001 - counted and shown
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(concurrency)]
    t0 = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    dt = time.perf_counter() - t0
    if errors:
        raise SystemExit(f"{len(errors)} errors, first: {errors[0]}")
    return concurrency * requests / dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("model")
    ap.add_argument("--key", default="none")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    texts = lambda t, r: [f"a photo of thing {t} {r} {i}" for i in range(a.batch)]  # noqa: E731
    client = openai.OpenAI(base_url=a.url + "/v1", api_key=a.key, max_retries=0, timeout=120)

    def sdk(t, r, fmt):
        out = client.embeddings.create(model=a.model, input=texts(t, r), encoding_format=fmt)
        assert len(out.data) == a.batch

    def post(path, body, key):
        req = urllib.request.Request(a.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {a.key}"})
        with urllib.request.urlopen(req, timeout=120) as resp:
            assert len(json.loads(resp.read())[key]) == a.batch

    def own(t, r):
        post("/v1/embed/text", {"texts": texts(t, r)}, "embeddings")

    def openai_route(t, r):  # the server's side of the SDK's requests, with the own route's client
        post("/v1/embeddings", {"model": a.model, "input": texts(t, r), "encoding_format": "float"}, "data")

    rows = {"own /v1/embed/text (urllib)": [], "/v1/embeddings (urllib), float": [], "openai SDK, float": [],
            "openai SDK, base64 (its default)": []}
    for _ in range(a.rounds):
        rows["own /v1/embed/text (urllib)"].append(run(own, a.concurrency, a.requests))
        rows["/v1/embeddings (urllib), float"].append(run(openai_route, a.concurrency, a.requests))
        rows["openai SDK, float"].append(run(lambda t, r: sdk(t, r, "float"), a.concurrency, a.requests))
        rows["openai SDK, base64 (its default)"].append(run(lambda t, r: sdk(t, r, "base64"), a.concurrency, a.requests))
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, load {os.getloadavg()[0]:.2f}, "
          f"concurrency {a.concurrency}, {a.requests} requests of {a.batch} texts per thread, {a.rounds} rounds")
    base = statistics.median(rows["own /v1/embed/text (urllib)"])
    for k, v in rows.items():
        m = statistics.median(v)
        print(f"  {k:34s} {m:8.1f} req/s  ({m * a.batch:8.1f} texts/s, {m / base:5.2f}x own; rounds: "
              + ", ".join(f"{x:.1f}" for x in v) + ")")


if __name__ == "__main__":
    main()
