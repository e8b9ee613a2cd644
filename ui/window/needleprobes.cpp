// SPDX-License-Identifier: GPL-3.0-or-later
// The needle probe run from the window (needleprobes.h).
#include "window/needleprobes.h"

#include "live/livesession.h"
#include "views/headrolesview.h"

#include <QApplication>
#include <QMetaObject>
#include <QtConcurrent>

namespace attnviz::ui {

struct NeedleProbes::Outcome {
    Status status;
    std::shared_ptr<NeedleProbe> probe;
    const Model *model = nullptr;
};

NeedleProbes::NeedleProbes(LiveSession *session, HeadRolesView *view, QWidget *dialogParent)
    : QObject(dialogParent)
    , m_session(session)
    , m_view(view)
    , m_dialogParent(dialogParent)
{
    connect(&m_watcher, &QFutureWatcher<std::shared_ptr<Outcome>>::finished, this, [this] {
        const std::shared_ptr<Outcome> o = m_watcher.result();
        emit busyChanged(false);
        if (o->status.code == StatusCode::Cancelled) {
            emit finished(false, tr("Needle probe: cancelled; nothing changed."), nullptr);
            return;
        }
        if (!o->status) {
            emit finished(false, tr("Needle probe: %1").arg(QString::fromStdString(o->status.message)), nullptr);
            return;
        }
        m_last = o->probe;
        if (m_view)
            m_view->setRetrieval(o->probe, o->model);
        const NeedleProbe &p = *o->probe;
        emit finished(true,
                      tr("Needle probe: answer “%1” (%2 of %3 tokens from the needle, tokens %4–%5 of %L6); each head's "
                         "retrieval score on the Layers tab.")
                          .arg(QString::fromStdString(p.answerText).simplified())
                          .arg(p.answerFromNeedle)
                          .arg(p.answer.size())
                          .arg(p.needleBegin)
                          .arg(p.needleEnd - 1)
                          .arg(p.promptTokens),
                      o->probe);
    });
}

NeedleProbes::~NeedleProbes()
{
    cancel();
    m_watcher.waitForFinished();
}

void NeedleProbes::ask(const QString &editorText)
{
    NeedleInput in = m_lastInput;
    in.haystack = editorText;
    bool go = false;
    if (m_prompt) {
        go = m_prompt(in);
    } else {
        NeedleDialog dialog(editorText, m_dialogParent);
        if (!m_lastInput.needle.isEmpty())
            dialog.setInput(in);
        go = dialog.exec() == QDialog::Accepted;
        in = dialog.input();
    }
    if (!go)
        return;
    m_lastInput = in;
    QString error;
    if (!start(in, &error))
        emit finished(false, tr("Needle probe: %1").arg(error), nullptr);
}

void NeedleProbes::cancel()
{
    if (m_cancel)
        m_cancel->store(true);
}

bool NeedleProbes::start(const NeedleInput &input, QString *error)
{
    const std::shared_ptr<Model> model = m_session->model();
    if (!model) {
        *error = tr("open a model first: the probe asks a language model");
        return false;
    }
    const ModelInfo info = model->info();
    if (!info.causal || info.architecture.encoderDecoder) {
        *error = tr("%1 is not a causal language model: the probe needs one that answers by generating")
                     .arg(QString::fromStdString(info.name));
        return false;
    }
    if (running()) {
        *error = tr("a probe is running; cancel it first");
        return false;
    }
    if (input.needle.trimmed().isEmpty()) {
        *error = tr("the needle sentence is empty");
        return false;
    }
    if (input.question.trimmed().isEmpty()) {
        *error = tr("the question is empty");
        return false;
    }
    NeedleRequest req;
    req.needle = input.needle.toStdString();
    req.question = input.question.toStdString();
    req.depth = input.depth;
    req.answerTokens = input.answerTokens;
    if (!input.haystackFile.isEmpty()) {
        if (Status st = readHaystackFile(input.haystackFile.toStdString(), req.haystack); !st) {
            *error = QString::fromStdString(st.message);
            return false;
        }
    } else {
        req.haystack = input.haystack.toStdString();
    }
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    auto cancel = m_cancel;
    QPointer<NeedleProbes> self(this);
    const quint64 run = ++m_run;
    emit busyChanged(true);
    m_watcher.setFuture(QtConcurrent::run([model, req, cancel, self, run]() mutable {
        auto o = std::make_shared<Outcome>();
        o->model = model.get();
        req.cancel = cancel.get();
        req.progress = [self, run](int done, int total) {
            QMetaObject::invokeMethod(qApp, [self, run, done, total] {
                if (self && self->m_run == run) // a step of this run, shown before it ends (queued in order)
                    emit self->progress(done, total);
            });
        };
        o->probe = std::make_shared<NeedleProbe>();
        o->status = needleProbe(*model, req, *o->probe);
        return o;
    }));
    return true;
}

} // namespace attnviz::ui
