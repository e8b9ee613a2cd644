// SPDX-License-Identifier: GPL-3.0-or-later
// The needle-in-a-haystack probe and each head's retrieval score (Wu et al. 2024, "Retrieval Head
// Mechanistically Explains Long-Context Factuality"). The probe's text is the haystack with the
// needle sentence put in at `depth` (a fraction of the haystack's bytes, moved on to the next space
// so that no word is split), then the question; the model answers greedily. For each answer token
// w, made from the logits of query row p (the position before it), a head copies when the prompt
// token it attends to most in that row (argmax over the prompt's keys, the first on a tie) lies in
// the needle and is w itself. Its retrieval score is the fraction of the needle's tokens it so
// copied: |g_h| / |needle|, g_h the needle positions it copied from (each counted once).
// The rows are read through AttentionTiles (attentiontiles.h): a long haystack's trace keeps q, k
// and each row's log-sum-exp, and a score reads one prompt row per answer token and head.
#pragma once

#include "attnviz/model.h"

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace attnviz {

struct NeedleRequest {
    std::string haystack, needle, question;
    double depth = 0.5;     // where the needle goes: 0 the start of the haystack, 1 its end
    int answerTokens = 0;   // tokens generated; 0: as many as the needle has
    const std::atomic<bool> *cancel = nullptr; // checked by the prompt's trace and between answer tokens
    // Called on the calling thread: the prompt's trace layer by layer, then each answer token; `total`
    // is the prompt's layers and the answer's tokens. Empty: none.
    std::function<void(int done, int total)> progress;
};

struct NeedleProbe {
    std::vector<int> ids;            // the prompt, then the answer
    std::string text;                // the prompt as text (haystack with the needle, then the question)
    int promptTokens = 0;
    int needleBegin = 0, needleEnd = 0; // the needle's tokens [begin, end) in ids
    std::vector<int> answer;         // the greedy answer's ids
    std::string answerText;
    int answerFromNeedle = 0;        // answer tokens that are one of the needle's tokens
    Mat<double> retrieval;           // (layers, heads) retrieval scores
};

// The retrieval scores of `trace`, whose first `promptTokens` positions are the prompt (the needle
// at [needleBegin, needleEnd)) and whose next positions hold the answer `answer` (the trace's
// tokens; the last answer token need not be in it): per (layer, head), NaN where a layer cannot be read.
template <typename T>
Mat<double> retrievalScores(const Trace<T> &trace, int promptTokens, int needleBegin, int needleEnd,
                            const std::vector<int> &answer);

// The haystack from a file, as the window and the CLI read it: a regular file of at most 16 MiB
// (far more text than any model's context) with no NUL byte. Errors name `path`:
// "PATH: no such file", "PATH: 20 MB, more than the 16 MB this reader accepts",
// "PATH: a NUL byte at offset 12: not a text file"; `out` is untouched on error.
Status readHaystackFile(const std::string &path, std::string &out);

// Builds the probe's text, traces it (keeping no t x t weights: q, k and the log-sum-exp), answers
// greedily and scores every head. Causal language models only.
Status needleProbe(Model &model, const NeedleRequest &request, NeedleProbe &out);

} // namespace attnviz
