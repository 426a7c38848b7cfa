// A faiss index file is checked twice before any search (issue 22, item 2): its layout is
// walked first (the two kinds this project writes, IndexFlatIP and IndexHNSWFlat over an
// IndexFlatIP, as faiss 1.7's index_write.cpp lays them out), so that every length it
// claims is compared with the bytes the file holds before faiss allocates from it (a 1.5 KB
// file claiming 2^29 floats made faiss zero-fill 2 GB); then, once faiss has read it, the
// HNSW graph is checked (levels, offsets, neighbour ids and their levels, entry point, max
// level, storage), since faiss' search trusts it and a bad id crashes the process.
#pragma once
#include <string>

namespace faiss {
struct Index;
}

namespace oc::index {

// Throws oc::Error naming the file, the field and its byte offset.
void check_faiss_layout(const std::string& path);
// Throws oc::Error naming the file and the first inconsistency found.
void check_faiss_structure(const faiss::Index& idx, const std::string& path);

}  // namespace oc::index
