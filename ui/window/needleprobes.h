// SPDX-License-Identifier: GPL-3.0-or-later
// The needle probe in the window: the dialog's values (window/needledialog.h) checked, then
// needleProbe (attnviz/needleprobe.h) run on a pool thread over the window's model (a model read
// from a checkpoint keeps no state outside the trace it writes, so it traces beside the window's
// compute thread, as the corpus scores do), its progress and Cancel on the window's status bar. The
// result goes to the Layers grid as the retrieval reading (HeadRolesView::setRetrieval); the window
// then puts the probe's text in the editor. Bad input or a failed run: one line, the window unchanged.
#pragma once

#include "window/needledialog.h"

#include "attnviz/needleprobe.h"

#include <QFutureWatcher>
#include <QObject>
#include <QPointer>
#include <QString>

#include <atomic>
#include <functional>
#include <memory>

namespace attnviz::ui {

class HeadRolesView;
class LiveSession;

class NeedleProbes : public QObject {
    Q_OBJECT
public:
    NeedleProbes(LiveSession *session, HeadRolesView *view, QWidget *dialogParent);
    ~NeedleProbes() override;

    // Where the values come from: the dialog unless a test sets its own (false: not run).
    using InputPrompt = std::function<bool(NeedleInput &)>;
    void setInputPrompt(InputPrompt prompt) { m_prompt = std::move(prompt); }

    // Asks for the values (the editor's text as the haystack), then start()s.
    void ask(const QString &editorText);
    // Starts the probe; false with `error` (one line) when it cannot start: no model, a model that
    // is not a causal language model, an empty needle or question, an unreadable file, a run going on.
    bool start(const NeedleInput &input, QString *error);
    bool running() const { return m_watcher.isRunning(); }
    void cancel();
    // The last probe run to its end (null: none yet).
    std::shared_ptr<const NeedleProbe> last() const { return m_last; }

signals:
    void busyChanged(bool busy);
    void progress(int done, int total);
    // The run ended: `message` is what the window says; `probe` set where it gave scores.
    void finished(bool ok, const QString &message, std::shared_ptr<const NeedleProbe> probe);

private:
    struct Outcome;
    LiveSession *m_session;
    QPointer<HeadRolesView> m_view;
    QWidget *m_dialogParent;
    InputPrompt m_prompt;
    NeedleInput m_lastInput;
    QFutureWatcher<std::shared_ptr<Outcome>> m_watcher;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    std::shared_ptr<const NeedleProbe> m_last;
    quint64 m_run = 0; // the run whose progress is shown
};

} // namespace attnviz::ui
