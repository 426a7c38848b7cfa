"""One peer measurement for bench/compare_peers.py: an OpenCLIP encoder exported to ONNX
(bench/peers_export.py), run by ONNX Runtime or OpenVINO at one precision and batch size.
Prints one JSON line: {"per_second": inputs/s, "ms_per_batch": ..., "engine", "precision"}.
  python bench/peers.py ONNX --engine ort|ov --precision fp32|bf16|int8 --batch-size B [--tower image|text]
Inputs: image: random pixels [B, 3, S, S]; text: captions as `openclip bench infer` makes them
(start token, 8-24 random words, end token, zeros to the 77-token context).
int8: ONNX Runtime's dynamic quantization (quantize_dynamic, s8 weights, u8 activations per
tensor, made once beside the model); OpenVINO's post-training quantization (nncf.quantize on
32 random calibration inputs of the same kind: the speed does not depend on the values; made
once as IR)."""
import argparse
import json
import os
import time

import numpy as np

SOT, EOT, VOCAB = 49406, 49407, 49408


def inputs(tower, batch, size, ctx, rng):
    if tower == "image":
        return rng.standard_normal((batch, 3, size, size)).astype(np.float32)
    t = np.zeros((batch, ctx), dtype=np.int64)
    for row in t:
        n = min(ctx - 2, int(rng.integers(8, 25)))
        row[0], row[1:n + 1], row[n + 1] = SOT, rng.integers(0, VOCAB - 2, n), EOT
    return t


def ort_session(path, precision, threads):
    import onnxruntime as ort
    if precision == "int8":
        q = path.replace(".onnx", ".ort-int8.onnx")
        if not os.path.exists(q):
            from onnxruntime.quantization import QuantType, quantize_dynamic
            quantize_dynamic(path, q, weight_type=QuantType.QInt8)
        path = q
    elif precision != "fp32":
        raise SystemExit(f"ONNX Runtime has no {precision} CPU path here")
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    name = s.get_inputs()[0].name
    return lambda x: s.run(None, {name: x})[0]


def ov_model(path, precision, threads, calib):
    import openvino as ov
    core = ov.Core()
    src = path
    if precision == "int8":
        src = path.replace(".onnx", ".ov-int8.xml")
        if not os.path.exists(src):
            import nncf
            m = core.read_model(path)
            q = nncf.quantize(m, nncf.Dataset(calib), model_type=nncf.ModelType.TRANSFORMER, subset_size=len(calib))
            ov.save_model(q, src)
    hint = {"fp32": "f32", "bf16": "bf16", "int8": "f32"}[precision]  # int8: the quantized ops, the rest f32
    if precision == "int8" and os.environ.get("PEERS_OV_INT8_BF16"):
        hint = "bf16"
    c = core.compile_model(src, "CPU", {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": hint,
                                        "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1})
    req = c.create_infer_request()
    return lambda x: req.infer({0: x})[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onnx")
    ap.add_argument("--engine", choices=["ort", "ov"], required=True)
    ap.add_argument("--precision", choices=["fp32", "bf16", "int8"], required=True)
    ap.add_argument("--tower", choices=["image", "text"], default="image")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--context-length", type=int, default=77)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    if a.engine == "ort":
        run = ort_session(a.onnx, a.precision, a.threads)
    else:
        calib = [inputs(a.tower, 1, a.image_size, a.context_length, rng) for _ in range(32)]
        run = ov_model(a.onnx, a.precision, a.threads, calib)
    x = inputs(a.tower, a.batch_size, a.image_size, a.context_length, np.random.default_rng(1))
    for _ in range(a.warmup):
        run(x)
    t = time.perf_counter()
    for _ in range(a.steps):
        run(x)
    dt = (time.perf_counter() - t) / a.steps
    print(json.dumps({"engine": a.engine, "precision": a.precision, "tower": a.tower, "batch_size": a.batch_size,
                      "per_second": a.batch_size / dt, "ms_per_batch": 1000 * dt}))


if __name__ == "__main__":
    main()
