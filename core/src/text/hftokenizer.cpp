// SPDX-License-Identifier: GPL-3.0-or-later
// Hugging Face's tokenizer.json with the BPE model (subword.h: loadHfTokenizer), read generically:
// the file's own pipeline is built from its parts, exact to the tokenizers library's encode (checked
// against 4 real tokenizers: tests/fixtures/tokenizers, hf_exclusions.json).
//
//   text -> added tokens (longest match on the raw text; then, per piece, the normalizer, and the
//   "normalized" added tokens on the normalized text) -> pre-tokenizer (splits) -> BPE per split
//   -> post-processor (BOS / EOS from the template, or tokenizer_config.json's add_bos_token /
//   add_eos_token) ; ids -> decoder -> text.
//
// Text is carried as code points that remember their source bytes (unicode::Char), so every token
// keeps its byte range through normalizers that insert, replace or recompose characters. Bytes that
// are not UTF-8 travel as "raw byte" code points above U+10FFFF: ByteLevel and byte_fallback encode
// them as the byte itself, a regex sees U+FFFD.
// Regexes (Split, Replace) run on ICU's engine with a step limit: Hugging Face runs Oniguruma, and
// both read \s as Unicode White_Space, \p{L} / \p{N} as the Unicode classes.
#include "attnviz/fileio.h"
#include "attnviz/subword.h"

#include "../formats/jsonread.h"
#include "hftokenizerbytes.h"
#include "hftokenizerpipeline.h"
#include "subwordvocabulary.h"
#include "unicodetext.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <climits>
#include <functional>
#include <mutex>
#include <queue>
#include <unordered_map>

namespace attnviz {
namespace {

using namespace hf;

constexpr size_t kMaxAddedTokenBytes = 1024; // real added tokens are under 100 bytes
// The bytes of every added token together, which their matcher (a trie of bytes) holds: Gemma 3's
// 6,415 added tokens have 77 KB.
constexpr size_t kMaxAddedBytes = size_t(1) << 20;

// --- The tokenizer ----------------------------------------------------------------------------

struct AddedToken {
    std::string content;
    int id = -1;
    bool special = false, lstrip = false, rstrip = false, singleWord = false, normalized = false;
};

// Added tokens by their bytes: a trie, for the leftmost-longest matches Hugging Face finds.
class AddedTrie {
public:
    void add(const std::string &s, int index)
    {
        int node = 0;
        for (const char ch : s) {
            const uint64_t k = key(node, uint8_t(ch));
            auto it = m_edges.find(k);
            if (it == m_edges.end()) {
                m_ends.push_back(-1);
                it = m_edges.emplace(k, int(m_ends.size()) - 1).first;
            }
            node = it->second;
        }
        m_ends[size_t(node)] = index;
    }
    bool empty() const { return m_ends.size() == 1; }
    // The longest token starting at `pos`: its index and length, or -1.
    int longest(const std::string &s, size_t pos, size_t &length) const
    {
        int node = 0, best = -1;
        for (size_t i = pos; i < s.size(); ++i) {
            const auto it = m_edges.find(key(node, uint8_t(s[i])));
            if (it == m_edges.end())
                break;
            node = it->second;
            if (m_ends[size_t(node)] >= 0) {
                best = m_ends[size_t(node)];
                length = i + 1 - pos;
            }
        }
        return best;
    }

private:
    static uint64_t key(int node, uint8_t b) { return uint64_t(uint32_t(node)) << 8 | b; }
    std::unordered_map<uint64_t, int> m_edges;
    std::vector<int> m_ends{-1}; // node -> token index, -1 when no token ends there
};

struct CharPiece {
    int id;
    uint32_t chars; // how many characters of the pre-token it covers
};

class HfTokenizer final : public VocabularyTokenizer {
public:
    std::string kind() const override { return m_kind; }
    Status encode(std::string_view text, std::vector<TraceToken> &out) const override;
    std::string decode(const std::vector<int> &ids) const override;
    bool isAdded(int id) const override { return id >= 0 && size_t(id) < m_isAdded.size() && m_isAdded[size_t(id)]; }

    // embeddingRows >= 0: the model's rows, which the vocabulary's own tokens may not outnumber.
    void build(const json &doc, const json *config, const std::string &name, int embeddingRows);

private:
    struct Segment {
        Text text;
        int added = -1; // index into m_added when the segment is an added token
    };
    void splitAdded(const Text &t, const AddedTrie &trie, std::vector<Segment> &out) const;
    void encodeSegment(const Text &t, std::vector<TraceToken> &out) const;
    void bpe(const Text &word, std::vector<CharPiece> &pieces) const;
    void bpeUncached(const Text &word, std::vector<CharPiece> &pieces) const;
    TraceToken specialToken(int id, size_t at) const;
    TraceToken addedToken(const Segment &s) const;
    std::string display(int id) const;
    void fixByteFallbackDisplays(std::vector<TraceToken> &out, size_t from) const;

