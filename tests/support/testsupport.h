// SPDX-License-Identifier: GPL-3.0-or-later
// attnviz_testsupport: helpers the ui suites share instead of copying them: fixture paths, finding a
// named child widget, picking a combo entry by its data, small file reads and writes, the
// W_q = W_k = 2·I projections file, and waiting for the live session's next snapshot.
#pragma once

#include "live/livetypes.h"

#include <QByteArray>
#include <QObject>
#include <QString>

#include <functional>

class QComboBox;
class QCustomPlot;
class QJsonObject;

namespace attnviz::ui {
class LiveSession;
}

namespace attnviz::test {

// tests/fixtures/embeddings/toy-en16.txt: the hand-made 16-d toy table.
QString toyTable();
// tests/fixtures/torch/stack_postnorm_relu_sinusoidal.safetensors: a 2-block stack from PyTorch.
QString stackFile();

// The child of `parent` named `name`; a missing one ends the test run (a renamed widget).
template <typename W> W *child(QObject *parent, const char *name)
{
    W *w = parent->findChild<W *>(QLatin1String(name));
    if (!w)
        qFatal("no child %s", name);
    return w;
}

// Selects the entry whose data is `data` (fails the current test when there is none).
void setCombo(QComboBox *c, int data);

QByteArray readAll(const QString &path); // empty when it cannot be read
bool writeFile(const QString &path, const QByteArray &data);
QJsonObject readJson(const QString &path); // empty object when it is not JSON

// A projections file with W_q = W_k = 2·I (d x d) and nothing else: the scores are 4x those of
// identity projections.
bool writeDoubleIdentityProjections(const QString &path, int d = 16);

// Waits (running the event loop) until `session` shows a snapshot newer than `after`, not busy, that
// satisfies `pred`; then lets queued replots run. Null after `ms` milliseconds.
ui::SnapshotPtr waitForSnapshot(const ui::LiveSession &session, quint64 after,
                                const std::function<bool(const ui::ComputeSnapshot &)> &pred = {}, int ms = 10000);
// The generation of what `session` shows (0: nothing yet).
quint64 shownGeneration(const ui::LiveSession &session);
// Waits (running the event loop, at most `ms` milliseconds) until `session` shows the result of its
// latest request: true when that result has weights, false for a message or a timeout.
bool waitForCurrentResult(const ui::LiveSession &session, int ms = 10000);
// The fixture model folder `model` (tests/fixtures/models) traced on `text` by a LiveSession as the
// window does; null when the folder does not open or the trace fails.
ui::SnapshotPtr traceFixtureModel(const QString &model, const QString &text);
// Replots `plot` until its labels settle (each label change costs one more layout pass).
void settlePlot(QCustomPlot *plot);

} // namespace attnviz::test
