// SPDX-License-Identifier: GPL-3.0-or-later
// Reading attention cases (schema attn-golden/1, see docs/CASES.md) and writing results.
#pragma once

#include "attnviz/embeddings.h"
#include "attnviz/status.h"
#include "attnviz/types.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attnviz {

// A flat row-major array with its shape; "NaN"/"Infinity"/"-Infinity" strings are decoded.
struct NdArray {
    std::vector<int> shape;
    std::vector<double> values;
};

struct CaseFile {
    std::string name;
    AttentionConfig config;
    AttentionInput<double> input;
    bool selfAttention = false;
    // Sentence cases (inputs.sentence / inputs.key_sentence instead of matrices).
    bool fromSentence = false;
    int declaredDModel = 0; // config.d_model when the file gives it
    std::string sentence, keySentence;
    EmbeddedSentence queryTokens, keyTokens; // filled by embedCaseSentences()
    int declaredTq = 0, declaredTk = 0; // config.t_q / t_k when the file gives them; must match the token counts
    std::map<std::string, NdArray> expected; // q k v scores weights weights_avg context output, when present
};

// Parses a case. Strict: unknown fields, duplicate keys, wrong shapes, NaN in inputs, heads not
// dividing d_model are errors naming the field ("config.num_heads: 3 does not divide d_model 10");
// so are nesting deeper than 64 levels and numbers beyond float64's range.
Status parseCase(const std::string &jsonText, const std::string &sourceName, CaseFile &out);
// Reads a case file: a regular file of at most kMaxCaseFileBytes (fileio.h), then parseCase.
constexpr uint64_t kMaxCaseFileBytes = 250'000'000;
Status loadCase(const std::string &path, CaseFile &out);

// For sentence cases: tokenizes and embeds with `table`, filling input.batch (batch of one).
Status embedCaseSentences(CaseFile &c, const EmbeddingTable &table);

struct ResultMeta {
    std::string backend = "cpu";
    std::string device;
    std::string precision = "float64";
    double computeMs = 0.0;
};

// The result as JSON: meta, resolved config, then every stage under the case schema's `expected`
// names, batch-first: q k v (B,t,d), scores weights (B,H,t_q,t_k), weights_avg (B,t_q,t_k),
// context output (B,t_q,d). Non-finite numbers as the strings "NaN", "Infinity", "-Infinity".
template <typename T>
std::string resultToJson(const CaseFile &c, const AttentionResult<T> &r, const ResultMeta &meta);

// Largest violation of |a-b| <= atol + rtol*|b| between a stage of `r` and c.expected[stage];
// NaN in the expected value matches NaN only. Returns the max abs difference; `ok` set accordingly.
template <typename T>
double compareStage(const CaseFile &c, const AttentionResult<T> &r, const std::string &stage, double rtol, double atol,
                    bool &ok, std::string *detail = nullptr);

// Stage as a flat batch-first array (for comparison and export).
template <typename T>
NdArray stageArray(const AttentionResult<T> &r, const std::string &stage);

// Names of the stages in output order.
const std::vector<std::string> &stageNames();

} // namespace attnviz
