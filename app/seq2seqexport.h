// SPDX-License-Identifier: GPL-3.0-or-later
// `attnviz export --view cross|alignment|pipeline`: an encoder-decoder model's cross-attention (the
// Weights view drawn on target rows × source columns), its word alignment (the Alignment tab) and
// one stage of the Pipeline of the attention chosen (encoder, decoder or cross), made as the window
// makes them and written headless as a figure or as matrices.
#pragma once

#include "files/figureexport.h"
#include "live/livetypes.h"

#include <QString>

namespace attnviz::cli {

// Whether `export --view id` is one of these views.
bool isSeq2SeqView(const QString &id);

// The line refusing `--view id` for a snapshot of a model that is not an encoder-decoder one (word
// vectors, a decoder-only or encoder-only model); "" where it is one.
QString seq2seqViewRefusal(const QString &id, const ui::ComputeSnapshot &snapshot);

// What `--view pipeline` draws: the attention (AttentionKind: the encoder's, the decoder's or the
// cross-attention) and the stage, by its number (1, 2, …, as the window's stage list counts) or name
// ("weights", "raw scores" or raw-scores; any case); "" is the Weights stage.
struct PipelineChoice {
    AttentionKind kind = AttentionKind::Cross;
    QString stage;
};

// Writes view `id` of the encoder-decoder snapshot: `layer` and `head` the shown ones (-1: their mean;
// cross and pipeline take a layer, and -1 as head is the mean of heads). Exit codes as in
// commands.h: 2 for a layer out of range or a stage that is not there, 1 for a file that cannot be
// written.
int exportSeq2SeqView(const QString &id, const ui::SnapshotPtr &snapshot, int layer, int head, bool numbers,
                      const QString &out, const ui::FigureOptions &figure, const PipelineChoice &pipeline = {});

} // namespace attnviz::cli
