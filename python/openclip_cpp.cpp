// The extension openclip_cpp._core (pybind11): the public API (include/openclip/openclip.h)
// with numpy in and out, plus tokenize, train, model tokenizers and the CLI (cli_main). The
// package python/openclip_cpp/ wraps it in OpenCLIP's API (create_model_and_transforms).
// Every call that computes releases the GIL.
// Threads: a Model may be called from many Python threads at once. Its calls take turns on a
// lock per model (taken after the GIL is released, so a waiting call never blocks the
// interpreter). A lock rather than buffers per call: one forward pass already uses every core
// (the backend's thread pool), so concurrent passes would not be faster, and buffers per call
// would multiply the activation memory (tens to hundreds of MB per batch) by the number of
// threads. Each call's result equals the same call made alone, bit for bit.
// Errors are oc::Error / std::runtime_error, which pybind11 raises as RuntimeError with the
// same message the CLI prints after "error: "; out of memory is a MemoryError naming the call
// (memory_checked).
#include <openclip/openclip.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/check.h"
#include "core/flags.h"
#include "core/out_of_memory.h"
#include "model/config.h"
#include "model/config_limits.h"
#include "model/model_tokenizer.h"
#include "text/tokenizer.h"
#include "train/trainer.h"

namespace py = pybind11;

namespace {

using U8Array = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;

// [n, dim] float32 from the library's rows.
py::array_t<float> to_numpy(const std::vector<std::vector<float>>& rows, int dim) {
  py::array_t<float> out({py::ssize_t(rows.size()), py::ssize_t(dim)});
  float* p = out.mutable_data();
  for (const auto& r : rows) p = std::copy(r.begin(), r.end(), p);
  return out;
}

// A C-contiguous copy (or the array itself) of uint8 item `i`, its shape checked first: a
// broadcast or strided view may be far larger than its memory. A height or width past int is
// a ValueError; a copy that cannot be made a MemoryError naming its size (ensure() returns a
// null array then, which was dereferenced).
U8Array contiguous(const py::array& a, size_t i) {
  const std::string item = "encode_image: item " + std::to_string(i);
  if (a.ndim() == 3 && (a.shape(0) > INT32_MAX || a.shape(1) > INT32_MAX))
    throw py::value_error(item + ": an image of " + std::to_string(a.shape(0)) + " x " + std::to_string(a.shape(1)) +
                          " pixels is larger than the model's preprocessing takes (2^31 - 1 a side)");
  U8Array c = U8Array::ensure(a);  // null when the copy fails; ensure() clears numpy's error
  if (!c) {
    const std::string bytes = a.ndim() == 3 ? std::to_string(a.shape(0)) + " x " + std::to_string(a.shape(1)) + " x " +
                                                  std::to_string(a.shape(2)) + " bytes"
                                            : std::to_string(a.nbytes()) + " bytes";
    PyErr_SetString(PyExc_MemoryError,
                    (item + ": a contiguous copy of the array (" + bytes + ") could not be allocated").c_str());
    throw py::error_already_set();
  }
  return c;
}

// One uint8 HWC RGB array; the arrays are kept alive by the caller's list while we compute.
openclip::ImageView image_view(const U8Array& a) {
  if (a.ndim() != 3 || a.shape(2) != 3)
    throw oc::Error("encode_image: an image array must be uint8 with shape (height, width, 3), got " +
                    std::to_string(a.ndim()) + " dimensions" +
                    (a.ndim() == 3 ? " and " + std::to_string(a.shape(2)) + " channels" : ""));
  return {a.data(), int(a.shape(0)), int(a.shape(1))};
}

// Out of memory in a call from Python: a MemoryError naming the call, and the bytes asked for
// when the library knows them (oc::OutOfMemory: a backend's buffer, a host block), not
// pybind11's bare "std::bad_alloc" (a 30000 x 30000 image under a 6 GB address-space limit
// said only that; issue 42 item 13), nor a RuntimeError for what is no bad input. f may
// release the GIL; it is held again when its exception arrives here.
constexpr const char* kLessMemory = "fewer or smaller inputs per call, or a smaller batch_size, need less";

template <class F>
auto memory_checked(const std::string& call, F&& f) -> decltype(f()) {
  std::string msg;
  try {
    return f();
  } catch (const oc::OutOfMemory& e) {
    msg = call + ": out of memory allocating " + std::to_string(e.bytes()) + " bytes (" + e.what() + "; " +
          kLessMemory + ")";
  } catch (const std::bad_alloc& e) {
    msg = call + ": out of memory (" + e.what() + ", an allocation of a size not known here; " + kLessMemory + ")";
  }
  PyErr_SetString(PyExc_MemoryError, msg.c_str());
  throw py::error_already_set();
}

// Runs f (a model call) without the GIL, on the model's lock; out of memory as above.
template <class F>
std::vector<std::vector<float>> compute(std::mutex& mu, const std::string& what, F&& f) {
  return memory_checked(what, [&] {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> turn(mu);
    return f();
  });
}

class PyModel {
 public:
  PyModel(const std::string& name, const std::string& pretrained, const std::string& precision, int batch_size,
          const std::string& device, const std::string& int8_scales)
      : m_(load(name, pretrained, precision, batch_size, device, int8_scales)) {}

