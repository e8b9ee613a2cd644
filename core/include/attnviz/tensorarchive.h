// SPDX-License-Identifier: GPL-3.0-or-later
// Checkpoint tensors read straight from memory-mapped safetensors files: one `model.safetensors`
// or the shards an index (`model.safetensors.index.json`) names. Nothing a header claims is
// trusted: the JSON header is capped, element counts are computed overflow-safe, every tensor must
// lie inside its file and span exactly its dtype × shape bytes. Tensors are converted on demand
// (F64, F32, F16, BF16 → float or double) and the pages read are given back to the kernel, so a
// 500 MB checkpoint never sits in memory twice.
#pragma once

#include "attnviz/status.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace attnviz {

struct GgufFile;

struct TensorEntry {
    std::string dtype;          // F64, F32, F16, BF16
    std::vector<int64_t> shape;
    uint64_t count = 0;         // elements
    uint64_t offset = 0;        // into the file's mapping (header included)
    uint64_t bytes = 0;
    int file = 0;               // which mapped file
    int ggml = -1;              // a GGUF tensor: its ggml type (gguf.h; dtype holds its name), else -1
    int rotaryHeads = 0;        // GGUF llama q/k: rows stored in interleaved rotary order for this many heads
};

// Called while tensors are converted: bytes done, bytes in all; return false to cancel.
using LoadProgress = std::function<bool(uint64_t done, uint64_t total)>;

class TensorArchive {
public:
    TensorArchive();
    ~TensorArchive();
    TensorArchive(TensorArchive &&) noexcept;
    TensorArchive &operator=(TensorArchive &&) noexcept;

    // One safetensors file. Errors name the file and the tensor ("FILE: h.0.attn.c_attn.weight: ...").
    Status openFile(const std::string &path);
    // One GGUF file (gguf.h): its tensors under their GGUF names, shapes in PyTorch's order (ne
    // reversed: (rows, cols)), dtype the ggml type's name; `parsed` gets the header and metadata.
    // Quantized tensors are widened on read() exactly as ggml's reference does (ggufquants.h); a
    // type attnviz does not decode is refused when read, naming the tensor and the type.
    Status openGguf(const std::string &path, GgufFile *parsed = nullptr);
    // Marks a GGUF tensor whose rows llama.cpp's converter permuted for its adjacent-pair rotary
    // (q and k of `llama` files): reads give the rows in Hugging Face's half-split order again.
    void setRotaryHeads(const std::string &name, int heads);
    // A model folder's weights: model.safetensors, or model.safetensors.index.json and its shards.
    // A folder with only pytorch_model.bin is refused with a message naming the file to get.
    Status openFolder(const std::string &dir);

    const TensorEntry *find(const std::string &name) const;
    const std::map<std::string, TensorEntry> &entries() const { return m_entries; }
    // The file a tensor lives in (for messages).
    const std::string &fileOf(const TensorEntry &e) const;
    std::string fileOf(const std::string &name) const;
    // The dtype most tensors have ("F32", or "F16+F32" when mixed).
    std::string dtypeSummary() const;
    uint64_t totalBytes() const;

    // Converts a tensor into `dst` (count elements). Pages read are released afterwards. NaN/Inf
    // are refused (NonFinite, naming the tensor).
    Status read(const TensorEntry &e, float *dst) const;
    Status read(const TensorEntry &e, double *dst) const;
    // Copies an F16 or BF16 tensor's 16-bit values as they are (count of them), for weights kept in
    // their stored precision and widened inside the products. Same checks and progress as read().
    Status readBits16(const TensorEntry &e, uint16_t *dst) const;

    // A GGUF tensor's encoded rows as stored (rows in Hugging Face's order when permuted), for
    // weights kept quantized and widened inside the products; every value checked finite.
    Status readEncoded(const TensorEntry &e, std::vector<uint8_t> &dst) const;

    // Progress over every read() (set before reading; total = totalBytes()).
    void setProgress(LoadProgress progress) { m_progress = std::move(progress); }

private:
    struct Mapping;
    Status mapAndParse(const std::string &path);
    Status mapFile(const std::string &path, std::unique_ptr<Mapping> &map);
    // Row r of a permuted tensor: the stored row it comes from.
    int64_t storedRow(const TensorEntry &e, int64_t r) const;
    template <typename T>
    Status readAs(const TensorEntry &e, T *dst) const;
    // After a tensor's copy: its pages given back, then the progress callback.
    Status finishRead(const TensorEntry &e) const;
    std::string nameOf(const TensorEntry &e) const;

    std::vector<std::unique_ptr<Mapping>> m_files;
    std::map<std::string, TensorEntry> m_entries;
    LoadProgress m_progress;
    mutable uint64_t m_done = 0;
};

} // namespace attnviz
