"""The Python module openclip_cpp against the CLI (ctest -L python; run by Debian's python3).

A test-tiny checkpoint is trained through openclip_cpp.train (one epoch of the synthetic task),
then images (files and uint8 arrays) and texts are embedded by the module and by
`openclip embed`: the float32 results must be equal bit for bit (same library calls, same
batching). Errors must raise RuntimeError with the CLI's message.
Environment (set by CMake): PYTHONPATH (the module), OPENCLIP_BINARY, OPENCLIP_TEST_SCRATCH.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap
import threading
import unittest
import zlib

import numpy as np

import openclip_cpp as oc

CLI = os.environ["OPENCLIP_BINARY"]
SCRATCH = os.environ.get("OPENCLIP_TEST_SCRATCH", "/tmp/openclip_python_test")


def write_png(path, rgb):
    """An 8-bit RGB PNG (no PIL on the test machine: zlib and struct suffice)."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def cli(*args):
    r = subprocess.run([CLI, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"openclip {' '.join(args)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r


class OpenclipCpp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(SCRATCH, ignore_errors=True)
        os.makedirs(SCRATCH)
        status = oc.train(["--dataset-type", "synthetic-learnable", "--train-num-samples", "64", "--batch-size", "32",
                           "--epochs", "1", "--model", "test-tiny", "--precision", "fp32", "--workers", "1",
                           "--seed", "3", "--logs", SCRATCH, "--name", "py"])
        assert status == 0, f"train returned {status}"
        cls.weights = os.path.join(SCRATCH, "py", "checkpoints", "epoch_1.pt")
        assert os.path.exists(cls.weights), cls.weights
        rng = np.random.default_rng(7)
        # Sizes around and away from the model's input, odd sizes included (resize + crop).
        cls.arrays = [rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8) for h, w in [(32, 32), (45, 61), (70, 33)]]
        cls.images = os.path.join(SCRATCH, "images")
        os.makedirs(cls.images)
        cls.paths = []
        for i, a in enumerate(cls.arrays):
            cls.paths.append(os.path.join(cls.images, f"{i}.png"))
            write_png(cls.paths[-1], a)
        cls.model = oc.create_model("test-tiny", cls.weights)

    def test_images_equal_embed_bit_for_bit(self):
        out = os.path.join(SCRATCH, "img.npy")
        cli("embed", "--model", "test-tiny", "--pretrained", self.weights, "--images", self.images, "--out", out)
        ref = np.load(out)
        from_paths = self.model.encode_image(self.paths)
        from_arrays = self.model.encode_image(self.arrays)
        self.assertEqual(from_paths.dtype, np.float32)
        self.assertEqual(from_paths.shape, (3, self.model.embed_dim))
        np.testing.assert_array_equal(from_paths, ref)
        np.testing.assert_array_equal(from_arrays, ref)
        np.testing.assert_array_equal(self.model.encode_image(self.arrays[1]), ref[1:2])
        np.testing.assert_array_equal(self.model.encode_image(self.paths[2]), ref[2:3])
        # Not a trivially equal output: the images differ, so must their embeddings.
        self.assertFalse(np.array_equal(ref[0], ref[1]))

    def test_texts_equal_embed_bit_for_bit(self):
        texts = ["a photo of a dog", "a diagram", "ünïcödé text", "x" * 500]
        path = os.path.join(SCRATCH, "texts.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(texts) + "\n")
        out = os.path.join(SCRATCH, "txt.npy")
        cli("embed", "--model", "test-tiny", "--pretrained", self.weights, "--texts", path, "--out", out)
        got = self.model.encode_text(texts)
        self.assertEqual(got.dtype, np.float32)
        np.testing.assert_array_equal(got, np.load(out))
        raw = self.model.encode_text(texts, normalize=False)
        np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-5)  # fp32 rounding of a norm
        self.assertFalse(np.allclose(np.linalg.norm(raw, axis=1), 1.0))

    def test_int8_with_static_scales_equals_embed_bit_for_bit(self):
        # Scales calibrated by `openclip quantize` on the three test images, passed to the module
        # as int8_scales= and to the CLI as --int8-scales: the same library calls, equal results.
        scales = os.path.join(SCRATCH, "tiny.int8.safetensors")
        cli("quantize", "--model", "test-tiny", "--pretrained", self.weights, "--calib", self.images,
            "--out", scales)
        texts = ["a photo of a dog", "a diagram"]
        path = os.path.join(SCRATCH, "int8_texts.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(texts) + "\n")
        img, txt = os.path.join(SCRATCH, "int8_img.npy"), os.path.join(SCRATCH, "int8_txt.npy")
        common = ["--model", "test-tiny", "--pretrained", self.weights, "--precision", "int8", "--int8-scales", scales]
        cli("embed", *common, "--images", self.images, "--out", img)
        cli("embed", *common, "--texts", path, "--out", txt)
        m = oc.create_model("test-tiny", self.weights, precision="int8", int8_scales=scales)
        np.testing.assert_array_equal(m.encode_image(self.paths), np.load(img))
        np.testing.assert_array_equal(m.encode_text(texts), np.load(txt))
        model, _, _ = oc.create_model_and_transforms("test-tiny", self.weights, precision="int8", int8_scales=scales)
        np.testing.assert_array_equal(model.encode_image(self.paths, normalize=True), np.load(img))
        # int8 stays near fp32 (a loose bound: a tiny trained model, 3 images; the accuracy
        # gate is tests/model/int8_test.cpp and docs/BENCHMARKS.md).
        fp32 = self.model.encode_image(self.paths)
        self.assertGreater(float(np.min(np.sum(np.load(img) * fp32, axis=1))), 0.9)
        # A scales file that is not one: on a CPU where int8 runs, an error naming the file; on a
        # CPU without VNNI int8 falls back (the CLI's warning) and the file is not read.
        int8_runs = json.loads(cli("info", "--json").stdout)["onednn"]["int8_gemm"] != "none"
        bad = os.path.join(SCRATCH, "bad.int8.safetensors")
        with open(bad, "wb") as f:
            f.write(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}")
        if int8_runs:
            with self.assertRaises(RuntimeError) as e:
                oc.create_model("test-tiny", self.weights, precision="int8", int8_scales=bad)
            self.assertIn(bad, str(e.exception))

    def test_tokenize_equals_cli(self):
        texts = ["Hello, World!", "a photo of a cat"]
        ids = oc.tokenize(texts)
        self.assertEqual(ids.shape, (2, 77))
        r = subprocess.run([CLI, "tokenize"], input="\n".join(texts) + "\n", capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        cli_rows = [[int(t) for t in line.split()] for line in r.stdout.strip().splitlines()]
        for row, cli_row in zip(ids.tolist(), cli_rows):
            self.assertEqual([t for t in row if t != 0], [t for t in cli_row if t != 0])
        self.assertEqual(ids[0, 0], 49406)

    def test_errors_raise_with_the_cli_message(self):
        bad = os.path.join(SCRATCH, "bad.png")  # exists, is no image: the library's decode error
        with open(bad, "wb") as f:
            f.write(b"not an image")
        with self.assertRaises(RuntimeError) as e:
            self.model.encode_image([self.paths[0], bad])
        self.assertIn(bad, str(e.exception))
        r = subprocess.run([CLI, "embed", "--model", "test-tiny", "--pretrained", self.weights, "--images", bad,
                            "--out", os.path.join(SCRATCH, "x.npy")], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("openclip embed: error: " + str(e.exception), r.stderr)
        with self.assertRaises(RuntimeError) as e:
            oc.create_model("no-such-model", "")
        self.assertIn("no-such-model", str(e.exception))
        # A config whose parameter count wrapped 2^64 killed the interpreter (issue 22, item 1).
        wrap = os.path.join(SCRATCH, "wrap.json")
        with open(wrap, "w") as f:
            json.dump({"embed_dim": 8, "vision_cfg": {"image_size": 32, "patch_size": 8, "width": 64, "layers": 1},
                       "text_cfg": {"vocab_size": 2**31 - 1, "width": 2048, "heads": 8, "layers": 64,
                                    "mlp_ratio": -1048576.25}}, f)
        with self.assertRaises(RuntimeError) as e:
            oc.create_model(wrap, "")
        self.assertIn('text_cfg: "vocab_size" must be in [1, 16777216]', str(e.exception))
        with self.assertRaises(RuntimeError) as e:
            self.model.encode_image(np.zeros((4, 4), np.uint8))
        self.assertIn("(height, width, 3)", str(e.exception))
        with self.assertRaises(RuntimeError) as e:
            self.model.encode_image([self.arrays[0].astype(np.float32)])
        self.assertIn("dtype float32", str(e.exception))
        # A non-contiguous uint8 view is accepted and equals its contiguous copy.
        view = self.arrays[1][:, ::-1]
        np.testing.assert_array_equal(self.model.encode_image(view), self.model.encode_image(np.ascontiguousarray(view)))
        with self.assertRaises(RuntimeError) as e:
            oc.create_model("test-tiny", self.paths[0])
        self.assertIn(self.paths[0], str(e.exception))
        with self.assertRaises(RuntimeError) as e:  # device= reaches the backend registry (--device's errors)
            oc.create_model("test-tiny", self.weights, device="tpu")
        self.assertIn("unknown device 'tpu'; available:", str(e.exception))
        args = ["--model", "no-such-model", "--dataset-type", "synthetic", "--logs", os.path.join(SCRATCH, "err")]
        with self.assertRaises(RuntimeError) as e:
            oc.train(args + ["--name", "py"])
        r = subprocess.run([CLI, "train", *args, "--name", "cli"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("openclip train: error: " + str(e.exception), r.stderr)


    def test_hostile_arrays_and_configs_raise(self):
        """Issue 42 #4 and #3: a broadcast view whose contiguous copy cannot be allocated was a
        SIGSEGV (an unchecked null array); a config nested 300,000 deep killed the interpreter."""
        huge = np.broadcast_to(np.zeros((1, 1, 3), np.uint8), (2**20, 2**20, 3))  # 3 TiB as a copy
        with self.assertRaises(MemoryError) as e:
            self.model.encode_image(huge)
        self.assertIn("encode_image: item 0: a contiguous copy of the array (1048576 x 1048576 x 3 bytes) could not be allocated",
                      str(e.exception))
        tall = np.broadcast_to(np.zeros((1, 1, 3), np.uint8), (2**31, 1, 3))
        with self.assertRaises(ValueError) as e:
            self.model.encode_image([self.arrays[0], tall])
        self.assertIn("encode_image: item 1: an image of 2147483648 x 1 pixels", str(e.exception))
        deep = os.path.join(SCRATCH, "deep.json")
        with open(deep, "w") as f:
            f.write('{"embed_dim": 8, "x": ' + "[" * 300000 + "]" * 300000 + "}")
        with self.assertRaises(RuntimeError) as e:
            oc.create_model(deep, "")
        self.assertIn("nested more than 128 deep", str(e.exception))

    def test_out_of_memory_is_a_memory_error_naming_the_call(self):
        """Issue 42 #13: out of memory was pybind11's bare 'std::bad_alloc' (or a RuntimeError for
        a backend buffer). In a subprocess whose address space is limited to a little above what
        it already uses (VmSize + 256 MiB, taken after the OpenMP threads and oneDNN's kernels
        exist, so those reservations are inside it), each call that cannot get its memory raises
        MemoryError naming the call (and the bytes, where the library knows them), and the
        process and the model keep working."""
        script = textwrap.dedent("""
            import json, resource, sys
            import numpy as np
            import openclip_cpp as oc
            weights = sys.argv[1]
            model = oc.create_model("test-tiny", weights)
            small = np.random.default_rng(1).integers(0, 256, size=(40, 36, 3), dtype=np.uint8)
            ref = model.encode_image(small)
            model.encode_text(["warm"])
            big = np.zeros((16384, 16384, 3), np.uint8)  # 768 MiB of address space, never touched
            vm = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize:"))
            limit = vm + (256 << 20)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            got = {}
            for name, call in (("image", lambda: model.encode_image(big)),
                               ("model", lambda: oc.create_model("test-tiny", weights, batch_size=1 << 20))):
                try:
                    call()
                    got[name] = "no error"
                except MemoryError as e:
                    got[name] = "MemoryError: " + str(e)
                except Exception as e:
                    got[name] = type(e).__name__ + ": " + str(e)
            got["still works"] = bool(np.array_equal(model.encode_image(small), ref))
            print(json.dumps(got))
        """)
        r = subprocess.run([sys.executable, "-c", script, self.weights], capture_output=True, text=True, timeout=240)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        got = json.loads(r.stdout.strip().splitlines()[-1])
        self.assertRegex(got["image"], r"^MemoryError: encode_image: 1 images: out of memory \(")
        self.assertRegex(got["model"], r"^MemoryError: create_model: test-tiny: out of memory allocating [0-9]+ bytes "
                                       r"\(backend cpu: cannot allocate [0-9]+ bytes")
        self.assertTrue(got["still works"])

    def test_bad_context_lengths_and_ids_are_value_errors(self):
        """Issue 42: tokenize(["a"], 2**31 - 1) allocated 8 GB of ids before anything was checked
        (the interpreter was killed); decode of an id outside the vocabulary raised an internal
        check's message with the library's file and line."""
        tok = oc.get_tokenizer("test-tiny")
        for call in (lambda n: oc.tokenize(["a"], n), lambda n: tok(["a"], n)):
            for n in (2**31 - 1, 65537, 1, -5):
                with self.assertRaises(ValueError) as e:
                    call(n)
                self.assertIn("context_length must be from 2 to 65536, got " + str(n), str(e.exception))
            self.assertEqual(call(65536).shape, (1, 65536))
        for bad in (-1, 10**9):
            with self.assertRaises(ValueError) as e:
                tok.decode([0, bad])
            self.assertIn(f"decode: token id {bad} at position 1 is outside the vocabulary [0, ", str(e.exception))
            self.assertNotIn(".cpp", str(e.exception))

    def test_one_model_from_eight_threads_equals_single_threaded(self):
        """Model releases the GIL while it computes; calls from many threads must still each get
        the single-threaded result bit for bit (issue 22: 51 of 160 encode_text calls were wrong
        from 8 threads, 31 of 120 with images and texts at once)."""
        rng = np.random.default_rng(11)
        texts = [[f"caption {i} of a {w}" for w in ("dog", "cat", "ship")][: 1 + i % 3] for i in range(8)]
        arrays = [[rng.integers(0, 256, size=(40 + 3 * i, 36, 3), dtype=np.uint8)] * (1 + i % 2) for i in range(8)]
        text_ref = [self.model.encode_text(t) for t in texts]
        image_ref = [self.model.encode_image(a) for a in arrays]
        for refs in (text_ref, image_ref):  # distinct inputs, distinct outputs: a mix-up cannot pass
            self.assertFalse(np.array_equal(refs[0][0], refs[1][0]))

        def hammer(kinds):
            wrong, errors = [], []

            def work(t):
                try:
                    for r in range(20):
                        i = (t + r) % 8
                        kind = kinds[(t + r) % len(kinds)]
                        got = self.model.encode_text(texts[i]) if kind == "text" else self.model.encode_image(arrays[i])
                        ref = text_ref[i] if kind == "text" else image_ref[i]
                        if not np.array_equal(got, ref):
                            wrong.append((t, r, kind, float(np.abs(got - ref).max())))
                except Exception as e:  # noqa: BLE001 - reported by the main thread
                    errors.append(repr(e))

            threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            self.assertEqual(errors, [])
            self.assertEqual(wrong, [], f"{len(wrong)} of 160 calls differ from the single-threaded result ({kinds})")

        hammer(["text"])
        hammer(["image"])
        hammer(["text", "image"])


if __name__ == "__main__":
    unittest.main(verbosity=2, argv=[sys.argv[0]])
