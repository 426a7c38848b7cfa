// openclip convert IN OUT: model weights between PyTorch checkpoints (.pt/.pth/.bin) and
// safetensors. From an OpenCLIP training checkpoint only the model state_dict is kept
// (DDP's "module." prefix removed), as OpenCLIP's own loader does. Output is atomic.
#include <cstdio>
#include <map>

#include "cli/command.h"
#include "core/check.h"
#include "core/flags.h"
#include "io/file.h"
#include "io/safetensors.h"
#include "io/torch_pt.h"

namespace oc::cli {
namespace {

enum class Format { Pt, Safetensors };

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Format output_format(const std::string& path) {
  if (ends_with(path, ".safetensors")) return Format::Safetensors;
  if (ends_with(path, ".pt") || ends_with(path, ".pth") || ends_with(path, ".bin")) return Format::Pt;
  OC_USER_ERROR("cannot tell the output format of '{}': name it *.safetensors, *.pt, *.pth or *.bin", path);
}

// By content: torch.save archives are zips ("PK\3\4"). Other files named like checkpoints
// go to load_pt too (it explains legacy and broken ones); the rest are read as safetensors.
Format input_format(const std::string& path) {
  auto f = io::ReadFile::open(path);
  if (!f) OC_USER_ERROR("{}", f.error());
  if (f->size() >= 4) {
    auto head = f->read(0, 4);
    if (head && (*head)[0] == 'P' && (*head)[1] == 'K' && (*head)[2] == 3 && (*head)[3] == 4) return Format::Pt;
  }
  return ends_with(path, ".safetensors") ? Format::Safetensors
         : (ends_with(path, ".pt") || ends_with(path, ".pth") || ends_with(path, ".bin")) ? Format::Pt
                                                                                          : Format::Safetensors;
}

int run(const std::vector<std::string>& args) {
  Options opt = options_for("convert");
  opt.parse(args);
  if (opt.help_requested()) return std::printf("%s", opt.help().c_str()), 0;
  if (opt.positional().size() != 2) OC_USER_ERROR("expected IN and OUT (openclip convert IN OUT)");
  const std::string in = opt.positional()[0], out = opt.positional()[1];
  const Format to = output_format(out);

  std::vector<std::pair<std::string, HostTensor>> tensors;
  std::map<std::string, std::string> metadata;
  if (input_format(in) == Format::Pt) {
    auto ckpt = io::load_pt(in);
    if (!ckpt) OC_USER_ERROR("{}", ckpt.error());
    auto sd = io::extract_state_dict(*ckpt);
    if (!sd) OC_USER_ERROR("{}: {}", in, sd.error());
    tensors.reserve(sd->size());
    for (auto& [name, rec] : *sd) tensors.emplace_back(name, std::move(rec->data));
  } else {
    auto st = io::read_safetensors(in);
    if (!st) OC_USER_ERROR("{}", st.error());
    tensors = std::move(st->tensors);
    metadata = std::move(st->metadata);
  }
  const size_t count = tensors.size();
  size_t bytes = 0;
  for (auto& [name, t] : tensors) bytes += t.bytes.size();
  if (to == Format::Safetensors) {
    metadata.emplace("format", "pt");  // what transformers writes; its loaders look for it
    io::write_safetensors(out, tensors, metadata);
  } else {
    io::save_pt(out, io::make_state_dict(std::move(tensors)));
  }
  std::printf("converted %zu tensors (%.1f MiB) from %s to %s\n", count,
              double(bytes) / (1 << 20), in.c_str(), out.c_str());
  return 0;
}

OC_REGISTER_COMMAND("convert", "model weights between .pt/.pth/.bin and .safetensors (state_dict only)", run);

}  // namespace
}  // namespace oc::cli
