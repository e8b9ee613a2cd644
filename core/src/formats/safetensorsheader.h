// SPDX-License-Identifier: GPL-3.0-or-later
// The one safetensors header check both readers use (safetensors.cpp decodes a whole file into
// doubles; tensorarchive.cpp maps checkpoints and converts tensor by tensor): u64 little-endian
// header length N, N bytes of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// "__metadata__": {...}}, then the data block the offsets are relative to. Nothing the header claims
// is trusted: its length is checked against the file and capped, the JSON goes through parseJson
// (nesting limit, duplicate keys refused), element and byte counts are computed overflow-safe, each
// dimension must fit an int, and every tensor must span exactly dtype × shape bytes inside the data
// block. Private to the core.
#pragma once

#include "attnviz/status.h"
#include "attnviz/tensorarchive.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace attnviz::detail {

struct SafetensorsHeader {
    std::map<std::string, TensorEntry> entries; // offsets from the start of the file (header included)
    std::map<std::string, std::string> metadata;
};

// `data` holds the file's `size` bytes; `name` begins every message; entries get `fileIndex`.
Status parseSafetensorsHeader(const unsigned char *data, uint64_t size, const std::string &name, int fileIndex,
                              SafetensorsHeader &out);

// "(2, 3)"
std::string shapeText(const std::vector<int64_t> &shape);

float halfToFloat(uint16_t h);
float bf16ToFloat(uint16_t h);

// Converts a checked entry's bytes (`p` = file start + entry.offset) into `dst` (entry.count values).
template <typename T>
void convertTensor(const unsigned char *p, const TensorEntry &e, T *dst)
{
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
}

} // namespace attnviz::detail
