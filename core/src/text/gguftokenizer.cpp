// SPDX-License-Identifier: GPL-3.0-or-later
// The tokenizer a GGUF file carries in its tokenizer.ggml.* metadata (ggufmodel.h), built as the
// Hugging Face tokenizer.json the converter started from and run by the one tokenizer.json reader
// (hftokenizer.cpp), so that a GGUF file tokenizes as its original model did:
//   - `gpt2`: byte-level BPE; tokens, merges ("a b"), and the pre-tokenizer that tokenizer.ggml.pre
//     names. llama.cpp compiles one regex list per name (llama-vocab.cpp); here each name gets the
//     Hugging Face pre-tokenizer those regexes were transcribed from (Split with the original
//     pattern + ByteLevel; GPT-2's and SmolLM's as ByteLevel with its own regex, SmolLM's digits
//     split first), and Qwen's NFC normalizer, which llama.cpp skips: attnviz follows Hugging Face,
//     the tokenizer the model was trained with (README, tests/fixtures/gguf/MANIFEST.md).
//   - `llama`: SentencePiece-style BPE from scores; as Hugging Face's converter does for such
//     models (SentencePieceExtractor), merges are every split of a normal token into two tokens,
//     ordered by the merged token's score; byte tokens <0xNN> as byte fallback, unknown pieces as
//     tokenizer.ggml.unknown_token_id, spaces as "▁" with one prepended when add_space_prefix
//     (llama.cpp's default: true).
//   - `t5`: SentencePiece Unigram with the precompiled normalizer (t5Tokenizer below), run by the
//     SentencePiece library as a folder's spiece.model is.
// Token types (tokenizer.ggml.token_type): CONTROL tokens become special added tokens and
// USER_DEFINED ones plain added tokens (both matched whole before splitting, as llama.cpp does);
// BOS / EOS from tokenizer.ggml.{bos,eos}_token_id with add_bos_token / add_eos_token (absent:
// BOS for `llama`, none for `gpt2`, as llama.cpp).
#include "../models/ggufmodel.h"

#include "attnviz/fileio.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <cstring>
#include <unordered_map>