    std::string m_kind, m_name;
    std::vector<AddedToken> m_added;
    AddedTrie m_rawAdded, m_normalizedAdded;
    std::vector<bool> m_isAdded; // id -> an added token
    Normalizer m_normalizer;
    PreTokenizer m_preTokenizer;
    Decoder m_decoder;
    bool m_byteLevel = false; // tokens spell bytes with GPT-2's table (display decodes them)
    std::unordered_map<char32_t, uint8_t> m_unicodeByte;
    // BPE
    struct Merge {
        int rank;
        int merged;
    };
    static uint64_t key(int a, int b) { return uint64_t(uint32_t(a)) << 32 | uint32_t(b); }
    std::unordered_map<std::string, int> m_vocab; // the model's own vocabulary
    std::unordered_map<uint64_t, Merge> m_merges;
    std::array<int, 256> m_byteFallback{};   // byte -> id of "<0xNN>", -1 when absent
    std::unordered_map<int, int> m_byteOfId; // id of "<0xNN>" -> NN
    bool m_hasByteFallback = false, m_fuseUnk = false, m_ignoreMerges = false;
    int m_unk = -1;
    std::vector<int> m_prefix, m_suffix; // post-processor: ids before and after the sequence
    // Pre-token -> pieces, as bytelevelbpe.cpp: short words only, a bounded number of them.
    static constexpr size_t kCachedBytes = 64, kCachedWords = 100000;
    mutable std::mutex m_cacheMutex;
    mutable std::unordered_map<std::string, std::vector<CharPiece>> m_cache;
};

// What build() refuses of model.type (empty: a BPE model, the one it builds).
std::string modelTypeProblem(const std::string &type)
{
    if (type == "BPE")
        return {};
    if (type == "Unigram")
        return "Unigram models are not supported yet (only BPE)";
    return quote(type) + " is not supported (only BPE)";
}

void HfTokenizer::build(const json &doc, const json *config, const std::string &name, int embeddingRows)
{
    if (!doc.is_object())
        fail("(top level)", "expected a JSON object");
    // The model: BPE only.
    const json &model = member(doc, "model", "(top level)");
    if (const std::string why = modelTypeProblem(getString(model, "type", "model", "BPE")); !why.empty())
        fail("model.type", why);
    for (const char *k : {"continuing_subword_prefix", "end_of_word_suffix"})
        if (!getString(model, k, "model", "").empty())
            fail(std::string("model.") + k, "not supported (only the empty string or null)");
    const json &vocab = member(model, "vocab", "model");
    if (!vocab.is_object())
        fail("model.vocab", "expected an object of token: id pairs");
    const json *addedList = optional(doc, "added_tokens");
    if (addedList && !addedList->is_array())
        fail("added_tokens", "expected an array");
    const size_t nAdded = addedList ? addedList->size() : 0;
    // Counted before anything is built: a vocabulary that outnumbers the rows is refused at once.
    if (embeddingRows >= 0 && vocab.size() > size_t(embeddingRows))
        fail("model.vocab", std::to_string(vocab.size()) + " tokens, more than the " + std::to_string(embeddingRows) +
                                " rows of the embeddings (config.json: vocab_size)");
    // Ids number the tokens from 0; an added token may take the next ids (Gemma 3's <image_soft_token>).
    const size_t limit = vocab.size() + nAdded;
    if (limit > size_t(INT_MAX))
        fail("model.vocab", "too many tokens");
    m_tokens.assign(vocab.size(), std::string());
    std::vector<bool> seen(vocab.size(), false);
    m_vocab.reserve(vocab.size());
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
        auto field = [&] { return "model.vocab[" + quote(it.key()) + "]"; }; // written only for a message
        if (!it.value().is_number_integer())
            fail(field(), "the id is not an integer");
        const int64_t id = it.value().get<int64_t>();
        if (id < 0 || uint64_t(id) >= vocab.size())
            fail(field(), "the id " + std::to_string(id) + " is outside 0.." + std::to_string(vocab.size() - 1) +
                            " (ids must number the tokens from 0)");
        if (seen[size_t(id)])
            fail(field(), "the id " + std::to_string(id) + " is given twice");
        seen[size_t(id)] = true;
        m_tokens[size_t(id)] = it.key();
        m_vocab.emplace(it.key(), int(id));
    }
    m_ids = m_vocab;

