// SPDX-License-Identifier: GPL-3.0-or-later
// Private to the core: the parts of a Hugging Face tokenizer.json pipeline (hftokenizerpipeline.cpp),
// used by hftokenizer.cpp. Text travels as code points that remember their source bytes; bytes that
// are not UTF-8 travel as "raw byte" code points above U+10FFFF (ByteLevel and byte fallback encode
// them as the byte itself, a regex sees U+FFFD). Builders throw Failure ("field: what") on a field
// they cannot read; the encode-time parts throw it when a regex gives up.
#pragma once

#include "unicodetext.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace attnviz::hf {

using json = nlohmann::json;
using unicode::Char;
using Text = std::vector<Char>;

constexpr char32_t kRawByte = 0x110000; // cp >= kRawByte: the ill-formed byte cp - kRawByte
inline bool isRaw(char32_t c)
{
    return c >= kRawByte;
}

void appendChar(std::string &out, char32_t c); // UTF-8, or the raw byte
std::string utf8Of(const Text &t, size_t from = 0, size_t to = SIZE_MAX);
Text decodeText(std::string_view text); // each ill-formed byte its own raw-byte code point
Text decodePlain(const std::string &s); // a string from the file, no source ranges
bool isWhiteSpace(char32_t c);          // Rust's char::is_whitespace (Unicode White_Space)
bool isAlphanumeric(char32_t c);        // Rust's char::is_alphanumeric

// --- JSON access: every error names the field ("model.merges[7]: ...") ---
struct Failure {
    std::string message; // "field: what"
    bool config = false; // in tokenizer_config.json
};
[[noreturn]] void fail(const std::string &field, const std::string &what);
std::string join(const std::string &field, const std::string &key);                    // "field.key"
const json &member(const json &obj, const std::string &key, const std::string &field); // required
const json *optional(const json &obj, const std::string &key);                         // null: absent
std::string getString(const json &obj, const std::string &key, const std::string &field);
std::string getString(const json &obj, const std::string &key, const std::string &field, const std::string &fallback);
bool getBool(const json &obj, const std::string &key, const std::string &field, bool fallback);
int64_t getInt(const json &obj, const std::string &key, const std::string &field, int64_t fallback);
const json &getArray(const json &obj, const std::string &key, const std::string &field);
std::string typeOf(const json &obj, const std::string &field); // its "type"
std::string quote(const std::string &s);                       // "\"s\"", long ones cut

// The work one encode may do, in proportion to its text: the regex steps of every pattern, and
// the characters normalizers may make of it. While one is in scope on a thread, the stages run
// there spend from it (nested scopes: the innermost).
class EncodeBudget {
public:
    explicit EncodeBudget(size_t chars);
    ~EncodeBudget();
    EncodeBudget(const EncodeBudget &) = delete;
    EncodeBudget &operator=(const EncodeBudget &) = delete;

private:
    int64_t m_left;
    int64_t *m_outer;
    size_t m_outerMaxChars;
};

// --- The pipeline's stages, built from their JSON objects (`field` names the object) ---
using Normalizer = std::function<void(Text &)>;
using PreTokenizer = std::function<void(std::vector<Text> &)>;   // splits -> splits
using Decoder = std::function<void(std::vector<std::string> &)>; // tokens -> tokens (decode_chain)
Normalizer makeNormalizer(const json &n, const std::string &field);
PreTokenizer makePreTokenizer(const json &p, const std::string &field);
Decoder makeDecoder(const json &d, const std::string &field);

} // namespace attnviz::hf
