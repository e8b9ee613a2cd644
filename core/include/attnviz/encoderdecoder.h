// SPDX-License-Identifier: GPL-3.0-or-later
// Encoder-decoder models (T5) beyond one trace: greedy decoding through Model::trace alone. A
// trace of such a model holds its three attentions (Trace::seq2seq, AttentionKind in model.h).
#pragma once

#include "attnviz/model.h"

#include <vector>

namespace attnviz {

// Greedy decoding of `source` (its text or ids, as TraceRequest reads them): the decoder's start
// token, then each step's most probable next token (the lower id on a tie) appended, up to `maxNew`
// tokens or the end token (kept), each step a float64 trace of the whole target so far. `target`
// gets the generated ids without the start token.
Status greedyTarget(Model &model, const TraceRequest &source, int maxNew, std::vector<int> &target);

} // namespace attnviz
