"""Driver of bench/compare.sh (run by it, inside its environment): ours against OpenCLIP on
PyTorch 2.x, A B A B, and the markdown table. See compare.sh for the flags."""
import argparse
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tarfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THEIRS = [sys.executable, os.path.join(ROOT, "bench", "bench_open_clip.py")]
BEGIN, END = "<!-- compare.sh {kind}: begin -->", "<!-- compare.sh {kind}: end -->"


def parse():
    ap = argparse.ArgumentParser(description="openclip-cpp against OpenCLIP on PyTorch 2.x (bench/compare.sh)")
    ap.add_argument("--quick", action="store_true", help="a few seconds per figure, nothing written")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default="", help="regex over the figure ids: measure those; the table keeps the "
                    "other figures' earlier measurements, each row with its own dates")
    ap.add_argument("--no-write", action="store_true", help="print the table, leave docs/BENCHMARKS.md alone")
    ap.add_argument("--fresh", action="store_true", help="forget the earlier measurements of the figures measured "
                    "(default: resume an interrupted run)")
    ap.add_argument("--binary", default=os.environ.get("OPENCLIP_BINARY", os.path.join(ROOT, "build", "openclip")))
    return ap.parse_args()


def cpu_info(binary):
    """The CPU as our binary names it (`openclip info --json`: model name, microarchitecture from
    CPUID family/model, widest matrix ISA: a VM often shows only "AMD EPYC"), the ISA flags shown
    in the table, and the section key."""
    model, flags = "unknown CPU", set()
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name") and model == "unknown CPU":
            model = line.split(":", 1)[1].strip()
        if line.startswith("flags") and not flags:
            flags = set(line.split(":", 1)[1].split())
    shown = [f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_bf16", "amx_tile")
             if f in flags]
    info = subprocess.run([binary, "info", "--json"], capture_output=True, text=True)
    cpu = json.loads(info.stdout or "{}").get("cpu", {}) if info.returncode == 0 else {}
    if cpu.get("kind"):
        model = cpu["kind"]
    isa = "AMX" if "amx_bf16" in flags else ("AVX512-BF16" if "avx512_bf16" in flags else
                                             ("AVX-512" if "avx512f" in flags else "AVX2"))
    kind = re.sub(r"[^A-Za-z0-9]+", "-", f"{cpu.get('model', model)} {cpu.get('uarch', '')} {isa}").strip("-")
    return model, shown, kind


def load():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def scheduling():
    """This process's scheduler group (Linux autogroup) and nice: on a shared machine the load
    average counts processes a higher-priority run barely waits for, so the table says both."""
    try:
        group = open("/proc/self/autogroup").read().split()
        return f"autogroup nice {group[-1]}, nice {os.nice(0)}"
    except (OSError, IndexError):
        return f"nice {os.nice(0)}"