  int embed_dim() const { return m_.embed_dim(); }
  int image_size() const { return m_.image_size(); }
  int context_length() const { return m_.context_length(); }

  // A path, a list of paths, a uint8 HWC array, or a list of arrays.
  py::array_t<float> encode_image(py::object images, bool normalize) {
    if (py::isinstance<py::str>(images)) return encode_paths({images.cast<std::string>()}, normalize);
    if (py::isinstance<py::array>(images)) {
      py::list one;
      one.append(images);
      return encode_arrays(one, normalize);
    }
    py::list items(images);
    if (items.size() > 0 && py::isinstance<py::str>(items[0])) return encode_paths(items.cast<std::vector<std::string>>(), normalize);
    return encode_arrays(items, normalize);
  }

  // Token ids [n, context_length] (any integer dtype), as a model's Tokenizer gives them.
  py::array_t<float> encode_tokens(const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& ids,
                                   bool normalize) {
    if (ids.ndim() != 2 || ids.shape(1) != m_.context_length())
      throw oc::Error("encode_text: token ids must have shape (n, " + std::to_string(m_.context_length()) + ")");
    std::vector<int32_t> flat(size_t(ids.size()));
    for (py::ssize_t i = 0; i < ids.size(); ++i) {
      const int64_t v = ids.data()[i];
      flat[size_t(i)] = v < 0 || v > INT32_MAX ? -1 : int32_t(v);  // out of range: the library names it
    }
    const auto rows = compute(*mu_, "encode_text: " + std::to_string(ids.shape(0)) + " rows of token ids",
                              [&] { return m_.encode_tokens(flat, normalize); });
    return to_numpy(rows, m_.embed_dim());
  }

  py::array_t<float> encode_text(const std::vector<std::string>& texts, bool normalize) {
    const auto rows = compute(*mu_, "encode_text: " + std::to_string(texts.size()) + " texts",
                              [&] { return m_.encode_texts(texts, normalize); });
    return to_numpy(rows, m_.embed_dim());
  }

 private:
  static openclip::Model load(const std::string& name, const std::string& pretrained, const std::string& precision,
                              int batch_size, const std::string& device, const std::string& int8_scales) {
    openclip::LoadOptions lo;
    lo.precision = precision;
    lo.batch_size = batch_size;
    lo.device = device;
    lo.int8_scales = int8_scales;
    return memory_checked("create_model: " + name, [&] {
      py::gil_scoped_release nogil;
      return openclip::Model::load(name, pretrained, lo);
    });
  }

  py::array_t<float> encode_paths(const std::vector<std::string>& paths, bool normalize) {
    const auto rows = compute(*mu_, "encode_image: " + std::to_string(paths.size()) + " image files",
                              [&] { return m_.encode_image_files(paths, normalize); });
    return to_numpy(rows, m_.embed_dim());
  }

