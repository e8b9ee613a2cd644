// SPDX-License-Identifier: GPL-3.0-or-later
// Memory-mapped safetensors (tensorarchive.h): u64 little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [r, c], "data_offsets": [begin, end]}, ..., "__metadata__": {...}}
// then the data block; offsets are relative to it. Sharded checkpoints add
// model.safetensors.index.json {"weight_map": {"name": "model-00001-of-00002.safetensors", ...}}.
// Own reader rather than a library: Debian has no C++ safetensors package, and mapping lets a
// checkpoint be converted tensor by tensor without a second copy in memory.
#include "attnviz/tensorarchive.h"
#include "attnviz/fileio.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

namespace attnviz {

namespace {

constexpr uint64_t kHeaderCap = 100ull * 1000 * 1000; // real headers are kilobytes
constexpr uint64_t kIndexCap = 50ull * 1000 * 1000;

std::string shapeText(const std::vector<int64_t> &s)
{
    std::string t = "(";
    for (size_t i = 0; i < s.size(); ++i)
        t += (i ? ", " : "") + std::to_string(s[i]);
    return t + ")";
}

float halfToFloat(uint16_t h)
{
    const int sign = h >> 15, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
    float v;
    if (exp == 0)
        v = std::ldexp(float(mant), -24);
    else if (exp == 31)
        v = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
    else
        v = std::ldexp(float(mant | 0x400), exp - 25);
    return sign ? -v : v;
}

float bf16ToFloat(uint16_t h)
{
    const uint32_t bits = uint32_t(h) << 16;
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
}

bool exists(const std::string &path)
{
    uint64_t size = 0;
    return regularFileSize(path, size).ok();
}

} // namespace

struct TensorArchive::Mapping {
    std::string path;
    const unsigned char *data = nullptr;
    uint64_t size = 0;
    ~Mapping()
    {
        if (data)
            ::munmap(const_cast<unsigned char *>(data), size_t(size));
    }
};

TensorArchive::TensorArchive() = default;
TensorArchive::~TensorArchive() = default;
TensorArchive::TensorArchive(TensorArchive &&) noexcept = default;
TensorArchive &TensorArchive::operator=(TensorArchive &&) noexcept = default;

Status TensorArchive::mapAndParse(const std::string &path)
{
    using json = nlohmann::json;
    auto bad = [&](const std::string &m) { return Status::error(StatusCode::ParseError, path + ": " + m); };
    uint64_t size = 0;
    if (Status st = regularFileSize(path, size); !st)
        return st;
    if (size < 8)
        return bad("truncated (" + std::to_string(size) + " bytes, no header length)");
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return Status::error(StatusCode::IoError, path + ": cannot open: " + std::strerror(errno));
    void *p = ::mmap(nullptr, size_t(size), PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);
    if (p == MAP_FAILED)
        return Status::error(StatusCode::IoError, path + ": cannot map: " + std::strerror(err));
    auto map = std::make_unique<Mapping>();
    map->path = path;
    map->data = static_cast<const unsigned char *>(p);
    map->size = size;

    uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | map->data[i];
    if (n > size - 8)
        return bad("header length " + std::to_string(n) + " is more than the file holds (" + describeBytes(size) +
                   "; truncated?)");
    if (n > kHeaderCap)
        return bad("header length " + describeBytes(n) + " is more than the " + describeBytes(kHeaderCap) +
                   " a safetensors header may have here");
    json head;
    try {
        head = json::parse(reinterpret_cast<const char *>(map->data + 8), reinterpret_cast<const char *>(map->data + 8 + n));
    } catch (const json::exception &e) {
        return bad(std::string("malformed JSON header: ") + e.what());
    }
    if (!head.is_object())
        return bad("header is not a JSON object");
    const uint64_t dataStart = 8 + n, dataSize = size - dataStart;
    const int fileIndex = int(m_files.size());
    std::map<std::string, TensorEntry> found;
    for (auto it = head.begin(); it != head.end(); ++it) {
        if (it.key() == "__metadata__")
            continue;
        const std::string &tn = it.key();
        const json &e = it.value();
        if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
            return bad(tn + ": entry needs dtype, shape and data_offsets");
        TensorEntry t;
        t.file = fileIndex;
        if (!e["dtype"].is_string())
            return bad(tn + ": dtype is not a string");
        t.dtype = e["dtype"].get<std::string>();
        uint64_t width = 0;
        if (t.dtype == "F64")
            width = 8;
        else if (t.dtype == "F32")
            width = 4;
        else if (t.dtype == "F16" || t.dtype == "BF16")
            width = 2;
        else
            return bad(tn + ": dtype " + t.dtype + " is not supported (F64, F32, F16, BF16)");
        if (!e["shape"].is_array())
            return bad(tn + ": shape is not a list");
        uint64_t count = 1;
        for (const auto &dim : e["shape"]) {
            if (!dim.is_number_integer() || dim.get<int64_t>() < 0)
                return bad(tn + ": shape holds a negative or non-integer size");
            const uint64_t d = dim.get<uint64_t>();
            // overflow-safe: no tensor may claim more bytes than the file holds
            if (d != 0 && count > dataSize / width / d)
                return bad(tn + ": shape " + e["shape"].dump() + " claims more bytes than the " + describeBytes(dataSize) +
                           " data block holds");
            count *= d;
            t.shape.push_back(int64_t(d));
        }
        const json &off = e["data_offsets"];
        if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
            return bad(tn + ": data_offsets must be [begin, end]");
        const uint64_t b = off[0].get<uint64_t>(), en = off[1].get<uint64_t>();
        if (b > en || en > dataSize)
            return bad(tn + ": data_offsets [" + std::to_string(b) + ", " + std::to_string(en) + "] lie outside the " +
                       std::to_string(dataSize) + "-byte data block (truncated file?)");
        if (en - b != count * width)
            return bad(tn + ": data_offsets span " + std::to_string(en - b) + " bytes, " + t.dtype + " " +
                       shapeText(t.shape) + " needs " + std::to_string(count * width));
        t.count = count;
        t.offset = dataStart + b;
        t.bytes = en - b;
        found.emplace(tn, std::move(t));
    }
    for (auto &kv : found) {
        if (m_entries.count(kv.first))
            return bad(kv.first + ": also in " + fileOf(m_entries.at(kv.first)));
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
    if (!exists(index)) {
        if (exists(dir + "/pytorch_model.bin"))
            return Status::error(StatusCode::InvalidInput,
                                 dir + "/pytorch_model.bin: a PyTorch pickle, which attnviz never unpickles; get " + dir +
                                     "/model.safetensors instead (huggingface-cli download MODEL model.safetensors)");
        return Status::error(StatusCode::IoError, single + ": no such file (nor model.safetensors.index.json)");
    }
    std::string text;
    if (Status st = readRegularFile(index, kIndexCap, text); !st)
        return st;
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception &e) {
        return Status::error(StatusCode::ParseError, index + ": malformed JSON: " + e.what());
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
        return Status::error(StatusCode::ParseError, index + ": weight_map: missing or not an object");
    std::set<std::string> shards;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
        if (!it->is_string())
            return Status::error(StatusCode::ParseError, index + ": weight_map." + it.key() + ": not a file name");
        const std::string f = it->get<std::string>();
        if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..")
            return Status::error(StatusCode::ParseError,
                                 index + ": weight_map." + it.key() + ": \"" + f + "\" is not a file in the folder");
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
            return Status::error(StatusCode::ParseError, index + ": weight_map." + it.key() + ": not in " +
                                                             dir + "/" + it->get<std::string>());
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

template <typename T>
Status TensorArchive::readAs(const TensorEntry &e, T *dst) const
{
    const Mapping &m = *m_files.at(size_t(e.file));
    const unsigned char *p = m.data + e.offset;
    if (e.dtype == "F64") {
        for (uint64_t i = 0; i < e.count; ++i) {
            double v;
            std::memcpy(&v, p + i * 8, 8);
            dst[i] = T(v);
        }
    } else if (e.dtype == "F32") {
        for (uint64_t i = 0; i < e.count; ++i) {
            float v;
            std::memcpy(&v, p + i * 4, 4);
            dst[i] = T(v);
        }
    } else {
        const bool half = e.dtype == "F16";
        for (uint64_t i = 0; i < e.count; ++i) {
            uint16_t h;
            std::memcpy(&h, p + i * 2, 2);
            dst[i] = T(half ? halfToFloat(h) : bf16ToFloat(h));
        }
    }
    // Give the pages back: the converted copy is what stays in memory.
    const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
    const uintptr_t begin = (uintptr_t(p) / page) * page, end = uintptr_t(p + e.bytes);
    if (end > begin)
        ::madvise(reinterpret_cast<void *>(begin), size_t(end - begin), MADV_DONTNEED);
    T sum = 0;
    for (uint64_t i = 0; i < e.count; ++i)
        sum += dst[i] * T(0);
    if (!(sum == T(0))) {
        for (const auto &kv : m_entries)
            if (&kv.second == &e)
                return Status::error(StatusCode::NonFinite, m.path + ": " + kv.first + ": contains NaN or Inf");
        return Status::error(StatusCode::NonFinite, m.path + ": a tensor contains NaN or Inf");
    }
    m_done += e.bytes;
    if (m_progress && !m_progress(m_done, totalBytes()))
        return Status::error(StatusCode::Cancelled, m.path + ": loading cancelled");
    return {};
}

Status TensorArchive::read(const TensorEntry &e, float *dst) const { return readAs(e, dst); }
Status TensorArchive::read(const TensorEntry &e, double *dst) const { return readAs(e, dst); }

} // namespace attnviz
