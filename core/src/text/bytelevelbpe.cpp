// SPDX-License-Identifier: GPL-3.0-or-later
// GPT-2's byte-level BPE (subword.h): vocab.json + merges.txt, exact to OpenAI's encoder.py and the
// npm gpt-3-encoder (tests/fixtures/tokenizers: 2,159 lines of reference ids).
//
// encode: split the text on "<|endoftext|>" (Hugging Face's added special token), cut each part
// with GPT-2's pattern
//     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (matched by hand over code points: the core has no Unicode regex engine, and these seven
// alternatives need only three character classes from ICU), map every byte of a piece to its
// printable stand-in (bytes_to_unicode), and merge adjacent symbols by rank until no pair has one.
#include "attnviz/fileio.h"
#include "attnviz/subword.h"

#include "../formats/jsonread.h"
#include "hftokenizerbytes.h"
#include "subwordvocabulary.h"
#include "unicodetext.h"

#include <nlohmann/json.hpp>

#include <array>
#include <climits>
#include <mutex>
#include <queue>
#include <unordered_map>

namespace attnviz {
namespace {

using bytelevel::bytesToUnicode;

struct BytePiece {
    int id;
    uint32_t bytes; // how many bytes of the pre-token it covers
};

class ByteLevelBpe final : public VocabularyTokenizer {
public:
    std::string kind() const override { return "byte-level BPE"; }
    Status encode(std::string_view text, std::vector<TraceToken> &out) const override;
    std::string decode(const std::vector<int> &ids) const override;

    Status build(const std::string &vocabBytes, const std::string &vocabName, const std::string &mergesBytes,
                 const std::string &mergesName);

private:
    struct Merge {
        int rank;
        int merged;
    };
    static uint64_t key(int a, int b) { return uint64_t(uint32_t(a)) << 32 | uint32_t(b); }
    void encodePart(std::string_view text, size_t offset, std::vector<TraceToken> &out) const;
    void bpe(std::string_view bytes, std::vector<BytePiece> &pieces) const;
    void emit(std::string_view text, size_t begin, size_t end, std::vector<TraceToken> &out) const;
    std::string display(int id) const;

    std::vector<std::string> m_bytes;             // id -> the bytes it stands for
    std::array<int, 256> m_byteIds{};             // byte -> id of its one-byte symbol
    std::array<uint8_t, 512> m_unicodeToByte{};   // stand-in code point (< 512) -> byte
    std::unordered_map<uint64_t, Merge> m_merges; // (left id, right id) -> rank, merged id
    int m_endOfText = -1;                         // "<|endoftext|>"; -1 when the vocabulary has none
    // Pre-token bytes -> pieces: the same words recur. Only words of at most kCachedBytes, at most
    // kCachedWords of them (a few MB), so that pasted runs of random text do not fill memory.
    static constexpr size_t kCachedBytes = 64, kCachedWords = 100000;
    mutable std::mutex m_cacheMutex;
    mutable std::unordered_map<std::string, std::vector<BytePiece>> m_cache;
};

Status ByteLevelBpe::build(const std::string &vocabBytes, const std::string &vocabName, const std::string &mergesBytes,
                           const std::string &mergesName)
{
    auto fail = [](const std::string &name, const std::string &what) {
        return Status::error(StatusCode::ParseError, name + ": " + what);
    };
    // vocab.json: one object, token -> id, the ids 0 .. n-1 each once.
    nlohmann::json vocab; // the core's hardened reader: nesting, duplicate tokens, one-line messages
    if (Status st = detail::parseJson(vocabBytes, vocabName, vocab); !st)
        return st;
    if (!vocab.is_object() || vocab.empty())
        return fail(vocabName, "expected a JSON object of token: id pairs");
    const size_t n = vocab.size();
    if (n > size_t(INT_MAX))
        return fail(vocabName, "too many tokens");
    m_tokens.assign(n, std::string());
    std::vector<bool> seen(n, false);
    m_ids.reserve(n);
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
        if (!it.value().is_number_integer())
            return fail(vocabName, "the id of " + quoteText(it.key()) + " is not an integer");
        const int64_t id = it.value().get<int64_t>();
        if (id < 0 || uint64_t(id) >= n)
            return fail(vocabName, "the id " + std::to_string(id) + " of " + quoteText(it.key()) + " is outside 0.." +
                                       std::to_string(n - 1) + " (ids must number the tokens from 0)");
        if (seen[size_t(id)])
            return fail(vocabName, "the id " + std::to_string(id) + " is given twice");
        seen[size_t(id)] = true;
        m_tokens[size_t(id)] = it.key();
        m_ids.emplace(it.key(), int(id));
    }
    // The bytes each token stands for; every one-byte symbol must be there.
    const std::array<char32_t, 256> table = bytesToUnicode();
    std::array<int, 512> byteOf;
    byteOf.fill(-1);
    for (int b = 0; b < 256; ++b) {
        byteOf[size_t(table[size_t(b)])] = b;
        m_unicodeToByte[size_t(table[size_t(b)])] = uint8_t(b);
        std::string symbol;
        unicode::appendUtf8(symbol, table[size_t(b)]);
        const auto it = m_ids.find(symbol);
        if (it == m_ids.end()) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02X", b);
            return fail(vocabName, "no token for the byte " + std::string(hex) + " (\"" + symbol +
                                       "\"): not a byte-level BPE vocabulary");
        }
        m_byteIds[size_t(b)] = it->second;
    }
    m_bytes.assign(n, std::string());
    for (size_t id = 0; id < n; ++id) {
        for (const unicode::Char &c : unicode::decodeUtf8(m_tokens[id])) {
            if (c.cp < 512 && byteOf[c.cp] >= 0)
                m_bytes[id].push_back(char(byteOf[c.cp]));
            else // not a byte stand-in (an added token's own spelling): the character itself
                unicode::appendUtf8(m_bytes[id], c.cp);
        }
    }
    const auto eot = m_ids.find("<|endoftext|>");
    m_endOfText = eot == m_ids.end() ? -1 : eot->second;

