// SPDX-License-Identifier: GPL-3.0-or-later
// The safetensors header check shared by both readers (safetensorsheader.h).
#include "safetensorsheader.h"

#include "attnviz/fileio.h"
#include "jsonread.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

namespace attnviz::detail {

namespace {

constexpr uint64_t kHeaderCap = 100ull * 1000 * 1000; // real headers are kilobytes

Status parseHeader(const unsigned char *data, uint64_t size, const std::string &name, int fileIndex,
                   SafetensorsHeader &out)
{
    using json = nlohmann::json;
    auto bad = [&](const std::string &m) { return Status::error(StatusCode::ParseError, name + ": " + m); };
    if (size < 8)
        return bad("truncated (" + std::to_string(size) + " bytes, no header length)");
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | data[i];
    if (n > size - 8)
        return bad("header length " + std::to_string(n) + " is more than the file holds (" + describeBytes(size) +
                   "; truncated?)");
    if (n > kHeaderCap)
        return bad("header length " + describeBytes(n) + " is more than the " + describeBytes(kHeaderCap) +
                   " a safetensors header may have here");
    json head;
    if (Status st = parseJson(std::string(reinterpret_cast<const char *>(data + 8), size_t(n)), name, head, "JSON header");
        !st)
        return st;
    if (!head.is_object())
        return bad("header is not a JSON object");
    const uint64_t dataStart = 8 + n, dataSize = size - dataStart;
    SafetensorsHeader h;
    for (auto it = head.begin(); it != head.end(); ++it) {
        if (it.key() == "__metadata__") {
            if (it->is_object())
                for (auto m = it->begin(); m != it->end(); ++m)
                    h.metadata[m.key()] = m->is_string() ? m->get<std::string>() : m->dump();
            continue;
        }
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
        for (const auto &dim : e["shape"]) {
            if (!dim.is_number_unsigned()) // nlohmann parses every non-negative integer as unsigned
                return bad(tn + ": shape holds a negative or non-integer size");
            t.shape.push_back(int64_t(std::min(dim.get<uint64_t>(), uint64_t(std::numeric_limits<int64_t>::max()))));
        }
        // Element counts in overflow-checked 64-bit arithmetic: [2^32, 3*2^32] must not wrap to 0.
        uint64_t count = 1;
        for (const int64_t d : t.shape) {
            if (d > INT_MAX)
                return bad(tn + ": dimension " + std::to_string(d) + " of shape " + shapeText(t.shape) +
                           " is larger than " + std::to_string(INT_MAX) + ", the largest this reader accepts");
            if (__builtin_mul_overflow(count, uint64_t(d), &count))
                return bad(tn + ": shape " + shapeText(t.shape) + " holds more elements than 64 bits can count");
        }
        uint64_t need = 0;
        if (__builtin_mul_overflow(count, width, &need))
            return bad(tn + ": shape " + shapeText(t.shape) + " of " + t.dtype + " needs more bytes than 64 bits can count");
        if (need > dataSize)
            return bad(tn + ": shape " + shapeText(t.shape) + " of " + t.dtype + " claims more bytes than the " +
                       describeBytes(dataSize) + " data block holds");
        const json &off = e["data_offsets"];
        if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
            return bad(tn + ": data_offsets must be [begin, end]");
        const uint64_t b = off[0].get<uint64_t>(), en = off[1].get<uint64_t>();
        if (b > en || en > dataSize)
            return bad(tn + ": data_offsets [" + std::to_string(b) + ", " + std::to_string(en) + "] lie outside the " +
                       std::to_string(dataSize) + "-byte data block (truncated file?)");
        if (en - b != need)
            return bad(tn + ": data_offsets span " + std::to_string(en - b) + " bytes, " + t.dtype + " " +
                       shapeText(t.shape) + " needs " + std::to_string(need));
        t.count = count;
        t.offset = dataStart + b;
        t.bytes = need;
        h.entries.emplace(tn, std::move(t));
    }
    // As Hugging Face's reader requires: the tensors, in the order of their offsets, tile the data
    // block from its first byte to its last, with no overlap (two names reading the same bytes), no
    // gap and no bytes after the last tensor that no entry accounts for.
    std::vector<std::pair<uint64_t, const std::string *>> order; // (begin in the data block, name)
    for (const auto &kv : h.entries)
        order.emplace_back(kv.second.offset - dataStart, &kv.first);
    std::sort(order.begin(), order.end(), [&](const auto &a, const auto &b) {
        const uint64_t ea = a.first + h.entries.at(*a.second).bytes, eb = b.first + h.entries.at(*b.second).bytes;
        return a.first != b.first ? a.first < b.first : ea < eb;
    });
    uint64_t at = 0;
    for (const auto &[begin, tname] : order) {
        const uint64_t end = begin + h.entries.at(*tname).bytes;
        if (begin < at)
            return bad(*tname + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                       "] overlap the tensor before it (which ends at " + std::to_string(at) + ")");
        if (begin > at)
            return bad(*tname + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                       "] leave a gap after byte " + std::to_string(at) + " (tensors must be contiguous)");
        at = end;
    }
    if (at != dataSize)
        return bad("the tensors cover " + std::to_string(at) + " of the " + std::to_string(dataSize) +
                   " bytes of the data block (bytes after the last tensor that no entry names)");
    out = std::move(h);
    return {};
}

} // namespace

Status parseSafetensorsHeader(const unsigned char *data, uint64_t size, const std::string &name, int fileIndex,
                              SafetensorsHeader &out)
{
    Status st = parseHeader(data, size, name, fileIndex, out);
    st.message = oneLine(std::move(st.message)); // tensor names may hold line breaks
    return st;
}

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

} // namespace attnviz::detail
