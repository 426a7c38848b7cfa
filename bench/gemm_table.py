#!/usr/bin/env python3
"""Markdown table of BM_GemmShape (bench/gemm_shapes_bench.cpp) results, one column per run,
with each figure's share of this CPU's peak. Stdlib only.

  build/openclip_bench_kernels --benchmark_filter=GemmShape --benchmark_out=after.json
  bench/gemm_table.py [--cores=N] before.json:oneDNN-2.6 after.json,after2.json:oneDNN-3.2

Peak = cores x clock (/proc/cpuinfo "cpu MHz") x flops per cycle per core, with two FMA pipes:
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


def load(path):
    rows = {}
    for b in json.load(open(path))["benchmarks"]:
        name = b["name"].split("/", 1)
        if name[0] in ("BM_GemmShape", "BM_GemmShapeCpu") and "TFLOPs" in b:
            rows[name[1].split("/real_time")[0].split("/process_time")[0]] = b["TFLOPs"]
    return rows


def main():
    args = sys.argv[1:]
    cores = os.cpu_count()
    if args and args[0].startswith("--cores="):  # the threads the runs used (OMP_NUM_THREADS)
        cores = int(args.pop(0).split("=")[1])
    data = []
    for a in args:  # FILE[,FILE...]:LABEL; several files of one label: the best figure of each row
        paths, label = a.rsplit(":", 1) if ":" in a else (a, a)
        rows = {}
        for p in paths.split(","):
            for k, v in load(p).items():
                rows[k] = max(v, rows.get(k, 0.0))
        data.append((label, rows))
    fp32, bf16 = peak_gflops(cores)
    names = list(dict.fromkeys(n for _, d in data for n in d))
    print(f"Peak of {cores} core(s): fp32 {fp32:.0f} GFLOP/s, bf16 {bf16:.0f} GFLOP/s (bench/gemm_table.py says how).\n")
    print("| shape / pass / precision | " + " | ".join(f"{l} TFLOP/s (% of peak)" for l, _ in data) + " |")
    print("|---|" + "---|" * len(data))
    for n in names:
        peak = (bf16 if n.endswith("/bf16") else fp32) / 1e3  # widened bf16 runs on the fp32 units
        cells = [f"{d[n]:.3f} ({100 * d[n] / peak:.0f}%)" if n in d else "-" for _, d in data]
        print(f"| {n} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
