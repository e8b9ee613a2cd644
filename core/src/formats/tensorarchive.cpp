// SPDX-License-Identifier: GPL-3.0-or-later
// Memory-mapped safetensors (tensorarchive.h); the header is checked by safetensorsheader.h. Sharded checkpoints add
// model.safetensors.index.json {"weight_map": {"name": "model-00001-of-00002.safetensors", ...}}.
// Own reader rather than a library: Debian has no C++ safetensors package, and mapping lets a
// checkpoint be converted tensor by tensor without a second copy in memory.
#include "attnviz/tensorarchive.h"
#include "attnviz/fileio.h"
#include "attnviz/gguf.h"

#include "ggufquants.h"
#include "mappedfile.h"

#include "jsonread.h"
#include "safetensorsheader.h"

#include <nlohmann/json.hpp>
#include <algorithm>

#include <sys/mman.h>
#include <unistd.h>

#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>

namespace attnviz {

namespace {

constexpr uint64_t kIndexCap = 50ull * 1000 * 1000;

bool exists(const std::string &path)
{
    uint64_t size = 0;
    return regularFileSize(path, size).ok();
}

} // namespace

struct TensorArchive::Mapping : detail::MappedFile {};

TensorArchive::TensorArchive() = default;
TensorArchive::~TensorArchive() = default;
TensorArchive::TensorArchive(TensorArchive &&) noexcept = default;
TensorArchive &TensorArchive::operator=(TensorArchive &&) noexcept = default;

Status TensorArchive::mapFile(const std::string &path, std::unique_ptr<Mapping> &out)
{
    std::unique_ptr<detail::MappedFile> m;
    if (Status st = detail::MappedFile::map(path, m); !st)
        return st;
    out = std::make_unique<Mapping>();
    out->path = m->path;
    std::swap(out->data, m->data);
    std::swap(out->size, m->size);
    return {};
}

Status TensorArchive::mapAndParse(const std::string &path)
{
    std::unique_ptr<Mapping> map;
    if (Status st = mapFile(path, map); !st)
        return st;
    if (map->size < 8)
        return Status::error(StatusCode::ParseError, path + ": truncated (" + std::to_string(map->size) + " bytes, no header length)");
    detail::SafetensorsHeader head;
    if (Status st = detail::parseSafetensorsHeader(map->data, map->size, path, int(m_files.size()), head); !st)
        return st;
    for (auto &kv : head.entries) {
        if (m_entries.count(kv.first))
            return Status::error(StatusCode::ParseError, path + ": " + kv.first + ": also in " + fileOf(m_entries.at(kv.first)));
        m_entries.emplace(kv.first, std::move(kv.second));
    }
    m_files.push_back(std::move(map));
    return {};
}

Status TensorArchive::openFile(const std::string &path)
{
    TensorArchive a;
    if (Status st = a.mapAndParse(path); !st)
        return st;
    *this = std::move(a);
    return {};
}

Status TensorArchive::openGguf(const std::string &path, GgufFile *parsed)
{
    std::unique_ptr<Mapping> map;
    if (Status st = mapFile(path, map); !st)
        return st;
    GgufFile f;
    if (Status st = parseGguf(map->data, map->size, path, f); !st)
        return st;
    TensorArchive a;
    for (const GgufTensorInfo &t : f.tensors) {
        TensorEntry e;
        e.dtype = ggmlTypeName(t.type);
        e.shape.assign(t.ne.rbegin(), t.ne.rend());
        for (const int64_t d : e.shape)
            if (d > INT_MAX)
                return Status::error(StatusCode::ParseError, path + ": tensor " + quoteText(t.name) + ": dimension " +
                                                                 std::to_string(d) + " is larger than " +
                                                                 std::to_string(INT_MAX) + ", the largest attnviz accepts");
        e.count = t.count;
        e.offset = t.offset;
        e.bytes = t.bytes;
        e.ggml = int(t.type);
        a.m_entries.emplace(t.name, std::move(e));
    }
    // The tensors' pages are not needed again once read (the header's are, by the caller's copy).
    a.m_files.push_back(std::move(map));
    if (parsed)
        *parsed = std::move(f);
    *this = std::move(a);
    return {};
}

void TensorArchive::setRotaryHeads(const std::string &name, int heads)
{
    auto it = m_entries.find(name);
    if (it != m_entries.end())
        it->second.rotaryHeads = heads;
}

int64_t TensorArchive::storedRow(const TensorEntry &e, int64_t r) const
{
    // convert_hf_to_gguf's permute: within each head of d rows, the Hugging Face row c * d/2 + i
    // (c = 0 for the first half of the rotary pairs, 1 for the second) is stored at row 2 i + c.
    const int64_t rows = e.shape.empty() ? 1 : e.shape.front();
    if (e.rotaryHeads <= 0 || rows % (2 * e.rotaryHeads) != 0)
        return r;
    const int64_t d = rows / e.rotaryHeads, half = d / 2;
    const int64_t h = r / d, within = r % d, c = within / half, i = within % half;
    return h * d + 2 * i + c;
}

Status TensorArchive::openFolder(const std::string &dir)
{
    using json = nlohmann::json;
    const std::string single = dir + "/model.safetensors";
    const std::string index = dir + "/model.safetensors.index.json";
    uint64_t size = 0;
    const Status singleStatus = regularFileSize(single, size);
    if (singleStatus.ok())
        return openFile(single);
    if (singleStatus.message != single + ": no such file")
        return singleStatus; // a directory, a FIFO ...
    uint64_t indexSize = 0;
    const Status indexStatus = regularFileSize(index, indexSize);
    if (indexStatus.message == index + ": no such file") {
        if (exists(dir + "/pytorch_model.bin"))
            return Status::error(StatusCode::InvalidInput,
                                 dir + "/pytorch_model.bin: a PyTorch pickle, which attnviz never unpickles; get " + dir +
                                     "/model.safetensors instead (huggingface-cli download MODEL model.safetensors)");
        return Status::error(StatusCode::IoError, single + ": no such file (nor model.safetensors.index.json)");
    }
    if (!indexStatus)
        return indexStatus; // a directory, a FIFO, a loop of symbolic links: said as such, not "missing"
    json j;
    if (Status st = detail::readJsonFile(index, kIndexCap, j); !st)
        return st;
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
        return Status::error(StatusCode::ParseError, index + ": weight_map: missing or not an object");
    std::set<std::string> shards;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
        if (!it->is_string())
            return Status::error(StatusCode::ParseError, index + ": weight_map." + quoteText(it.key()) + ": not a file name");
        const std::string f = it->get<std::string>();
        // A name with a control character is refused here: the shard's own messages would print it raw.
        const bool control = std::any_of(f.begin(), f.end(), [](char c) { return uint8_t(c) < 0x20 || c == 0x7f; });
        if (f.empty() || f.find('/') != std::string::npos || f == "." || f == ".." || control)
            return Status::error(StatusCode::ParseError,
                                 index + ": weight_map." + quoteText(it.key()) + ": " + quoteText(f) + " is not a file in the folder");
        shards.insert(f);
    }
    if (shards.empty())
        return Status::error(StatusCode::ParseError, index + ": weight_map names no shard");
    TensorArchive a;
    for (const std::string &f : shards)
        if (Status st = a.mapAndParse(dir + "/" + f); !st)
            return st;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
        const TensorEntry *e = a.find(it.key());
        if (!e || a.fileOf(*e) != dir + "/" + it->get<std::string>())
            return Status::error(StatusCode::ParseError, index + ": weight_map." + quoteText(it.key()) + ": not in " +
                                                             dir + "/" + quoteText(it->get<std::string>()));
    }
    *this = std::move(a);
    return {};
}

