// SPDX-License-Identifier: GPL-3.0-or-later
// The lines view (BertViz "head view" style): query tokens on the left, key tokens on the right,
// one line per (query, key) whose opacity is the weight; one colour per head, hover isolates a token.
// A long text (a trace without t x t weights, live/longtext.h) draws the selected query's row only,
// read through AttentionTiles: the query on the left, on the right the keys it weighs most (the top
// kLongTextKeys of each head shown, in text order), and the view says so.
#pragma once

#include "views/deferredview.h"

#include "live/livetypes.h"

#include <QColor>
#include <QFont>
#include <QRect>
#include <QRectF>
#include <QStringList>

#include <set>
#include <vector>

class QCheckBox;
class QCustomPlot;
class QCPTextElement;
class QDoubleSpinBox;
class QMouseEvent;
class QCPPainter;
class QScrollArea;

namespace attnviz::ui {

class LinesCanvas;

class LinesView : public DeferredView {
    Q_OBJECT
public:
    // At most this many tokens per side are drawn; beyond, the view says which ones it shows
    // (the first ones, or a window around the selected query).
    static constexpr int kMaxTokensPerSide = 150;
    // Lines of other tokens while one token is hovered: their opacity times this.
    static constexpr double kFade = 0.04;
    // At most this many lines are drawn, the most opaque ones (the view says when it drops
    // some): a repaint stays in tens of milliseconds. A hovered token shows all of its lines.
    static constexpr int kMaxDrawnLines = 4000;
    // A long text: the keys of each head shown that the selected query weighs most.
    static constexpr int kLongTextKeys = 20;

    enum class Side { Query, Key };

    // One drawn line. head -1 = the head average.
    struct Line {
        int query = 0, key = 0, head = 0;
        double weight = 0; // the attention weight
        double alpha = 0;  // the weight's opacity, 0..1 (drawn times opacityGain())
        QColor color;      // without alpha: the head's colour at 4.5 : 1 on the background
    };

    explicit LinesView(QWidget *parent = nullptr);
    ~LinesView() override;

    void setSnapshot(SnapshotPtr snapshot) override;
    // head -1 = the average over heads (LiveSession::shownHead()).
    // The selection: the layer (clamped to the trace's), the head (-1: the average), the query.
    void setSelection(int layer, int head, int query) override;
    void setHeadDisplay(HeadDisplay display) override;

    // Lines fainter than this are not drawn (default 0.01): the opacity, i.e. the weight, or the
    // weight over its row's maximum when rows are scaled.
    void setThreshold(double threshold);
    double threshold() const { return m_threshold; }
    // alpha = w / (largest weight of the query's row) instead of alpha = w.
    void setScaleRows(bool on);
    bool scaleRows() const { return m_scaleRows; }
    // All-heads display: a head switched off by its chip draws no lines.
    void setHeadEnabled(int head, bool on);
    bool headEnabled(int head) const { return !m_hiddenHeads.count(head); }

    // Hover by hand (the mouse does the same); index -1 clears.
    void setHover(Side side, int index);
    void clearHover() { setHover(Side::Query, -1); }

