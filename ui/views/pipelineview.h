// SPDX-License-Identifier: GPL-3.0-or-later
// The step-by-step pipeline: X -> Q, K, V -> QKᵀ -> scaled -> masked -> weights -> ·V -> concatenated
// heads -> W_o (and a gated MLP's gate, activation, up and product), one heatmap per stage with its
// formula, shape and caption. A click on a cell explains how that number was computed; the stages can
// be revealed one at a time for teaching.
#pragma once

#include "views/deferredview.h"

#include "live/livetypes.h"

#include <QFont>
#include <QPoint>
#include <QRect>
#include <QString>
#include <QVector>

#include <vector>

class QCustomPlot;
class QLabel;
class QScrollArea;
class QGridLayout;
class QTextBrowser;
class QToolButton;
class QPushButton;

namespace attnviz::ui {

class PipelineStage;
struct StageContext;

class PipelineView : public DeferredView {
    Q_OBJECT
public:
    // What a stage shows. KeyInput exists only for cross-attention; QRotated and KRotated only for
    // models whose q and k are turned by rotary positions (or normalized per head) after the
    // projection: Q and K then show them as projected, these two as the scores read them. The four
    // Mlp stages only for a model with a gated MLP (SwiGLU, GeGLU), after the attention's: the gate
    // x·W_gateᵀ, its activation, the up projection x·W_upᵀ and the product the MLP passes on.
    // PositionBias only for T5's encoder and decoder self-attention (and a T5 encoder alone): the
    // learned relative position bias added to the scaled scores before the mask.
    enum class StageKind {
        Input, KeyInput, Q, K, V, QRotated, KRotated, RawScores, Scaled, PositionBias, Masked, Weights, Context, Concat, Output,
        MlpGate, MlpActivated, MlpUp, MlpProduct
    };

    // Beyond this many cells per side a stage is block-averaged (clicks still explain exact values).
    static constexpr int kMaxDisplayCells = 256;
    // The score stages are derived here from Q and K (the live computation keeps no scores); beyond
    // this many cells per head they are not derived and the stage says so.
    // A model's vectors wider than this (64-d heads, 768-d streams) show their first columns and a
    // "… N dims" marker on the axis; clicks still explain every number.
    static constexpr int kMaxShownDims = 16;
    static constexpr qint64 kMaxDerivedCells = qint64(1024) * 1024;
    // The MLP stages show this many of the d_ff neurons (columns): the most active over the text,
    // strongest first, the same ones in all four stages; fewer neurons all show.
    static constexpr int kMaxShownNeurons = kMaxShownDims;

    explicit PipelineView(QWidget *parent = nullptr);
    ~PipelineView() override;

    void setSnapshot(SnapshotPtr snapshot) override;
    // head -1 = the average of heads: the per-head stages then show head 0 (the view says so).
    // The selection: the layer (clamped to the trace's), the head (-1: the average), the query.
    void setSelection(int layer, int head, int query) override;

    int stageCount() const { return int(m_stages.size()); }
    // -1 while every stage shows.
    int currentStage() const { return m_current; }
    // Reveals stages 0..stage and scrolls the stage's header to the top of the view; -1 shows all
    // (the last stage is a step of its own: the step after it shows all).
    void setCurrentStage(int stage);

    int indexOf(StageKind kind) const; // -1 when this configuration has no such stage
    StageKind stageKind(int stage) const;
    QString stageName(int stage) const;    // "Raw scores", for export file names and the step bar
    QString stageTitle(int stage) const;   // formula and shape, as drawn above the stage's heatmap
    QString stageCaption(int stage) const; // one line in plain words
    // The configuration line an exported stage adds to its title (README: exports carry it).
    QString stageFigureTitle(int stage) const;
    QString stageMessage(int stage) const; // why the stage has no heatmap ("" when it has one)
    bool stageRevealed(int stage) const;
    QCustomPlot *stagePlot(int stage) const;
    // Stage i's numbers as computed, every row and column (the heatmap may average blocks and show
    // the first dimensions only): null where it has none (stageMessage says why).
    const Mat<float> *stageMatrix(int stage) const;
    // Its rows' and columns' labels: tokens, or "d0", "d1", … where the columns are dimensions
    // (an MLP stage's: the neurons shown, "n17").
    QStringList stageRowLabels(int stage) const;
    QStringList stageColumnLabels(int stage) const;
    int shownHead() const; // the head the per-head stages show
    // The neurons the MLP stages' columns are (column c shows neuron shownNeurons()[c]); empty
    // without them.
    const std::vector<int> &shownNeurons() const { return m_neurons; }