    // Added tokens.
    size_t addedBytes = 0;
    for (size_t k = 0; k < nAdded; ++k) {
        const json &a = (*addedList)[k];
        const std::string field = "added_tokens[" + std::to_string(k) + "]";
        AddedToken t;
        t.content = getString(a, "content", field);
        if (t.content.empty())
            fail(field + ".content", "empty");
        if (t.content.size() > kMaxAddedTokenBytes)
            fail(field + ".content", std::to_string(t.content.size()) + " bytes, more than the " +
                                         std::to_string(kMaxAddedTokenBytes) + " an added token may have");
        addedBytes += t.content.size();
        if (addedBytes > kMaxAddedBytes)
            fail(field + ".content", "the added tokens reach " + std::to_string(addedBytes) + " bytes, more than the " +
                                         std::to_string(kMaxAddedBytes) + " they may have together");
        const int64_t id = getInt(a, "id", field, -1);
        if (id < 0 || uint64_t(id) >= limit)
            fail(field + ".id", "the id " + std::to_string(id) + " is outside 0.." + std::to_string(limit - 1));
        t.id = int(id);
        t.special = getBool(a, "special", field, false);
        t.lstrip = getBool(a, "lstrip", field, false);
        t.rstrip = getBool(a, "rstrip", field, false);
        t.singleWord = getBool(a, "single_word", field, false);
        t.normalized = getBool(a, "normalized", field, !t.special);
        if (size_t(t.id) >= m_tokens.size())
            m_tokens.resize(size_t(t.id) + 1);
        m_tokens[size_t(t.id)] = t.content;
        m_ids[t.content] = t.id;
        m_added.push_back(std::move(t));
    }
    m_isAdded.assign(m_tokens.size(), false);
    for (const AddedToken &t : m_added)
        m_isAdded[size_t(t.id)] = true;

    // The rest of the model.
    m_byteFallback.fill(-1);
    m_hasByteFallback = getBool(model, "byte_fallback", "model", false);
    if (m_hasByteFallback)
        for (int b = 0; b < 256; ++b) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "<0x%02X>", b);
            const auto it = m_vocab.find(hex);
            m_byteFallback[size_t(b)] = it == m_vocab.end() ? -1 : it->second;
            if (it != m_vocab.end())
                m_byteOfId[it->second] = b;
        }
    m_fuseUnk = getBool(model, "fuse_unk", "model", false);
    m_ignoreMerges = getBool(model, "ignore_merges", "model", false);
    const std::string unk = getString(model, "unk_token", "model", "");
    if (!unk.empty()) {
        const auto it = m_vocab.find(unk);
        if (it == m_vocab.end())
            fail("model.unk_token", quote(unk) + " is not in the vocabulary");
        m_unk = it->second;
    }
    const json &merges = getArray(model, "merges", "model");
    m_merges.reserve(merges.size());
    std::string left, right, joined; // reused: no allocation per merge
    for (size_t k = 0; k < merges.size(); ++k) {
        auto field = [k] { return "model.merges[" + std::to_string(k) + "]"; }; // written only for a message
        const json &m = merges[k];
        if (m.is_string()) {
            const std::string &s = m.get_ref<const std::string &>();
            const size_t space = s.find(' ');
            if (space == std::string::npos || space == 0 || space + 1 == s.size() ||
                s.find(' ', space + 1) != std::string::npos)
                fail(field(), "expected two tokens separated by one space, not " + quote(s));
            left.assign(s, 0, space);
            right.assign(s, space + 1);
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
            left = m[0].get_ref<const std::string &>();
            right = m[1].get_ref<const std::string &>();
        } else {
            fail(field(), "expected \"left right\" or [\"left\", \"right\"]");
        }
        joined.assign(left).append(right);
        const auto l = m_vocab.find(left), r = m_vocab.find(right), j = m_vocab.find(joined);
        if (l == m_vocab.end())
            fail(field(), quote(left) + " is not in the vocabulary");
        if (r == m_vocab.end())
            fail(field(), quote(right) + " is not in the vocabulary");
        if (j == m_vocab.end())
            fail(field(), "the merged token " + quote(joined) + " is not in the vocabulary");
        m_merges[key(l->second, r->second)] = Merge{int(k), j->second}; // a repeated pair: the last rank
    }

    // The pipeline.
    if (const json *n = optional(doc, "normalizer"))
        m_normalizer = makeNormalizer(*n, "normalizer");
    if (const json *p = optional(doc, "pre_tokenizer"))
        m_preTokenizer = makePreTokenizer(*p, "pre_tokenizer");
    if (const json *d = optional(doc, "decoder"))
        m_decoder = makeDecoder(*d, "decoder");
    // Added tokens: the "normalized" ones are matched in the normalized text, spelled as the
    // normalizer writes them (Hugging Face's refresh_added_tokens).
    for (size_t k = 0; k < m_added.size(); ++k) {
        if (!m_added[k].normalized) {
            m_rawAdded.add(m_added[k].content, int(k));
            continue;
        }
        Text content = decodePlain(m_added[k].content);
        const EncodeBudget budget(content.size());
        if (m_normalizer)
            m_normalizer(content);
        if (!content.empty())
            m_normalizedAdded.add(utf8Of(content), int(k));
    }
    const std::string pre = optional(doc, "pre_tokenizer") ? optional(doc, "pre_tokenizer")->dump() : "";
    const std::string dec = optional(doc, "decoder") ? optional(doc, "decoder")->dump() : "";
    m_byteLevel = pre.find("\"ByteLevel\"") != std::string::npos || dec.find("\"ByteLevel\"") != std::string::npos;
    const std::array<char32_t, 256> table = bytelevel::bytesToUnicode();
    for (int b = 0; b < 256; ++b)
        m_unicodeByte[table[size_t(b)]] = uint8_t(b);

    // Post-processor: the single-sequence template's special tokens around $A.
    std::function<void(const json &, const std::string &)> post = [&](const json &p, const std::string &field) {
        const std::string t = typeOf(p, field);
        if (t == "ByteLevel")
            return; // offsets only
        if (t == "Sequence") {
            const json &list = getArray(p, "processors", field);
            for (size_t k = 0; k < list.size(); ++k)
                post(list[k], field + ".processors[" + std::to_string(k) + "]");
            return;
        }
        if (t != "TemplateProcessing")
            fail(field + ".type",
                 "unknown post-processor " + quote(t) + " (known: TemplateProcessing, ByteLevel, Sequence)");
        const json &single = getArray(p, "single", field);
        const json *specials = optional(p, "special_tokens");
        m_prefix.clear();
        m_suffix.clear();
        bool seenA = false;
        for (size_t k = 0; k < single.size(); ++k) {
            const std::string f = field + ".single[" + std::to_string(k) + "]";
            if (optional(single[k], "Sequence")) {
                seenA = true;
                continue;
            }
            const json &st = member(single[k], "SpecialToken", f);
            const std::string sid = getString(st, "id", f + ".SpecialToken");
            std::vector<int> ids;
            const json *entry = specials ? optional(*specials, sid) : nullptr;
            if (entry) {
                const json &list = getArray(*entry, "ids", field + ".special_tokens." + sid);
                for (const json &v : list) {
                    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= int64_t(m_tokens.size()))
                        fail(field + ".special_tokens." + sid + ".ids", "expected ids of the vocabulary");
                    ids.push_back(v.get<int>());
                }
            } else {
                const int id = this->id(sid);
                if (id < 0)
                    fail(f + ".SpecialToken.id", quote(sid) + " is not a token");
                ids.push_back(id);
            }
            (seenA ? m_suffix : m_prefix).insert((seenA ? m_suffix : m_prefix).end(), ids.begin(), ids.end());
        }
    };
    if (const json *p = optional(doc, "post_processor"))
        post(*p, "post_processor");

    // tokenizer_config.json: add_bos_token / add_eos_token replace the template's BOS / EOS, as
    // transformers' update_post_processor() does.
    if (config) {
        try {
            auto tokenOf = [&](const char *key) -> int {
                const json *v = optional(*config, key);
                if (!v)
                    return -1;
                std::string s;
                if (v->is_string())
                    s = v->get<std::string>();
                else if (v->is_object())
                    s = getString(*v, "content", std::string(key));
                else
                    fail(std::string(key), "expected a string or an object");
                const int id = this->id(s);
                if (id < 0)
                    fail(std::string(key), quote(s) + " is not a token");
                return id;
            };
            const std::string where;
            if (optional(*config, "add_bos_token")) {
                const bool add = getBool(*config, "add_bos_token", where, false);
                const int bos = tokenOf("bos_token");
                m_prefix.clear();
                if (add && bos >= 0)
                    m_prefix.push_back(bos);
            }
            if (optional(*config, "add_eos_token")) {
                const bool add = getBool(*config, "add_eos_token", where, false);
                const int eos = tokenOf("eos_token");
                m_suffix.clear();
                if (add && eos >= 0)
                    m_suffix.push_back(eos);
            }
        } catch (Failure &f) {
            f.config = true;
            throw;
        }
    }
    m_kind = std::string(m_byteLevel         ? "byte-level BPE"
                         : m_hasByteFallback ? "BPE with byte fallback"
                                             : "BPE") +
             " (tokenizer.json)";
    m_name = name;
}

