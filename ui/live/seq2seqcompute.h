// SPDX-License-Identifier: GPL-3.0-or-later
// An encoder-decoder model's snapshot (T5, BART, mBART, Marian): the source traced with its target,
// teacher-forced, or generated from the source with the folder's settings where the target is
// empty (greedy, or the kept beam of ComputeRequest::beams); the encoder's and the cross attentions as snapshots of their own
// (ComputeSnapshot::encoderView, crossView). Computed on the CPU, on the compute thread.
#pragma once

#include "live/livetypes.h"

#include <memory>

namespace attnviz::ui {

// Whether `request` traces an encoder-decoder model (seq2seqSnapshot computes it).
bool encoderDecoderRequest(const ComputeRequest &request);
std::shared_ptr<ComputeSnapshot> seq2seqSnapshot(const ComputeRequest &request);

} // namespace attnviz::ui
