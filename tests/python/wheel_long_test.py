"""The wheel (ctest -L long): built, installed into a fresh venv (with Debian's site packages:
numpy, PIL and torch 1.13, whose own oneDNN then shares the process), and there, away from the
source and build trees, the OpenCLIP-shaped API must give OpenCLIP's embeddings: a random-init
test-tiny model saved by OpenCLIP 2.24 (.pyref, made by scripts/setup_pyref.sh), images as
paths, PIL images and arrays, texts through get_tokenizer. Also `python -m openclip_cpp --version`.
Two ways in (argv[1]):
  wheel  (test python_wheel): scripts/build_wheel.sh's repaired wheel, installed with --no-index;
  pip    (test python_pip_install): `pip install SRC` as a user types it, with build isolation
         (pip fetches scikit-build-core and pybind11 from PyPI into a throw-away environment),
         through ccache when it is there, in OPENCLIP_PIP_BUILD_DIR (next to the build folder,
         so that ccache's base_dir-relative paths are the tree's and its objects are reused).
Skipped (77) with the reason when PyPI, .pyref or Debian's torch are missing. Environment (set
by CMake): OPENCLIP_SOURCE_DIR, OPENCLIP_TEST_SCRATCH, OPENCLIP_PIP_BUILD_DIR, OPENCLIP_TREE_CC/CXX.
"""
import os
import shutil
import subprocess
import sys
import textwrap
import time