    // Explains how cell (row, col) of a stage was computed (what a click does) and highlights it
    // and the rows/columns it came from in the other stages. Returns false outside the stage.
    bool explainCell(int stage, int row, int col);
    // What a lesson opens on: explainCell, the stages up to this one revealed, and the stage
    // scrolled into view (kept there when the layout changes, until the next snapshot or click).
    bool focusCell(int stage, int row, int col);
    // The stage kept in view by focusCell (-1: none).
    int focusedStage() const { return m_focus; }
    QString explanation() const;
    QTextBrowser *explanationBrowser() const { return m_explain; }
    // Cells outlined after the last click, per stage: (row0, col0, row1, col1) inclusive.
    QVector<QRect> highlights(int stage) const;
    // The cell under a point of a stage's plot (plot coordinates), for clicks.
    bool cellAt(int stage, const QPoint &plotPos, int &row, int &col) const;
    QPoint cellCenter(int stage, int row, int col) const; // plot coordinates

public slots:
    void nextStage();
    void previousStage();
    void showAllStages();

signals:
    void stageChanged(int stage);

protected:
    void keyPressEvent(QKeyEvent *e) override;

    void changeEvent(QEvent *e) override; // the head note's colour follows the theme
    bool eventFilter(QObject *o, QEvent *e) override;

private:
    void rebuild() override;
    void scrollToStage(int stage);
    // The explanation panel on stage i's name and caption (a step to it; a click explains a cell).
    void introduceStage(int i);
    static QFont explanationMono(); // the explanation's fixed-width font
    void styleHeadNote(); // orange, bold, at WCAG AA (4.5 : 1) on the window's background
    void buildStages();
    StageContext context() const; // what the stage table's functions read
    void fillStage(PipelineStage &st);
    void relayout();
    void applyReveal();
    void clearHighlights();
    void highlightRows(StageKind kind, int r0, int r1);
    void highlightCols(StageKind kind, int c0, int c1);
    void highlightCell(StageKind kind, int row, int col);
    PipelineStage *stage(StageKind kind) const;

    SnapshotPtr m_snapshot; // the latest

    int m_layer = 0; // the selected layer (the snapshot clamps it)
    SnapshotPtr m_shown;    // what the stages show (kept alive: they point into it)
    int m_head = 0;
    int m_current = -1;
    int m_explained = -1; // the stage the explanation panel speaks of
    int m_focus = -1; // focusCell's stage
    // focusCell's cell, and the layer and head it was asked on: the same snapshot shown again (a new
    // theme or text size, presentation mode) keeps it (it was lost when presenting a lesson)
    int m_focusRow = 0, m_focusCol = 0, m_focusLayer = 0, m_focusHead = 0;
    void keepFocusInView();
    int m_columns = 0;
    double m_scale = 1.0;
    // derived per shown head (empty when not derived)
    Mat<float> m_raw, m_scaled, m_masked;
    Mat<float> m_bias; // T5's relative position bias of the shown head (its scores less the scaled q·k)
    bool m_scoresDerived = false;
    std::vector<int> m_neurons; // the MLP stages' columns: neuron indices, strongest first
    QStringList m_queryLabels, m_keyLabels, m_neuronLabels;
    QVector<PipelineStage *> m_stages;

    QLabel *m_stepLabel = nullptr, *m_headNote = nullptr;
    QToolButton *m_prev = nullptr, *m_next = nullptr;
    QPushButton *m_all = nullptr, *m_first = nullptr;
    QScrollArea *m_scroll = nullptr;
    QWidget *m_gridHost = nullptr;
    QGridLayout *m_grid = nullptr;
    QTextBrowser *m_explain = nullptr;
};

} // namespace attnviz::ui
