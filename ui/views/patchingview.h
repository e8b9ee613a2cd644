// SPDX-License-Identifier: GPL-3.0-or-later
// The Patching tab: activation patching (attnviz/patching.h) in the window. The clean prompt is the
// window's text, the corrupted prompt a field of its own; both prompts' tokens side by side (the
// positions where they differ marked, a token-count mismatch refused naming the first differing
// tokens); the answer and wrong tokens (one token each); the sweep and the metric; Run and Cancel
// with a progress bar. The sweep runs on a pool thread over the window's model (a model read from a
// checkpoint keeps no state outside the trace it writes, so it may trace beside the window's compute
// thread, as Compare's side B does); a cancelled sweep keeps the cells done. The result is a layers ×
// positions (or heads) heatmap on a diverging scale centred on the corrupted run's value (0 for the
// logit difference, p(answer) for prob; 0, the clean run, for KL), cached per (model, prompts,
// answer, wrong, sweep, metric) for the session. Clicking a cell asks the window to apply that cell's patch
// (patchFor's edit) to the corrupted prompt: the window's text becomes the corrupted prompt and the
// edit joins the window's edits, so every view shows the patched run; Clear patch asks for the clean
// prompt back without the patch. The path sweep (sender heads into one receiver head's q, k or v) has a
// receiver chooser; its clicked cell applies pathPatchFor's edit (the receiver's z as the path patch
// makes it, an attn.hook_z edit of the corrupted run). Decoder-only models only; for others the tab says
// why in one line.
#pragma once

#include "views/deferredview.h"

#include "attnviz/patching.h"

#include <QFutureWatcher>
#include <QHash>
#include <QList>
#include <QStringList>

#include <atomic>
#include <memory>

class QCPColorMap;
class QCPColorScale;
class QCPTextElement;
class QCPItemText;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;
class QTimer;

namespace attnviz::ui {

class LiveSession;

class PatchingView : public DeferredView {
    Q_OBJECT
public:
    // `session` is the window's (not owned): its text is the clean prompt, its model the one patched.
    explicit PatchingView(LiveSession *session, QWidget *parent = nullptr);
    ~PatchingView() override;

    void setSnapshot(SnapshotPtr snapshot) override;
    // The heatmap once a sweep is shown (File ▸ Export current view: PNG, SVG, PDF); null before.
    QCustomPlot *plot() const override { return m_result ? m_plot : nullptr; }

    PatchingSettings settings() const;
    void setSettings(const PatchingSettings &s);

    // The clean prompt: the window's text, or, while a patch of this tab is applied (the window then
    // shows the corrupted prompt), the clean prompt it was patched from.
    QString cleanPrompt() const;
    // Why Run cannot start now, one line ("" when it can): not a decoder-only model, an empty or
    // mismatched prompt, an answer of several tokens ...
    QString problem() const;
    // Starts the sweep (a cached result is shown at once); false with problem() or message() saying why.
    bool run();
    void cancel();
    bool running() const { return m_watcher.isRunning(); }
    // The result shown (null before the first); cells not computed are NaN.
    const PatchResult *result() const { return m_result ? &m_result->result : nullptr; }
    // Shows a sweep computed elsewhere (`attnviz patch -o OUT.png`): the heatmap and its labels as a
    // sweep of this tab draws them; its cells cannot be applied (no runs behind them).
    void showResult(const PatchResult &result);
    // The value the diverging scale is centred on: the corrupted run's (0 for the logit difference,
    // p(answer) of the corrupted run for prob), 0 for KL (the clean run).
    double scaleCentre() const;
    // The line under the heatmap: the run's state ("Cancelled after 12 of 48 cells", an error ...).
    QString message() const;
    // Hovering a cell shows this (the row, the column's token or head, the value).
    QString cellText(int row, int col) const;
    // The cell's patch (patchFor's edit of the shown result's clean trace); false with message() set.
    bool patchOf(int row, int col, Intervention &out) const;
    // As a click on the cell: asks the window to apply its patch (patchRequested). A path sweep's
    // sender cell computes its edit (pathPatchFor: two forwards) on the pool first, the newest click
    // winning: true once started, patchRequested when it is done.
    bool applyCell(int row, int col);
    void clearPatch(); // asks the window for the clean prompt without the patch (patchClearRequested)
    // The path sweep's receiver (the chooser's; layer -1 before a model with two layers is shown).
    PathReceiver receiver() const;
    void setReceiver(const PathReceiver &r);
    // The path sweep into (receiverLayer, receiverHead) on the chosen input, started (or shown from the
    // cache) with (senderLayer, senderHead)'s cell named once it is done: the grid's drag of a sender head
    // onto a receiver. False with message() saying why (a receiver not after the sender ...).
    bool openPath(int senderLayer, int senderHead, int receiverLayer, int receiverHead);
    bool patchApplied() const; // the window's edits hold a patch (an edit of kind Value)

    // The shown result as CSV: a header row ("layer" and the column labels), then one row per layer;
    // a cell not computed is empty. False with `error` (nothing shown, or the file cannot be written).
    bool saveCsv(const QString &path, QString *error) const;
    // The CSV button's file question (tests answer it); "" cancels.
    void setCsvPrompt(std::function<QString()> prompt) { m_csvPrompt = std::move(prompt); }
    QPushButton *csvButton() const { return m_csv; }

