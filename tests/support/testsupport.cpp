// SPDX-License-Identifier: GPL-3.0-or-later
#include "testpaths.h"
#include "testsupport.h"

#include "attnviz/pretrained.h"
#include "live/livesession.h"
#include "modelfolders.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

namespace attnviz::test {

QString toyTable()
{
    return QString::fromUtf8(ATTNVIZ_FIXTURE("/embeddings/toy-en16.txt"));
}

QString stackFile()
{
    return QString::fromUtf8(ATTNVIZ_FIXTURE("/torch/stack_postnorm_relu_sinusoidal.safetensors"));
}

void setCombo(QComboBox *c, int data)
{
    const int i = c->findData(data);
    QVERIFY(i >= 0);
    c->setCurrentIndex(i);
}

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

bool writeFile(const QString &path, const QByteArray &data)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(data) == data.size();
}

QJsonObject readJson(const QString &path)
{
    return QJsonDocument::fromJson(readAll(path)).object();
}

bool writeDoubleIdentityProjections(const QString &path, int d)
{
    QJsonArray rows;
    for (int i = 0; i < d; ++i) {
        QJsonArray r;
        for (int j = 0; j < d; ++j)
            r.append(i == j ? 2.0 : 0.0);
        rows.append(r);
    }
    return writeFile(path, QJsonDocument(QJsonObject{{"W_q", rows}, {"W_k", rows}}).toJson());
}

ui::SnapshotPtr waitForSnapshot(const ui::LiveSession &session, quint64 after,
                                const std::function<bool(const ui::ComputeSnapshot &)> &pred, int ms)
{
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < ms) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
        const ui::SnapshotPtr s = session.snapshot();
        if (s && s->generation > after && !session.busy() && (!pred || pred(*s))) {
            QCoreApplication::processEvents(); // queued replots
            return s;
        }
    }
    return {};
}

quint64 shownGeneration(const ui::LiveSession &session)
{
    const ui::SnapshotPtr s = session.snapshot();
    return s ? s->generation : 0;
}

bool waitForCurrentResult(const ui::LiveSession &session, int ms)
{
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < ms) {
        const ui::SnapshotPtr s = session.snapshot();
        if (s && !session.busy() && s->generation == session.generation())
            return s->hasResult();
        QTest::qWait(20);
    }
    return false;
}

void settlePlot(QCustomPlot *plot)
{
    for (int i = 0; i < 6; ++i) {
        QCoreApplication::processEvents();
        plot->replot(QCustomPlot::rpImmediateRefresh);
    }
    QTest::qWait(30);
    plot->replot(QCustomPlot::rpImmediateRefresh);
}

ui::SnapshotPtr traceFixtureModel(const QString &model, const QString &text)
{
    std::unique_ptr<Model> m;
    if (!openPretrained(attnviz_test::fixtureModel(model).toStdString(), {}, m))
        return nullptr;
    ui::LiveSession session;
    session.setDebounceMs(0);
    session.setModel(std::shared_ptr<Model>(std::move(m)));
    session.setSentence(text);
    session.requestNow();
    return waitForCurrentResult(session) ? session.snapshot() : nullptr;
}

} // namespace attnviz::test
