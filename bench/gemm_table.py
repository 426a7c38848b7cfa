#!/usr/bin/env python3
"""Markdown table of BM_GemmShape (bench/gemm_shapes_bench.cpp) results, one column per run,
with each figure's share of this CPU's peak. Stdlib only.

  build/openclip_bench_kernels --benchmark_filter='GemmShape/|FmaPeak' --benchmark_out=after.json
  bench/gemm_table.py [--cores=N] before.json:oneDNN-2.6 after.json,after2.json:oneDNN-3.2

Peak: measured, where a file holds BM_FmaPeak (independent FMA / vdpbf16ps / AMX tile-product
chains on every thread: what the cores really do at the clock they run at). Otherwise computed:
cores x clock (/proc/cpuinfo "cpu MHz") x flops per cycle per core, with two FMA pipes:
fp32 2 x lanes (16 with AVX-512, 8 with AVX2) x 2 (multiply + add); bf16 with AVX512-BF16
(vdpbf16ps: two products per fp32 lane) twice that; with AMX, 1024 bf16 flops per cycle per
core (one TDPBF16PS 16x16x32 tile product per 16 cycles); without native bf16, the fp32 peak.
"""
import json
import os
import sys


def peak_gflops(cores):
    mhz, flags = 0.0, set()
    for line in open("/proc/cpuinfo"):
        if line.startswith("cpu MHz") and not mhz:
            mhz = float(line.split(":")[1])
        if line.startswith("flags") and not flags:
            flags = set(line.split(":")[1].split())
    lanes = 16 if "avx512f" in flags else 8
    fp32 = cores * mhz / 1e3 * 2 * lanes * 2
    bf16 = cores * mhz / 1e3 * 1024 if "amx_bf16" in flags else (2 * fp32 if "avx512_bf16" in flags else fp32)
    return fp32, bf16


def load(path, peaks=None):
    rows = {}
    for b in json.load(open(path))["benchmarks"]:
        name = b["name"].split("/", 1)
        if name[0] == "BM_FmaPeak" and "TFLOPs" in b and peaks is not None:
            kind = name[1].split("/")[0]
            peaks[kind] = max(peaks.get(kind, 0.0), 1e3 * b["TFLOPs"])
        if name[0] in ("BM_GemmShape", "BM_GemmShapeCpu") and "TFLOPs" in b:
            rows[name[1].split("/real_time")[0].split("/process_time")[0]] = b["TFLOPs"]
    return rows


def main():
    args = sys.argv[1:]
    cores = os.cpu_count()
    if args and args[0].startswith("--cores="):  # the threads the runs used (OMP_NUM_THREADS)
        cores = int(args.pop(0).split("=")[1])
    data, measured = [], {}
    for a in args:  # FILE[,FILE...]:LABEL; several files of one label: the best figure of each row
        paths, label = a.rsplit(":", 1) if ":" in a else (a, a)
        rows = {}
        for p in paths.split(","):
            for k, v in load(p, measured).items():
                rows[k] = max(v, rows.get(k, 0.0))
        data.append((label, rows))
    fp32, bf16 = peak_gflops(cores)
    how = "computed from the nominal clock (bench/gemm_table.py says how)"
    if "fp32" in measured:
        # AMX tiles are not what BM_FmaPeak measures: their computed peak, at the measured clock.
        amx = bf16 > 2 * fp32
        clock = measured["fp32"] / fp32
        fp32, how = measured["fp32"], "measured by BM_FmaPeak (FMA chains on every thread)"
        bf16 = measured.get("amx_bf16", bf16 * clock) if amx else measured.get("bf16", fp32)
        if amx and "amx_bf16" in measured:
            how = "measured by BM_FmaPeak (FMA chains; bf16: AMX tile products, on every thread)"
    # Rows: shape/pass; columns: each precision of each run (precision = the name's last part).
    rows = list(dict.fromkeys(n.rsplit("/", 1)[0] for _, d in data for n in d))
    precs = list(dict.fromkeys(n.rsplit("/", 1)[1] for _, d in data for n in d))
    cols = [(label, p) for p in precs for label, d in data if any(n.endswith("/" + p) for n in d)]
    print(f"Peak of {cores} core(s): fp32 {fp32:.0f} GFLOP/s, bf16 {bf16:.0f} GFLOP/s ({how}). "
          "TFLOP/s (% of peak); bf16_widened runs on the fp32 units, so its share is of the fp32 peak.\n")
    print("| shape / pass | " + " | ".join(f"{p} {label}" for label, p in cols) + " |")
    print("|---|" + "---|" * len(cols))
    for r in rows:
        cells = []
        for label, p in cols:
            d = dict(data)[label]
            v = d.get(r + "/" + p)
            peak = (bf16 if p == "bf16" else fp32) / 1e3
            cells.append(f"{v:.3f} ({100 * v / peak:.0f}%)" if v else "-")
        print(f"| {r} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
