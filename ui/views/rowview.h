// SPDX-License-Identifier: GPL-3.0-or-later
// The selected query's row of weights as a bar chart over the keys (seed 001's "journey" row).
// Masked keys are hatched; a fully masked row says so instead of showing bars.
#pragma once

#include "views/deferredview.h"

#include "live/livetypes.h"

#include <QRectF>
#include <QWidget>

class QCustomPlot;
class QCPBars;
class QCPTextElement;
class QCPItemText;

namespace attnviz::ui {

class MaskedKeysLayer;

class RowView : public DeferredView {
    Q_OBJECT
public:
    explicit RowView(QWidget *parent = nullptr);

    void setSnapshot(SnapshotPtr snapshot) override;
    // The selection: the layer (clamped to the trace's), the head (-1: the average), the query.
    void setSelection(int layer, int head, int query) override;
    void setHeadDisplay(HeadDisplay display) override;

    QCustomPlot *plot() const override { return m_plot; }
    QString title() const;
    const QVector<double> &values() const { return m_values; }
    int query() const { return m_query; }
    // A masked key's hatched stub, in the plot's pixels (empty when the key is not masked).
    QRectF maskedBarRect(int key) const;
    // The least height the chart reads in, in its tightest layout (a short dock's: the title's
    // first line, three letters a key): the title, the key labels and four lines of bars, at the
    // current text size.
    int readableHeight() const;

protected:
    void changeEvent(QEvent *e) override; // the value labels follow the text size (presentation mode)

private:
    void rebuild() override;

    SnapshotPtr m_snapshot;

    int m_layer = 0; // the selected layer (the snapshot clamps it)
    int m_head = 0, m_query = 0;
    HeadDisplay m_display = HeadDisplay::One;
    QStringList m_labels;
    QVector<double> m_values;
    QCustomPlot *m_plot = nullptr;
    QString m_fullTitle;  // the query line, then the configuration's
    QString m_shownTitle; // what the title element was given: the query line alone on a short dock
    bool m_compact = false; // the last layout was a short dock's
    int m_compactMargins = 0; // the chart's height less its bars' in a short dock's layout (0: not laid out so yet)
    QCPTextElement *m_title = nullptr;
    QCPBars *m_bars = nullptr;
    MaskedKeysLayer *m_masked = nullptr; // the hatched bars of masked keys
    QCPItemText *m_message = nullptr;
    QList<QCPItemText *> m_valueLabels;
};

} // namespace attnviz::ui