    // merges.txt: "#version" line(s), then one "left right" pair a line, best first. Both parts and
    // their concatenation must be tokens (as Hugging Face's tokenizers require).
    size_t pos = 0, lineNo = 0;
    int rank = 0;
    m_merges.reserve(n);
    std::string left, right, joined; // reused: no allocation per line
    while (pos < mergesBytes.size()) {
        size_t eol = mergesBytes.find('\n', pos);
        if (eol == std::string::npos)
            eol = mergesBytes.size();
        std::string_view line(mergesBytes.data() + pos, eol - pos);
        pos = eol + 1;
        ++lineNo;
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        if (line.rfind("#version", 0) == 0)
            continue;
        if (line.empty() && pos >= mergesBytes.size())
            break; // the newline that ends the file
        auto where = [lineNo] { return "line " + std::to_string(lineNo) + ": "; }; // written only for a message
        const size_t space = line.find(' ');
        if (line.empty() || space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
            line.find(' ', space + 1) != std::string_view::npos)
            return fail(mergesName, where() + "expected two tokens separated by one space");
        left.assign(line.substr(0, space));
        right.assign(line.substr(space + 1));
        joined.assign(left).append(right);
        const auto l = m_ids.find(left), r = m_ids.find(right), m = m_ids.find(joined);
        if (l == m_ids.end())
            return fail(mergesName, where() + quoteText(left) + " is not in the vocabulary");
        if (r == m_ids.end())
            return fail(mergesName, where() + quoteText(right) + " is not in the vocabulary");
        if (m == m_ids.end())
            return fail(mergesName, where() + "the merged token " + quoteText(joined) + " is not in the vocabulary");
        m_merges[key(l->second, r->second)] = Merge{rank++, m->second}; // a repeated pair: the last rank
    }
    return Status::success();
}

