"""`openclip serve`'s OpenAI-compatible API through OpenAI's own Python SDK (ctest -L serve).

The `openai` package from PyPI is installed into a git-ignored venv by
scripts/setup_openai_venv.sh; when that cannot be made (no PyPI) the test exits 77 (skipped)
with the reason. Run by Debian's python3, which re-executes this file with the venv's python.
A test-tiny checkpoint is trained, a server started on 127.0.0.1 with an API key, and:
texts, token ids, images (data: URLs and {"image": b64}), base64 and float encodings and
`dimensions` must equal /v1/embed/text, /v1/embed/image and `openclip embed` bit for bit;
bad requests must get OpenAI-shaped 4xx errors (the SDK's exception classes) while the
server keeps serving, its peak memory bounded.
Environment (set by CMake): OPENCLIP_BINARY, OPENCLIP_SOURCE_DIR, OPENCLIP_TEST_SCRATCH.
"""
import base64
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import unittest
import urllib.error
import urllib.request
import zlib

SRC = os.environ.get("OPENCLIP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
try:
    import numpy as np
    import openai
except ImportError:
    if os.environ.get("OPENCLIP_OPENAI_VENV_TRIED"):
        print("skipped: the venv does not import openai and numpy")
        sys.exit(77)
    r = subprocess.run([os.path.join(SRC, "scripts", "setup_openai_venv.sh")], capture_output=True, text=True)
    if r.returncode != 0:
        print("skipped: " + r.stderr.strip())
        sys.exit(77)
    py = os.path.join(SRC, r.stdout.strip().splitlines()[-1])
    os.environ["OPENCLIP_OPENAI_VENV_TRIED"] = "1"
    os.execv(py, [py, os.path.abspath(__file__)] + sys.argv[1:])

CLI = os.environ["OPENCLIP_BINARY"]
SCRATCH = os.environ.get("OPENCLIP_TEST_SCRATCH", "/tmp/openclip_openai_test")
KEY = "test-key-123"


def png_bytes(rgb):
    """An 8-bit RGB PNG (no PIL needed: zlib and struct suffice)."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def cli(*args, **kw):
    r = subprocess.run([CLI, *args], capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise AssertionError(f"openclip {' '.join(args)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r


def peak_rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))


class OpenAIClient(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(SCRATCH, ignore_errors=True)
        os.makedirs(SCRATCH)
        cli("train", "--dataset-type", "synthetic-learnable", "--train-num-samples", "64", "--batch-size", "32",
            "--epochs", "1", "--model", "test-tiny", "--precision", "fp32", "--workers", "1", "--seed", "3",
            "--logs", SCRATCH, "--name", "oa")
        cls.weights = os.path.join(SCRATCH, "oa", "checkpoints", "epoch_1.pt")
        rng = np.random.default_rng(5)
        cls.arrays = [rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8) for h, w in [(32, 32), (45, 61), (70, 33)]]
        cls.pngs = [png_bytes(a) for a in cls.arrays]
        cls.images = os.path.join(SCRATCH, "images")
        os.makedirs(cls.images)
        for i, b in enumerate(cls.pngs):
            with open(os.path.join(cls.images, f"{i}.png"), "wb") as f:
                f.write(b)
        cls.server = subprocess.Popen([CLI, "serve", "--model", "test-tiny", "--pretrained", cls.weights, "--port", "0",
                                       "--api-key", KEY], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = cls.server.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if not m:
            cls.server.kill()
            raise AssertionError("serve did not start: " + line + cls.server.stderr.read())
        cls.base = f"http://127.0.0.1:{m.group(1)}"
        cls.client = openai.OpenAI(base_url=cls.base + "/v1", api_key=KEY, max_retries=0, timeout=60)

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.wait(timeout=30)

    def post(self, path, body, key=KEY):
        req = urllib.request.Request(self.base + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def embed(self, **kw):
        """The rows as float32. The SDK decodes base64 itself only when it chose it (no
        encoding_format given); asked for explicitly, the strings come back as sent."""
        r = self.client.embeddings.create(model="test-tiny", **kw)
        rows = [d.embedding for d in sorted(r.data, key=lambda d: d.index)]
        if kw.get("encoding_format") == "base64":
            self.assertTrue(all(isinstance(e, str) for e in rows))
            rows = [np.frombuffer(base64.b64decode(e), dtype="<f4") for e in rows]
        return np.array(rows, dtype=np.float32), r

    def cli_embed(self, flag, path):
        out = os.path.join(SCRATCH, "cli.npy")
        cli("embed", "--model", "test-tiny", "--pretrained", self.weights, flag, path, "--out", out)
        return np.load(out)

    def test_models(self):
        models = self.client.models.list()
        self.assertEqual([m.id for m in models.data], ["test-tiny"])
        self.assertEqual(self.client.models.retrieve("test-tiny").owned_by, "openclip-cpp")
        with self.assertRaises(openai.NotFoundError):
            self.client.models.retrieve("gpt-4")

    def test_texts_equal_own_route_and_cli(self):
        texts = ["a photo of a dog", "a diagram", "ünïcödé text", "x" * 500]
        path = os.path.join(SCRATCH, "texts.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(texts) + "\n")
        ref = self.cli_embed("--texts", path)
        as_float, r = self.embed(input=texts, encoding_format="float")
        as_b64, _ = self.embed(input=texts)  # the SDK asks for base64 and decodes it with numpy
        status, own = self.post("/v1/embed/text", {"texts": texts})
        self.assertEqual(status, 200)
        np.testing.assert_array_equal(as_float, ref)
        np.testing.assert_array_equal(as_b64, ref)
        np.testing.assert_array_equal(np.array(own["embeddings"], dtype=np.float32), ref)
        self.assertFalse(np.array_equal(ref[0], ref[1]))
        self.assertEqual(r.model, "test-tiny")
        self.assertEqual(r.object, "list")
        # Token counts: the ids up to the end-of-text id, as `openclip tokenize` prints them
        # for the model (test-tiny's context length is 16: the long text is cut there).
        tok = cli("tokenize", "--model", "test-tiny", input="\n".join(texts) + "\n").stdout.strip().splitlines()
        rows = [[int(t) for t in line.split()] for line in tok]
        n_tokens = sum(len([t for t in row if t != 0]) for row in rows)
        self.assertEqual(r.usage.prompt_tokens, n_tokens)
        self.assertEqual(r.usage.total_tokens, n_tokens)
        # One input: a batch of one (the kernels may round otherwise for another batch size,
        # so the reference is the own route's batch of one).
        one, _ = self.embed(input=texts[0], encoding_format="float")
        np.testing.assert_array_equal(one, np.array(self.post("/v1/embed/text", {"text": texts[0]})[1]["embeddings"], np.float32))
        # Token ids in, as tokenize gives them (padding left off): the same rows.
        ids = [[t for t in row if t != 0] for row in rows]
        from_ids, _ = self.embed(input=ids)
        np.testing.assert_array_equal(from_ids, ref)
        single, _ = self.embed(input=ids[1])
        np.testing.assert_array_equal(single, np.array(self.post("/v1/embed/text", {"text": texts[1]})[1]["embeddings"], np.float32))

    def test_images_equal_own_route_and_cli(self):
        ref = self.cli_embed("--images", self.images)
        b64 = [base64.b64encode(b).decode() for b in self.pngs]
        urls = [f"data:image/png;base64,{s}" for s in b64]
        from_urls, r = self.embed(input=urls)
        from_items, _ = self.embed(input=[{"image": s} for s in b64], encoding_format="float")
        status, own = self.post("/v1/embed/image", {"images": b64})
        self.assertEqual(status, 200)
        np.testing.assert_array_equal(from_urls, ref)
        np.testing.assert_array_equal(from_items, ref)
        np.testing.assert_array_equal(np.array(own["embeddings"], dtype=np.float32), ref)
        self.assertEqual(r.usage.prompt_tokens, 0)
        # Images and texts in one request keep their order.
        status, texts = self.post("/v1/embed/text", {"texts": ["a red square"]})
        mixed, _ = self.embed(input=[urls[2], "a red square", urls[0]])
        np.testing.assert_array_equal(mixed, np.stack([ref[2], np.array(texts["embeddings"][0], np.float32), ref[0]]))

    def test_dimensions(self):
        full, _ = self.embed(input=["a dog", "a cat"], encoding_format="float")
        for fmt in ("float", "base64"):
            short, _ = self.embed(input=["a dog", "a cat"], dimensions=8, encoding_format=fmt)
            self.assertEqual(short.shape, (2, 8))
            want = full[:, :8] / np.linalg.norm(full[:, :8].astype(np.float64), axis=1, keepdims=True)
            np.testing.assert_allclose(short, want, rtol=1e-6, atol=1e-7)  # float32 rounding of a renormalized row
        # The whole size is allowed (the full, normalized rows); one more, 0, a negative, a
        # fraction, a string or a bool is OpenAI's 400 naming "dimensions", the server unharmed.
        dim = full.shape[1]
        whole, _ = self.embed(input=["a dog", "a cat"], dimensions=dim)
        unit = full / np.linalg.norm(full.astype(np.float64), axis=1, keepdims=True)
        np.testing.assert_allclose(whole, unit, rtol=1e-6, atol=1e-7)
        for bad in (dim + 1, 0, -1, 8.5, "8", True, 2**63):
            status, body = self.post("/v1/embeddings", {"model": "test-tiny", "input": "a", "dimensions": bad})
            self.assertEqual(status, 400, (bad, body))
            self.assertEqual(sorted(body["error"]), ["code", "message", "param", "type"], bad)
            self.assertEqual((body["error"]["type"], body["error"]["param"]), ("invalid_request_error", "dimensions"), bad)
            self.assertIn(f'"dimensions" must be an integer from 1 to {dim}', body["error"]["message"], bad)
        self.assert_bad(openai.BadRequestError, {"input": "a", "dimensions": dim + 1}, f"from 1 to {dim}", "dimensions")

    def assert_bad(self, exc, kw, needle, param=None):
        with self.assertRaises(exc) as e:
            self.client.embeddings.create(**{"model": "test-tiny", **kw})
        err = e.exception.body
        self.assertIsInstance(err, dict, e.exception)
        self.assertIn(needle, err["message"])
        self.assertIn(err["type"], ("invalid_request_error", "not_found_error", "authentication_error"))
        if param:
            self.assertEqual(err["param"], param)

    def test_bad_requests_get_openai_errors_and_the_server_keeps_serving(self):
        before = peak_rss_kb(self.server.pid)
        tiny_png = "data:image/png;base64," + base64.b64encode(self.pngs[0]).decode()
        webp_lie = "data:image/webp;base64," + base64.b64encode(self.pngs[0]).decode()
        not_image = base64.b64encode(b"hello, not an image at all").decode()
        bad = openai.BadRequestError
        self.assert_bad(bad, {"input": 123}, '"input" must be', "input")
        self.assert_bad(bad, {"input": [{"text": "x"}]}, "input[0] must be", "input")
        self.assert_bad(bad, {"input": []}, '"input" is empty', "input")
        self.assert_bad(bad, {"input": ""}, "empty string", "input")
        self.assert_bad(bad, {"input": ["a"] * 10**6}, "more than 256 items", "input")
        self.assert_bad(bad, {"input": "a", "dimensions": 10**12}, '"dimensions" must be', "dimensions")
        self.assert_bad(bad, {"input": "a", "dimensions": 0}, '"dimensions" must be', "dimensions")
        self.assert_bad(bad, {"input": "a", "encoding_format": "hex"}, '"encoding_format"', "encoding_format")
        self.assert_bad(bad, {"input": [{"image": not_image}]}, "not a readable JPEG, PNG or WebP")
        self.assert_bad(bad, {"input": ["data:image/png;base64,%%%"]}, "not valid base64", "input")
        self.assert_bad(bad, {"input": [webp_lie]}, "says image/webp but its bytes are not a webp image", "input")
        self.assert_bad(bad, {"input": ["data:image/svg+xml;base64,PHN2Zz4="]}, "is not image/png", "input")
        self.assert_bad(bad, {"input": [{"image": "https://example.com/a.png"}]}, "start it with --allow-image-urls")
        self.assert_bad(bad, {"input": [[1, 2, 10**9]]}, "token ids must be integers", "input")
        self.assert_bad(bad, {"input": [list(range(1, 18))]}, "over the model's context length", "input")
        self.assert_bad(openai.NotFoundError, {"model": "text-embedding-3-small", "input": "a"}, "does not exist", "model")
        self.assert_bad(openai.APIStatusError, {"input": "x" * 5000}, "over the limit")  # 413: a text over 4096 bytes
        wrong_key = openai.OpenAI(base_url=self.base + "/v1", api_key="nope", max_retries=0)
        with self.assertRaises(openai.AuthenticationError) as e:
            wrong_key.embeddings.create(model="test-tiny", input="a")
        self.assertEqual(e.exception.body["type"], "authentication_error")
        # The raw bodies: OpenAI's error shape, for every layer (a 404 path under /v1/models too).
        status, body = self.post("/v1/embeddings", {"model": "test-tiny", "input": 5})
        self.assertEqual(status, 400)
        self.assertEqual(sorted(body["error"]), ["code", "message", "param", "type"])
        status, body = self.post("/v1/embeddings", {"model": "test-tiny", "input": "a"}, key="wrong")
        self.assertEqual((status, body["error"]["code"]), (401, "invalid_api_key"))
        # Still serving, the same values as before; peak memory grew by less than 64 MB over
        # all of the above (a 6 MB body of 10^6 inputs is refused while it is parsed).
        ok, _ = self.embed(input=[tiny_png, "a dog"])
        self.assertEqual(ok.shape[0], 2)
        self.assertLess(peak_rss_kb(self.server.pid) - before, 64 * 1024)


if __name__ == "__main__":
    unittest.main(verbosity=2, argv=[sys.argv[0]])