    // Called on the sweep's thread after each cell (tests: a cancel at a chosen cell).
    void setProgressHook(std::function<void(int done, int total)> hook) { m_hook = std::move(hook); }

    QLineEdit *corruptedEdit() const { return m_corrupted; }
    QLineEdit *answerEdit() const { return m_answer; }
    QLineEdit *wrongEdit() const { return m_wrong; }
    QComboBox *sweepCombo() const { return m_sweep; }
    QComboBox *metricCombo() const { return m_metric; }
    QComboBox *receiverCombo() const { return m_receiver; }
    QComboBox *receiverInputCombo() const { return m_receiverInput; }
    QPushButton *runButton() const { return m_run; }
    QPushButton *cancelButton() const { return m_cancel; }
    QPushButton *clearButton() const { return m_clear; }
    QProgressBar *progressBar() const { return m_progress; }
    QTableWidget *tokenTable() const { return m_tokens; }
    QStringList columnLabels() const { return m_colLabels; }
    QString scaleLabel() const;

signals:
    // Apply `edit` (a clean activation) to `corrupted`: the window's text becomes `corrupted`, the
    // edit replaces any earlier patch in its edits; one undo step named `what`.
    void patchRequested(const attnviz::Intervention &edit, const QString &clean, const QString &corrupted,
                        const QString &what);
    // Take the patch out of the window's edits and give the window `clean` back as its text.
    void patchClearRequested(const QString &clean);
    void sweepFinished(); // a sweep ended (done, cancelled or failed) or a cached one is shown

protected:
    void rebuild() override { refresh(); }

private:
    struct Outcome {
        Status status;
        PatchResult result;
        std::shared_ptr<const Trace<float>> clean; // the clean run, for a cell's patchFor
        std::shared_ptr<const Trace<float>> corrupted; // path sweeps: the corrupted run, for pathPatchFor
        QString cleanText, corruptedText;
    };

    // the tokens, the token notes and the buttons, from the fields and the snapshot (once shown: a long
    // text's tokens are not laid out while another tab is in view)
    void refresh();
    void finished();
    void draw();
    QString refusal() const; // not a decoder-only model: why ("" when it is one)
    QString cacheKey() const;
    QString tokenNote(const QString &text, int &id) const; // "" and the id, or why not one token
    void emitPatch(const Intervention &e, int row, int col); // patchRequested for a cell's edit, and the message
    quint64 m_pathGen = 0;                                   // the newest path cell clicked

    LiveSession *m_session;
    SnapshotPtr m_snapshot;
    const Model *m_model = nullptr; // whose results the cache holds
    QString m_appliedClean; // the clean prompt of the patch last asked for
    QHash<QString, std::shared_ptr<const Outcome>> m_cache;
    std::shared_ptr<const Outcome> m_result;
    QString m_runningKey;
    const Model *m_runningModel = nullptr; // the model of the sweep running
    std::shared_ptr<std::atomic<bool>> m_cancelFlag;
    std::shared_ptr<std::atomic<int>> m_done, m_total;
    QFutureWatcher<std::shared_ptr<const Outcome>> m_watcher;
    QString m_message;
    std::function<void(int, int)> m_hook;
    std::function<QString()> m_csvPrompt;
    QStringList m_colLabels;
    QString m_titleText; // the heatmap's whole title (shown wrapped or elided to the plot's width)
    PathReceiver m_wantReceiver{1, 0, HeadInput::K}; // chosen before the chooser lists the model's heads
    int m_receiverHeads = 0, m_receiverLayers = 0;   // what the chooser lists
    int m_senderLayer = -1, m_senderHead = -1;       // openPath's sender, named when its sweep is done

    QLabel *m_refusal = nullptr, *m_tokenNote = nullptr, *m_answerNote = nullptr,
           *m_wrongNote = nullptr, *m_status = nullptr;
    QLineEdit *m_corrupted = nullptr, *m_answer = nullptr, *m_wrong = nullptr;
    QComboBox *m_sweep = nullptr, *m_metric = nullptr, *m_receiver = nullptr, *m_receiverInput = nullptr;
    QWidget *m_receiverRow = nullptr;
    void fillReceivers(); // the chooser's heads: layers 1.. of the model shown
    QPushButton *m_run = nullptr, *m_cancel = nullptr, *m_clear = nullptr, *m_csv = nullptr;
    QProgressBar *m_progress = nullptr;
    QTableWidget *m_tokens = nullptr;
    QTimer *m_poll = nullptr;
    QWidget *m_form = nullptr; // the inputs over the heatmap (a scroll area)
    QCustomPlot *m_plot = nullptr;
    QCPColorMap *m_map = nullptr;
    QCPColorScale *m_scale = nullptr;
    QCPTextElement *m_title = nullptr;
    QList<QCPItemText *> m_cellTexts; // the cells' numbers (grids of at most kNumberedCells)
public:
    static constexpr int kNumberedCells = 64;
    static constexpr double kSmallCells = 0.05;
    // The numbers drawn on the cells (row-major, computed cells only): a grid of at most kNumberedCells,
    // three decimals each, or three significant digits where every cell is under kSmallCells.
    QStringList cellNumbers() const;
};

} // namespace attnviz::ui