// Hugging Face's AddedVocabulary::find_matches: leftmost-longest matches left to right; a
// single_word token only between non-word characters; lstrip / rstrip take the spaces beside it.
void HfTokenizer::splitAdded(const Text &t, const AddedTrie &trie, std::vector<Segment> &out) const
{
    if (trie.empty() || t.empty()) {
        if (!t.empty())
            out.push_back({t, -1});
        return;
    }
    // The text's bytes, and where each character starts (tokens are whole UTF-8 characters, so
    // matches start and end at characters).
    std::string s;
    std::vector<uint32_t> byteAt(t.size() + 1), charAt;
    for (size_t i = 0; i < t.size(); ++i) {
        byteAt[i] = uint32_t(s.size());
        appendChar(s, t[i].cp);
        charAt.resize(s.size(), uint32_t(i));
    }
    byteAt[t.size()] = uint32_t(s.size());
    charAt.push_back(uint32_t(t.size()));
    size_t startChar = 0; // the first character not yet emitted
    size_t i = 0;
    while (i < t.size()) {
        size_t length = 0;
        const int index = trie.longest(s, byteAt[i], length);
        if (index < 0) {
            ++i;
            continue;
        }
        const AddedToken &a = m_added[size_t(index)];
        size_t b = i, e = charAt[byteAt[i] + length];
        i = e;
        if (a.singleWord) {
            const bool startSpace = b == 0 || !isAlphanumeric(t[b - 1].cp);
            const bool stopSpace = e == t.size() || !isAlphanumeric(t[e].cp);
            if (!startSpace || !stopSpace)
                continue;
        }
        if (a.lstrip)
            while (b > startChar && isWhiteSpace(t[b - 1].cp))
                --b;
        if (a.rstrip)
            while (e < t.size() && isWhiteSpace(t[e].cp))
                ++e;
        i = e;
        if (startChar < b)
            out.push_back({Text(t.begin() + std::ptrdiff_t(startChar), t.begin() + std::ptrdiff_t(b)), -1});
        out.push_back({Text(t.begin() + std::ptrdiff_t(b), t.begin() + std::ptrdiff_t(e)), index});
        startChar = e;
    }
    if (startChar < t.size())
        out.push_back({Text(t.begin() + std::ptrdiff_t(startChar), t.end()), -1});
}