# A figure: id, what, unit ("samples/s" or "ms" latency), ours (argv, JSON key), theirs {label: argv}.
def figures(q, inputs):
    st = ["--steps", "1", "--warmup-steps", "1"] if q else ["--steps", "3", "--warmup-steps", "1"]
    tst = ["--steps", "1", "--warmup", "1"] if q else ["--steps", "3", "--warmup", "1"]
    lat = ["--steps", "3", "--warmup-steps", "1"] if q else ["--steps", "20", "--warmup-steps", "3"]
    tlat = ["--steps", "3", "--warmup", "1"] if q else ["--steps", "20", "--warmup", "3"]
    bt, bb = ("4", "8") if q else ("32", "64")  # training batches: fp32, bf16
    bi = "8" if q else "64"
    figs = [
        ("train_fp32", f"ViT-B-32 training fp32, batch {bt}", "samples/s",
         (["bench", "train", "--batch-size", bt, "--precision", "fp32"] + st, "samples_per_second"),
         {"fp32": ["train", "--precision", "fp32", "--batch-size", bt] + tst}),
        ("train_bf16", f"ViT-B-32 training bf16, batch {bb} (ours amp_bf16)", "samples/s",
         (["bench", "train", "--batch-size", bb, "--precision", "amp_bf16"] + st, "samples_per_second"),
         {"pure_bf16": ["train", "--precision", "pure_bf16", "--batch-size", bb] + tst,
          "autocast bf16": ["train", "--precision", "autocast_bf16", "--batch-size", bb] + tst}),
    ]
    for prec, ours_prec, theirs_prec in (("fp32", "fp32", "fp32"), ("bf16", "amp_bf16", "bf16")):
        for b, unit, s, ts in ((bi, "samples/s", st, tst), ("1", "ms", lat, tlat)):
            for enc, key in (("image", "encode_image_per_second"), ("text", "encode_text_per_second")):
                if enc == "text" and b == "1":
                    continue
                theirs = {f"eager {theirs_prec}": [enc, "--precision", theirs_prec, "--batch-size", b] + ts}
                if prec == "bf16":
                    theirs["autocast bf16"] = [enc, "--precision", "autocast_bf16", "--batch-size", b] + ts
                if enc == "image" and not q:
                    theirs[f"compile {theirs_prec}"] = [enc, "--precision", theirs_prec, "--compile", "--batch-size", b] + ts
                what = "encode_image" if enc == "image" else "encode_text (caption-length tokens)"
                figs.append((f"{enc}_b{b}_{prec}", f"{what} {prec}, batch {b}" + (" (latency)" if unit == "ms" else ""),
                             unit, (["bench", "infer", "--batch-size", b, "--precision", ours_prec] + s, key), theirs))
    figs += family_figures(q, st, tst)
    figs.append(("tokenizer", "tokenizer (captions/s)", "samples/s",
                 (["tokenize", inputs["captions"]], "wall"), {"open_clip.tokenize": ["tokenizer", "--captions", inputs["captions"]]}))
    nb = "5" if q else "30"
    figs.append(("data", "data loader (JPEG shard -> train transform + tokens), batch 64, 2 workers", "samples/s",
                 (["bench", "data", inputs["shard"], "--batch-size", "64", "--batches", nb, "--warmup", "2", "--workers", "2"],
                  "samples_per_second"),
                 {"DataLoader": ["data", "--shard", inputs["shard"], "--batch-size", "64", "--batches", nb, "--workers", "2"]}))
    return figs


def family_figures(q, st, tst):
    """The other model families (issues 27 and 36): training (SigLIP with its loss, as --siglip)
    and encode_image, fp32 and bf16, as the ViT-B-32 rows but at half their batches (RN50,
    ViT-B-16, ConvNeXt-B and EVA02-B-16 cost 1.8x, 4.4x, 3.5x and 4.4x ViT-B-32's FLOPs per image:
    a round stays a few minutes on 2 cores). RN50's and ConvNeXt's bf16 rows run the convolutions
    in bf16."""
    bt, bi = ("4", "8") if q else ("16", "32")
    bb = bt
    figs = []
    for fid, name, loss in (("rn50", "RN50", []), ("siglip_b16", "ViT-B-16-SigLIP", ["--siglip"]),
                            ("convnext_b", "convnext_base", []), ("eva02_b16", "EVA02-B-16", [])):
        m = ["--model", name]
        figs.append((f"{fid}_train_fp32", f"{name} training fp32, batch {bt}", "samples/s",
                     (["bench", "train", "--batch-size", bt, "--precision", "fp32"] + m + loss + st, "samples_per_second"),
                     {"fp32": ["train", "--precision", "fp32", "--batch-size", bt] + m + loss + tst}))
        figs.append((f"{fid}_train_bf16", f"{name} training bf16, batch {bb} (ours amp_bf16)", "samples/s",
                     (["bench", "train", "--batch-size", bb, "--precision", "amp_bf16"] + m + loss + st, "samples_per_second"),
                     {"pure_bf16": ["train", "--precision", "pure_bf16", "--batch-size", bb] + m + loss + tst,
                      "autocast bf16": ["train", "--precision", "autocast_bf16", "--batch-size", bb] + m + loss + tst}))
        for prec, ours_prec, theirs_prec in (("fp32", "fp32", "fp32"), ("bf16", "amp_bf16", "bf16")):
            theirs = {f"eager {theirs_prec}": ["image", "--precision", theirs_prec, "--batch-size", bi] + m + tst}
            if prec == "bf16":
                theirs["autocast bf16"] = ["image", "--precision", "autocast_bf16", "--batch-size", bi] + m + tst
            if not q:
                theirs[f"compile {theirs_prec}"] = ["image", "--precision", theirs_prec, "--compile", "--batch-size", bi] + m + tst
            figs.append((f"{fid}_image_b{bi}_{prec}", f"{name} encode_image {prec}, batch {bi}", "samples/s",
                         (["bench", "infer", "--batch-size", bi, "--precision", ours_prec] + m + st,
                          "encode_image_per_second"), theirs))
    return figs


