// SPDX-License-Identifier: GPL-3.0-or-later
// Word embedding tables: GloVe / word2vec / fastText text (.txt, .vec; "count dim" header optional),
// word2vec binary (.bin), and attnviz's own compact table (.avec, see writeAvec below).
#pragma once

#include "attnviz/status.h"
#include "attnviz/tokenizer.h"
#include "attnviz/types.h"

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace attnviz {

// Called now and then with the fraction done (0..1, or -1 when unknown); return false to cancel.
using ProgressFn = std::function<bool(double fraction)>;

class EmbeddingTable {
public:
    int dim() const { return int(m_vectors.cols()); }
    int size() const { return int(m_words.size()); }
    bool empty() const { return m_words.empty(); }
    const std::vector<std::string> &words() const { return m_words; }
    const Mat<float> &vectors() const { return m_vectors; }
    // Row of a known word, or -1.
    int indexOf(const std::string &word) const;
    Eigen::Map<const Vec<float>> vector(int index) const;
    const std::string &source() const { return m_source; }

    // Takes words and vectors (rows). Duplicate words keep the first occurrence.
    void assign(std::vector<std::string> words, Mat<float> vectors, std::string source);

    // A deterministic vector for a word the table lacks: seeded by a 64-bit FNV-1a hash of the word,
    // uniform in [-a, a] with a chosen so that its expected norm equals the table's mean norm.
    Vec<float> fallbackVector(const std::string &word) const;
    float meanNorm() const { return m_meanNorm; }

private:
    std::vector<std::string> m_words;
    std::unordered_map<std::string, int> m_index;
    Mat<float> m_vectors;
    float m_meanNorm = 1.0f;
    std::string m_source;
};

enum class EmbeddingFormat { Auto, Text, Word2VecBinary, Avec };

// The largest table file loadEmbeddings reads (glove.840B.300d.txt is 5.6 GB).
constexpr uint64_t kMaxEmbeddingFileBytes = 8'000'000'000;

// Loads a table. Auto detects by content (the .avec magic, a word2vec binary header, else text).
// Errors name the file and line: "glove.txt:1207: expected 50 numbers, found 49". Only regular
// files of at most kMaxEmbeddingFileBytes are read; a header's word count must fit the file and
// match the rows; an .avec with 0 words or unknown flags is refused.
Status loadEmbeddings(const std::string &path, EmbeddingTable &out, EmbeddingFormat format = EmbeddingFormat::Auto,
                      const ProgressFn &progress = {});
// The same from bytes already in memory (a Qt resource, a download); `name` is used in messages.
Status parseEmbeddings(const std::string &data, const std::string &name, EmbeddingTable &out,
                       EmbeddingFormat format = EmbeddingFormat::Auto, const ProgressFn &progress = {});
Status parseEmbeddingText(const std::string &text, const std::string &name, EmbeddingTable &out,
                          const ProgressFn &progress = {});

// .avec: attnviz's compact table, little-endian:
//   "AVEC" u32 version(=1) u32 count u32 dim u32 flags(=0)
//   count x (u8 length, bytes of the UTF-8 word)
//   count x (f32 scale, dim x i8): vector = scale * int8 values (per-vector symmetric quantization)
Status writeAvec(const std::string &path, const EmbeddingTable &table, size_t maxWords = 0);

// Sentence -> embedding matrix. Unknown words get fallbackVector() and are flagged.
struct EmbeddedSentence {
    std::vector<Token> tokens;
    std::vector<uint8_t> unknown; // 1 = the word is not in the table
    Mat<float> matrix;            // (tokens, dim)
};
EmbeddedSentence embedSentence(const EmbeddingTable &table, const std::string &sentence);

} // namespace attnviz