    QCustomPlot *plot() const override { return m_plot; }
    QString title() const; // as one line
    // Every line drawn, with the opacity drawn (hover fading included), for tests and export. Above
    // a few thousand lines the painter also leaves out those fainter than 8/255 (invisible there).
    std::vector<Line> lines() const;
    // The factor the lines' opacity is drawn with: 1 / the largest alpha of the lines shown, so that
    // the strongest line is opaque (on a dark background a line of weight 0.5 was ~2 : 1 on black).
    double opacityGain() const { return m_gain; }
    // The colour a line shows on the plot's background (its colour at alpha × opacityGain()).
    QColor drawnColor(const Line &line) const;
    // The weights the lines show: one matrix for one head or the average, or one per head shown.
    std::vector<const WeightMatrix<float> *> shownMatrices() const;
    // A token label's rectangle in this widget's coordinates (empty when not shown).
    QRect tokenRect(Side side, int index) const;
    // A head chip in this widget's coordinates; head -1 = the "average" chip, -2 = the "all" chip.
    QRect headChipRect(int head) const;
    // The first shown query / key index and how many are shown on each side.
    int firstQuery() const { return m_q0; }
    int firstKey() const { return m_k0; }
    int shownQueries() const { return m_nq; }
    int shownKeys() const { return m_nk; }
    // A long text's keys drawn, in text order (empty otherwise: the keys are firstKey() on).
    const std::vector<int> &longTextKeys() const { return m_longKeys; }
    // A long text: the selected query's weights as read for the lines, one row per head shown (the
    // heads in shownHeads()'s order); empty otherwise.
    const std::vector<std::vector<float>> &longTextRows() const { return m_longRows; }
    const std::vector<int> &shownHeads() const { return m_longHeads; }

signals:
    // The threshold or the row scaling changed (a session keeps them).
    void optionsChanged();

protected:
    bool event(QEvent *e) override;
    bool eventFilter(QObject *watched, QEvent *e) override;

private:
    friend class LinesCanvas;

    // Where everything goes inside the drawing rectangle (the plot's axis rect).
    struct Geometry {
        QRectF area;
        QFont font, bold;
        double rowH = 0, labelW = 0, xLeft = 0, xRight = 0, yRows = 0;
        QRectF queryHeader, keyHeader;
        std::vector<std::pair<int, QRectF>> chips; // head (-1 average, -2 all) -> rectangle
    };

    void rebuild() override;
    void computeLines();
    void computeMatrixLines(); // a trace that keeps its weights: every line of the tokens shown
    void capLines();
    void updateTitle();
    void updateHeight();
    Geometry geometry(const QRectF &area) const;
    void paint(QCPPainter *p, const QRectF &area);
    QRectF labelRect(const Geometry &g, Side side, int index) const;
    bool hitToken(const QPoint &plotPos, Side &side, int &index) const;
    int hitChip(const QPoint &plotPos) const; // head, -1, -2, or -3 for none
    void onMove(QMouseEvent *e);
    void onRelease(QMouseEvent *e);
    QString tokenTip(Side side, int index) const;
    bool fullyMasked(int query) const;
    bool padded(int key) const;

    SnapshotPtr m_snapshot;

    int m_layer = 0; // the selected layer (the snapshot clamps it)
    int m_head = 0, m_query = 0;
    HeadDisplay m_display = HeadDisplay::One;
    double m_threshold = 0.01;
    bool m_scaleRows = false;
    double m_gain = 1;
    std::set<int> m_hiddenHeads;
    Side m_hoverSide = Side::Query;
    int m_hover = -1;
    int m_q0 = 0, m_k0 = 0, m_nq = 0, m_nk = 0;
    // A long text: the keys drawn (text order), each head's row read, and those heads (-1: the mean).
    std::vector<int> m_longKeys;
    std::vector<std::vector<float>> m_longRows;
    std::vector<int> m_longHeads;
    int keyAt(int row) const { return m_longKeys.empty() ? m_k0 + row : m_longKeys[size_t(row)]; }
    int keyRow(int key) const; // -1: not drawn
    QString keyLabel(int key) const;
    bool longTextRow() const;   // the snapshot is a long text's: one query's row drawn
    void computeLongLines();
    QStringList m_queryLabels, m_keyLabels;
    std::vector<Line> m_allLines; // every line above the threshold, before hover fading
    std::vector<Line> m_lines;    // the ones drawn: the most opaque kMaxDrawnLines of them
    QScrollArea *m_scroll = nullptr;
    QCustomPlot *m_plot = nullptr;
    QCPTextElement *m_title = nullptr;
    LinesCanvas *m_canvas = nullptr;
    QCheckBox *m_scaleBox = nullptr;
    QDoubleSpinBox *m_thresholdSpin = nullptr;
};

} // namespace attnviz::ui