def make_inputs(d, quick):
    """Captions (seeded random words) and a webdataset tar of COCO-sized JPEGs with captions."""
    os.makedirs(d, exist_ok=True)
    inputs = {"captions": os.path.join(d, "captions.txt"), "shard": os.path.join(d, "shard-000000.tar")}
    rng = random.Random(0)
    words = ["a", "the", "man", "woman", "dog", "cat", "riding", "sitting", "on", "in", "red", "blue", "street",
             "table", "with", "of", "photo", "two", "large", "small", "near", "beach", "kitchen", "pizza", "bus"]
    if not os.path.exists(inputs["captions"]):
        with open(inputs["captions"] + ".tmp", "w") as f:
            for _ in range(100000):
                f.write(" ".join(rng.choice(words) for _ in range(rng.randint(6, 16))) + ".\n")
        os.replace(inputs["captions"] + ".tmp", inputs["captions"])
    if not os.path.exists(inputs["shard"]):
        import io
        from PIL import Image, ImageFilter
        with tarfile.open(inputs["shard"] + ".tmp", "w") as tf:
            for i in range(256):
                img = Image.effect_noise((640, 480), 64).convert("RGB").filter(ImageFilter.GaussianBlur(3))
                buf = io.BytesIO()
                img.save(buf, "JPEG", quality=90)
                for ext, data in (("jpg", buf.getvalue()),
                                  ("txt", " ".join(rng.choice(words) for _ in range(10)).encode())):
                    ti = tarfile.TarInfo(f"{i:06d}.{ext}")
                    ti.size = len(data)
                    tf.addfile(ti, io.BytesIO(data))
        os.replace(inputs["shard"] + ".tmp", inputs["shard"])
    return inputs


def run_ours(binary, argv, key):
    t0 = time.perf_counter()
    if key == "wall":  # tokenize: the whole process over the captions file (start, vocab, output)
        with open(argv[1]) as f:
            n = sum(1 for _ in f)
        with open(argv[1]) as f:
            subprocess.run([binary, argv[0]], check=True, stdin=f, stdout=subprocess.DEVNULL)
        return {"value": n / (time.perf_counter() - t0)}
    out = subprocess.run([binary] + argv + ["--json"], check=True, capture_output=True, text=True).stdout
    j = json.loads(out.strip().splitlines()[-1])
    return {"value": j[key], "peak_rss_mib": j.get("peak_rss_mib")}


def run_theirs(argv):
    out = subprocess.run(THEIRS + argv, check=True, capture_output=True, text=True).stdout
    j = json.loads(out.strip().splitlines()[-1])
    return {"value": j["samples_per_s"], "torch": j["torch"], "open_clip": j["open_clip"]}


