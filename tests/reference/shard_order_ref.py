#!/usr/bin/python3
"""OpenCLIP 2.24.0's shard order, written independently from its documented pieces, with
CPython's own random.Random (the thing under test on the C++ side is our re-implementation of it):

  detshuffle2.run: rng = random.Random(); rng.seed(seed + epoch); _shuffle(src, 2000, 500, rng)
  webdataset _shuffle: fill the buffer taking two items per step, start picking once `initial`
      are buffered; pick: k = rng.randint(0, len(buf) - 1); sample = buf[k]; buf[k] = buf[-1]; pop
  then wds.split_by_node (urls[rank::world]) and split_by_worker (urls[worker::workers]).

  shard_order_ref.py order N SEED EPOCH [BUFSIZE INITIAL]   -> JSON list of indices 0..N-1
  shard_order_ref.py worker N SEED EPOCH RANK WORLD WORKER WORKERS
  shard_order_ref.py draws SEED K COUNT                     -> getrandbits(K) x COUNT, then randint(0, n) for n in 1..40
"""
import json
import random
import sys


def pick(buf, rng):
    k = rng.randint(0, len(buf) - 1)
    sample = buf[k]
    buf[k] = buf[-1]
    buf.pop()
    return sample


def shuffle(data, bufsize, initial, rng):
    data = iter(data)
    initial = min(initial, bufsize)
    buf = []
    for sample in data:
        buf.append(sample)
        if len(buf) < bufsize:
            try:
                buf.append(next(data))
            except StopIteration:
                pass
        if len(buf) >= initial:
            yield pick(buf, rng)
    while buf:
        yield pick(buf, rng)


def order(n, seed, epoch, bufsize=2000, initial=500):
    rng = random.Random()
    rng.seed(seed + epoch)
    return list(shuffle(range(n), bufsize, initial, rng))


def main(argv):
    cmd, a = argv[1], [int(x) for x in argv[2:]]
    if cmd == "order":
        out = order(*a)
    elif cmd == "worker":
        n, seed, epoch, rank, world, worker, workers = a
        out = order(n, seed, epoch)[rank::world][worker::workers]
    elif cmd == "draws":
        seed, k, count = a
        rng = random.Random(seed)
        out = [str(rng.getrandbits(k)) for _ in range(count)] + [rng.randint(0, n) for n in range(1, 41)]
    else:
        raise SystemExit(__doc__)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv)