namespace attnviz::detail {

namespace {

using json = nlohmann::json;

enum TokenType { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

// Hugging Face's pre-tokenizers for llama.cpp's tokenizer.ggml.pre names.
json preTokenizerFor(const std::string &pre, bool &nfc, bool &ignoreMerges)
{
    auto split = [](const char *pattern) {
        return json{{"type", "Sequence"},
                    {"pretokenizers",
                     {{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}, {"invert", false}},
                      {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
    };
    const json byteLevel = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
    nfc = false;
    ignoreMerges = false;
    if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3") {
        ignoreMerges = true; // Llama 3's tokenizer.json sets it; llama.cpp too for this pre-tokenizer
        return split("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                     "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+");
    }
    if (pre == "qwen2" || pre == "deepseek-r1-qwen" || pre == "megrez") {
        nfc = true;
        return split("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                     "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+");
    }
    if (pre == "gpt-4o" || pre == "llama4")
        return split("[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
                     "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
                     "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+");
    if (pre == "smollm" || pre == "starcoder" || pre == "refact")
        return json{{"type", "Sequence"},
                    {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}, byteLevel}}};
    if (pre.empty() || pre == "default" || pre == "gpt-2" || pre == "gpt2" || pre == "phi-2")
        return byteLevel;
    return nullptr; // unknown
}

// SentencePiece's merges from scores (Hugging Face's SentencePieceExtractor): each normal token split
// into two tokens at every character boundary, ordered by the merged token's score, highest first
// (ties: by the left then the right part's id, as the extractor sorts them).
// The work is bounded by the tokens' bytes, not by the square of one token's length: a cut is looked
// up only where both parts have the length of some token (one pass over a token far longer than the
// others), and the bytes the lookups read are counted against a multiple of all the tokens' bytes;
// past it, false (the vocabulary is refused).
bool spmMerges(const std::vector<std::string> &tokens, const std::vector<double> &scores, const std::vector<int> &types,
               const std::unordered_map<std::string, int> &ids, json &out)
{
    struct M {
        double score;
        int merged, left, right;
    };
    size_t longest = 0, total = 0;
    for (const std::string &s : tokens) {
        longest = std::max(longest, s.size());
        total += s.size();
    }
    std::vector<bool> hasLength(longest + 1, false);
    for (const std::string &s : tokens)
        hasLength[s.size()] = true;
    uint64_t budget = uint64_t(total) * 64 + (uint64_t(1) << 24);
    std::vector<M> merges;
    for (size_t t = 0; t < tokens.size(); ++t) {
        if (types[t] != Normal && types[t] != UserDefined)
            continue;
        const std::string &s = tokens[t];
        for (size_t cut = 1; cut < s.size(); ++cut) {
            if ((uint8_t(s[cut]) & 0xC0) == 0x80) // inside a UTF-8 character
                continue;
            if (!hasLength[cut] || !hasLength[s.size() - cut])
                continue;
            if (budget < s.size())
                return false;
            budget -= s.size();
            const auto l = ids.find(s.substr(0, cut)), r = ids.find(s.substr(cut));
            if (l != ids.end() && r != ids.end())
                merges.push_back({scores[t], int(t), l->second, r->second});
        }
    }
    std::stable_sort(merges.begin(), merges.end(), [](const M &a, const M &b) {
        if (a.score != b.score)
            return a.score > b.score;
        if (a.merged != b.merged)
            return a.merged < b.merged;
        return a.left != b.left ? a.left < b.left : a.right < b.right;
    });
    out = json::array();
    for (const M &m : merges)
        out.push_back(json::array({tokens[size_t(m.left)], tokens[size_t(m.right)]}));
    return true;
}

// Keeps the reader's tokenizer and says where it came from.
// `silent`: ids decode() leaves out (a `t5` vocabulary's UNUSED rows, which llama.cpp's
// token_to_piece writes as nothing and the spiece.model they were padded from does not have).
class GgufTokenizer final : public SubwordTokenizer {
public:
    GgufTokenizer(std::unique_ptr<SubwordTokenizer> inner, std::string kind, std::vector<bool> silent = {})
        : m_inner(std::move(inner)), m_kind(std::move(kind)), m_silent(std::move(silent))
    {
    }
    std::string kind() const override { return m_kind; }
    int vocabSize() const override { return m_inner->vocabSize(); }
    Status encode(std::string_view text, std::vector<TraceToken> &out) const override { return m_inner->encode(text, out); }
    std::string decode(const std::vector<int> &ids) const override
    {
        if (m_silent.empty())
            return m_inner->decode(ids);
        std::vector<int> kept;
        for (int id : ids)
            if (id < 0 || size_t(id) >= m_silent.size() || !m_silent[size_t(id)])
                kept.push_back(id);
        return m_inner->decode(kept);
    }
    std::string token(int id) const override { return m_inner->token(id); }
    int id(std::string_view token) const override { return m_inner->id(token); }

private:
    std::unique_ptr<SubwordTokenizer> m_inner;
    std::string m_kind;
    std::vector<bool> m_silent;
};

// SentencePiece's model file (sentencepiece_model.proto's ModelProto) in protobuf's wire format: the
// library reads the pieces, the trainer's ids and the normalizer from it, nothing else.
class ProtoWriter {
public:
    void varint(uint64_t v)
    {
        for (; v >= 0x80; v >>= 7)
            m_bytes.push_back(char(uint8_t(v) | 0x80));
        m_bytes.push_back(char(v));
    }
    void integer(int field, int64_t v) // int32, enum and bool fields (negative int32 as ten bytes)
    {
        varint(uint64_t(field) << 3);
        varint(uint64_t(v));
    }
    void bytes(int field, std::string_view b)
    {
        varint(uint64_t(field) << 3 | 2);
        varint(b.size());
        m_bytes.append(b.data(), b.size());
    }
    void float32(int field, float v)
    {
        varint(uint64_t(field) << 3 | 5);
        char raw[4];
        std::memcpy(raw, &v, 4); // little-endian machines only, as the GGUF reader
        m_bytes.append(raw, 4);
    }
    const std::string &data() const { return m_bytes; }

private:
    std::string m_bytes;
};

// A `t5` vocabulary (llama.cpp's UGM type; convert_hf_to_gguf.py's T5Model.set_vocab copied the
// spiece.model's pieces, scores and types, add_dummy_prefix as add_space_prefix,
// remove_extra_whitespaces and the normalizer's precompiled_charsmap) put back into the
// SentencePiece model it came from and run by the SentencePiece library, as the folder's
// spiece.model is (subword.h: parseSentencePiece), so that the file tokenizes as T5Tokenizer does:
//   - a Unigram model; the token types as the pieces' (NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED,
//     BYTE; the converter's "[PAD<id>]" rows past the pieces are UNUSED and never produced);
//   - byte fallback where the vocabulary has byte tokens (<0x00> ...: SentencePiece's trainer adds
//     them only with byte_fallback, the flag the converter does not copy). llama.cpp's UGM tokenizer
//     gives <unk> for an unknown character in any case; attnviz follows the model as trained.
//   - </s> appended (add_eos_token, absent: true) and no BOS (add_bos_token, absent: false), the
//     defaults of llama-vocab.cpp for a `t5` vocabulary; unk 2, eos 1 unless the keys say otherwise.
Status t5Tokenizer(const GgufFile &f, const std::vector<std::string> &tokens, const std::vector<double> &scores,
                   std::vector<int> types, int eos, int unk, std::unique_ptr<SubwordTokenizer> &out)
{
    auto bad = [&](const std::string &key, const std::string &what) {
        return Status::error(StatusCode::InvalidInput, f.path + ": metadata " + quoteText(key) + ": " + what);
    };
    const int n = int(tokens.size());
    if (unk >= n)
        return bad("tokenizer.ggml.unknown_token_id", std::to_string(unk) + " is not a token id (0.." + std::to_string(n - 1) + ")");
    if (eos >= n)
        return bad("tokenizer.ggml.eos_token_id", std::to_string(eos) + " is not a token id (0.." + std::to_string(n - 1) + ")");
    bool bytes = false, unknown = false;
    for (int &t : types) {
        if (t < Normal || t > Byte)
            t = Normal;
        bytes = bytes || t == Byte;
        unknown = unknown || t == Unknown;
    }
    if (!unknown) // no token types: the unknown token is unknown_token_id's
        types[size_t(unk)] = Unknown;
    ProtoWriter model;
    for (int i = 0; i < n; ++i) {
        if (tokens[size_t(i)].empty())
            return bad("tokenizer.ggml.tokens", "token " + std::to_string(i) + " is empty (a SentencePiece piece never is)");
        ProtoWriter piece;
        piece.bytes(1, tokens[size_t(i)]);
        piece.float32(2, float(scores[size_t(i)]));
        piece.integer(3, types[size_t(i)]);
        model.bytes(1, piece.data());
    }
    ProtoWriter trainer;
    trainer.integer(3, 1); // model_type: UNIGRAM
    trainer.integer(4, n);
    trainer.integer(35, bytes); // byte_fallback
    trainer.integer(40, unk);
    trainer.integer(41, -1); // bos_id: none
    trainer.integer(42, eos);
    trainer.integer(43, -1); // pad_id: none (the library's pad is for training)
    trainer.bytes(45, tokens[size_t(unk)]);
    if (eos >= 0)
        trainer.bytes(47, tokens[size_t(eos)]);
    model.bytes(2, trainer.data());
    ProtoWriter normalizer;
    if (const GgufValue *c = f.find("tokenizer.ggml.precompiled_charsmap")) {
        std::string map(c->numbers.size(), '\0');
        for (size_t i = 0; i < map.size(); ++i)
            map[i] = char(uint8_t(int(c->numbers[i])));
        normalizer.bytes(2, map);
    }
    auto flag = [&](const char *key, bool fallback) {
        const GgufValue *v = f.find(key);
        return v ? v->i != 0 : fallback;
    };
    normalizer.integer(3, flag("tokenizer.ggml.add_space_prefix", true));
    normalizer.integer(4, flag("tokenizer.ggml.remove_extra_whitespaces", true));
    normalizer.integer(5, 1); // escape_whitespaces
    model.bytes(3, normalizer.data());
    std::unique_ptr<SubwordTokenizer> inner;
    if (Status st = parseSentencePiece(model.data(), f.path + " (tokenizer.ggml.*)", eos >= 0, inner); !st)
        return st;
    std::vector<bool> unused(types.size());
    for (size_t i = 0; i < types.size(); ++i)
        unused[i] = types[i] == Unused;
    out = std::make_unique<GgufTokenizer>(std::move(inner), "SentencePiece Unigram (GGUF metadata)", std::move(unused));
    return {};
}

} // namespace

std::string ggufTokenizerKeysProblem(const GgufFile &f)
{
    auto bad = [](const std::string &key, const std::string &what) { return "metadata " + quoteText(key) + ": " + what; };
    // A key of the wrong type is refused, as llama.cpp's loader does ("key has wrong type").
    auto wrongType = [&](const char *key, const GgufValue &v, const char *expected) {
        return bad(key, "type " + v.typeName() + ", expected " + expected);
    };
    const GgufValue *model = f.find("tokenizer.ggml.model");
    if (!model)
        return bad("tokenizer.ggml.model", "missing (the file has no tokenizer)");
    if (model->type != GgufValueType::String)
        return wrongType("tokenizer.ggml.model", *model, "string");
    const bool spm = model->s == "llama" || model->s == "t5";
    if (!spm && model->s != "gpt2")
        return bad("tokenizer.ggml.model", quoteText(model->s) + " is not a tokenizer attnviz reads from GGUF (gpt2, llama, t5)");
    const GgufValue *tokens = f.find("tokenizer.ggml.tokens");
    if (!tokens)
        return bad("tokenizer.ggml.tokens", "missing");
    if (tokens->type != GgufValueType::Array || tokens->elementType != GgufValueType::String)
        return wrongType("tokenizer.ggml.tokens", *tokens, "array of string");
    const uint64_t n = tokens->count;
    if (n == 0)
        return bad("tokenizer.ggml.tokens", "empty");
    if (n > uint64_t(INT_MAX))
        return bad("tokenizer.ggml.tokens", "too many tokens");
    if (const GgufValue *t = f.find("tokenizer.ggml.token_type")) {
        if (!t->isArrayOf(isIntegerType))
            return wrongType("tokenizer.ggml.token_type", *t, "array of int32");
        if (t->count != n)
            return bad("tokenizer.ggml.token_type", "not a list of " + std::to_string(n) + " types (one per token)");
    }
    if (const GgufValue *s = f.find("tokenizer.ggml.scores")) {
        if (!s->isArrayOf(isNumberType))
            return wrongType("tokenizer.ggml.scores", *s, "array of float32");
        if (s->count != n)
            return bad("tokenizer.ggml.scores", "not a list of " + std::to_string(n) + " scores (one per token)");
    } else if (spm) {
        return bad("tokenizer.ggml.scores", model->s == "t5" ? "missing (a Unigram vocabulary segments by its scores)"
                                                             : "missing (a SentencePiece vocabulary merges by score)");
    }
    for (const char *key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id"}) {
        const GgufValue *v = f.find(key);
        if (!v)
            continue;
        if (!v->isInteger())
            return wrongType(key, *v, "uint32 (a token id)");
        if (v->i < 0 || uint64_t(v->i) >= n)
            return bad(key, std::to_string(v->i) + " is not a token id (0.." + std::to_string(n - 1) + ")");
    }
    // The flags: bool keys ("true" as a string is refused, not read as false).
    for (const char *key : {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token",
                            "tokenizer.ggml.add_space_prefix", "tokenizer.ggml.remove_extra_whitespaces"})
        if (const GgufValue *v = f.find(key); v && v->type != GgufValueType::Bool)
            return wrongType(key, *v, "bool");
    // llama.cpp asserts the charsmap's element type (GGML_ASSERT: int8 or uint8); refused here
    if (const GgufValue *c = f.find("tokenizer.ggml.precompiled_charsmap");
        c && !(c->type == GgufValueType::Array && (c->elementType == GgufValueType::Uint8 || c->elementType == GgufValueType::Int8)))
        return wrongType("tokenizer.ggml.precompiled_charsmap", *c, "array of uint8");
    if (!spm) {
        const GgufValue *merges = f.find("tokenizer.ggml.merges");
        if (!merges)
            return bad("tokenizer.ggml.merges", "missing (a gpt2 tokenizer needs its merges)");
        if (merges->type != GgufValueType::Array || merges->elementType != GgufValueType::String)
            return wrongType("tokenizer.ggml.merges", *merges, "array of string");
        const GgufValue *preKey = f.find("tokenizer.ggml.pre");
        if (preKey && preKey->type != GgufValueType::String)
            return wrongType("tokenizer.ggml.pre", *preKey, "string");
        bool nfc = false, ignore = false;
        if (preTokenizerFor(preKey ? preKey->s : std::string(), nfc, ignore).is_null())
            return bad("tokenizer.ggml.pre", quoteText(preKey->s) + " is not a pre-tokenizer attnviz knows (llama-bpe, qwen2, "
                                                                   "smollm, gpt-2, gpt-4o, default)");
    }
    return "";
}

Status ggufTokenizer(const GgufFile &f, std::unique_ptr<SubwordTokenizer> &out)
{
    auto bad = [&](const std::string &key, const std::string &what) {
        return Status::error(StatusCode::InvalidInput, f.path + ": metadata " + quoteText(key) + ": " + what);
    };
    // A key of the wrong type is refused, as llama.cpp's loader does ("key has wrong type").
    auto wrongType = [&](const char *key, const GgufValue &v, const char *expected) {
        return bad(key, "type " + v.typeName() + ", expected " + expected);
    };
    // What needs no array's contents first, as the list of models checks it (ggufUnsupportedReason).
    if (std::string why = ggufTokenizerKeysProblem(f); !why.empty())
        return Status::error(StatusCode::InvalidInput, f.path + ": " + why);
    // present and of their types: checked just above
    const bool spm = f.find("tokenizer.ggml.model")->s == "llama";
    const GgufValue *tokens = f.find("tokenizer.ggml.tokens");
    if (tokens->strings.empty())
        return bad("tokenizer.ggml.tokens", "empty");
    const size_t n = tokens->strings.size();
    if (n > size_t(INT_MAX))
        return bad("tokenizer.ggml.tokens", "too many tokens");
    std::vector<int> types(n, Normal);
    if (const GgufValue *t = f.find("tokenizer.ggml.token_type")) {
        if (!t->isArrayOf(isIntegerType))
            return wrongType("tokenizer.ggml.token_type", *t, "array of int32");
        if (t->numbers.size() != n)
            return bad("tokenizer.ggml.token_type", "not a list of " + std::to_string(n) + " types (one per token)");
        for (size_t i = 0; i < n; ++i)
            types[i] = int(t->numbers[i]);
    }
    std::vector<double> scores(n, 0.0);
    if (const GgufValue *s = f.find("tokenizer.ggml.scores")) {
        if (!s->isArrayOf(isNumberType))
            return wrongType("tokenizer.ggml.scores", *s, "array of float32");
        if (s->numbers.size() != n)
            return bad("tokenizer.ggml.scores", "not a list of " + std::to_string(n) + " scores (one per token)");
        scores = s->numbers;
    } else if (spm) {
        return bad("tokenizer.ggml.scores", f.find("tokenizer.ggml.model")->s == "t5"
                                                ? "missing (a Unigram vocabulary segments by its scores)"
                                                : "missing (a SentencePiece vocabulary merges by score)");
    }
    auto idKey = [&](const char *key, int &id) -> Status {
        id = -1;
        const GgufValue *v = f.find(key);
        if (!v)
            return {};
        if (!v->isInteger())
            return wrongType(key, *v, "uint32 (a token id)");
        if (v->i < 0 || uint64_t(v->i) >= n)
            return bad(key, std::to_string(v->i) + " is not a token id (0.." + std::to_string(n - 1) + ")");
        id = int(v->i);
        return {};
    };
    int bos = -1, eos = -1, unk = -1;
    if (Status st = idKey("tokenizer.ggml.bos_token_id", bos); !st)
        return st;
    if (Status st = idKey("tokenizer.ggml.eos_token_id", eos); !st)
        return st;
    if (Status st = idKey("tokenizer.ggml.unknown_token_id", unk); !st)
        return st;
    // The flags: bool keys ("true" as a string is refused, not read as false).
    for (const char *key :
         {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token", "tokenizer.ggml.add_space_prefix"})
        if (const GgufValue *v = f.find(key); v && v->type != GgufValueType::Bool)
            return wrongType(key, *v, "bool");
    auto flag = [&](const char *key, bool fallback) {
        const GgufValue *v = f.find(key);
        return v ? v->i != 0 : fallback;
    };
    if (f.find("tokenizer.ggml.model")->s == "t5") {
        if (flag("tokenizer.ggml.add_bos_token", false))
            return bad("tokenizer.ggml.add_bos_token", "true: a BOS before a T5 source is not computed (T5 has none)");
        return t5Tokenizer(f, tokens->strings, scores, types, flag("tokenizer.ggml.add_eos_token", true) ? (eos >= 0 ? eos : 1) : -1,
                           unk >= 0 ? unk : 2, out);
    }
    const bool addBos = flag("tokenizer.ggml.add_bos_token", spm) && bos >= 0;
    const bool addEos = flag("tokenizer.ggml.add_eos_token", false) && eos >= 0;

    json vocab = json::object();
    std::unordered_map<std::string, int> ids;
    json added = json::array();
    for (size_t i = 0; i < n; ++i) {
        const std::string &t = tokens->strings[i];
        if (!ids.emplace(t, int(i)).second)
            return bad("tokenizer.ggml.tokens", "token " + std::to_string(i) + " " + quoteText(t) + " repeats token " +
                                                    std::to_string(ids[t]));
        vocab[t] = i;
        if ((types[i] == Control || types[i] == UserDefined) && !t.empty())
            added.push_back({{"id", i}, {"content", t}, {"special", types[i] == Control}, {"lstrip", false},
                             {"rstrip", false}, {"single_word", false}, {"normalized", false}});
    }
    json doc;
    doc["version"] = "1.0";
    doc["added_tokens"] = added;
    json m = {{"type", "BPE"}, {"vocab", vocab}, {"dropout", nullptr}, {"continuing_subword_prefix", nullptr},
              {"end_of_word_suffix", nullptr}};
    if (unk >= 0)
        m["unk_token"] = tokens->strings[size_t(unk)];
    std::string kind;
    if (spm) {
        const bool prefix = flag("tokenizer.ggml.add_space_prefix", true);
        json norm = json::array();
        if (prefix)
            norm.push_back({{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}});
        norm.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}});
        doc["normalizer"] = {{"type", "Sequence"}, {"normalizers", norm}};
        doc["pre_tokenizer"] = nullptr;
        m["byte_fallback"] = true;
        m["fuse_unk"] = true;
        json merges;
        if (!spmMerges(tokens->strings, scores, types, ids, merges))
            return bad("tokenizer.ggml.tokens", "its tokens split into more parts than merges can be built from in "
                                                "bounded work (tokens of every length, each made of others?)");
        m["merges"] = std::move(merges);
        json dec = json::array({{{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
                                {{"type", "ByteFallback"}}, {{"type", "Fuse"}}});
        if (prefix)
            dec.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
        doc["decoder"] = {{"type", "Sequence"}, {"decoders", dec}};
        kind = "SentencePiece BPE (GGUF metadata)";
    } else {
        const GgufValue *merges = f.find("tokenizer.ggml.merges");
        if (!merges)
            return bad("tokenizer.ggml.merges", "missing (a gpt2 tokenizer needs its merges)");
        if (merges->type != GgufValueType::Array || merges->elementType != GgufValueType::String)
            return wrongType("tokenizer.ggml.merges", *merges, "array of string");
        const GgufValue *preKey = f.find("tokenizer.ggml.pre");
        if (preKey && preKey->type != GgufValueType::String)
            return wrongType("tokenizer.ggml.pre", *preKey, "string");
        const std::string pre = preKey ? preKey->s : "";
        bool nfc = false, ignore = false;
        json p = preTokenizerFor(pre, nfc, ignore);
        if (p.is_null())
            return bad("tokenizer.ggml.pre", quoteText(pre) + " is not a pre-tokenizer attnviz knows (llama-bpe, qwen2, "
                                                              "smollm, gpt-2, gpt-4o, default)");
        doc["normalizer"] = nfc ? json{{"type", "NFC"}} : json(nullptr);
        doc["pre_tokenizer"] = p;
        m["byte_fallback"] = false;
        m["ignore_merges"] = ignore;
        m["merges"] = merges->strings;
        doc["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
        kind = "byte-level BPE (GGUF metadata)";
    }
    doc["model"] = m;
    json single = json::array();
    json specials = json::object();
    if (addBos) {
        single.push_back({{"SpecialToken", {{"id", tokens->strings[size_t(bos)]}, {"type_id", 0}}}});
        specials[tokens->strings[size_t(bos)]] = {{"id", tokens->strings[size_t(bos)]}, {"ids", {bos}},
                                                 {"tokens", {tokens->strings[size_t(bos)]}}};
    }
    single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
    if (addEos) {
        single.push_back({{"SpecialToken", {{"id", tokens->strings[size_t(eos)]}, {"type_id", 0}}}});
        specials[tokens->strings[size_t(eos)]] = {{"id", tokens->strings[size_t(eos)]}, {"ids", {eos}},
                                                 {"tokens", {tokens->strings[size_t(eos)]}}};
    }
    doc["post_processor"] = {{"type", "TemplateProcessing"}, {"single", single}, {"pair", single}, {"special_tokens", specials}};
    std::string text;
    try {
        text = doc.dump();
    } catch (const json::exception &) {
        return bad("tokenizer.ggml.tokens", "a token or merge is not valid UTF-8");
    }
    std::unique_ptr<SubwordTokenizer> inner;
    if (Status st = parseHfTokenizer(text, std::string(), f.path, inner); !st) {
        // "PATH (tokenizer.json): model.merges[411]: ..." said in the file's own keys
        std::string m = st.message;
        const std::string prefix = f.path + " (tokenizer.json): ";
        if (m.rfind(prefix, 0) == 0)
            m = m.substr(prefix.size());
        for (const auto &[field, key] : {std::pair<const char *, const char *>{"model.merges", "tokenizer.ggml.merges"},
                                         {"model.vocab", "tokenizer.ggml.tokens"},
                                         {"added_tokens", "tokenizer.ggml.tokens"},
                                         {"model.unk_token", "tokenizer.ggml.unknown_token_id"}})
            if (m.rfind(field, 0) == 0) {
                m = "metadata \"" + std::string(key) + "\"" + m.substr(std::strlen(field));
                break;
            }
        st.message = f.path + ": " + m;
        return st;
    }
    out = std::make_unique<GgufTokenizer>(std::move(inner), kind);
    return {};
}

} // namespace attnviz::detail