// Hugging Face's BPE word: symbols from the characters (vocabulary, else <0xNN> bytes, else the
// unknown token, fused when fuse_unk), then merges from a heap ordered by (rank, position), each
// new pair pushed as soon as it forms (tokenizers' Word::merge_all).
void HfTokenizer::bpeUncached(const Text &word, std::vector<CharPiece> &pieces) const
{
    pieces.clear();
    std::string whole = utf8Of(word);
    if (m_ignoreMerges) {
        const auto it = m_vocab.find(whole);
        if (it != m_vocab.end()) {
            pieces.push_back({it->second, uint32_t(word.size())});
            return;
        }
    }
    struct Symbol {
        int id;
        uint32_t chars;
        int prev, next;
    };
    std::vector<Symbol> syms;
    int unkChars = 0;
    auto flushUnk = [&] {
        if (unkChars) {
            syms.push_back({m_unk, uint32_t(unkChars), 0, 0});
            unkChars = 0;
        }
    };
    std::string ch;
    for (const Char &c : word) {
        ch.clear();
        appendChar(ch, c.cp);
        if (!isRaw(c.cp)) {
            const auto it = m_vocab.find(ch);
            if (it != m_vocab.end()) {
                flushUnk();
                syms.push_back({it->second, 1, 0, 0});
                continue;
            }
        }
        if (m_hasByteFallback) {
            bool all = true;
            for (const char b : ch)
                all = all && m_byteFallback[uint8_t(b)] >= 0;
            if (all) {
                flushUnk();
                for (size_t k = 0; k < ch.size(); ++k)
                    syms.push_back({m_byteFallback[uint8_t(ch[k])], k == 0 ? 1u : 0u, 0, 0});
                continue;
            }
        }
        if (m_unk >= 0) {
            if (!m_fuseUnk)
                flushUnk();
            ++unkChars;
            if (!m_fuseUnk)
                flushUnk();
        } else if (!syms.empty()) {
            ++syms.back().chars; // dropped, as Hugging Face drops it; its bytes go to the token before
        }
    }
    flushUnk();
    const int n = int(syms.size());
    for (int i = 0; i < n; ++i) {
        syms[size_t(i)].prev = i - 1;
        syms[size_t(i)].next = i + 1 < n ? i + 1 : -1;
    }
    struct Candidate {
        int rank, pos, merged;
        bool operator>(const Candidate &o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
    auto offer = [&](int pos) {
        const int next = syms[size_t(pos)].next;
        if (next < 0)
            return;
        const auto it = m_merges.find(key(syms[size_t(pos)].id, syms[size_t(next)].id));
        if (it != m_merges.end())
            heap.push({it->second.rank, pos, it->second.merged});
    };
    for (int i = 0; i + 1 < n; ++i)
        offer(i);
    while (!heap.empty()) {
        const Candidate top = heap.top();
        heap.pop();
        Symbol &left = syms[size_t(top.pos)];
        if (left.id < 0 || left.next < 0)
            continue;
        Symbol &right = syms[size_t(left.next)];
        const auto it = m_merges.find(key(left.id, right.id));
        if (it == m_merges.end() || it->second.merged != top.merged)
            continue;
        left.id = top.merged;
        left.chars += right.chars;
        right.id = -1;
        left.next = right.next;
        if (right.next >= 0)
            syms[size_t(right.next)].prev = top.pos;
        if (left.prev >= 0)
            offer(left.prev);
        offer(top.pos);
    }
    for (int i = n > 0 ? 0 : -1; i >= 0; i = syms[size_t(i)].next)
        pieces.push_back({syms[size_t(i)].id, syms[size_t(i)].chars});
}

void HfTokenizer::bpe(const Text &word, std::vector<CharPiece> &pieces) const
{
    std::string k = utf8Of(word);
    const bool cached = k.size() <= kCachedBytes;
    if (cached) {
        for (const Char &c : word) // raw bytes are spelled apart from the same bytes in U+FFFD's place
            if (isRaw(c.cp))
                k += "\xFF";
        std::lock_guard<std::mutex> lock(m_cacheMutex);
        const auto it = m_cache.find(k);
        if (it != m_cache.end()) {
            pieces = it->second;
            return;
        }
    }
    bpeUncached(word, pieces);
    if (!cached)
        return;
    std::lock_guard<std::mutex> lock(m_cacheMutex);
    if (m_cache.size() >= kCachedWords)
        m_cache.clear();
    m_cache.emplace(std::move(k), pieces);
}

std::string HfTokenizer::display(int id) const
{
    const std::string &tok = m_tokens[size_t(id)];
    if (m_isAdded[size_t(id)])
        return tok;
    if (m_byteLevel) {
        std::string bytes;
        for (const Char &c : unicode::decodeUtf8(tok)) {
            const auto it = m_unicodeByte.find(c.cp);
            if (it != m_unicodeByte.end())
                bytes.push_back(char(it->second));
            else
                bytes.append(tok, c.begin, c.end - c.begin);
        }
        return bytelevel::displayBytes(bytes);
    }
    // SentencePiece style: ▁ is a space.
    std::string text;
    for (const Char &c : unicode::decodeUtf8(tok))
        unicode::appendUtf8(text, c.cp == 0x2581 ? char32_t(' ') : c.cp);
    return bytelevel::displayBytes(text);
}

// Byte-fallback pieces: a run of <0xNN> pieces that spells whole UTF-8 characters shows each
// character on the piece of its first byte, "…" on the pieces of its other bytes; bytes that form
// no character show as \xNN.
void HfTokenizer::fixByteFallbackDisplays(std::vector<TraceToken> &out, size_t from) const
{
    auto byteOf = [&](const TraceToken &t) -> int {
        if (!m_hasByteFallback || t.special || t.id < 0)
            return -1;
        const auto it = m_byteOfId.find(t.id);
        return it == m_byteOfId.end() ? -1 : it->second;
    };
    size_t i = from;
    while (i < out.size()) {
        if (out[i].text.size() != 6 || out[i].text.compare(0, 3, "<0x") != 0 || byteOf(out[i]) < 0) {
            ++i;
            continue;
        }
        size_t j = i;
        std::string bytes;
        std::vector<size_t> owner; // byte index -> token index
        while (j < out.size() && out[j].text.size() == 6 && out[j].text.compare(0, 3, "<0x") == 0) {
            const int b = byteOf(out[j]);
            if (b < 0)
                break;
            bytes.push_back(char(b));
            owner.push_back(j);
            ++j;
        }
        for (const Char &c : unicode::decodeUtf8(bytes)) {
            const bool illFormed =
                c.cp == 0xFFFD && !(c.end - c.begin == 3 && bytes.compare(c.begin, 3, "\xEF\xBF\xBD") == 0);
            for (uint32_t k = c.begin; k < c.end; ++k) {
                std::string shown;
                if (illFormed) {
                    char hex[8];
                    std::snprintf(hex, sizeof hex, "\\x%02X", unsigned(uint8_t(bytes[k])));
                    shown = hex;
                } else if (k == c.begin) {
                    bytelevel::appendDisplayChar(shown, c.cp, bytes.substr(c.begin, c.end - c.begin));
                } else {
                    shown = "\u2026";
                }
                out[owner[k]].display = shown;
            }
        }
        i = j;
    }
}

// An added token found in the text: its bytes there (with the spaces lstrip / rstrip took).
TraceToken HfTokenizer::addedToken(const Segment &s) const
{
    const AddedToken &a = m_added[size_t(s.added)];
    TraceToken t;
    t.id = a.id;
    t.text = t.display = a.content;
    t.begin = s.text.front().begin;
    t.end = s.text.back().end;
    t.special = a.special;
    return t;
}

TraceToken HfTokenizer::specialToken(int id, size_t at) const
{
    TraceToken t;
    t.id = id;
    t.text = t.display = m_tokens[size_t(id)];
    t.begin = t.end = at;
    t.special = true;
    return t;
}

void HfTokenizer::encodeSegment(const Text &t, std::vector<TraceToken> &out) const
{
    std::vector<Text> splits{t};
    if (m_preTokenizer)
        m_preTokenizer(splits);
    std::vector<CharPiece> pieces;
    for (const Text &word : splits) {
        if (word.empty())
            continue;
        bpe(word, pieces);
        size_t at = 0;
        for (const CharPiece &p : pieces) {
            TraceToken tok;
            tok.id = p.id;
            tok.text = m_tokens[size_t(p.id)];
            tok.display = display(p.id);
            tok.unknown = p.id == m_unk;
            if (p.chars == 0) { // a later byte of one character: that character's range
                const Char &c = word[at > 0 ? at - 1 : 0];
                tok.begin = c.begin;
                tok.end = c.end;
            } else {
                tok.begin = SIZE_MAX;
                for (size_t k = at; k < std::min(word.size(), at + p.chars); ++k) {
                    tok.begin = std::min<size_t>(tok.begin, word[k].begin);
                    tok.end = std::max<size_t>(tok.end, word[k].end);
                }
            }
            at += p.chars;
            out.push_back(std::move(tok));
        }
    }
}

Status HfTokenizer::encode(std::string_view text, std::vector<TraceToken> &out) const
{
    out.clear();
    if (text.size() >= size_t(INT32_MAX))
        return Status::error(StatusCode::InvalidInput,
                             "text of " + describeBytes(text.size()) + ": too long to tokenize");
    try {
        const EncodeBudget budget(text.size());
        for (const int id : m_prefix)
            out.push_back(specialToken(id, 0));
        std::vector<Segment> raw;
        splitAdded(decodeText(text), m_rawAdded, raw);
        for (Segment &seg : raw) {
            if (seg.added >= 0) {
                out.push_back(addedToken(seg));
                continue;
            }
            if (m_normalizer)
                m_normalizer(seg.text);
            std::vector<Segment> normalized;
            splitAdded(seg.text, m_normalizedAdded, normalized);
            for (const Segment &n : normalized) {
                if (n.added >= 0)
                    out.push_back(addedToken(n));
                else
                    encodeSegment(n.text, out);
            }
        }
        for (const int id : m_suffix)
            out.push_back(specialToken(id, text.size()));
    } catch (const Failure &f) {
        out.clear();
        return Status::error(StatusCode::InvalidInput, detail::oneLine(m_name + " (tokenizer.json): " + f.message));
    }
    fixByteFallbackDisplays(out, 0);
    return Status::success();
}

std::string HfTokenizer::decode(const std::vector<int> &ids) const
{
    std::vector<std::string> tokens;
    for (const int id : ids)
        if (id >= 0 && id < int(m_tokens.size()))
            tokens.push_back(m_tokens[size_t(id)]);
    if (!m_decoder) {
        std::string out;
        for (size_t k = 0; k < tokens.size(); ++k)
            out += (k ? " " : "") + tokens[k];
        return out;
    }
    try {
        m_decoder(tokens);
    } catch (const Failure &) {
        return std::string();
    }
    std::string out;
    for (const std::string &t : tokens)
        out += t;
    return out;
}

// nlohmann's SAX events for the readers below, which look for one field as the text goes (no
// document is built): every scalar is value(), arrays only count their depth, a parse error stops.
struct FieldReader : nlohmann::json_sax<json> {
    int depth = 0;

    virtual bool value() = 0;
    bool null() override { return value(); }
    bool boolean(bool) override { return value(); }
    bool number_integer(number_integer_t) override { return value(); }
    bool number_unsigned(number_unsigned_t) override { return value(); }
    bool number_float(number_float_t, const string_t &) override { return value(); }
    bool string(string_t &) override { return value(); }
    bool binary(binary_t &) override { return value(); }
    bool start_array(std::size_t) override
    {
        ++depth;
        return value();
    }
    bool end_array() override
    {
        --depth;
        return true;
    }
    bool parse_error(std::size_t, const std::string &, const nlohmann::detail::exception &) override { return false; }
};

// Counts the entries of model.vocab as the text is read (nlohmann's SAX events: no document is
// built) and stops where that object ends, so that a vocabulary larger than the embeddings is
// refused before a 60 MB file becomes a gigabyte of JSON values. `done` is false where the text
// ends, or does not parse, before model.vocab has ended; the full parse then says what is wrong.
struct VocabCounter : FieldReader {
    int modelDepth = -1, vocabDepth = -1;
    bool modelNext = false, vocabNext = false, done = false;
    uint64_t count = 0;

    bool value() override
    {
        modelNext = vocabNext = false;
        return true;
    }
    bool start_object(std::size_t) override
    {
        ++depth;
        if (modelNext)
            modelDepth = depth;
        else if (vocabNext)
            vocabDepth = depth;
        modelNext = vocabNext = false;
        return true;
    }
    bool key(string_t &k) override
    {
        if (depth == vocabDepth)
            ++count;
        else if (depth == 1)
            modelNext = k == "model";
        else if (depth == modelDepth)
            vocabNext = k == "vocab";
        return true;
    }
    bool end_object() override
    {
        if (depth == vocabDepth) {
            done = true;
            return false; // counted: the rest is not this reader's to read
        }
        if (depth == modelDepth)
            modelDepth = -1;
        --depth;
        return true;
    }
};

// Reads model.type as the text goes and stops there (the vocabulary after it is not read); a model
// without "type" is BPE, as build() takes it. `type` stays empty where the text ends or does not parse
// first; `broken` is set where it does not parse, or nests deeper than opening accepts, before that.
struct ModelTypeReader : FieldReader {
    int modelDepth = -1;
    bool modelNext = false, typeNext = false, broken = false;
    std::string type;

    bool parse_error(std::size_t, const std::string &, const nlohmann::detail::exception &) override
    {
        broken = true;
        return false;
    }
    bool start_array(std::size_t n) override
    {
        if (depth >= detail::kMaxJsonDepth) {
            broken = true;
            return false;
        }
        return FieldReader::start_array(n);
    }

    bool value() override
    {
        modelNext = typeNext = false;
        return true;
    }
    bool string(string_t &v) override
    {
        if (typeNext) {
            type = v;
            return false;
        }
        return value();
    }
    bool start_object(std::size_t) override
    {
        if (depth >= detail::kMaxJsonDepth) {
            broken = true;
            return false;
        }
        ++depth;
        if (modelNext)
            modelDepth = depth;
        modelNext = typeNext = false;
        return true;
    }
    bool key(string_t &k) override
    {
        if (depth == 1)
            modelNext = k == "model";
        else if (depth == modelDepth)
            typeNext = k == "type";
        return true;
    }
    bool end_object() override
    {
        if (depth == modelDepth) {
            type = "BPE";
            return false;
        }
        --depth;
        return true;
    }
};

} // namespace

std::string hfTokenizerProblem(const std::string &dir)
{
    // A list reads many folders' files (a real tokenizer.json is 10-30 MB): a sound one is read as far
    // as model.type, and its last bytes. What looks wrong on the way (not a regular file, larger than
    // the cap, not ending as an object ends, a parse error or too deep before model.type) is then
    // checked as opening checks it, for opening's own message.
    const std::string path = dir + "/tokenizer.json";
    const auto checkedAsOpening = [&]() -> std::string {
        std::string text;
        const Status st = readCheckedJsonFile(path, kMaxTokenizerFileBytes, text);
        if (st)
            return {};
        return st.message.rfind(dir + "/", 0) == 0 ? st.message.substr(dir.size() + 1) : st.message;
    };
    uint64_t size = 0;
    if (!regularFileSize(path, size) || size > kMaxTokenizerFileBytes)
        return checkedAsOpening();
    std::ifstream in(path, std::ios::binary);
    const uint64_t tail = std::min<uint64_t>(size, 256);
    std::string end(size_t(tail), '\0');
    if (!in.seekg(std::streamoff(size - tail)) || !in.read(end.data(), std::streamsize(tail)))
        return checkedAsOpening();
    const size_t last = end.find_last_not_of(" \t\r\n");
    if (last == std::string::npos || end[last] != '}')
        return checkedAsOpening();
    in.seekg(0);
    ModelTypeReader reader;
    try {
        (void)json::sax_parse(in, &reader, json::input_format_t::json, false);
    } catch (const std::exception &) {
        return checkedAsOpening();
    }
    if (reader.broken)
        return checkedAsOpening();
    const std::string why = reader.type.empty() ? std::string() : modelTypeProblem(reader.type);
    return why.empty() ? why : "tokenizer.json: model.type: " + why;
}

Status parseHfTokenizer(const std::string &tokenizerJson, const std::string &tokenizerConfigJson,
                        const std::string &name, std::unique_ptr<SubwordTokenizer> &out, int embeddingRows)
{
    if (embeddingRows >= 0) {
        VocabCounter counter;
        try {
            (void)json::sax_parse(tokenizerJson, &counter, json::input_format_t::json, false);
        } catch (const std::exception &) {
            counter.done = false; // the full parse below says what is wrong
        }
        if (counter.done && counter.count > uint64_t(embeddingRows))
            return Status::error(StatusCode::ParseError,
                                 name + " (tokenizer.json): model.vocab: " + std::to_string(counter.count) +
                                     " tokens, more than the " + std::to_string(embeddingRows) +
                                     " rows of the embeddings (config.json: vocab_size)");
    }
    json doc, config;
    Status s = detail::parseJson(tokenizerJson, name + " (tokenizer.json)", doc);
    if (!s)
        return s;
    if (!tokenizerConfigJson.empty()) {
        s = detail::parseJson(tokenizerConfigJson, name + " (tokenizer_config.json)", config);
        if (!s)
            return s;
        if (!config.is_object())
            return Status::error(StatusCode::ParseError, name + " (tokenizer_config.json): expected a JSON object");
    }
    auto tok = std::make_unique<HfTokenizer>();
    try {
        tok->build(doc, tokenizerConfigJson.empty() ? nullptr : &config, name, embeddingRows);
    } catch (const Failure &f) {
        return Status::error(
            StatusCode::ParseError,
            detail::oneLine(name + (f.config ? " (tokenizer_config.json): " : " (tokenizer.json): ") + f.message));
    } catch (const std::bad_alloc &) {
        return Status::error(StatusCode::ParseError, name + " (tokenizer.json): out of memory");
    } catch (const json::exception &e) {
        return Status::error(StatusCode::ParseError,
                             detail::oneLine(name + " (tokenizer.json): " + detail::jsonMessage(e)));
    }
    out = std::move(tok);
    return s;
}

Status loadHfTokenizer(const std::string &dir, std::unique_ptr<SubwordTokenizer> &out, int embeddingRows)
{
    const std::string jsonPath = dir + "/tokenizer.json", configPath = dir + "/tokenizer_config.json";
    std::string text, config;
    Status s = readRegularFile(jsonPath, kMaxTokenizerFileBytes, text);
    if (!s)
        return s;
    uint64_t size = 0;
    if (regularFileSize(configPath, size)) {
        s = readRegularFile(configPath, kMaxTokenizerFileBytes, config);
        if (!s)
            return s;
    }
    return parseHfTokenizer(text, config, dir, out, embeddingRows);
}

} // namespace attnviz
