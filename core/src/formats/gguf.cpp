// SPDX-License-Identifier: GPL-3.0-or-later
// The GGUF container (gguf.h): header, metadata and tensor infos read with every size checked
// against the file, and the summary a model list shows. Layout (little-endian):
//   "GGUF" u32 version u64 n_tensors u64 n_kv
//   n_kv × { string key, u32 type, value }              string = u64 length + bytes
//   n_tensors × { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset }
//   padding to general.alignment (default 32), then the data section the offsets are relative to:
//   the tensors' data in the order of their infos, each padded to the alignment, nothing after.
#include "attnviz/gguf.h"

#include "attnviz/fileio.h"
#include "jsonread.h"
#include "mappedfile.h"
#include "../models/ggufmodel.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace attnviz {

const char *toString(GgufValueType t)
{
    switch (t) {
    case GgufValueType::Uint8: return "uint8";
    case GgufValueType::Int8: return "int8";
    case GgufValueType::Uint16: return "uint16";
    case GgufValueType::Int16: return "int16";
    case GgufValueType::Uint32: return "uint32";
    case GgufValueType::Int32: return "int32";
    case GgufValueType::Float32: return "float32";
    case GgufValueType::Bool: return "bool";
    case GgufValueType::String: return "string";
    case GgufValueType::Array: return "array";
    case GgufValueType::Uint64: return "uint64";
    case GgufValueType::Int64: return "int64";
    case GgufValueType::Float64: return "float64";
    }
    return "unknown";
}

bool isIntegerType(GgufValueType t)
{
    switch (t) {
    case GgufValueType::Uint8: case GgufValueType::Int8: case GgufValueType::Uint16: case GgufValueType::Int16:
    case GgufValueType::Uint32: case GgufValueType::Int32: case GgufValueType::Uint64: case GgufValueType::Int64:
        return true;
    default:
        return false;
    }
}

bool isNumberType(GgufValueType t)
{
    return isIntegerType(t) || t == GgufValueType::Float32 || t == GgufValueType::Float64;
}

bool GgufValue::isInteger() const
{
    return isIntegerType(type);
}

std::string GgufValue::typeName() const
{
    return type == GgufValueType::Array ? std::string("array of ") + toString(elementType) : toString(type);
}

// Block sizes as ggml.c's type_traits define them (block_* structs of ggml-common.h).
const GgmlTypeInfo *ggmlTypeInfo(uint32_t type)
{
    static const GgmlTypeInfo kNone{nullptr, 0, 0, false};
    static const GgmlTypeInfo kTypes[40] = {
        {"F32", 1, 4, true},       {"F16", 1, 2, true},       {"Q4_0", 32, 18, true},     {"Q4_1", 32, 20, true},
        kNone,                     kNone,                     {"Q5_0", 32, 22, true},     {"Q5_1", 32, 24, true},
        {"Q8_0", 32, 34, true},    {"Q8_1", 32, 36, false},   {"Q2_K", 256, 84, false},   {"Q3_K", 256, 110, false},
        {"Q4_K", 256, 144, true},  {"Q5_K", 256, 176, true},  {"Q6_K", 256, 210, true},   {"Q8_K", 256, 292, false},
        {"IQ2_XXS", 256, 66, false}, {"IQ2_XS", 256, 74, false}, {"IQ3_XXS", 256, 98, false}, {"IQ1_S", 256, 50, false},
        {"IQ4_NL", 32, 18, true},  {"IQ3_S", 256, 110, false}, {"IQ2_S", 256, 82, false}, {"IQ4_XS", 256, 136, false},
        {"I8", 1, 1, false},       {"I16", 1, 2, false},      {"I32", 1, 4, false},       {"I64", 1, 8, false},
        {"F64", 1, 8, false},      {"IQ1_M", 256, 56, false}, {"BF16", 1, 2, true},       kNone,
        kNone,                     kNone,                     {"TQ1_0", 256, 54, false},  {"TQ2_0", 256, 66, false},
        kNone,                     kNone,                     kNone,                      {"MXFP4", 32, 17, false},
    };
    if (type >= 40 || !kTypes[type].name)
        return nullptr;
    return &kTypes[type];
}