  py::array_t<float> encode_arrays(const py::list& items, bool normalize) {
    std::vector<U8Array> arrays;  // keeps the C-contiguous views (or copies) alive
    for (auto item : items) {
      // uint8 only: a silent cast of float or int pixels would give plausible wrong embeddings.
      if (!py::isinstance<py::array_t<uint8_t>>(item))
        throw oc::Error("encode_image: item " + std::to_string(arrays.size()) + " is " +
                        std::string(py::str(py::type::of(item).attr("__name__"))) +
                        (py::isinstance<py::array>(item) ? " of dtype " + std::string(py::str(item.attr("dtype"))) : "") +
                        ", not a path or a uint8 (height, width, 3) array");
      arrays.push_back(contiguous(py::reinterpret_borrow<py::array>(item), arrays.size()));
    }
    std::vector<openclip::ImageView> views;
    for (const auto& a : arrays) views.push_back(image_view(a));
    const auto rows = compute(*mu_, "encode_image: " + std::to_string(views.size()) + " images",
                              [&] { return m_.encode_images(views, normalize); });
    return to_numpy(rows, m_.embed_dim());
  }

  openclip::Model m_;
  // The model's buffers are shared by its calls: one call at a time (see the top of the file).
  // Behind a pointer so that PyModel stays movable (create_model returns it by value).
  std::unique_ptr<std::mutex> mu_ = std::make_unique<std::mutex>();
};

// A context_length from Python: 2 .. the largest a model config may have (65536). Past it the
// [n, context_length] ids were allocated and zero-filled first: tokenize(["a"], 2**31 - 1)
// took 8 GB and the interpreter was killed (issue 42).
void check_context_length(const char* call, int context_length) {
  if (context_length < 2 || context_length > oc::ModelLimits::kMaxContext)
    throw py::value_error(std::string(call) + ": context_length must be from 2 to " +
                          std::to_string(oc::ModelLimits::kMaxContext) + ", got " + std::to_string(context_length));
}

// OpenCLIP's tokenize(): [n, context_length] int64 ids (the CLIP BPE vocabulary).
py::array_t<int64_t> tokenize(const std::vector<std::string>& texts, int context_length) {
  check_context_length("tokenize", context_length);
  static const oc::Tokenizer tok = oc::Tokenizer::load_default();
  std::vector<size_t> bad;
  const std::vector<int32_t> ids = memory_checked("tokenize: " + std::to_string(texts.size()) + " texts", [&] {
    py::gil_scoped_release nogil;
    return tok.tokenize_batch(texts, context_length, &bad);
  });
  if (!bad.empty()) throw oc::Error("text " + std::to_string(bad[0]) + " is not valid UTF-8");
  py::array_t<int64_t> out({py::ssize_t(texts.size()), py::ssize_t(context_length)});
  std::copy(ids.begin(), ids.end(), out.mutable_data());
  return out;
}

// A model config's tokenizer (model_tokenizer): OpenCLIP's get_tokenizer(name).
class PyTokenizer {
 public:
  explicit PyTokenizer(const std::string& model) : tok_(oc::model_tokenizer(oc::load_model_config(model))) {}
  int context_length() const { return tok_->context_length(); }
  py::array_t<int64_t> call(const std::vector<std::string>& texts, int context_length) const {
    check_context_length("tokenizer", context_length);
    std::vector<int32_t> row(static_cast<size_t>(context_length));
    py::array_t<int64_t> out({py::ssize_t(texts.size()), py::ssize_t(context_length)});
    int64_t* p = out.mutable_data();
    for (size_t i = 0; i < texts.size(); ++i) {
      std::fill(row.begin(), row.end(), 0);
      if (auto st = tok_->tokenize(texts[i], row); !st)
        throw oc::Error("text " + std::to_string(i) + ": " + st.error());
      p = std::copy(row.begin(), row.end(), p);
    }
    return out;
  }
  // An id outside the vocabulary is a ValueError naming it (was an internal check's message
  // with the library's file and line).
  std::string decode(const std::vector<int32_t>& ids) const {
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] < 0 || ids[i] >= tok_->id_limit())
        throw py::value_error("decode: token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                              " is outside the vocabulary [0, " + std::to_string(tok_->id_limit()) + ")");
    return tok_->decode(ids);
  }

 private:
  std::shared_ptr<const oc::TextTokenizer> tok_;
};

// `openclip ARGS...` in this process (argv[0] is the program name): its exit status.
int cli_main(std::vector<std::string> argv) {
  std::vector<char*> ptrs;
  for (auto& a : argv) ptrs.push_back(a.data());
  ptrs.push_back(nullptr);
  py::gil_scoped_release nogil;
  return oc::cli::run_main(int(argv.size()), ptrs.data());
}

