// SPDX-License-Identifier: GPL-3.0-or-later
// The Compare tab: side A is the window's live session, side B a second session of its own (its
// sentence, controls and table). A's and B's weights share one colour scale; beside them the
// difference A − B on a symmetric diverging scale, or, when the shapes differ, the focus word's
// row and contextual embedding in each sentence with their cosine similarity. Two long texts of one
// length (their weights computed where a view looks) are drawn as pooled maps, the Weights tab's
// (AttentionTiles::pooled, off the GUI thread: LongTextMaps), each of the region its plot shows and
// refined as one zooms, down to single cells with their numbers (views/mapregion.h); their
// difference is that of A's and B's maps of the region the difference plot shows.
#pragma once

#include "teaching/comparison.h"
#include "views/deferredview.h"
#include "live/livetypes.h"

#include "attnviz/attentiontiles.h"

#include <QHash>
#include <QVector>

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QCPAxisRect;
class QCPBars;
class QCPColorMap;
class QCPColorScale;
class QCPItemText;
class QCPRange;
class QCPTextElement;
class QTimer;
class QLabel;
class QLineEdit;
class QPushButton;
class QScrollArea;
class QSplitter;
class QStackedWidget;
class QToolButton;

namespace attnviz::ui {

class CellOverlay;
class ComparePredictions;
class LongTextMaps;
class ControlPanel;
class PlotZoom;
class LiveSession;

class CompareView : public DeferredView {
    Q_OBJECT
public:
    // `sessionA` is the window's session (not owned); B's session is created and owned here.
    explicit CompareView(LiveSession *sessionA, QWidget *parent = nullptr);
    ~CompareView() override;

    LiveSession *sessionA() const { return m_sessionA; }
    LiveSession *sessionB() const { return m_sessionB; }
    ControlPanel *controlsB() const { return m_controlsB; }
    QLineEdit *sentenceEditB() const { return m_sentenceB; }
    QLineEdit *keySentenceEditB() const { return m_keySentenceB; }
    QComboBox *comparisonCombo() const { return m_combo; }

    // B's sentence, settings and table (a null table: B follows A's), the focus word, the
    // explanation and the side titles. A is the window's business (MainWindow::startComparison).
    void loadSpec(const ComparisonSpec &spec);
    void setSideB(const CompareSide &b);
    // B computes with A's model of its own (a folder opened in the window; null: word vectors), so
    // that two sentences or two layers compare on it. A model read from a folder keeps no state
    // outside the trace it writes (pretrained.h), so B's compute thread may share it with A's.
    void followModel(std::shared_ptr<Model> model, const ModelInfo *info);
    CompareSide sideA() const;
    CompareSide sideB() const;
    // Whether B was set (a comparison, a copy, an edit, a session) rather than waiting to copy A.
    bool hasSideB() const { return m_bSet; }
    void copyAToB();
    void swapSides();
    void setBTableFollowsA(bool follow);
    bool bTableFollowsA() const;
    void setFocusWord(const QString &word);
    QString explanation() const;

    // What is drawn, read back from the plots (tests, export).
    QCustomPlot *pairPlot() const { return m_pairPlot; }
    QCustomPlot *differencePlot() const { return m_diffPlot; }
    QCustomPlot *focusPlot() const { return m_focusPlot; }
    PlotZoom *pairZoom() const { return m_pairZoom; }
    PlotZoom *differenceZoom() const { return m_diffZoom; }
    QCPAxisRect *rectA() const { return m_rectA; }
    QCPAxisRect *rectB() const { return m_rectB; }
    SnapshotPtr shownA() const { return m_shownA; }
    SnapshotPtr shownB() const { return m_shownB; }
    // Both sides show their session's newest result (nothing computing, nothing deferred).
    bool isCurrent() const;
    int comparedHead() const { return m_head; } // -1: each side's head average
    double cellA(int query, int key) const;
    double cellB(int query, int key) const;
    double cellDifference(int query, int key) const;
    QCPRange rangeA() const;
    QCPRange rangeB() const;
    QCPRange differenceRange() const;
    double maxAbsDifference() const { return m_maxAbs; }
    bool showsDifference() const;
    // What A and B share (settings, and the sentence when it is one), above the plots.
    QString sharedCaption() const;
    QString titleA() const;
    QString titleB() const;
    QString differenceTitle() const;
    QString messageA() const;
    QString messageB() const;
    // Why no cell-by-cell difference is drawn (shapes differ); empty when one is.
    QString noDifferenceReason() const;
    // Shapes differ: the focus word's row of weights and contextual embedding in each sentence.
    QString focusTitle() const;
    int focusIndexA() const { return m_focusA; }
    int focusIndexB() const { return m_focusB; }
    QVector<double> focusRowA() const;
    QVector<double> focusRowB() const;
    QVector<double> focusEmbeddingA() const;
    QVector<double> focusEmbeddingB() const;
    double focusCosine() const { return m_cosine; } // NaN when not shown
    // The width in which A's and B's maps and, beside them, the focus word's rows side by side (or
    // the difference map) each keep room to read.
    int roomyWidth() const;
    // Narrower than roomyWidth(), the tab shows the maps or the panel beside them (the difference or
    // the focus word), one at a time; this button switches (hidden where both fit).
    QToolButton *panelToggle() const { return m_panelToggle; }

