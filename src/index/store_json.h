// meta.json and items.jsonl of an index folder (store.h), to and from text. Every field is
// read with its type checked: a wrong type or value is an oc::Error naming the file, the
// line for items.jsonl, and the key (not a bare JSON library message).
#pragma once
#include <string>
#include <vector>

#include "index/store.h"

namespace oc::index {

constexpr int kIndexVersion = 2;

std::string generation_name(int64_t generation);  // "gen-000003"
IndexMeta meta_from_json(const std::string& text, const std::string& path);
std::string meta_to_json(const IndexMeta& m);
std::vector<Item> items_from_jsonl(const std::string& text, const std::string& path);
std::string items_to_jsonl(const std::vector<Item>& items);
// Whether a path has a ".." part.
bool has_parent_part(const std::string& path);
// An item's path must be absolute, without ".." parts, and be one of the roots (a shard) or
// lie under one (a folder), compared lexically ("//" and "." parts are the kernel's too):
// items.jsonl cannot point the server at other files.
void check_item_path(const Item& it, const std::vector<std::string>& roots, const std::string& path, size_t line);

}  // namespace oc::index
