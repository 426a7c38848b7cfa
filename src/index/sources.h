// What `openclip index build --images SPEC` embeds: a folder (its images, recursively,
// sorted), a glob or brace pattern of image files, or webdataset shards (*.tar, braces
// allowed) whose samples give the image and the caption (.txt).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "data/stats.h"
#include "index/store.h"
#include "io/file.h"

namespace oc::index {

struct Sources {
  std::vector<Item> items;         // in input order, without embeddings
  std::vector<std::string> roots;  // the folder, the folders of the pattern's files, or the shards
};

// Paths are absolute and lexically normal (no "." or ".." parts). Throws oc::Error when
// SPEC matches nothing. Damaged shards are counted in `stats` and skipped.
Sources list_sources(const std::string& spec, data::DataStats* stats);
// The image bytes of an item: the file, or its member of the shard. Regular files only, whose
// real path (of the open descriptor: symlinks resolved) lies under one of `roots`; a shard
// member's offset and size are checked against the shard's size before anything is
// allocated (items.jsonl may claim 1 TB).
Result<std::vector<uint8_t>> read_item_bytes(const Item& it, const std::vector<std::string>& roots);
// The same checks, without reading: the open file and the item's byte range in it (for the
// server, which streams it).
struct ItemFile {
  io::ReadFile file;
  uint64_t offset = 0, size = 0;
};
Result<ItemFile> open_item(const Item& it, const std::vector<std::string>& roots);

}  // namespace oc::index
