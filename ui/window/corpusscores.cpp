// SPDX-License-Identifier: GPL-3.0-or-later
#include "window/corpusscores.h"

#include "live/livesession.h"
#include "views/headrolesview.h"

#include "attnviz/headroles.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QMetaObject>
#include <QProgressDialog>
#include <QSettings>
#include <QtConcurrent>

namespace attnviz::ui {

struct CorpusScores::Outcome {
    Status status;
    std::shared_ptr<CorpusHeadScores> scores;
    const Model *model = nullptr;
    QString source;
};

CorpusScores::CorpusScores(LiveSession *session, HeadRolesView *view, QWidget *dialogParent)
    : QObject(dialogParent)
    , m_session(session)
    , m_view(view)
    , m_dialogParent(dialogParent)
{
    m_prompt = [this] {
        QSettings settings;
        const QString path = QFileDialog::getOpenFileName(m_dialogParent, tr("Scores over a corpus: a text file of prompts, one a line"),
                                                          settings.value(QStringLiteral("corpus/lastDir")).toString(),
                                                          tr("Text files (*.txt);;All files (*)"));
        if (!path.isEmpty())
            settings.setValue(QStringLiteral("corpus/lastDir"), QFileInfo(path).absolutePath());
        return path;
    };
    connect(&m_watcher, &QFutureWatcher<std::shared_ptr<Outcome>>::finished, this, [this] {
        if (m_progress)
            m_progress->deleteLater();
        const std::shared_ptr<Outcome> o = m_watcher.result();
        if (o->status.code == StatusCode::Cancelled) {
            emit finished(false, tr("Scores over a corpus: cancelled; the grid shows the text's scores."));
            return;
        }
        if (!o->status) {
            emit finished(false, tr("Scores over a corpus: %1").arg(QString::fromStdString(o->status.message)));
            return;
        }
        if (m_view)
            m_view->setCorpus(o->scores, o->model, o->source);
        emit finished(true, tr("Scores over %n prompts of %1 on the Layers tab.", nullptr, o->scores->prompts).arg(o->source));
    });
}

CorpusScores::~CorpusScores()
{
    cancel();
    m_watcher.waitForFinished();
}

void CorpusScores::ask()
{
    const QString path = m_prompt ? m_prompt() : QString();
    if (path.isEmpty())
        return;
    QString error;
    if (!start(path, &error))
        emit finished(false, tr("Scores over a corpus: %1").arg(error));
}

void CorpusScores::cancel()
{
    if (m_cancel)
        m_cancel->store(true);
}

bool CorpusScores::start(const QString &path, QString *error)
{
    const std::shared_ptr<Model> model = m_session->model();
    if (!model) {
        *error = tr("open a model first: the scores are a model's heads'");
        return false;
    }
    if (m_session->snapshot() && m_session->snapshot()->modelInfo.architecture.encoderDecoder) {
        *error = tr("not yet for encoder-decoder models");
        return false;
    }
    if (running()) {
        *error = tr("a corpus is being scored; cancel it first");
        return false;
    }
    CorpusRequest req;
    req.induction = false; // the grid keeps the model's own probe's, which the text's trace brought
    if (Status st = readCorpusFile(path.toStdString(), req.prompts); !st) {
        *error = QString::fromStdString(st.message);
        return false;
    }
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    auto cancel = m_cancel;
    auto *progress = new QProgressDialog(tr("Scoring the heads over %1…").arg(QFileInfo(path).fileName()), tr("Cancel"), 0,
                                         int(req.prompts.size()), m_dialogParent);
    progress->setObjectName(QStringLiteral("corpusProgress"));
    progress->setMinimumDuration(500);
    progress->setAutoClose(false);
    progress->setAutoReset(false);
    connect(progress, &QProgressDialog::canceled, this, [cancel] { cancel->store(true); });
    m_progress = progress;
    QPointer<QProgressDialog> shown = progress;
    const QString source = QFileInfo(path).fileName();
    m_watcher.setFuture(QtConcurrent::run([model, req, cancel, shown, source]() mutable {
        auto o = std::make_shared<Outcome>();
        o->model = model.get();
        o->source = source;
        req.cancel = cancel.get();
        req.progress = [shown](int done, int) {
            QMetaObject::invokeMethod(qApp, [shown, done] {
                if (shown)
                    shown->setValue(done);
            });
        };
        o->scores = std::make_shared<CorpusHeadScores>();
        o->status = corpusHeadScores(*model, req, *o->scores);
        return o;
    }));
    return true;
}

} // namespace attnviz::ui
