// SPDX-License-Identifier: GPL-3.0-or-later
// The logit lens (core: attnviz/reads.h): a layers x positions grid, each cell the token the model
// would predict from the residual stream after that layer (through the final norm and the
// unembedding), coloured by its probability; hover: the top 5, the rank and probability of the token
// that actually follows, the entropy. Beside it, for the selected position, p(actual next) and the
// entropy layer by layer. The selected position's column is computed first, on a pool thread (it
// reads the snapshot's trace and the model's weights only), so that it never delays the keystroke's
// other views; the rest of the grid fills in chunks after typing pauses, a newer snapshot cancelling
// it. Click a cell to select its position. Checkpoints with a language-model head only
// (causal LMs; BERT through its MLM head, "actual" = the token itself). An edited model (the
// window's head ablations or a patch): the grid is the edited run's; for the selected position the
// clean model's lines (ComputeSnapshot::cleanTrace, its column computed on the pool as well) are
// drawn dotted beside the edited ones, and the hover of that column adds the clean model's top
// token and the differences edited minus clean. An encoder-decoder model's decoder (seq2seqreads.h):
// three rows a layer, the stream after self-attention, after cross-attention and after the MLP
// ("L2 self", "L2 cross", "L2 MLP"), the columns the target's positions.
#pragma once

#include "views/deferredview.h"

#include "live/livetypes.h"

#include "attnviz/reads.h"

#include <QPointer>

#include <atomic>
#include <memory>
#include <vector>

class QCustomPlot;
class QCPAxisRect;
class QCPColorMap;
class QCPColorScale;
class QCPGraph;
class QCPItemRect;
class QCPItemText;
class QCPTextElement;
class QTimer;

namespace attnviz::ui {

class LogitLensView : public DeferredView {
    Q_OBJECT
public:
    // Cells with their token written in them at most (more: colours only, the text on hover).
    static constexpr int kMaxTextCells = 640;

    explicit LogitLensView(QWidget *parent = nullptr);
    ~LogitLensView() override;

    // The selection (setSelection): the query is the position (-1: the last); layer and head change
    // nothing here.

    QCustomPlot *plot() const override { return m_plot; }
    QString title() const;
    // The whole grid computed here and now (an export; tests), not in the background.
    void completeNow();
    QStringList positionLabels() const { return m_labels; }
    int layerCount() const { return m_grid.layers; } // rows: an encoder-decoder model's 3 per layer
    // An encoder-decoder model's row names ("L0 self", "L0 cross", "L0 MLP", …); empty otherwise.
    QStringList rowNames() const { return m_rowNames; }
    int positionCount() const { return m_grid.positions; }
    int selectedPosition() const { return m_position; }
    const LensGrid &grid() const { return m_grid; }
    int filledPositions() const { return m_filled; }
    bool complete() const { return m_grid.positions > 0 && m_filled == m_grid.positions; }
    // The selected position's column is computed and drawn.
    bool selectedReady() const { return m_position >= 0 && m_have[size_t(m_position)]; }
    // What the map draws: the top token's probability per (layer, position); NaN: not computed yet.
    Mat<double> topProbabilities() const;
    // The hover text of a cell ("" when not computed).
    QString cellText(int layer, int position) const;
    // The two lines of the selected position, as plotted (one point per layer).
    QVector<double> actualLine() const;
    QVector<double> entropyLine() const;
    // An edited model with its clean trace: the clean model's column at the selected position (empty
    // until computed) and its two lines, as plotted.
    bool hasClean() const { return m_cleanPosition >= 0 && m_cleanPosition == m_position && !m_cleanColumn.empty(); }
    const std::vector<LensCell> &cleanColumn() const { return m_cleanColumn; }
    QVector<double> cleanActualLine() const;
    QVector<double> cleanEntropyLine() const;
    // Milliseconds the selected column took (the part a keystroke waits for); the whole grid.
    double columnMs() const { return m_columnMs; }
    double gridMs() const { return m_gridMs; }

    void setSnapshot(SnapshotPtr snapshot) override;
    void setSelection(int layer, int head, int query) override;

signals:
    // querySelected (View): a clicked cell's position
    void gridComplete(); // every cell of the current snapshot filled

private:
    void rebuild() override;
    void startGrid();
    void cancelGrid();
    void fill(int first, const std::vector<LensCell> &cells, int count); // cells: count positions x layers
    void showColumn();
    void showCleanColumn();           // the clean model's column at the selected position, on the pool
    void showWhy(const QString &why); // no grid: the title says why
    void drawCells(int first, int count);
    void updateSelected();
    void fitCellTexts();
    bool fitLineLabel(); // whether the label changed

    SnapshotPtr m_snapshot;
    int m_query = -1, m_position = -1;
    LensGrid m_grid;
    int m_filled = 0;
    int m_columnPending = -1; // the position whose column is being computed
    std::vector<LensCell> m_cleanColumn; // the clean model's, at m_cleanPosition
    int m_cleanPosition = -1, m_cleanPending = -1;
    std::vector<uint8_t> m_have; // per position: filled
    quint64 m_gen = 0;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    QTimer *m_start = nullptr; // the grid starts once typing pauses
    double m_columnMs = 0, m_gridMs = 0;
    QStringList m_labels;
    QStringList m_rowNames;
    QString m_titleText;
    QCustomPlot *m_plot = nullptr;
    QCPTextElement *m_title = nullptr;
    QCPAxisRect *m_gridRect = nullptr, *m_lineRect = nullptr;
    QCPColorMap *m_map = nullptr;
    QCPColorScale *m_scale = nullptr;
    QCPItemRect *m_sel = nullptr;
    QCPGraph *m_pLine = nullptr, *m_hLine = nullptr;
    QCPGraph *m_pClean = nullptr, *m_hClean = nullptr; // the clean model's, dotted
    std::vector<QCPItemText *> m_texts; // layer-major, when the grid is small enough
    std::vector<QString> m_cellTexts;   // what each would say uncut
};

} // namespace attnviz::ui
