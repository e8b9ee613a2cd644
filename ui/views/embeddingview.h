// SPDX-License-Identifier: GPL-3.0-or-later
// Contextual embeddings: the output rows (t x d, diverging colours) beside the input embeddings
// on the same colour scale, and how far attention moved each token: the norm of the change
// |out_i - in_i| and the cosine between out_i and in_i. Rows are the query tokens; the selected one
// is outlined, and narrow vectors show their numbers (embeddingnumbers.h).
#pragma once

#include "views/deferredview.h"

#include "live/livetypes.h"

#include <QWidget>

class QCustomPlot;
class QCPAxisRect;
class QCPColorMap;
class QCPColorScale;
class QCPTextElement;
class QCPBars;

namespace attnviz::ui {

class BarValuesOverlay;
class MatrixNumbersOverlay;

class EmbeddingView : public DeferredView {
    Q_OBJECT
public:
    explicit EmbeddingView(QWidget *parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    // The selection: the layer (clamped to the trace's), the head (-1: the average), the query.
    void setSelection(int layer, int head, int query) override;

    QCustomPlot *plot() const override { return m_plot; }
    QString title() const;
    // Per query token, as plotted.
    const QVector<double> &changeNorms() const { return m_norms; }
    const QVector<double> &cosines() const { return m_cosines; }

protected:

private:
    void rebuild() override;

    SnapshotPtr m_snapshot;

    int m_layer = 0; // the selected layer (the snapshot clamps it)
    int m_query = 0;
    QStringList m_labels;
    QVector<double> m_norms, m_cosines;
    QCustomPlot *m_plot = nullptr;
    QCPTextElement *m_title = nullptr;
    QCPAxisRect *m_inRect = nullptr, *m_outRect = nullptr, *m_normRect = nullptr, *m_cosRect = nullptr;
    QCPColorMap *m_inMap = nullptr, *m_outMap = nullptr;
    QCPColorScale *m_scale = nullptr;
    QCPBars *m_normBars = nullptr, *m_cosBars = nullptr, *m_normSel = nullptr, *m_cosSel = nullptr;
    MatrixNumbersOverlay *m_inNumbers = nullptr, *m_outNumbers = nullptr; // embeddingnumbers.h
    BarValuesOverlay *m_normValues = nullptr, *m_cosValues = nullptr;
};

} // namespace attnviz::ui