std::string ggmlTypeName(uint32_t type)
{
    const GgmlTypeInfo *t = ggmlTypeInfo(type);
    return t ? t->name : "type " + std::to_string(type);
}

// llama.h's llama_ftype; 1024 marks a guessed type.
std::string ggufFileTypeName(int64_t fileType)
{
    static const char *const kNames[] = {
        "F32", "F16", "Q4_0", "Q4_1", "", "", "", "Q8_0", "Q5_0", "Q5_1", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L",
        "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "IQ2_XXS", "IQ2_XS", "Q2_K_S", "IQ3_XS", "IQ3_XXS",
        "IQ1_S", "IQ4_NL", "IQ3_S", "IQ3_M", "IQ2_S", "IQ2_M", "IQ4_XS", "IQ1_M", "BF16", "", "", "", "TQ1_0",
        "TQ2_0", "MXFP4_MOE",
    };
    const int64_t t = fileType & ~int64_t(1024);
    if (t < 0 || t >= int64_t(sizeof kNames / sizeof kNames[0]))
        return "";
    return kNames[t];
}

int64_t GgufTensorInfo::rows() const
{
    int64_t r = 1;
    for (size_t i = 1; i < ne.size(); ++i)
        r *= ne[i];
    return r;
}

const GgufValue *GgufFile::find(const std::string &key) const
{
    const auto it = keyIndex.find(key);
    return it == keyIndex.end() ? nullptr : &metadata[it->second].second;
}

const GgufTensorInfo *GgufFile::tensor(const std::string &name) const
{
    const auto it = tensorIndex.find(name);
    return it == tensorIndex.end() ? nullptr : &tensors[it->second];
}

namespace {

constexpr int kMaxDims = 4;       // GGML_MAX_DIMS
constexpr uint64_t kMaxString = 256ull << 20; // one key or string value (a chat template is kilobytes)
// What a summary (a model list's row) reads of a header: real ones, a 262,144-token vocabulary and
// its merges included, take some 10 MB.
constexpr uint64_t kSummaryHeaderBytes = 64ull << 20;

// A cursor over the file's bytes; every read checks what is left.
class Reader {
public:
    Reader(const unsigned char *data, uint64_t size, const std::string &name) : m_d(data), m_size(size), m_name(name) {}
    void setBudget(uint64_t bytes) { m_budget = bytes; }
    // Fails once the cursor is past the budget (GgufParseOptions::maxHeaderBytes), if one is set.
    Status withinBudget(const std::string &where) const
    {
        if (m_budget == 0 || m_pos <= m_budget)
            return {};
        return fail(where, "the header runs past the first " + describeBytes(m_budget) +
                               " of the file, all that is read of it here (not read further)");
    }

    uint64_t pos() const { return m_pos; }
    const unsigned char *base() const { return m_d; }
    uint64_t left() const { return m_size - m_pos; }

    Status fail(const std::string &where, const std::string &what) const
    {
        return Status::error(StatusCode::ParseError, m_name + ": " + where + ": " + what);
    }
    Status truncated(const std::string &where, uint64_t need) const
    {
        return fail(where, "needs " + std::to_string(need) + " bytes at offset " + std::to_string(m_pos) + ", the file has " +
                               std::to_string(left()) + " left (truncated?)");
    }