    // Long texts: each side's pooled map of the region its plot shows (the whole matrix unzoomed;
    // at most kPooledCells a side, single cells where the region is that small), each cell the max or
    // the mean of the weights it covers (the Weights tab's switch), and A's map minus B's over the
    // region the difference plot shows. Maps follow a zoom or pan once it stops (40 ms).
    static constexpr int kPooledCells = 256;
    void setPooling(Pooling pooling);
    Pooling pooling() const { return m_pooling; }
    bool showsPooled() const { return m_pooledShown; }
    bool mapsPending() const;
    const Mat<float> &pooledA() const { return m_pooledA; }
    const Mat<float> &pooledB() const { return m_pooledB; }
    const Mat<float> &pooledDifference() const { return m_pooledDiff; }
    // The regions those maps cover (x keys, y queries, in cells).
    QRect pooledRegionA() const;
    QRect pooledRegionB() const;
    QRect differenceRegion() const;

signals:
    // The combo asks for a one-click comparison (the window sets A, then calls loadSpec).
    void comparisonRequested(const attnviz::ui::ComparisonSpec &spec);
    // Swap A/B: A is to become `side` (the window applies it through its own setters).
    void sideARequested(const attnviz::ui::CompareSide &side);
    // After the plots were rebuilt from the sides' snapshots (their replots are queued).
    void updated();
    // Shown narrower than roomyWidth(): the window may give the tab a dock's width (the Predictions,
    // whose next tokens the tab lists for both sides under its plots).
    void needsRoom();

protected:
    bool event(QEvent *e) override;
    bool eventFilter(QObject *watched, QEvent *e) override;

private:
    void rebuild() override;
    void rebuildPair();
    void rebuildDifference();
    // What both sides' configurations share (describeConfig's parts but the head, [0]), each side's
    // own parts, and the caption above both saying the shared ones once, with the sentence where
    // both read the same one.
    static QStringList sharedParts(const QStringList &partsA, const QStringList &partsB);
    static QStringList ownParts(QStringList parts, const QStringList &shared);
    void showShared(const QStringList &shared, bool sameSentence, const QString &sentence);
    void showDifferencePanel();
    // Sets the pair's column stretch so that A's and B's maps are equally wide; whether it changed.
    bool equalMapWidths();
    void rebuildFocus();
    void fitExplanation();
    // Both sides long texts of one length whose layers can be read: the maps of the regions shown
    // asked for (those not asked already; drawn by drawPooledPair and drawPooledDifference once each
    // pair is back); false otherwise.
    bool rebuildPooled();
    void drawPooledPair();
    void drawPooledDifference();
    void applyToA(const CompareSide &side);
    void syncTable();
    void useTableB(std::shared_ptr<const EmbeddingTable> t); // B gets its own table, the rest of B stays
    void updateStatusB();
    void showPanel(QWidget *panel); // the difference or the focus word, with a splitter share to suit
    void fitPanels();               // both side by side, or one at a time where the tab is narrow
    QString sideTitle(bool a) const;
    void setTitle(QCPTextElement *title, const QString &text); // kept whole; shown wrapped to the plot's width
    void wrapTitle(QCPTextElement *title);