const TensorEntry *TensorArchive::find(const std::string &name) const
{
    auto it = m_entries.find(name);
    return it == m_entries.end() ? nullptr : &it->second;
}

const std::string &TensorArchive::fileOf(const TensorEntry &e) const { return m_files.at(size_t(e.file))->path; }

std::string TensorArchive::fileOf(const std::string &name) const
{
    const TensorEntry *e = find(name);
    if (e)
        return fileOf(*e);
    return m_files.empty() ? std::string() : m_files.front()->path;
}

std::string TensorArchive::dtypeSummary() const
{
    std::map<std::string, uint64_t> bytes;
    for (const auto &kv : m_entries)
        bytes[kv.second.dtype] += kv.second.bytes;
    std::string s;
    for (const auto &kv : bytes)
        s += (s.empty() ? "" : "+") + kv.first;
    return s;
}

uint64_t TensorArchive::totalBytes() const
{
    uint64_t n = 0;
    for (const auto &kv : m_entries)
        n += kv.second.bytes;
    return n;
}

std::string TensorArchive::nameOf(const TensorEntry &e) const
{
    for (const auto &kv : m_entries)
        if (&kv.second == &e)
            return quoteText(kv.first);
    return "a tensor";
}

Status TensorArchive::finishRead(const TensorEntry &e) const
{
    const Mapping &m = *m_files.at(size_t(e.file));
    const unsigned char *p = m.data + e.offset;
    // Give the pages back: the copy is what stays in memory.
    const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
    const uintptr_t begin = (uintptr_t(p) / page) * page, end = uintptr_t(p + e.bytes);
    if (end > begin)
        ::madvise(reinterpret_cast<void *>(begin), size_t(end - begin), MADV_DONTNEED);
    m_done += e.bytes;
    if (m_progress && !m_progress(m_done, totalBytes()))
        return Status::error(StatusCode::Cancelled, m.path + ": loading cancelled");
    return {};
}