    template <typename T>
    Status read(T &v, const std::string &where)
    {
        if (left() < sizeof(T))
            return truncated(where, sizeof(T));
        std::memcpy(&v, m_d + m_pos, sizeof(T));
        m_pos += sizeof(T);
        return {};
    }
    Status skip(uint64_t n, const std::string &where)
    {
        if (left() < n)
            return truncated(where, n);
        m_pos += n;
        return {};
    }
    Status string(std::string &s, const std::string &where, bool keep = true)
    {
        uint64_t n = 0;
        if (Status st = read(n, where + " (string length)"); !st)
            return st;
        if (n > left())
            return fail(where, "string length " + std::to_string(n) + " runs past the end of the file (" +
                                   std::to_string(left()) + " bytes left)");
        if (n > kMaxString)
            return fail(where, "string length " + describeBytes(n) + " is more than the " + describeBytes(kMaxString) +
                                   " a string may have here");
        if (keep)
            s.assign(reinterpret_cast<const char *>(m_d + m_pos), size_t(n));
        m_pos += n;
        return {};
    }

private:
    const unsigned char *m_d;
    uint64_t m_size;
    uint64_t m_pos = 0;
    uint64_t m_budget = 0;
    const std::string &m_name;
};

// Bytes of one scalar of type t; 0 for strings and arrays (variable), -1 for an unknown type.
int scalarBytes(uint32_t t)
{
    switch (GgufValueType(t)) {
    case GgufValueType::Uint8: case GgufValueType::Int8: case GgufValueType::Bool: return 1;
    case GgufValueType::Uint16: case GgufValueType::Int16: return 2;
    case GgufValueType::Uint32: case GgufValueType::Int32: case GgufValueType::Float32: return 4;
    case GgufValueType::Uint64: case GgufValueType::Int64: case GgufValueType::Float64: return 8;
    case GgufValueType::String: case GgufValueType::Array: return 0;
    }
    return -1;
}

// A scalar at p of type t into v (u/i/f set).
void decodeScalar(const unsigned char *p, GgufValueType t, GgufValue &v)
{
    auto get = [&](auto x) {
        std::memcpy(&x, p, sizeof x);
        return x;
    };
    switch (t) {
    case GgufValueType::Uint8: v.u = get(uint8_t()); v.f = double(v.u); break;
    case GgufValueType::Int8: v.i = get(int8_t()); v.f = double(v.i); break;
    case GgufValueType::Uint16: v.u = get(uint16_t()); v.f = double(v.u); break;
    case GgufValueType::Int16: v.i = get(int16_t()); v.f = double(v.i); break;
    case GgufValueType::Uint32: v.u = get(uint32_t()); v.f = double(v.u); break;
    case GgufValueType::Int32: v.i = get(int32_t()); v.f = double(v.i); break;
    case GgufValueType::Uint64: v.u = get(uint64_t()); v.f = double(v.u); break;
    case GgufValueType::Int64: v.i = get(int64_t()); v.f = double(v.i); break;
    case GgufValueType::Float32: v.f = double(get(float())); break;
    case GgufValueType::Float64: v.f = get(double()); break;
    case GgufValueType::Bool: v.i = p[0] != 0; v.u = uint64_t(v.i); v.f = double(v.i); break;
    default: break;
    }
    if (v.type == GgufValueType::Uint8 || v.type == GgufValueType::Uint16 || v.type == GgufValueType::Uint32)
        v.i = int64_t(v.u);
    else if (v.type == GgufValueType::Uint64)
        v.i = v.u > uint64_t(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max() : int64_t(v.u);
    else if (v.isInteger())
        v.u = v.i < 0 ? 0 : uint64_t(v.i);
}

// Arrays kept in memory: the tokenizer's (tokenizer.ggml.*) up to kMaxTokenizerArray elements, a
// longer one refused (no vocabulary is that long); others up to kMaxOtherArray (per-layer values; a
// model has at most a few hundred layers). Longer arrays are checked against the file and skipped,
// never materialised: nothing reads them. Arrays of arrays are refused, as ggml's reader refuses them
// ("invalid GGUF type"): no file llama.cpp loads holds one, and walking 10^8 empty ones took seconds.
constexpr uint64_t kMaxTokenizerArray = uint64_t(1) << 22;
constexpr uint64_t kMaxOtherArray = 4096;

struct Keep {
    uint64_t upTo = 0;       // keep an array of at most this many elements (0: none)
    bool refuseOver = false; // a longer one is refused
};

Status readString(Reader &r, GgufValue &v, const std::string &where, bool keep);

Status readArray(Reader &r, GgufValue &v, const std::string &where, Keep keep)
{
    uint32_t et = 0;
    uint64_t n = 0;
    if (Status st = r.read(et, where + " (array element type)"); !st)
        return st;
    const int width = scalarBytes(et);
    if (width < 0)
        return r.fail(where, "array element type " + std::to_string(et) + " is not a GGUF value type");
    if (GgufValueType(et) == GgufValueType::Array)
        return r.fail(where, "an array of arrays (ggml and llama.cpp read no nested arrays)");
    if (Status st = r.read(n, where + " (array length)"); !st)
        return st;
    // The least bytes one element takes: its width, or a string's length field.
    const uint64_t least = width > 0 ? uint64_t(width) : 8;
    if (n > r.left() / least)
        return r.fail(where, "array of " + std::to_string(n) + " " + toString(GgufValueType(et)) +
                                 " elements needs more than the " + std::to_string(r.left()) + " bytes left in the file");
    if (keep.refuseOver && n > keep.upTo)
        return r.fail(where, "array of " + std::to_string(n) + " elements, more than the " +
                                 std::to_string(keep.upTo) + " a tokenizer's may have");
    const bool keepArrays = n <= keep.upTo;
    v.elementType = GgufValueType(et);
    v.count = n;
    if (width > 0) {
        const uint64_t start = r.pos();
        if (Status st = r.skip(n * uint64_t(width), where); !st)
            return st;
        if (keepArrays) { // bounded by the bytes just checked, not by the claim alone
            GgufValue e;
            e.type = GgufValueType(et);
            for (uint64_t k = 0; k < n; ++k) {
                decodeScalar(r.base() + start + k * uint64_t(width), e.type, e);
                v.numbers.push_back(e.f);
            }
        }
        return {};
    }
    // An array of strings, kept with its array.
    for (uint64_t k = 0; k < n; ++k) {
        GgufValue e;
        if (Status st = readString(r, e, where + "[" + std::to_string(k) + "]", keepArrays); !st)
            return st;
        if (Status st = r.withinBudget(where); !st)
            return st;
        if (keepArrays)
            v.strings.push_back(std::move(e.s));
    }
    return {};
}

Status readString(Reader &r, GgufValue &v, const std::string &where, bool keep)
{
    v.type = GgufValueType::String;
    return r.string(v.s, where, keep);
}

// A metadata entry's value.
Status readValue(Reader &r, uint32_t type, GgufValue &v, const std::string &where, Keep keep)
{
    const int width = scalarBytes(type);
    if (width < 0)
        return r.fail(where, "value type " + std::to_string(type) + " is not a GGUF value type");
    v.type = GgufValueType(type);
    if (v.type == GgufValueType::String)
        return readString(r, v, where, true);
    if (v.type == GgufValueType::Array)
        return readArray(r, v, where, keep);
    const uint64_t at = r.pos();
    if (Status st = r.skip(uint64_t(width), where); !st)
        return st;
    decodeScalar(r.base() + at, v.type, v);
    return {};
}

Status parse(const unsigned char *data, uint64_t size, const std::string &name, GgufFile &f, const GgufParseOptions &options)
{
    Reader r(data, size, name);
    r.setBudget(options.maxHeaderBytes);
    auto bad = [&](const std::string &m) { return Status::error(StatusCode::ParseError, name + ": " + m); };
    if (size < 4 || std::memcmp(data, "GGUF", 4) != 0)
        return bad("not a GGUF file (it does not start with the bytes \"GGUF\")");
    (void)r.skip(4, "magic");
    uint32_t version = 0;
    if (Status st = r.read(version, "header (version)"); !st)
        return st;
    if (version == 1)
        return bad("header: GGUF version 1 (the 2023 format, with 32-bit counts) is not read; convert the model again");
    if (version == 0x02000000u || version == 0x03000000u)
        return bad("header: a big-endian GGUF file (version bytes reversed); attnviz reads little-endian files");
    if (version != 2 && version != 3)
        return bad("header: version " + std::to_string(version) + " is not a GGUF version attnviz reads (2, 3)");
    f.version = version;
    uint64_t nTensors = 0, nKv = 0;
    if (Status st = r.read(nTensors, "header (tensor count)"); !st)
        return st;
    if (Status st = r.read(nKv, "header (metadata count)"); !st)
        return st;
    // A key takes at least 13 bytes (length, type, a one-byte value), a tensor info 24.
    if (nKv > r.left() / 13)
        return bad("header: metadata count " + std::to_string(nKv) + " is more than the file's " + describeBytes(size) +
                   " can hold");
    if (nTensors > r.left() / 24)
        return bad("header: tensor count " + std::to_string(nTensors) + " is more than the file's " + describeBytes(size) +
                   " can hold");

    for (uint64_t k = 0; k < nKv; ++k) {
        std::string key;
        const std::string where = "metadata entry " + std::to_string(k);
        if (Status st = r.string(key, where + " (key)"); !st)
            return st;
        const std::string field = "metadata " + quoteText(key, 80);
        if (f.keyIndex.count(key))
            return bad(field + ": given twice (a key may appear once)");
        uint32_t type = 0;
        if (Status st = r.read(type, field + " (type)"); !st)
            return st;
        GgufValue v;
        Keep keep;
        if (options.keepArrays)
            keep = key.rfind("tokenizer.ggml.", 0) == 0 ? Keep{kMaxTokenizerArray, true} : Keep{kMaxOtherArray, false};
        if (Status st = readValue(r, type, v, field, keep); !st)
            return st;
        if (Status st = r.withinBudget(field); !st)
            return st;
        f.keyIndex.emplace(key, f.metadata.size());
        f.metadata.emplace_back(std::move(key), std::move(v));
    }
    if (const GgufValue *a = f.find("general.alignment")) {
        if (a->type != GgufValueType::Uint32)
            return bad("metadata \"general.alignment\": a " + std::string(toString(a->type)) + ", not a uint32");
        if (a->u == 0 || (a->u & (a->u - 1)) != 0)
            return bad("metadata \"general.alignment\": " + std::to_string(a->u) + " is not a power of two");
        f.alignment = a->u;
    }

    for (uint64_t k = 0; k < nTensors; ++k) {
        GgufTensorInfo t;
        const std::string where = "tensor info " + std::to_string(k);
        if (Status st = r.withinBudget(where); !st)
            return st;
        if (Status st = r.string(t.name, where + " (name)"); !st)
            return st;
        const std::string field = "tensor " + quoteText(t.name, 80);
        if (f.tensorIndex.count(t.name))
            return bad(field + ": given twice (a tensor name may appear once)");
        uint32_t dims = 0;
        if (Status st = r.read(dims, field + " (n_dims)"); !st)
            return st;
        if (dims > uint32_t(kMaxDims))
            return bad(field + ": n_dims " + std::to_string(dims) + " is more than ggml's " + std::to_string(kMaxDims));
        uint64_t count = 1;
        for (uint32_t d = 0; d < dims; ++d) {
            uint64_t n = 0;
            if (Status st = r.read(n, field + " (ne[" + std::to_string(d) + "])"); !st)
                return st;
            if (n > uint64_t(std::numeric_limits<int64_t>::max()))
                return bad(field + ": ne[" + std::to_string(d) + "] = " + std::to_string(n) + " is negative as int64");
            t.ne.push_back(int64_t(n));
        }
        for (uint32_t d = 0; d < dims; ++d)
            if (__builtin_mul_overflow(count, uint64_t(t.ne[d]), &count) || count > uint64_t(std::numeric_limits<int64_t>::max())) {
                std::string shape;
                for (uint32_t e = 0; e < dims; ++e)
                    shape += (e ? ", " : "") + std::to_string(t.ne[e]);
                return bad(field + ": ne [" + shape + "]: the product overflows 63 bits");
            }
        if (Status st = r.read(t.type, field + " (type)"); !st)
            return st;
        const GgmlTypeInfo *info = ggmlTypeInfo(t.type);
        if (!info)
            return bad(field + ": type " + std::to_string(t.type) + " is not a ggml tensor type");
        if (Status st = r.read(t.offset, field + " (offset)"); !st)
            return st;
        const int64_t ne0 = t.ne.empty() ? 1 : t.ne[0];
        if (ne0 % info->blockElements != 0)
            return bad(field + ": row length ne[0] = " + std::to_string(ne0) + " is not a multiple of " + info->name +
                       "'s block of " + std::to_string(info->blockElements));
        if (__builtin_mul_overflow(count / uint64_t(info->blockElements), uint64_t(info->blockBytes), &t.bytes))
            return bad(field + ": its size in bytes overflows 64 bits");
        t.count = count;
        f.tensorIndex.emplace(t.name, f.tensors.size());
        f.tensors.push_back(std::move(t));
    }

    // The data section starts at the next multiple of the alignment.
    const uint64_t end = r.pos();
    uint64_t dataOffset = end + (f.alignment - end % f.alignment) % f.alignment;
    if (dataOffset < end) // wrapped
        return bad("data section: its start overflows 64 bits");
    f.dataOffset = dataOffset;
    f.fileSize = size;
    const uint64_t dataSize = dataOffset <= size ? size - dataOffset : 0;
    // ggml's layout (gguf.cpp, gguf_init_from_file_impl): each tensor's data starts where the one
    // before it in the infos ends, padded to the alignment, the first at the data section's start.
    // ggml refuses any other offset; a file whose data do not start where the infos end (a gap, a
    // tensor info missing) would otherwise be read from the wrong bytes.
    uint64_t expected = 0;
    for (size_t k = 0; k < f.tensors.size(); ++k) {
        GgufTensorInfo &t = f.tensors[k];
        const std::string field = "tensor " + quoteText(t.name, 80);
        if (t.offset % f.alignment != 0)
            return bad(field + ": offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                       std::to_string(f.alignment));
        if (t.offset > dataSize || t.bytes > dataSize - t.offset)
            return bad(field + ": " + std::to_string(t.bytes) + " bytes of " + ggmlTypeName(t.type) + " at offset " +
                       std::to_string(t.offset) + " lie past the end of the " + std::to_string(dataSize) +
                       "-byte data section (truncated file?)");
        if (t.offset != expected)
            return bad(field + ": offset " + std::to_string(t.offset) + ", expected " + std::to_string(expected) +
                       (k == 0 ? " (the first tensor's data start the data section)"
                               : " (where the data of tensor " + quoteText(f.tensors[k - 1].name, 80) +
                                     " end, padded to " + std::to_string(f.alignment) + " bytes)"));
        expected += t.bytes + (f.alignment - t.bytes % f.alignment) % f.alignment; // within dataSize + alignment
        t.offset += dataOffset;
    }
    // Past the last tensor's padded data the file ends: more bytes there mean the data section
    // starts later than the infos say (the header's tensor count short of the infos written).
    if (dataSize > expected)
        return bad("header: tensor count " + std::to_string(nTensors) + ": the file holds " +
                   std::to_string(dataSize - expected) + " bytes past the data of the last tensor (a tensor info " +
                   "missing, or the data section not where the tensor infos end)");
    return {};
}

std::string baseName(const std::string &path)
{
    const size_t slash = path.find_last_of('/');
    std::string b = slash == std::string::npos ? path : path.substr(slash + 1);
    if (b.size() > 5 && b.compare(b.size() - 5, 5, ".gguf") == 0)
        b.resize(b.size() - 5);
    return b;
}

} // namespace

std::string ggufUnsupportedReason(const GgufFile &f)
{
    const GgufValue *arch = f.find("general.architecture");
    if (!arch || arch->type != GgufValueType::String)
        return "metadata \"general.architecture\" is missing";
    static const char *const kArchitectures[] = {"llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "gpt2", "t5", "t5encoder"};
    if (std::find_if(std::begin(kArchitectures), std::end(kArchitectures), [&](const char *a) { return arch->s == a; }) ==
        std::end(kArchitectures))
        return "architecture " + quoteText(arch->s) + " is not one attnviz computes (llama, qwen2, qwen3, gemma2, gemma3, phi3, gpt2, t5, t5encoder)";
    for (const GgufTensorInfo &t : f.tensors) {
        const GgmlTypeInfo *info = ggmlTypeInfo(t.type);
        if (!info || !info->dequantized)
            return "tensor " + quoteText(t.name, 80) + " is " + ggmlTypeName(t.type) +
                   ", a type attnviz does not dequantize (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, IQ4_NL)";
    }
    const GgufValue *tok = f.find("tokenizer.ggml.model");
    if (!tok || tok->type != GgufValueType::String)
        return "metadata \"tokenizer.ggml.model\" is missing (no tokenizer in the file)";
    if (tok->s != "gpt2" && tok->s != "llama" && tok->s != "t5")
        return "tokenizer " + quoteText(tok->s) + " is not one attnviz reads from GGUF (gpt2, llama, t5)";
    return detail::ggufTokenizerKeysProblem(f); // what opening it would refuse, said before
}

Status parseGguf(const unsigned char *data, uint64_t size, const std::string &name, GgufFile &out,
                 const GgufParseOptions &options)
{
    GgufFile f;
    f.path = name;
    Status st = parse(data, size, name, f, options);
    if (!st) {
        st.message = detail::oneLine(std::move(st.message));
        return st;
    }
    out = std::move(f);
    return {};
}

std::string quantizedModelNote(const std::string &dtype)
{
    const size_t gguf = dtype.find(" (GGUF");
    if (gguf == std::string::npos)
        return "";
    const std::string q = dtype.substr(0, gguf);
    if (q.empty() || (q[0] != 'Q' && q.rfind("IQ", 0) != 0 && q.rfind("TQ", 0) != 0 && q.rfind("MXFP4", 0) != 0))
        return "";
    return q + " \xE2\x80\x94 attention of the quantized model; close to, not identical with, the original's";
}

bool looksLikeGguf(const std::string &path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char magic[4] = {};
    const bool yes = ::read(fd, magic, 4) == 4 && std::memcmp(magic, "GGUF", 4) == 0;
    ::close(fd);
    return yes;
}

Status ggufSummary(const std::string &path, GgufSummary &out)
{
    std::unique_ptr<detail::MappedFile> m;
    if (Status st = detail::MappedFile::map(path, m); !st)
        return st;
    GgufFile f;
    GgufParseOptions o;
    o.keepArrays = false;
    o.maxHeaderBytes = kSummaryHeaderBytes;
    if (Status st = parseGguf(m->data, m->size, path, f, o); !st)
        return st;
    GgufSummary s;
    s.fileBytes = m->size;
    auto text = [&](const char *key) -> std::string {
        const GgufValue *v = f.find(key);
        return v && v->type == GgufValueType::String ? v->s : std::string();
    };
    s.architecture = text("general.architecture");
    s.name = text("general.name");
    if (s.name.empty())
        s.name = baseName(path);
    std::map<uint32_t, uint64_t> elementsOfType;
    for (const GgufTensorInfo &t : f.tensors) {
        // rotary frequency tables (Llama 3's rope_freqs, Phi-3's rope_factors_*) are not learned
        if (t.name.rfind("rope_freqs", 0) != 0 && t.name.rfind("rope_factors", 0) != 0)
            s.parameters += int64_t(t.count);
        if (t.ne.size() >= 2)
            elementsOfType[t.type] += t.count;
    }
    if (const GgufValue *ft = f.find("general.file_type"); ft && ft->isInteger())
        s.fileType = ggufFileTypeName(ft->i);
    if (s.fileType.empty() && !elementsOfType.empty()) {
        const auto most = std::max_element(elementsOfType.begin(), elementsOfType.end(),
                                           [](const auto &a, const auto &b) { return a.second < b.second; });
        s.fileType = ggmlTypeName(most->first);
    }
    if (!s.architecture.empty())
        if (const GgufValue *c = f.find(s.architecture + ".context_length"); c && c->isInteger())
            s.contextLength = int(std::min<int64_t>(c->i, std::numeric_limits<int>::max()));
    s.reason = ggufUnsupportedReason(f);
    s.supported = s.reason.empty();
    out = std::move(s);
    return {};
}

} // namespace attnviz
