// SPDX-License-Identifier: GPL-3.0-or-later
// The layers × heads grid of a real model (BertViz's model view): one thumbnail of the
// weights per (layer, head) with that head's role scores (attnviz/headroles.h) under it —
// previous-token, first-token ("attention sink"), same-token and self (the diagonal: mean over
// queries i >= 1 of A[i][i]) on the typed text, and induction,
// measured once per model on a repeated random-token sequence by the compute thread (the snapshot
// carries it). The heads can be sorted by one score, highest first, and those below a threshold
// hidden; clicking a thumbnail emits headOpened(layer, head) (the window selects them), and its
// right-click menu ablates or restores the head (views/headablationmenu.h); an ablated head is
// crossed out and labelled (dashed while the clean model is shown). Path patching from the grid: drag
// a sender head onto a receiver head with Shift held, or choose "Patch path from here…" on the sender's
// menu and then click the receiver; either asks for the path sweep into that receiver
// (pathPatchRequested; the window opens the Patching tab on it). The head under the pointer, and the
// one whose menu opens, are said (headPointed): the window gets that head's ablation ready.
// Given a norm-weighted snapshot (views/normweighting.h) the thumbnails draw ||a v W_O|| on one
// shared scale and the text's scores are taken on each query's shares of it.
// A new snapshot makes again only the thumbnails of heads whose weights changed (an ablation changes
// the layers after its own) and repaints only the cells that changed.
// In layer order the heads of a layer fit the view's width (8–16 heads at 1400 px): narrower
// thumbnails with their scores one a line; the selected head is scrolled into view.
// A reading chooser (attnviz/headroles.h: previous, first, same, self, sink mass, recent mass,
// entropy, span mass over a span of tokens set in the range fields) paints each thumbnail as that
// reading's value instead of the weights. A long text (a trace without t x t weights, read through
// AttentionTiles) has no weight thumbnails: it shows a reading (sink mass until another is chosen)
// and the text's scores, computed on a thread of the view's (the newest request wins; the layers
// read and Cancel shown while it takes a moment, stopped while the window computes a new trace);
// norm-weighted, the reading and the scores are taken on each query's shares of ||a v W_O|| as on a
// short text (ReadingOptions::normWeighted: the tiles' key weights, each row divided by its sum).
// The needle probe's retrieval scores (attnviz/needleprobe.h, which the window runs: "Needle probe…")
// are one more reading, chosen when they come, with the needle's tokens set as the span; they stay for
// the model they were measured on. "Use selection as span" sets the span to the tokens selected in the
// chips or the text.
// Scores over a corpus (headroles.h corpusHeadScores, which the window computes: "Over a corpus…")
// take the place of the text's previous, first, same and self scores, for the model they were
// measured on, with each score's spread over the prompts on hover; "This text" gives the text's back.
// In a narrow tab the rows of controls wrap onto more lines (controls/flowlayout.h), and the note
// scrolls with the grid, above it, so that neither is cut.
#pragma once

#include "views/deferredview.h"

#include "live/livetypes.h"

#include "attnviz/headroles.h"
#include "attnviz/needleprobe.h"

#include <QImage>
#include <QPair>
#include <QVector>

#include <array>
#include <atomic>
#include <memory>

class QAction;
class QCPColorGradient;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QScrollArea;
class QSpinBox;
class QThreadPool;

namespace attnviz::ui {

class HeadRolesCanvas;

class HeadRolesView : public DeferredView {
    Q_OBJECT
public:
    enum class Role { PreviousToken, FirstToken, SameToken, Induction, Self };
    static constexpr int kRoles = 5;
    // Thumbnails are block-averaged to at most this many cells per side.
    static constexpr int kMaxCells = 48;

    explicit HeadRolesView(QWidget *parent = nullptr);
    ~HeadRolesView() override; // the readings computing stop (the pool waits for them)

    void setSnapshot(SnapshotPtr snapshot) override;
    void setSelection(int layer, int head, int query) override;

    // Sorting: none (layers down, heads across) or by one role, highest first; heads whose score
    // is below `minimum` (or not defined) are hidden while sorting.
    void setSortRole(int role); // -1: layer and head order
    int sortRole() const { return m_sort; }
    void setMinimum(double minimum);