template <typename T>
Status TensorArchive::readAs(const TensorEntry &e, T *dst) const
{
    const Mapping &m = *m_files.at(size_t(e.file));
    const unsigned char *p = m.data + e.offset;
    if (e.ggml >= 0) {
        if (!detail::ggmlDequantizes(uint32_t(e.ggml)))
            return Status::error(StatusCode::InvalidInput, m.path + ": tensor " + nameOf(e) + " is " + e.dtype +
                                                               ", a type attnviz does not dequantize (F32, F16, BF16, Q8_0, "
                                                               "Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, IQ4_NL)");
        // Row by row (a row is whole blocks), in Hugging Face's row order.
        const int64_t rows = e.shape.size() >= 2 ? int64_t(e.count) / e.shape.back() : 1;
        const int64_t cols = int64_t(e.count) / rows;
        const uint64_t rowBytes = e.bytes / uint64_t(rows);
        std::vector<float> row(static_cast<size_t>(cols));
        for (int64_t r = 0; r < rows; ++r) {
            detail::ggmlDequantize(uint32_t(e.ggml), p + uint64_t(storedRow(e, r)) * rowBytes, cols, row.data());
            for (int64_t c = 0; c < cols; ++c)
                dst[r * cols + c] = T(row[size_t(c)]);
        }
        if (e.rotaryHeads > 0 && e.shape.size() == 1) { // a bias: its elements are the rows
            std::vector<T> copy(dst, dst + e.count);
            for (int64_t r = 0; r < int64_t(e.count); ++r)
                dst[r] = copy[size_t(storedRow(e, r))];
        }
    } else {
        detail::convertTensor(p, e, dst);
    }
    T sum = 0;
    for (uint64_t i = 0; i < e.count; ++i)
        sum += dst[i] * T(0);
    if (!(sum == T(0))) {
        const std::string tensor = nameOf(e);
        // the first value that is not finite here: NaN or Inf in the file, or a finite F64 too large for float
        uint64_t i = 0;
        while (i < e.count && std::isfinite(double(dst[i])))
            ++i;
        double original = i < e.count ? double(dst[i]) : 0.0;
        if (e.dtype == "F64" && i < e.count)
            std::memcpy(&original, p + i * 8, 8);
        if (std::isfinite(original)) {
            char value[32];
            std::snprintf(value, sizeof value, "%g", original);
            return Status::error(StatusCode::NonFinite, m.path + ": " + tensor + ": value " + std::to_string(i) + " (" +
                                                            value + ") is larger than float32 holds (3.4e38)");
        }
        return Status::error(StatusCode::NonFinite, m.path + ": " + tensor + ": contains NaN or Inf");
    }
    return finishRead(e);
}