SRC = os.environ.get("OPENCLIP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SCRATCH = os.environ.get("OPENCLIP_TEST_SCRATCH", "/tmp/openclip_wheel_test")
PYREF = os.path.join(SRC, ".pyref", "bin", "python")

# Max |ours - OpenCLIP| / max |OpenCLIP| over each tower's unnormalized output: fp32 with other
# summation orders differs by ~1e-6 of the largest value; a real difference (a wrong pool, a
# missing LayerNorm, another preprocessing) is O(1). The bound of tests/model/openclip_forward_test.cpp.
TOL = 1e-4

OURS = textwrap.dedent("""
    import sys, numpy as np
    import torch  # Debian's torch first: its oneDNN is loaded before ours
    import openclip_cpp
    from PIL import Image
    cfg, weights, out, *pngs = sys.argv[1:]
    assert "site-packages" in openclip_cpp.__file__, openclip_cpp.__file__
    model, _, preprocess = openclip_cpp.create_model_and_transforms(cfg, pretrained=weights)
    tok = openclip_cpp.get_tokenizer(cfg)
    texts = ["a photo of a dog", "a diagram", "x" * 300]
    from_paths = model.encode_image(pngs)
    from_pil = model.encode_image([preprocess(Image.open(p)) for p in pngs])
    from_arrays = model.encode_image([np.asarray(Image.open(p).convert("RGB")) for p in pngs])
    assert np.array_equal(from_paths, from_arrays), "paths and arrays differ"
    assert np.array_equal(from_pil, from_arrays), "PIL images and arrays differ"
    txt = model.encode_text(tok(texts))
    assert np.array_equal(txt, model.encode_text(texts)), "token ids and texts differ"
    # torch still computes correctly beside us (its own oneDNN)
    a = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    assert torch.equal(a @ a.T, torch.tensor(np.arange(12, dtype=np.float32).reshape(3, 4) @ np.arange(12, dtype=np.float32).reshape(3, 4).T))
    np.save(out + "/ours_image.npy", from_paths)
    np.save(out + "/ours_text.npy", txt)
    np.save(out + "/tokens.npy", tok(texts))
""")

REF = textwrap.dedent("""
    import os, sys, numpy as np, torch, open_clip
    from PIL import Image
    cfg, out, *pngs = sys.argv[1:]
    open_clip.add_model_config(cfg)
    name = os.path.splitext(os.path.basename(cfg))[0]
    torch.manual_seed(0)
    model, _, preprocess = open_clip.create_model_and_transforms(name)
    model.eval()
    torch.save(model.state_dict(), out + "/w.pt")
    tokens = open_clip.get_tokenizer(name)(["a photo of a dog", "a diagram", "x" * 300])  # the config's context length
    with torch.no_grad():
        img = model.encode_image(torch.stack([preprocess(Image.open(p)) for p in pngs]))
        txt = model.encode_text(tokens)
    np.save(out + "/ref_image.npy", img.numpy())
    np.save(out + "/ref_text.npy", txt.numpy())
    np.save(out + "/ref_tokens.npy", tokens.numpy())
""")


def skip(reason):
    print("skipped: " + reason)
    sys.exit(77)


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r


def rel_diff(a, b):
    import numpy as np
    return float(np.abs(a - b).max() / np.abs(b).max())


def install_built_wheel(py):
    """scripts/build_wheel.sh's wheel into the venv of `py`."""
    t0 = time.time()
    r = subprocess.run([os.path.join(SRC, "scripts", "build_wheel.sh"), os.path.join(SCRATCH, "dist")],
                       capture_output=True, text=True)
    if r.returncode == 77:
        skip(r.stderr.strip().splitlines()[-1])
    if r.returncode != 0:
        raise AssertionError("build_wheel.sh failed:\n" + r.stderr[-4000:])
    wheel = r.stdout.strip().splitlines()[-1]
    print(r.stderr.strip().splitlines()[-1], f"(whole script {time.time() - t0:.0f} s)")
    run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--disable-pip-version-check", wheel])


def pip_install_source(py):
    """`pip install SRC` with build isolation, as a user types it, into the venv of `py`."""
    probe = subprocess.run([py, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps", "-q",
                            "--disable-pip-version-check", "--timeout", "30", "scikit-build-core>=0.10", "pybind11"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        skip("PyPI cannot be reached (the isolated build fetches scikit-build-core and pybind11): "
             + (probe.stderr.strip().splitlines() or ["?"])[-1])
    env = dict(os.environ)
    build_dir = os.environ.get("OPENCLIP_PIP_BUILD_DIR", os.path.join(SCRATCH, "build"))
    if shutil.which("ccache"):
        env["CMAKE_ARGS"] = (env.get("CMAKE_ARGS", "") + " -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
                             " -DCMAKE_C_COMPILER_LAUNCHER=ccache").strip()
        env.setdefault("CCACHE_BASEDIR", os.path.dirname(os.path.abspath(SRC)))  # worktrees side by side share
        # scikit-build-core sets CC/CXX to Python's sysconfig compilers (x86_64-linux-gnu-g++ on
        # Debian) unless they are set: the same g++ under another name, which ccache hashes, so
        # every object missed. The tree's compilers (from CMake) are given instead.
        for var in ("CC", "CXX"):
            if os.environ.get("OPENCLIP_TREE_" + var):
                env.setdefault(var, os.environ["OPENCLIP_TREE_" + var])
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    t0 = time.time()
    r = subprocess.run([py, "-m", "pip", "install", "-v", "--disable-pip-version-check", "--timeout", "30",
                        "--config-settings=build-dir=" + build_dir, SRC], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise AssertionError("pip install (build isolation) failed:\n" + (r.stdout + r.stderr)[-6000:])
    installed = [line.strip() for line in (r.stdout + r.stderr).splitlines() if "Successfully installed" in line]
    print(f"pip install SRC with build isolation: {time.time() - t0:.0f} s wall;", "; ".join(installed))


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "wheel"
    if mode not in ("wheel", "pip"):
        raise SystemExit(f"usage: {sys.argv[0]} [wheel|pip]")
    if not os.path.exists(PYREF):
        skip(".pyref (OpenCLIP 2.24) is missing: run scripts/setup_pyref.sh")
    if subprocess.run(["/usr/bin/python3", "-c", "import torch, PIL, numpy"], capture_output=True).returncode != 0:
        skip("Debian's python3-torch, python3-pil or python3-numpy is missing")
    shutil.rmtree(SCRATCH, ignore_errors=True)
    os.makedirs(SCRATCH)
    venv = os.path.join(SCRATCH, "venv")
    run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv])
    py = os.path.join(venv, "bin", "python")
    if mode == "wheel":
        install_built_wheel(py)
    else:
        pip_install_source(py)
    # Away from the trees: no PYTHONPATH, no OPENCLIP_DATA_DIR, another working directory.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OPENCLIP_DATA_DIR")}
    work = os.path.join(SCRATCH, "work")
    os.makedirs(work)
    pngs = []
    import numpy as np
    from PIL import Image  # Debian's python3 runs this test
    rng = np.random.default_rng(3)
    for i, (h, w) in enumerate([(32, 32), (45, 61), (70, 33)]):
        pngs.append(os.path.join(work, f"{i}.png"))
        Image.fromarray(rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)).save(pngs[-1])
    cfg = os.path.join(SRC, "configs", "models", "test-tiny.json")
    run([PYREF, "-c", REF, cfg, work, *pngs], cwd=work)
    run([py, "-c", OURS, cfg, os.path.join(work, "w.pt"), work, *pngs], cwd=work, env=env)
    assert np.array_equal(np.load(os.path.join(work, "tokens.npy")), np.load(os.path.join(work, "ref_tokens.npy")))
    di = rel_diff(np.load(os.path.join(work, "ours_image.npy")), np.load(os.path.join(work, "ref_image.npy")))
    dt = rel_diff(np.load(os.path.join(work, "ours_text.npy")), np.load(os.path.join(work, "ref_text.npy")))
    print(f"OpenCLIP parity in the wheel's venv: image {di:.3g}, text {dt:.3g} (max |diff| / max |OpenCLIP|)")
    assert di < TOL and dt < TOL, (di, dt)
    v = run([py, "-m", "openclip_cpp", "--version"], cwd=work, env=env).stdout
    assert v.startswith("openclip "), v
    print("ok:", v.strip())


if __name__ == "__main__":
    main()