    int layerCount() const { return m_layers; }
    int headCount() const { return m_heads; }
    // "H5", or "H5 · kv 1" for a grouped-query model (which key/value head it reads): the column
    // headers in layer order, the names above sorted thumbnails
    QString headName(int head) const;
    // A head's score for a role (NaN where it is not defined or not measured yet).
    double score(Role role, int layer, int head) const;
    static QString roleName(Role role);
    // The heads shown, in the order shown.
    QVector<QPair<int, int>> shownOrder() const { return m_order; }
    // A thumbnail's rectangle in the canvas (empty when hidden), and the canvas, for clicks.
    QRect thumbnailRect(int layer, int head) const;
    QWidget *canvas() const;
    // The right-click menu's entries for thumbnail (layer, head) (views/headablationmenu.h).
    QList<QAction *> headActions(int layer, int head, QObject *parent);
    // The thumbnails drawn crossed out: the snapshot's ablated heads that are shown.
    int ablationMarks() const;
    QString note() const; // the line above the grid (what the scores mean, induction's state)
    // The sender chosen by "Patch path from here…", waiting for the receiver's click ((-1, -1): none).
    QPair<int, int> pendingPathSender() const { return m_pathSender; }
    // The head whose thumbnail holds `pos` (a canvas point): (-1, -1) where none does.
    QPair<int, int> headAt(const QPoint &pos) const;
    // The top of the thumbnails' shared colour scale: 1 for weights, the largest cell when norm-weighted.
    double thumbnailScale() const { return m_thumbScale; }
    // The reading after HeadReading's: the needle probe's retrieval score (Wu et al. 2024).
    static constexpr int kRetrieval = int(HeadReading::SpanMass) + 1;
    // What the thumbnails show: the weights (-1; short texts only) or a reading (int(HeadReading), or
    // kRetrieval once a probe has run).
    void setReading(int reading);
    int reading() const { return m_reading; }
    // The reading drawn: the chosen one, sink mass on a long text where the weights were chosen; -1: weights.
    int shownReading() const;
    static QString readingName(int reading);
    // The keys [begin, end) whose span mass is read (begin >= end: none).
    void setSpan(int begin, int end);
    // The tokens selected in the chips or the editor ((-1, -1): none): "Use selection as span" sets
    // them as the span and shows the span mass.
    void setSelectedTokens(int begin, int end);
    QPair<int, int> selectedTokens() const { return m_selected; }
    void useSelectionAsSpan();
    QPair<int, int> span() const { return {m_spanBegin, m_spanEnd}; }
    // A head's value of the reading drawn (NaN where not defined, not yet computed, or weights drawn).
    double readingValue(int layer, int head) const;
    // Whether a long text's scores are being computed on the pool.
    bool computing() const { return m_computing; }
    // A long text's readings, norm-weighted especially (every row of every head summed: minutes at
    // 32k tokens), show their layers read in a progress bar beside the note (after a moment) with a
    // Cancel button; cancelled, the layers read stay drawn, the rest grey, and the button computes
    // them again. The window computes a new trace (`busy`): the readings in flight stop (the core's
    // pool is the prefill's) and none start until it ends; ended without a new snapshot (its compute
    // cancelled), the readings start again.
    void setTraceComputing(bool busy);
    // The long text's readings were cancelled: `layersRead` of the layers hold theirs.
    bool readingsStopped() const { return m_stopped; }
    int layersRead() const { return m_layersRead; }
    // The one thread the readings run on, one job after another: a job of minutes holds none of the
    // global pool's threads (Qt's image conversions and the other views' maps use them), and a
    // newer job waits for the one stopping.
    QThreadPool *readingsPool() const { return m_readingsPool; }
    // The weights' thumbnails made since the view was: a head whose weights are bit for bit those its
    // thumbnail was made from keeps it.
    int thumbnailsRendered() const { return m_thumbsRendered; }
    // The cells (thumbnail, mark, scores) the canvas drew in its last paint: a change (an ablation, a
    // selection) repaints only the cells that draw otherwise, the whole canvas where its layout changed.
    int cellsPainted() const;

    // A needle probe's result measured on `model`: shown as the retrieval reading, its needle's tokens
    // set as the span once a snapshot of the probe's text comes; null: none (the reading disabled).
    void setRetrieval(std::shared_ptr<const NeedleProbe> probe, const Model *model);
    const NeedleProbe *retrieval() const { return m_retrieval.get(); }