    LiveSession *m_sessionA = nullptr;
    LiveSession *m_sessionB = nullptr;
    ComparisonSpec m_spec; // the comparison last loaded: its titles hold while a side matches it
    QString m_focusWord;
    bool m_followTable = true;
    bool m_bSet = false; // B was set (a spec, a copy, an edit): no automatic copy of A
    QString m_tableDescriptionB;
    QString m_backendB = QStringLiteral("cpu");

    SnapshotPtr m_shownA, m_shownB;
    int m_layerA = 0; // A's selected layer when last drawn (B shows its own session's)
    int m_head = 0;
    double m_maxAbs = 0.0;
    WeightMatrix<float> m_diff;
    LongTextMaps *m_mapsA = nullptr, *m_mapsB = nullptr;   // each side's map of its plot's region
    LongTextMaps *m_mapsDA = nullptr, *m_mapsDB = nullptr; // A's and B's of the difference plot's
    Mat<float> m_pooledA, m_pooledB, m_pooledDA, m_pooledDB, m_pooledDiff;
    bool m_gotA = false, m_gotB = false, m_gotDA = false, m_gotDB = false, m_pooledShown = false;
    QTimer *m_poolTimer = nullptr; // a zoom or pan stopped: the maps of the new regions
    Pooling m_pooling = Pooling::Max;
    int m_focusA = -1, m_focusB = -1;
    double m_cosine = 0.0;
    QHash<QCPTextElement *, QString> m_rawTitles;
    QStringList m_labelsQA, m_labelsKA, m_labelsQB, m_labelsKB, m_labelsFocusA, m_labelsFocusB;

    QComboBox *m_combo = nullptr;
    QPushButton *m_swap = nullptr, *m_copy = nullptr;
    QToolButton *m_showControls = nullptr;
    QToolButton *m_panelToggle = nullptr;
    QLabel *m_explanation = nullptr, *m_statusB = nullptr, *m_reason = nullptr;
    QLabel *m_shared = nullptr; // what A and B share, said once above both (their titles say what differs); one line
    QLineEdit *m_sentenceB = nullptr, *m_keySentenceB = nullptr;
    QCheckBox *m_followCheck = nullptr;
    ControlPanel *m_controlsB = nullptr;
    QScrollArea *m_controlsScroll = nullptr;
    QScrollArea *m_explanationScroll = nullptr; // the explanation, at most an eighth of the tab's height
    QStackedWidget *m_right = nullptr;
    ComparePredictions *m_predictions = nullptr; // the next tokens after each side's last token
    QSplitter *m_split = nullptr;

    QCustomPlot *m_pairPlot = nullptr;
    PlotZoom *m_pairZoom = nullptr, *m_diffZoom = nullptr;
    QSize m_homeA{1, 1}, m_homeB{1, 1}, m_homeDiff{1, 1}; // the whole matrices (columns × rows)
    QCPAxisRect *m_rectA = nullptr, *m_rectB = nullptr;
    QCPColorMap *m_mapA = nullptr, *m_mapB = nullptr;
    QCPColorScale *m_scale = nullptr;
    QCPTextElement *m_titleA = nullptr, *m_titleB = nullptr;
    QCPItemText *m_messageA = nullptr, *m_messageB = nullptr;
    CellOverlay *m_overlayA = nullptr, *m_overlayB = nullptr;

    QCustomPlot *m_diffPlot = nullptr;
    QCPColorMap *m_diffMap = nullptr;
    QCPColorScale *m_diffScale = nullptr;
    QCPTextElement *m_diffTitle = nullptr;
    QCPItemText *m_diffMessage = nullptr;
    CellOverlay *m_diffOverlay = nullptr;

    QCustomPlot *m_focusPlot = nullptr;
    QCPAxisRect *m_rowRectA = nullptr, *m_rowRectB = nullptr, *m_embRect = nullptr;
    QCPBars *m_rowBarsA = nullptr, *m_rowBarsB = nullptr, *m_embBarsA = nullptr, *m_embBarsB = nullptr;
    QCPTextElement *m_focusTitle = nullptr;
};

} // namespace attnviz::ui
