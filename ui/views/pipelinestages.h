// SPDX-License-Identifier: GPL-3.0-or-later
// The pipeline's stages as a table of stage specs (pipelinestages.cpp): one row per stage, saying
// when it applies, how its matrix, title and caption are made, how a click on one of its cells is
// explained, and which cells of the other stages that cell came from or feeds. A stage that a
// model's architecture adds (rotary positions, a gate) is one more row and its functions; the
// widget (PipelineView) only draws what the rows make.
#pragma once

#include "views/pipelineview.h"

namespace attnviz::ui {

using StageKind = PipelineView::StageKind;

// What every stage function reads: the snapshot, the selection and the labels, as the view shows them.
struct StageContext {
    const ComputeSnapshot *snapshot = nullptr; // null, or without a result: names and captions only
    int layer = 0;
    int head = 0; // the head the per-head stages show
    double scale = 1.0;
    // the score stages' matrices for the shown head, derived by the view (scoresDerived false: too large)
    const Mat<float> *raw = nullptr, *scaled = nullptr, *masked = nullptr;
    // T5's relative position bias of the shown head (an encoder-decoder T5's or a T5 encoder
    // alone's), added to `scaled` before the mask (masked then holds the sum); empty for every other
    // attention
    const Mat<float> *bias = nullptr;
    bool scoresDerived = false;
    const QStringList *queryLabels = nullptr, *keyLabels = nullptr;
    // the MLP stages' columns: the neurons shown (indices into d_ff) and their labels; empty when
    // the trace kept no MLP products
    const std::vector<int> *neurons = nullptr;
    const QStringList *neuronLabels = nullptr;
    QString monoFamily; // the explanation's fixed-width font, for its sums
};

// What a stage's function makes of the context, for the view to draw.
struct StageContent {
    StageKind kind = StageKind::Input;
    QString name, title, caption, message; // message: why there is no heatmap ("" when there is one)
    Mat<float> owned;                      // what the stage keeps: a slice (one head's columns), the weights whole
    const Mat<float> *matrix = nullptr;    // what is drawn: `owned` or a matrix of the snapshot
    const QStringList *rows = nullptr;     // the row labels
    const QStringList *cols = nullptr;     // the column labels; null: the columns are dimensions
    QString xAxis, yAxis;
    bool hatch = false;       // masked cells hatched
    bool signedScale = true;  // a diverging colour scale; false: from 0 up (the weights)
};

// The outlines a click asks for in the stages (those a configuration lacks are skipped).
class StageMarks {
public:
    virtual ~StageMarks() = default;
    virtual void rows(StageKind kind, int r0, int r1) = 0;
    virtual void cols(StageKind kind, int c0, int c1) = 0;
    virtual void cell(StageKind kind, int row, int col) = 0;
};

// The stages that apply to a snapshot's layer, in the order the view shows them (null or no result:
// those that always apply).
QVector<StageKind> applicableStages(const ComputeSnapshot *snapshot, int layer);
// Sets st's name, title, caption, message, matrix and labels (st.kind says which stage). The view
// resets the matrix, message, labels and axes first; name, title and caption are each stage's to set.
void fillStageContent(const StageContext &cx, StageContent &st);
// The arithmetic behind cell (row, col) of a stage, as HTML with the actual values.
QString explainStageCell(const StageContext &cx, StageKind kind, int row, int col);
// Marks the clicked cell and the rows, columns and cells of the other stages it came from or feeds.
void markRelated(const StageContext &cx, StageKind kind, int row, int col, StageMarks &marks);

// A gated MLP's activation of one gate value, as the forward computes it (SiLU, GELU with tanh or erf,
// ReLU): the core applies it inside its forward and exports no function for one number.
double mlpActivation(Activation a, double g);
// The `n` neurons of `layer`'s gated MLP most active over the text (largest |act(gate) · up| of any
// token), strongest first; every neuron, in order, when there are at most `n`; empty when the trace
// kept no MLP products.
std::vector<int> strongestNeurons(const ComputeSnapshot &s, int layer, int n);

// The attention settings a trace was computed with: the controls' for the word-vector models; a
// model folder's own arithmetic (softmax of q·k/√d_head, causal for GPT-2, padding as clicked); an
// encoder-decoder model's as its snapshot set them (T5: no scaling).
ComputeSettings effectiveSettings(const ComputeSnapshot &s);
// A number as the stages and explanations write it: four decimals, NaN, ±∞.
QString stageNumber(double v);

} // namespace attnviz::ui