    // Scores over a corpus of prompts measured on `model`, named `source` in the note; null: the
    // text's scores again. A snapshot of another model drops them.
    void setCorpus(std::shared_ptr<const CorpusHeadScores> scores, const Model *model, const QString &source);
    bool showsCorpus() const { return bool(m_corpus); }
    // (layer, head)'s corpus scores in words: mean, spread and prompts for each ("" without a corpus).
    QString corpusTip(int layer, int head) const;

signals:
    // "Needle probe…": the window asks for the probe's needle, question and haystack and runs it.
    void needleRequested();
    // "Over a corpus…": the window asks for a file of prompts and computes its scores.
    void corpusRequested();
    // Path patching from (senderLayer, senderHead) into (receiverLayer, receiverHead), asked on the grid.
    void pathPatchRequested(int senderLayer, int senderHead, int receiverLayer, int receiverHead);
    // The span's keys changed ([begin, end); begin >= end: none); `needle`: they are the needle probe's.
    void spanChanged(int begin, int end, bool needle);
    // The pointer entered head (layer, head)'s thumbnail ((-1, -1): it left the thumbnails), or
    // (`menu`) opened its right-click menu: the window speculates on ablating it (HeadAblations::point).
    void headPointed(int layer, int head, bool menu);

protected:
    void resizeEvent(QResizeEvent *e) override;
    void keyPressEvent(QKeyEvent *e) override; // Esc: no sender waits for its receiver
    void hideEvent(QHideEvent *e) override;    // the thumbnails' trace let go (see m_thumbsOf)

private:
    friend class HeadRolesCanvas;
    void rebuild() override;
    // spanChanged where the span (or whether it is the needle's) differs from the one last said.
    void announceSpan();
    void reorder();
    // A long text's scores (the roles where not yet computed for this trace, and the reading) on the pool.
    void computeLong();
    // A long text's readings still computing: not shown when they come, and stopped between layers.
    void dropLongReadings();
    // The thumbnails as the reading's colours, and the note.
    void paintReading();
    // The chooser shows the reading drawn (the weights' entry disabled on a long text).
    void showReadingChoice();
    QString readingNote() const;
    // Why induction is "–" where a layer's sliding window cannot see the probe's first copy ("": none).
    QString inductionNote() const;
    // Scrolls the selected head's thumbnail into view (a lesson or a click names it).
    void showSelected();
    // The path from the sender to the head released or clicked on: asked for, or refused in the note.
    void pathTo(int senderLayer, int senderHead, int layer, int head);
    QPair<int, int> m_pathSender{-1, -1}, m_dragSender{-1, -1};
    QPair<int, int> m_pointed{-1, -1}; // the thumbnail under the pointer, as headPointed said it
    QString m_pathNote; // said above the grid while a sender waits or after a refusal
    std::shared_ptr<const CorpusHeadScores> m_corpus; // shown instead of the text's scores; null: none
    const Model *m_corpusModel = nullptr;
    QString m_corpusSource;
    QPushButton *m_corpusButton = nullptr;
    std::shared_ptr<const NeedleProbe> m_retrieval; // the retrieval reading's; null: none
    const Model *m_retrievalModel = nullptr;
    QPair<int, int> m_pendingSpan{-1, -1}; // the needle's tokens, set as the span when a text that long comes
    QPair<int, int> m_selected{-1, -1};    // the tokens selected in the chips or the text
    QPushButton *m_useSelection = nullptr;
    const CorpusScore *corpusScore(Role role) const; // null for induction or without a corpus
    QString corpusNote() const;

    SnapshotPtr m_snapshot;
    int m_layers = 0, m_heads = 0;
    int m_kvGroup = 1; // query heads per key/value head (grouped-query attention: more than 1)
    int m_selLayer = 0, m_selHead = 0;
    int m_sort = -1;
    double m_minimum = 0.0;
    double m_thumbScale = 1.0;
    std::array<Mat<double>, kRoles> m_scores;
    std::vector<QImage> m_thumbs; // layer-major
    // The weights' thumbnails (layer-major) and what they were made from: the trace (held only while
    // the view is shown, so that a hidden view keeps no trace from being computed into again), the
    // scale's top and the gradient. A head whose weights are bit for bit the same keeps its image.
    std::vector<QImage> m_weightThumbs;
    std::shared_ptr<const Trace<float>> m_thumbsOf;
    double m_thumbsTop = 0.0;
    std::shared_ptr<const QCPColorGradient> m_thumbsGradient;
    int m_thumbsRendered = 0;
    void weightThumbnails(const std::shared_ptr<const Trace<float>> &trace, double top);
    QVector<QPair<int, int>> m_order;
    QComboBox *m_sortBox = nullptr;
    QDoubleSpinBox *m_minBox = nullptr;
    QLabel *m_note = nullptr;
    QScrollArea *m_scroll = nullptr;
    HeadRolesCanvas *m_canvas = nullptr;
    QComboBox *m_readingBox = nullptr;
    QSpinBox *m_spanFrom = nullptr, *m_spanTo = nullptr;
    int m_reading = -1;
    int m_spanBegin = 0, m_spanEnd = 0;
    int m_saidBegin = 0, m_saidEnd = 0; // the span spanChanged said last
    bool m_saidNeedle = false;
    Mat<double> m_readingScores; // the reading drawn, (layers, heads)
    int m_readingRows = 0;       // entropy: query rows read; same-token: queries read
    const void *m_rolesOf = nullptr; // the trace whose role scores m_scores hold (a long text's)
    bool m_rolesWeighted = false;    // and whether they are the norm-weighted shares' scores
    quint64 m_generation = 0;
    std::shared_ptr<std::atomic<bool>> m_stop; // set: the long text's readings still computing stop
    bool m_computing = false;
    bool m_stopped = false;       // the readings were cancelled: some layers not read
    int m_layersRead = 0;         // the layers the readings computing (or cancelled) have read
    bool m_traceComputing = false; // the window computes a new trace (setTraceComputing)
    bool m_readingsWait = false;   // readings asked for while it did: computed when it ends
    bool m_progressShown = false;  // the readings computing have taken long enough to show their progress
    static constexpr int kProgressDelayMs = 300;
    QThreadPool *m_readingsPool = nullptr;
    QProgressBar *m_progress = nullptr;
    QPushButton *m_cancel = nullptr;
    // The progress bar and Cancel (or, stopped, "Compute again") as the state above says.
    void showProgress();
};

} // namespace attnviz::ui
