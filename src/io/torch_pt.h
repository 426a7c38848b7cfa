// PyTorch checkpoints (.pt/.pth/.bin written by torch.save since 1.6): load into a PyValue
// tree with every tensor materialized as a contiguous HostTensor, save in torch.save's zip
// layout (loadable by torch.load, including weights_only=True), and pull a model
// state_dict out of a bare state_dict or an OpenCLIP training checkpoint.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/tensor.h"
#include "io/pickle.h"

namespace oc::io {

// Reads `path`: zip container, restricted unpickling of data.pkl, then every storage read
// once (views and shared storages are materialized; CRC-32s are checked where a storage is
// read whole). Bad or hostile input is an error naming the entry, opcode, global or offset.
// A torch.jit.save archive (TorchScript: constants.pkl and code/ beside data.pkl) reads as
// its module tree, PyKind::Object nodes with attribute dicts; its code is never read.
Result<PyValue> load_pt(const std::string& path);
// Whether `path` is a torch.jit.save archive (looks at the zip's directory only).
bool is_torchscript_archive(const std::string& path);

struct SavePtOptions {
  bool force_zip64 = false;  // zip64 records even for small files (tests of the zip64 path)
};
// Writes `value` atomically as torch.save does (archive folder = basename up to its last
// dot; data.pkl, byteorder, data/<k>, version "3\n"; no .format_version). A tensor object
// referenced twice is stored once. Throws oc::Error on I/O failure.
void save_pt(const std::string& path, const PyValue& value, const SavePtOptions& opt = {});

// name -> tensor, in checkpoint order. Records are shared with the tree they came from.
using StateDict = std::vector<std::pair<std::string, std::shared_ptr<TensorRecord>>>;

// As OpenCLIP's load_state_dict: takes checkpoint['state_dict'] when the checkpoint is a
// dict with that key, else the checkpoint itself; when the first key starts with "module"
// (DDP), strips the "module." prefix. Every key must be a str and every value a tensor.
// A TorchScript module tree gives its tensor attributes by dotted path (as its state_dict,
// plus plain tensor attributes such as OpenAI's attn_mask).
Result<StateDict> extract_state_dict(const PyValue& checkpoint);

// An OrderedDict name -> tensor, ready for save_pt (the tensors are moved in).
PyValue make_state_dict(std::vector<std::pair<std::string, HostTensor>> tensors);

}  // namespace oc::io