// train(["--model", "test-tiny", ...]): OpenCLIP's flags, parsed once by the flag registry
// into a TrainArgs for the library's entry point oc::train().
int train(const std::vector<std::string>& args) {
  oc::Options o = oc::options_for("train");
  o.parse(args);
  if (o.help_requested()) {
    py::print(o.help());
    return 0;
  }
  const oc::TrainArgs a = oc::resolve_train_args(o);
  return memory_checked("train", [&] {
    py::gil_scoped_release nogil;
    return oc::train(a);
  });
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  // Any other out-of-memory (converting the arguments, a call without memory_checked): a
  // MemoryError that says so, not pybind11's bare "std::bad_alloc".
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const oc::OutOfMemory& e) {
      PyErr_SetString(PyExc_MemoryError, (std::string("openclip_cpp: out of memory allocating ") +
                                          std::to_string(e.bytes()) + " bytes (" + e.what() + ")")
                                             .c_str());
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError,
                      "openclip_cpp: out of memory (std::bad_alloc): the call needed more memory "
                      "than the process could allocate");
    }
  });
  m.doc() = "openclip-cpp's extension: OpenCLIP models in native C++ (encode images and texts, tokenize, train)";
  py::class_<PyModel>(m, "Model")
      .def_property_readonly("embed_dim", &PyModel::embed_dim)
      .def_property_readonly("image_size", &PyModel::image_size)
      .def_property_readonly("context_length", &PyModel::context_length)
      .def("encode_image", &PyModel::encode_image, py::arg("images"), py::arg("normalize") = true,
           "float32 [n, embed_dim] for a path, a list of paths, a uint8 (H, W, 3) RGB array or a list of them")
      .def("encode_text", &PyModel::encode_text, py::arg("texts"), py::arg("normalize") = true,
           "float32 [n, embed_dim] for a list of str")
      .def("encode_tokens", &PyModel::encode_tokens, py::arg("ids"), py::arg("normalize") = true,
           "float32 [n, embed_dim] for token ids [n, context_length] (a Tokenizer's output)");
  py::class_<PyTokenizer>(m, "Tokenizer")
      .def(py::init<const std::string&>(), py::arg("model"), "the tokenizer of a model config (name or JSON path)")
      .def_property_readonly("context_length", &PyTokenizer::context_length)
      .def("__call__", &PyTokenizer::call, py::arg("texts"), py::arg("context_length"), "int64 [n, context_length]")
      .def("decode", &PyTokenizer::decode, py::arg("ids"), "text of ids (special tokens and padding dropped)");
  m.def("list_models", &oc::builtin_model_names, "the built-in model config names");
  m.def("cli_main", &cli_main, py::arg("argv"),
        "runs the openclip CLI with argv (argv[0] = program name); its exit status");
  m.def(
      "create_model",
      [](const std::string& name, const std::string& pretrained, const std::string& precision, int batch_size,
         const std::string& device, const std::string& int8_scales) {
        return PyModel(name, pretrained, precision, batch_size, device, int8_scales);
      },
      py::arg("name"), py::arg("pretrained") = "", py::arg("precision") = "fp32", py::arg("batch_size") = 32,
      py::arg("device") = "cpu", py::arg("int8_scales") = "",
      "a config name (\"ViT-B-32\"), a JSON path or a whole model (\"hf-hub:org/name\", \"local-dir:PATH\", a hub "
      "folder), "
      "and a weights file, a pretrained tag or a whole model (\"\" = the whole model's weights, else random init); "
      "device: cpu, ref or "
      "cuda (as --device); precision: fp32, amp_bf16, bf16 or int8 (as --precision); int8_scales: a file from "
      "`openclip quantize` (as --int8-scales; \"\" = the one beside the weights if any, else dynamic scales)");
  m.def("tokenize", &tokenize, py::arg("texts"), py::arg("context_length") = oc::kDefaultContextLength);
  m.def("train", &train, py::arg("args"), "runs `openclip train ARGS...`; returns its exit status");
  m.attr("__version__") = OPENCLIP_VERSION;
}
