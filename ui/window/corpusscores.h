// SPDX-License-Identifier: GPL-3.0-or-later
// Head scores over a corpus in the window (the Layers tab's "Over a corpus…"): a text file of
// prompts, one a line, read as `attnviz heads --corpus` reads it (headroles.h readCorpusFile),
// scored by corpusHeadScores on a pool thread over the window's model (a model read from a
// checkpoint keeps no state outside the trace it writes, so it traces beside the window's compute
// thread, as the Patching tab's sweeps do), with a progress dialog and Cancel; the result goes to
// the grid (HeadRolesView::setCorpus). A bad file or a failed prompt: one line, the grid unchanged.
#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QPointer>
#include <QString>

#include <atomic>
#include <functional>
#include <memory>

class QProgressDialog;

namespace attnviz::ui {

class HeadRolesView;
class LiveSession;

class CorpusScores : public QObject {
    Q_OBJECT
public:
    CorpusScores(LiveSession *session, HeadRolesView *view, QWidget *dialogParent);
    ~CorpusScores() override;

    // Where the file comes from: a file dialog unless a test sets its own.
    using FilePrompt = std::function<QString()>;
    void setFilePrompt(FilePrompt prompt) { m_prompt = std::move(prompt); }

    // Asks for the file, then start()s.
    void ask();
    // Reads `path` and starts scoring it with the window's model; false with `error` (one line) when
    // it cannot start: no model, an encoder-decoder model, a bad file, a run going on.
    bool start(const QString &path, QString *error);
    bool running() const { return m_watcher.isRunning(); }
    void cancel();

signals:
    // The run ended: `message` is what the window says (the scores shown, cancelled, or why not).
    void finished(bool ok, const QString &message);

private:
    struct Outcome;
    LiveSession *m_session;
    QPointer<HeadRolesView> m_view;
    QWidget *m_dialogParent;
    FilePrompt m_prompt;
    QFutureWatcher<std::shared_ptr<Outcome>> m_watcher;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    QPointer<QProgressDialog> m_progress;
};

} // namespace attnviz::ui
