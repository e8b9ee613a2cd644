// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF files (llama.cpp, Ollama, LM Studio): the reader of the container — header, metadata (every
// value type but arrays of arrays), tensor infos, general.alignment — and the summary a model list
// shows. Versions 2 and 3, little-endian. Nothing a file claims is trusted: every count, string
// length, array length, dimension, type and offset is checked against the file's size before it
// is used, no container is reserved from a claimed count, and every error is one line naming the
// file and the key or tensor ("FILE: metadata \"general.alignment\": 3 is not a power of two").
// Own reader rather than ggml's gguf.cpp: Debian ships no libggml, and the checks above are ours.
#pragma once

#include "attnviz/status.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attnviz {

// GGUF's metadata value types (gguf_type), numbered as in the file.
enum class GgufValueType : uint32_t {
    Uint8 = 0, Int8 = 1, Uint16 = 2, Int16 = 3, Uint32 = 4, Int32 = 5, Float32 = 6, Bool = 7,
    String = 8, Array = 9, Uint64 = 10, Int64 = 11, Float64 = 12,
};
const char *toString(GgufValueType t); // "uint32", "string", "array" ...

// One metadata value. Scalars: integers in `i` (signed types and bool) or `u` (unsigned types),
// floats in `f` (integers are copied there too, so `f` is always the value as a number); strings in
// `s`. Arrays: `elementType` and `count`, the elements in `strings` (arrays of strings) or `numbers`
// (arrays of numbers or bools; 64-bit integers beyond 2^53 rounded); arrays of arrays are refused,
// as ggml refuses them. A reader asked not to keep arrays (summaries) leaves them empty, with
// `count` still set; so does one that keeps them, for arrays longer than per-layer values are
// (the tokenizer's, tokenizer.ggml.*, are kept up to a vocabulary's length, longer
// ones refused).
struct GgufValue {
    GgufValueType type = GgufValueType::Uint8;
    uint64_t u = 0;
    int64_t i = 0;
    double f = 0.0;
    std::string s;
    GgufValueType elementType = GgufValueType::Uint8;
    uint64_t count = 0;
    std::vector<std::string> strings;
    std::vector<double> numbers;

    bool isInteger() const;
    bool isNumber() const { return isInteger() || type == GgufValueType::Float32 || type == GgufValueType::Float64; }
    // An array whose elements are integers (a per-layer count), numbers, or strings.
    bool isArrayOf(bool (*element)(GgufValueType)) const
    {
        return type == GgufValueType::Array && element(elementType);
    }
    // The type as messages name it: "uint32", "string", "array of float32".
    std::string typeName() const;
};
bool isIntegerType(GgufValueType t); // the eight integer types (not bool)
bool isNumberType(GgufValueType t);  // integers, float32, float64

// ggml's tensor types, numbered as in the file (ggml_type).
namespace ggml {
enum Type : uint32_t {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
    Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
    IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23,
    I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30, TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};
}
struct GgmlTypeInfo {
    const char *name;   // "Q4_K"
    int blockElements;  // values in one block (1 for plain types)
    int blockBytes;     // bytes of one block
    bool dequantized;   // attnviz widens it (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, IQ4_NL)
};
// Null for a number ggml does not define (or no longer does).
const GgmlTypeInfo *ggmlTypeInfo(uint32_t type);
std::string ggmlTypeName(uint32_t type); // "Q4_K", or "type 77" for an unknown number
// llama.cpp's general.file_type (llama_ftype) as its tools name it: 15 -> "Q4_K_M"; "" if unknown.
std::string ggufFileTypeName(int64_t fileType);

struct GgufTensorInfo {
    std::string name;
    std::vector<int64_t> ne; // ggml order: ne[0] is the row length (the innermost, contiguous one)
    uint32_t type = 0;
    uint64_t offset = 0;     // from the start of the file (the data section's start added)
    uint64_t bytes = 0;
    uint64_t count = 0;      // elements
    int64_t rows() const;    // product of ne[1..]
};

struct GgufFile {
    std::string path; // as given; begins every message
    uint32_t version = 0;
    uint64_t alignment = 32;
    uint64_t dataOffset = 0; // where the tensor data section starts
    uint64_t fileSize = 0;
    std::vector<std::pair<std::string, GgufValue>> metadata; // in file order
    std::vector<GgufTensorInfo> tensors;                     // in file order

    const GgufValue *find(const std::string &key) const;
    const GgufTensorInfo *tensor(const std::string &name) const;

    std::map<std::string, size_t> keyIndex, tensorIndex;
};

struct GgufParseOptions {
    bool keepArrays = true; // false: arrays checked and skipped (a summary needs no vocabulary)
    uint64_t maxHeaderBytes = 0; // > 0: a header (metadata, tensor infos) running past it is refused
};

// Parses the `size` bytes at `data` (a whole GGUF file, or at least its header: tensors whose data
// lie past `size` are refused). `name` stands for the file in messages. `out` untouched on error.
Status parseGguf(const unsigned char *data, uint64_t size, const std::string &name, GgufFile &out,
                 const GgufParseOptions &options = {});

// Why attnviz cannot compute a parsed file ("" when it can): architecture, tensor types, tokenizer.
std::string ggufUnsupportedReason(const GgufFile &f);

// What a model list shows of a GGUF file, from its header, metadata and tensor infos only.
struct GgufSummary {
    std::string architecture;  // general.architecture ("llama", "qwen3" ...); "" if absent
    std::string name;          // general.name, else the file name without .gguf
    std::string fileType;      // "Q4_K_M", "BF16" ... from general.file_type, else the type holding most weights
    int64_t parameters = 0;    // elements of all tensors but the rotary frequency tables
    uint64_t fileBytes = 0;
    int contextLength = 0;     // {arch}.context_length, 0 if absent
    bool supported = false;    // attnviz can compute it
    std::string reason;        // why not, when not supported ("architecture \"mamba\" is not one attnviz computes")
};

// Maps `path` and summarizes it. Errors (not a GGUF file, truncated, a size that does not fit) are
// one line naming the file and the field; a well-formed file attnviz cannot compute is not an error
// (supported = false, with the reason).
// Reads at most the first 64 MiB of the header (a longer one is refused, saying so).
Status ggufSummary(const std::string &path, GgufSummary &out);

// What a window says beside a quantized model, from its ModelInfo::dtype ("Q4_K_M (GGUF; ...)"):
// "Q4_K_M — attention of the quantized model; close to, not identical with, the original's"; empty for
// weights that are not quantized (F32, F16, BF16, in a GGUF file or not).
std::string quantizedModelNote(const std::string &dtype);

// Whether the file starts with the GGUF magic (reads 4 bytes).
bool looksLikeGguf(const std::string &path);

} // namespace attnviz