Status TensorArchive::readBits16(const TensorEntry &e, uint16_t *dst) const
{
    const Mapping &m = *m_files.at(size_t(e.file));
    const bool bf16 = e.dtype == "BF16";
    if (!bf16 && e.dtype != "F16")
        return Status::error(StatusCode::InvalidInput, m.path + ": " + nameOf(e) + ": " + e.dtype + ", not F16 or BF16");
    if (e.rotaryHeads > 0 && e.shape.size() == 2) {
        const int64_t rows = e.shape[0], cols = e.shape[1];
        for (int64_t r = 0; r < rows; ++r)
            std::memcpy(dst + r * cols, m.data + e.offset + uint64_t(storedRow(e, r) * cols) * 2, size_t(cols) * 2);
    } else {
        std::memcpy(dst, m.data + e.offset, size_t(e.count) * 2);
    }
    // NaN and Inf: every exponent bit set (8 of BF16's, 5 of F16's).
    const uint16_t exponent = bf16 ? 0x7f80 : 0x7c00;
    uint16_t any = 0;
    for (uint64_t i = 0; i < e.count; ++i)
        any |= uint16_t(((dst[i] & exponent) == exponent) ? 1 : 0);
    if (any)
        return Status::error(StatusCode::NonFinite, m.path + ": " + nameOf(e) + ": contains NaN or Inf");
    return finishRead(e);
}

Status TensorArchive::readEncoded(const TensorEntry &e, std::vector<uint8_t> &dst) const
{
    const Mapping &m = *m_files.at(size_t(e.file));
    if (e.ggml < 0 || !detail::ggmlDequantizes(uint32_t(e.ggml)))
        return Status::error(StatusCode::InvalidInput, m.path + ": tensor " + nameOf(e) + " is " + e.dtype +
                                                           ", not a type attnviz widens in its products");
    const int64_t rows = e.shape.size() >= 2 ? int64_t(e.count) / e.shape.back() : 1;
    const int64_t cols = int64_t(e.count) / rows;
    const uint64_t rowBytes = e.bytes / uint64_t(rows);
    std::vector<uint8_t> bytes(size_t(e.bytes));
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
        const unsigned char *src = m.data + e.offset + uint64_t(storedRow(e, r)) * rowBytes;
        std::memcpy(bytes.data() + uint64_t(r) * rowBytes, src, size_t(rowBytes));
        // Every value widened once here, so that NaN or Inf (a broken scale) is refused on load.
        detail::ggmlDequantize(uint32_t(e.ggml), src, cols, row.data());
        float sum = 0.0f;
        for (const float v : row)
            sum += v * 0.0f;
        if (!(sum == 0.0f))
            return Status::error(StatusCode::NonFinite, m.path + ": tensor " + nameOf(e) + ": row " + std::to_string(r) +
                                                            " holds NaN or Inf");
    }
    dst = std::move(bytes);
    return finishRead(e);
}

Status TensorArchive::read(const TensorEntry &e, float *dst) const { return readAs(e, dst); }
Status TensorArchive::read(const TensorEntry &e, double *dst) const { return readAs(e, dst); }

} // namespace attnviz