// The pieces of one pre-token, merged by rank exactly as encoder.py's bpe(): take the adjacent pair
// of lowest rank, merge all its occurrences left to right, repeat. encoder.py rescans the word for
// every merge (quadratic: a pasted 20 KB run without spaces would stall the window); here the
// pairs wait in a heap ordered by (rank, position), and one round pops every occurrence of the
// lowest-ranked pair in position order, so each round is one of encoder.py's iterations: a round
// cannot create a new occurrence of its own pair (the merged token is longer than either part),
// and the pairs it forms join the heap only after it, as encoder.py sees them only on its next scan.
void ByteLevelBpe::bpe(std::string_view bytes, std::vector<BytePiece> &pieces) const
{
    const bool cached = bytes.size() <= kCachedBytes;
    if (cached) {
        std::lock_guard<std::mutex> lock(m_cacheMutex);
        const auto it = m_cache.find(std::string(bytes));
        if (it != m_cache.end()) {
            pieces = it->second;
            return;
        }
    }
    struct Symbol {
        int id;
        uint32_t bytes;
        int prev, next; // neighbours in the word, -1 at its ends
    };
    struct Candidate {
        int rank, pos; // pos: the left symbol's index
        bool operator>(const Candidate &o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    const int n = int(bytes.size());
    std::vector<Symbol> word(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
        word[size_t(i)] = {m_byteIds[uint8_t(bytes[size_t(i)])], 1, i - 1, i + 1 < n ? i + 1 : -1};
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
    auto rankAt = [&](int pos) { // rank of the pair starting at pos, INT_MAX when none
        const int next = word[size_t(pos)].next;
        if (next < 0)
            return INT_MAX;
        const auto it = m_merges.find(key(word[size_t(pos)].id, word[size_t(next)].id));
        return it == m_merges.end() ? INT_MAX : it->second.rank;
    };
    auto offer = [&](int pos) {
        if (pos >= 0) {
            const int r = rankAt(pos);
            if (r != INT_MAX)
                heap.push({r, pos});
        }
    };
    for (int i = 0; i + 1 < n; ++i)
        offer(i);
    std::vector<int> merged;
    while (!heap.empty()) {
        const int rank = heap.top().rank;
        merged.clear();
        while (!heap.empty() && heap.top().rank == rank) {
            const int pos = heap.top().pos;
            heap.pop();
            Symbol &left = word[size_t(pos)];
            if (left.id < 0 || rankAt(pos) != rank) // gone, or no longer this pair (stale entry)
                continue;
            Symbol &right = word[size_t(left.next)];
            left.id = m_merges.find(key(left.id, right.id))->second.merged;
            left.bytes += right.bytes;
            right.id = -1;
            left.next = right.next;
            if (right.next >= 0)
                word[size_t(right.next)].prev = pos;
            merged.push_back(pos);
        }
        for (const int pos : merged) {
            if (word[size_t(pos)].id < 0)
                continue;
            offer(word[size_t(pos)].prev);
            offer(pos);
        }
    }
    std::vector<BytePiece> result;
    for (int i = n > 0 ? 0 : -1; i >= 0; i = word[size_t(i)].next)
        result.push_back({word[size_t(i)].id, word[size_t(i)].bytes});
    pieces = result;
    if (!cached)
        return;
    std::lock_guard<std::mutex> lock(m_cacheMutex);
    if (m_cache.size() >= kCachedWords)
        m_cache.clear();
    m_cache.emplace(std::string(bytes), std::move(result));
}

// What a chip shows: the bytes as text, a space as "␣", a newline as "↵", a tab as "⇥", other
// control characters and bytes that are only part of a UTF-8 character as \xNN.
std::string ByteLevelBpe::display(int id) const
{
    return bytelevel::displayBytes(m_bytes[size_t(id)]);
}

void ByteLevelBpe::emit(std::string_view text, size_t begin, size_t end, std::vector<TraceToken> &out) const
{
    std::vector<BytePiece> pieces;
    bpe(text.substr(begin, end - begin), pieces);
    size_t at = begin;
    for (const BytePiece &p : pieces) {
        TraceToken t;
        t.id = p.id;
        t.text = m_tokens[size_t(p.id)];
        t.display = display(p.id);
        t.begin = at;
        t.end = at + p.bytes;
        at = t.end;
        out.push_back(std::move(t));
    }
}

// GPT-2's pattern over the code points of one part of the text (no "<|endoftext|>" inside).
void ByteLevelBpe::encodePart(std::string_view text, size_t offset, std::vector<TraceToken> &out) const
{
    const std::vector<unicode::Char> cs = unicode::decodeUtf8(text.substr(offset), uint32_t(offset));
    enum Class : uint8_t { Letter, Number, Space, Other };
    std::vector<uint8_t> cls(cs.size());
    for (size_t i = 0; i < cs.size(); ++i) {
        const char32_t c = cs[i].cp;
        cls[i] = unicode::isLetter(c)       ? Letter
                 : unicode::isNumber(c)     ? Number
                 : unicode::isWhiteSpace(c) ? Space
                                            : Other;
    }
    const size_t n = cs.size();
    auto runOf = [&](size_t i, uint8_t c) {
        while (i < n && cls[i] == c)
            ++i;
        return i;
    };
    size_t i = 0;
    while (i < n) {
        size_t end = i;
        // 's|'t|'re|'ve|'m|'ll|'d
        if (cs[i].cp == '\'' && i + 1 < n) {
            const char32_t a = cs[i + 1].cp, b = i + 2 < n ? cs[i + 2].cp : 0;
            if (a == 's' || a == 't' || a == 'm' || a == 'd')
                end = i + 2;
            else if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
                end = i + 3;
        }
        if (end == i) {
            // ' ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+': an optional U+0020, then a run of one class
            const size_t s = cs[i].cp == ' ' && i + 1 < n && cls[i + 1] != Space ? i + 1 : i;
            if (cls[s] != Space) {
                end = runOf(s, cls[s]);
            } else {
                // '\s+(?!\S)|\s+': a run of white space leaves its last character to the word after it
                const size_t r = runOf(i, Space);
                end = r == n || r - i == 1 ? r : r - 1;
            }
        }
        emit(text, cs[i].begin, end < n ? cs[end].begin : text.size(), out);
        i = end;
    }
}

Status ByteLevelBpe::encode(std::string_view text, std::vector<TraceToken> &out) const
{
    out.clear();
    if (text.size() >= size_t(INT32_MAX))
        return Status::error(StatusCode::InvalidInput,
                             "text of " + describeBytes(text.size()) + ": too long to tokenize");
    static const std::string_view kEot = "<|endoftext|>";
    size_t pos = 0;
    while (pos <= text.size()) {
        const size_t hit = m_endOfText < 0 ? std::string_view::npos : text.find(kEot, pos);
        const size_t stop = hit == std::string_view::npos ? text.size() : hit;
        if (stop > pos)
            encodePart(text.substr(0, stop), pos, out);
        if (hit == std::string_view::npos)
            break;
        TraceToken t;
        t.id = m_endOfText;
        t.text = t.display = std::string(kEot);
        t.begin = hit;
        t.end = hit + kEot.size();
        t.special = true;
        out.push_back(std::move(t));
        pos = hit + kEot.size();
    }
    return Status::success();
}

std::string ByteLevelBpe::decode(const std::vector<int> &ids) const
{
    std::string out;
    for (const int id : ids)
        if (id >= 0 && id < int(m_bytes.size()))
            out += m_bytes[size_t(id)];
    return out;
}

} // namespace

Status parseByteLevelBpe(const std::string &vocabJsonBytes, const std::string &mergesBytes, const std::string &name,
                         std::unique_ptr<SubwordTokenizer> &out)
{
    auto bpe = std::make_unique<ByteLevelBpe>();
    Status s = bpe->build(vocabJsonBytes, name + " (vocab.json)", mergesBytes, name + " (merges.txt)");
    if (!s)
        return s;
    out = std::move(bpe);
    return s;
}

Status loadByteLevelBpe(const std::string &vocabJson, const std::string &mergesTxt,
                        std::unique_ptr<SubwordTokenizer> &out)
{
    std::string vocab, merges;
    Status s = readRegularFile(vocabJson, kMaxTokenizerFileBytes, vocab);
    if (s)
        s = readRegularFile(mergesTxt, kMaxTokenizerFileBytes, merges);
    if (!s)
        return s;
    auto bpe = std::make_unique<ByteLevelBpe>();
    s = bpe->build(vocab, vocabJson, merges, mergesTxt);
    if (!s)
        return s;
    out = std::move(bpe);
    return s;
}

} // namespace attnviz
