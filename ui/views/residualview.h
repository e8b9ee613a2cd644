// SPDX-License-Identifier: GPL-3.0-or-later
// The residual stream of a transformer stack, token by token and layer by layer: the norm of each
// token's vector and its cosine to the token's input vector (token vector + position), at the
// stack's input and after every block (two heatmaps, tokens x stages), and the selected token's
// two curves over the layers. Click a token row to select it.
#pragma once

#include "views/deferredview.h"

#include "live/livetypes.h"
#include "live/stackcompute.h"

#include <QWidget>

class QCustomPlot;
class QCPAxisRect;
class QCPColorMap;
class QCPColorScale;
class QCPGraph;
class QCPItemRect;
class QCPTextElement;

namespace attnviz::ui {

class ResidualView : public DeferredView {
    Q_OBJECT
public:
    explicit ResidualView(QWidget *parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    // The selection: the layer (clamped to the trace's), the head (-1: the average), the query.
    void setSelection(int layer, int head, int query) override;

    QCustomPlot *plot() const override { return m_plot; }
    QString title() const;
    // What is plotted: stage 0 = the stack's input, stage l + 1 = after block l.
    int stageCount() const { return m_stages; }
    double normAt(int stage, int token) const;
    double cosineAt(int stage, int token) const;
    // The selected token's curves, as plotted (one point per stage).
    QVector<double> selectedNorms() const;
    QVector<double> selectedCosines() const;
    int selectedToken() const { return m_query; }

protected:

private:
    void rebuild() override;
    void updateSelected();

    SnapshotPtr m_snapshot;

    int m_layer = 0; // the selected layer (the snapshot clamps it)
    int m_query = 0, m_stages = 0, m_tokens = 0;
    QStringList m_labels;
    ResidualMetrics m_metrics;
    QCustomPlot *m_plot = nullptr;
    QCPTextElement *m_title = nullptr;
    QString m_titleText; // the title before wrapping
    double m_titleShare = 0.2; // of the plot's height, at most, for the title's lines (else it elides)
    bool m_titleElided = false;
    QCPAxisRect *m_normRect = nullptr, *m_cosRect = nullptr, *m_lineRect = nullptr;
    QCPColorMap *m_normMap = nullptr, *m_cosMap = nullptr;
    QCPColorScale *m_normScale = nullptr, *m_cosScale = nullptr;
    QCPItemRect *m_normSel = nullptr, *m_cosSel = nullptr;
    QCPGraph *m_normLine = nullptr, *m_cosLine = nullptr;
};

} // namespace attnviz::ui