def source_commit():
    """The commit of the tree the measurements ran on (+ "-dirty" with uncommitted changes)."""
    git = ["git", "-C", ROOT]
    head = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(git + ["status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout
    return (head or "?") + ("-dirty" if dirty.strip() else "")


def measure(args, figs, results_path):
    commit = source_commit()
    done = {}
    if os.path.exists(results_path):  # --fresh has removed the measured figures' records
        for line in open(results_path):
            r = json.loads(line)
            done[(r["fig"], r["side"], r["round"])] = r
    with open(results_path, "a") as out:
        for fig_id, _, _, (oargv, key), theirs in figs:
            for rnd in range(args.rounds):
                sides = [("ours", None)] + [(label, a) for label, a in theirs.items()]
                for side, targv in sides:  # A B A B: ours, then each of theirs, every round
                    if (fig_id, side, rnd) in done:
                        continue
                    ld, when = load(), time.strftime("%Y-%m-%d %H:%M", time.gmtime())
                    try:
                        r = run_ours(args.binary, oargv, key) if targv is None else run_theirs(targv)
                    except (subprocess.CalledProcessError, KeyError, ValueError) as e:
                        err = getattr(e, "stderr", "") or ""
                        print(f"compare: {fig_id} {side} round {rnd + 1} failed: {e} {err[-400:]}", file=sys.stderr)
                        r = {"value": None}
                    r.update({"fig": fig_id, "side": side, "round": rnd, "load": ld, "time": when,
                              "sched": scheduling(), "commit": commit})
                    print(f"compare: {fig_id:16s} {side:18s} round {rnd + 1}: {r['value']} (load {ld})", file=sys.stderr)
                    out.write(json.dumps(r) + "\n")
                    out.flush()
                    done[(fig_id, side, rnd)] = r
    return done


def fmt_stat(vals, unit):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "failed", None
    if unit == "ms":
        vals = [1000.0 / v for v in vals]
    med = statistics.median(vals)
    return (f"{med:.3g}" if len(vals) == 1 else f"{med:.3g} ({min(vals):.3g}-{max(vals):.3g})"), med


def span(times):
    """First to last of sorted "YYYY-MM-DD HH:MM" times, the date said once when it is one day."""
    if not times:
        return "-"
    a, b = times[0], times[-1]
    return a if a == b else f"{a} to {b[11:] if a[:10] == b[:10] else b}"


def table(args, figs, done, model, flags, versions, t_start, t_end):
    """The markdown table. Dates, loads and scheduling come from the measurements' own records
    (those of an interrupted run that this one resumed included); t_start/t_end are this
    invocation's, used for records written before the script recorded times."""
    recs = [r for r in done.values() if r.get("value") is not None]
    times = sorted(r["time"] for r in recs if r.get("time"))
    first, last = (times[0], times[-1]) if times else (t_start[0], t_end[0])
    loads = [float(r["load"].split()[0]) for r in recs if r.get("load")]
    sched = sorted({r["sched"] for r in recs if r.get("sched")})
    lines = [f"CPU: {model}, {os.cpu_count()} logical CPUs; ISA flags: {' '.join(flags)}",
             f"Date: {first} to {last} (UTC); 1-minute load average during the measurements "
             + (f"{min(loads):.2f}-{max(loads):.2f}" if loads else "?")
             + (f"; ran at {', '.join(sched)}" if sched else ""),
             f"Ours: {os.path.relpath(args.binary, ROOT) if os.path.abspath(args.binary).startswith(ROOT + os.sep) else os.path.basename(args.binary)} ({versions['ours']}); theirs: torch {versions.get('torch', '?')}, "
             f"open_clip {versions.get('open_clip', '?')}; {args.rounds} rounds of A B, median (min-max)",
             "",
             "| figure | unit | ours | theirs | ours / theirs | measured (UTC), at commit |",
             "| --- | --- | --- | --- | --- | --- |"]
    for fig_id, what, unit, _, theirs in figs:
        mine = [r for r in recs if r["fig"] == fig_id]
        when = span(sorted(r["time"] for r in mine if r.get("time")))
        commits = sorted({r["commit"] for r in mine if r.get("commit")})
        when += f" at {', '.join(commits)}" if commits else ""
        o, om = fmt_stat([done.get((fig_id, "ours", r), {}).get("value") for r in range(args.rounds)], unit)
        cells, ratios = [], []
        for label in theirs:
            t, tm = fmt_stat([done.get((fig_id, label, r), {}).get("value") for r in range(args.rounds)], unit)
            cells.append(f"{label}: {t}")
            if om and tm:
                ratios.append(f"{(tm / om if unit == 'ms' else om / tm):.2f}x vs {label}")
        lines.append(f"| {what} | {unit} | {o} | {'; '.join(cells)} | {'; '.join(ratios) or '-'} | {when} |")
    lines.append("")
    lines.append("ours / theirs > 1: ours is faster (for latency, their ms over ours).")
    return "\n".join(lines)


def write_section(kind, model, text):
    """The section of this CPU kind, between its markers, in docs/BENCHMARKS.md and the README
    (replaced; a new kind goes after the "compare.sh sections" anchor)."""
    b, e = BEGIN.format(kind=kind), END.format(kind=kind)
    block = f"{b}\n### {model}\n\n{text}\n{e}"
    for path in (os.path.join(ROOT, "docs", "BENCHMARKS.md"), os.path.join(ROOT, "README.md")):
        doc = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
        if b in doc and e in doc:
            doc = doc[:doc.index(b)] + block + doc[doc.index(e) + len(e):]
        else:
            anchor = "<!-- compare.sh sections -->"
            doc = doc.replace(anchor, anchor + "\n\n" + block) if anchor in doc else doc.rstrip() + "\n\n" + block + "\n"
        with open(path + ".tmp", "w") as f:
            f.write(doc)
        os.replace(path + ".tmp", path)
        print(f"compare: wrote {path} ({kind})", file=sys.stderr)


def main():
    args = parse()
    if args.quick:
        args.rounds, args.fresh = 1, True
    if not os.path.exists(args.binary):
        sys.exit(f"compare: {args.binary} not found (build it: ninja -C build openclip)")
    model, flags, kind = cpu_info(args.binary)
    work = os.path.join(ROOT, "build", "compare", kind + ("-quick" if args.quick else ""))
    os.makedirs(work, exist_ok=True)
    inputs = make_inputs(os.path.join(ROOT, "build", "compare", "inputs"), args.quick)
    all_figs = figures(args.quick, inputs)
    figs = [f for f in all_figs if re.search(args.only, f[0])]
    results = os.path.join(work, "results.jsonl")
    if args.fresh and os.path.exists(results):  # forget the measured figures' earlier records
        measured = {f[0] for f in figs}
        keep = [line for line in open(results) if json.loads(line)["fig"] not in measured]
        with open(results + ".tmp", "w") as f:
            f.writelines(keep)
        os.replace(results + ".tmp", results)
    t_start = (time.strftime("%Y-%m-%d %H:%M", time.gmtime()), load())
    done = measure(args, figs, results)
    t_end = (time.strftime("%Y-%m-%d %H:%M", time.gmtime()), load())
    versions = {"ours": subprocess.run([args.binary, "--version"], capture_output=True, text=True).stdout.strip()}
    info = json.loads(subprocess.run([args.binary, "info", "--json"], capture_output=True, text=True).stdout or "{}")
    if "onednn" in info:
        versions["ours"] += f", oneDNN {info['onednn'].get('version', '?')} {info['onednn'].get('isa', '')}"
    for r in done.values():
        for k in ("torch", "open_clip"):
            if r.get(k):
                versions[k] = r[k]
    # Every figure with measurements is in the table (those --only left alone keep their rows and dates).
    text = table(args, [f for f in all_figs if any(k[0] == f[0] for k in done)], done, model, flags, versions,
                 t_start, t_end)
    print(text)
    failed = [k for k, r in done.items() if r.get("value") is None]
    if not args.quick and not args.no_write:
        write_section(kind, model, text)
    if failed:
        sys.exit(f"compare: {len(failed)} measurements failed: {failed[:5]}")


if __name__ == "__main__":
    main()
