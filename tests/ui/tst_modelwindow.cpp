// SPDX-License-Identifier: GPL-3.0-or-later
// A model folder in the real window (offscreen): each tiny fixture folder opened, its ids and pieces
// read back from the token chips and its attention from the heatmap's plotted data against the
// float64 PyTorch reference (tests/fixtures/models/*/expected.json); the layer chooser; the controls
// that do not apply disabled with a reason; a bad folder (the command line's bad-folder cases) leaves
// the model in use working; the progress-dialog path, a dropped folder, the recent models, the Model
// menu; text cut at the model's positions; the GPU backend's note; sessions that keep the model.
#include "testpaths.h"
#include "controls/controlpanel.h"
#include "controls/tokenchipsview.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "promptedwindow.h"
#include "testsupport.h"
#include "views/compareview.h"
#include "views/comparepredictions.h"
#include "views/headrolesview.h"
#include "views/heatmapview.h"
#include "views/layergridview.h"
#include "views/predictionsview.h"
#include "views/residualview.h"
#include "views/rolloutview.h"
#include "window/corpusscores.h"
#include "window/modelloader.h"

#include "../support/modelfolders.h"

#include "bundledmodel.h"

#include "attnviz/headroles.h"
#include "attnviz/pretrained.h"
#include "attnviz/reads.h"

#include <qcustomplot.h>

#include <QAction>
#include <QComboBox>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMimeData>
#include <QProcess>
#include <QScopeGuard>
#include <QSettings>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QUrl>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QFile>
#include <QtTest>

#include <cmath>
#include <new>
#include <stdexcept>
#include <vector>

using namespace attnviz;
using namespace attnviz::ui;
using attnviz_test::copyModelFolder;
using attnviz_test::editJson;
using attnviz_test::expectedCase;
using attnviz_test::fixtureModel;

namespace {

using Window = test::PromptedWindow;

double worstHeatmapError(const HeatmapView &v, const QJsonArray &want)
{
    double worst = 0;
    for (int i = 0; i < want.size(); ++i) {
        const QJsonArray row = want[i].toArray();
        for (int j = 0; j < row.size(); ++j)
            worst = std::max(worst, std::abs(v.cellValue(i, j) - row[j].toDouble()));
    }
    return worst;
}

} // namespace

class TestModelWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QSettings().clear();
    }
    void openFixture_data();
    void openFixture();
    void chooseLayer();
    void progressAndCancel();
    void corpusScoresOnTheGrid();
    void largeCpuTraceKeepsWhatTheViewsRead();
    void controlsThatDoNotApply();
    void chipsShowPieces();
    void badFolderKeepsModel_data();
    void badFolderKeepsModel();
    void readThatThrowsKeepsModel_data();
    void readThatThrowsKeepsModel();
    void progressDialogPathAndDrop();
    void modelMenuAndRecent();
    void bundledModel();
    void cutAtPositions();
    void typingEqualsFreshCompute_data();
    void typingEqualsFreshCompute();
    void gpuBackendNote();
    void compareOnTheModel();
    void sessionRoundTrip();
    void sessionWithMissingFolder();
    void readmeCommandsRun_data();
    void readmeCommandsRun();
    void layersTabFollowsItsName();
};

void TestModelWindow::openFixture_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("caseIndex");
    QTest::addRow("gpt2-tiny") << "gpt2-tiny" << 0;
    QTest::addRow("gpt2-tiny spaces and newline") << "gpt2-tiny" << 1;
    QTest::addRow("bert-tiny") << "bert-tiny" << 1;
    QTest::addRow("bert-tiny-legacy (gamma/beta)") << "bert-tiny-legacy" << 0;
    QTest::addRow("distilbert-tiny") << "distilbert-tiny" << 1;
}

void TestModelWindow::openFixture()
{
    QFETCH(QString, model);
    QFETCH(int, caseIndex);
    const QJsonObject want = expectedCase(model, caseIndex);
    Window win;
    QString error;
    QVERIFY2(win.w.openModel(fixtureModel(model), &error), qPrintable(error));
    QCOMPARE(win.w.modelSource(), QDir::cleanPath(fixtureModel(model)));
    const SnapshotPtr s = win.show(want.value(QStringLiteral("text")).toString());
    QVERIFY(s);
    // ids and vocabulary pieces, from the chips
    const QJsonArray ids = want.value(QStringLiteral("ids")).toArray(), tokens = want.value(QStringLiteral("tokens")).toArray();
    TokenChipsView *chips = win.w.queryChips();
    QCOMPARE(chips->chipCount(), ids.size());
    for (int i = 0; i < ids.size(); ++i) {
        QVERIFY(chips->chipToken(i));
        QCOMPARE(chips->chipToken(i)->id, ids[i].toInt());
        QCOMPARE(QString::fromStdString(chips->chipToken(i)->text), tokens[i].toString());
    }
    // every layer and head as the heatmap plots it, against the float64 reference
    const QJsonArray att = want.value(QStringLiteral("attentions")).toArray();
    const int layers = att.size(), heads = att[0].toArray().size();
    QCOMPARE(s->numLayers(), layers);
    QCOMPARE(win.w.controls()->settings().numHeads, heads);
    for (int l = 0; l < layers; ++l)
        for (int h = 0; h < heads; ++h) {
            win.w.session()->setSelectedLayer(l);
            win.w.session()->setSelectedHead(h);
            QCoreApplication::processEvents();
            const double worst = worstHeatmapError(*win.w.heatmapView(), att[l].toArray()[h].toArray());
            QVERIFY2(worst < 1e-5, qPrintable(QStringLiteral("layer %1 head %2: %3").arg(l).arg(h).arg(worst)));
        }
    // the titles name the model; its layers x heads (roles), Rollout and Residual tabs are shown (two layers)
    QVERIFY2(win.w.heatmapView()->title().contains(QString::fromStdString(win.w.modelInfo().name)),
             qPrintable(win.w.heatmapView()->title()));
    QVERIFY(win.w.tabs()->isTabVisible(win.w.tabs()->indexOf(win.w.headRolesView())));
    QVERIFY(win.w.tabs()->isTabVisible(win.w.tabs()->indexOf(win.w.rolloutView())));
    QVERIFY(win.w.tabs()->isTabVisible(win.w.tabs()->indexOf(win.w.residualView())));
    QVERIFY(!win.w.tabs()->isTabVisible(win.w.tabs()->indexOf(win.w.layerGridView()))); // the seed-002 stack's grid
    QVERIFY(win.w.statusText().contains(QStringLiteral("layer %1 of %2").arg(layers - 1).arg(layers)));
}

void TestModelWindow::chooseLayer()
{
    const QJsonObject want = expectedCase(QStringLiteral("gpt2-tiny"), 2);
    Window win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.show(want.value(QStringLiteral("text")).toString()));
    auto *layer = test::child<QSpinBox>(win.w.controls(), "layerSpin");
    QVERIFY(layer->isEnabled());
    QCOMPARE(layer->maximum(), 1);
    const QJsonArray att = want.value(QStringLiteral("attentions")).toArray();
    for (int l : {1, 0}) {
        layer->setValue(l);
        QCoreApplication::processEvents();
        QCOMPARE(win.w.session()->selectedLayer(), l);
        QVERIFY(win.w.heatmapView()->title().contains(QStringLiteral("layer %1 of 2").arg(l)));
        QVERIFY(worstHeatmapError(*win.w.heatmapView(), att[l].toArray()[0].toArray()) < 1e-5);
    }
    // back to the word vectors: one layer, nothing to choose
    win.w.useWordVectors();
    QVERIFY(win.show(QStringLiteral("the ship and the crew")));
    QVERIFY(!layer->isEnabled());
    QVERIFY(!win.w.tabs()->isTabVisible(win.w.tabs()->indexOf(win.w.layerGridView())));
}

// A model's computation counts its layers in the status bar's progress, and Cancel stops it: the
// views keep the text they show, the status line says so, and the next edit computes again.
void TestModelWindow::progressAndCancel()
{
    Window win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.show(QStringLiteral("The animal did not cross the street")));
    const int layers = win.w.session()->snapshot()->modelInfo.layers;
    QVector<QPair<int, int>> seen;
    QObject context;
    connect(win.w.session(), &LiveSession::progress, &context, [&](int done, int total) { seen.push_back({done, total}); });
    QVERIFY(win.show(QStringLiteral("The animal did not cross the street because it was tired")));
    QVERIFY(!seen.isEmpty());
    QCOMPARE(seen.last(), qMakePair(layers, layers));
    for (const auto &p : seen)
        QCOMPARE(p.second, layers);

    const SnapshotPtr before = win.w.session()->snapshot();
    auto *cancel = win.w.findChild<QPushButton *>(QStringLiteral("cancelComputeButton"));
    QVERIFY(cancel && !cancel->isVisible());
    bool cancelled = false;
    connect(win.w.session(), &LiveSession::computeCancelled, &context, [&] { cancelled = true; });
    // the request held a second before it computes: the cancel comes first however loaded the machine
    win.w.session()->holdComputeForTests(1000);
    auto unhold = qScopeGuard([&] { win.w.session()->holdComputeForTests(0); });
    win.w.session()->setSentence(QStringLiteral("A text that is never computed"));
    win.w.session()->requestNow();
    QVERIFY(win.w.session()->busy());
    win.w.session()->cancelCompute();
    QTRY_VERIFY_WITH_TIMEOUT(cancelled, 20000);
    win.w.session()->holdComputeForTests(0);
    QVERIFY(!win.w.session()->busy());
    QCOMPARE(win.w.session()->snapshot(), before);
    QVERIFY2(win.w.statusText().startsWith(QStringLiteral("Stopped")), qPrintable(win.w.statusText()));
    QVERIFY(!cancel->isVisible());
    QVERIFY(win.show(QStringLiteral("The animal crossed")));
    QCOMPARE(win.w.session()->snapshot()->sentence, QStringLiteral("The animal crossed"));
}

// The Layers tab's "Over a corpus…": the grid's previous, first, same and self scores become the
// corpus's means (equal to corpusHeadScores on the same prompts), each score's spread on hover,
// "This text" gives the text's back; a file that is not text is refused in one line.
void TestModelWindow::corpusScoresOnTheGrid()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("prompts.txt"));
    {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("The cat sat on the mat\n\nA dog and a dog and a dog\r\nWhen Mary and John went to the store, John gave a drink to\n");
    }
    Window win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.show(QStringLiteral("The animal did not cross the street")));
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    HeadRolesView *grid = win.w.headRolesView();
    const double textPrev = grid->score(HeadRolesView::Role::PreviousToken, 1, 0);

    std::unique_ptr<Model> reference;
    QVERIFY(openPretrained(fixtureModel(QStringLiteral("gpt2-tiny")).toStdString(), {}, reference).ok());
    CorpusRequest req;
    QVERIFY(readCorpusFile(path.toStdString(), req.prompts).ok());
    req.induction = false;
    CorpusHeadScores want;
    QVERIFY(corpusHeadScores(*reference, req, want).ok());
    QCOMPARE(want.prompts, 3);

    QSignalSpy done(win.w.corpusScores(), &CorpusScores::finished);
    QString error;
    QVERIFY2(win.w.corpusScores()->start(path, &error), qPrintable(error));
    QVERIFY(done.wait(30000));
    QVERIFY(done.first().at(0).toBool());
    QVERIFY(grid->showsCorpus());
    for (int l = 0; l < grid->layerCount(); ++l)
        for (int h = 0; h < grid->headCount(); ++h) {
            QCOMPARE(grid->score(HeadRolesView::Role::PreviousToken, l, h), want.previousToken.mean(l, h));
            QCOMPARE(grid->score(HeadRolesView::Role::FirstToken, l, h), want.firstToken.mean(l, h));
            QCOMPARE(grid->score(HeadRolesView::Role::Self, l, h), want.self.mean(l, h));
        }
    QVERIFY2(grid->note().contains(QStringLiteral("3 prompts of prompts.txt")), qPrintable(grid->note()));
    const QString tip = grid->corpusTip(1, 0);
    QVERIFY2(tip.contains(QStringLiteral("previous-token")) && tip.contains(QStringLiteral("±")), qPrintable(tip));
    // typing keeps the corpus's scores: they are the model's, not the text's
    QVERIFY(win.show(QStringLiteral("Another text entirely")));
    QCOMPARE(grid->score(HeadRolesView::Role::PreviousToken, 1, 0), want.previousToken.mean(1, 0));
    auto *button = win.w.findChild<QPushButton *>(QStringLiteral("headRolesCorpus"));
    QVERIFY(button);
    QCOMPARE(button->text(), QStringLiteral("This text"));
    button->click();
    QVERIFY(!grid->showsCorpus());
    QVERIFY(win.show(QStringLiteral("The animal did not cross the street")));
    QCOMPARE(grid->score(HeadRolesView::Role::PreviousToken, 1, 0), textPrev);

    const QString binary = dir.filePath(QStringLiteral("binary.txt"));
    {
        QFile f(binary);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray("abc\0def", 7));
    }
    QVERIFY(!win.w.corpusScores()->start(binary, &error));
    QVERIFY2(error.contains(QStringLiteral("NUL")), qPrintable(error));
    QVERIFY(!grid->showsCorpus());
}

// A trace past the size the CPU keeps whole (here every trace: ATTNVIZ_WHOLE_TRACE_MB=0) holds the
// selected layer's weights and stages and every layer's keys and values; another layer is computed
// again, the Layers × heads tab brings everything; the heatmap equals a whole trace's at each step,
// typing on too.
void TestModelWindow::largeCpuTraceKeepsWhatTheViewsRead()
{
    qputenv("ATTNVIZ_WHOLE_TRACE_MB", "0");
    auto restore = qScopeGuard([] { qunsetenv("ATTNVIZ_WHOLE_TRACE_MB"); });
    Window win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("llama-tiny")), nullptr));
    QVERIFY(win.w.showView(QStringLiteral("weights")));
    std::unique_ptr<Model> m;
    QVERIFY(openPretrained(fixtureModel(QStringLiteral("llama-tiny")).toStdString(), {}, m).ok());
    auto whole = [&](const QString &text) {
        TraceRequest req;
        req.text = text.toStdString();
        Trace<float> t;
        m->trace(req, t);
        return t;
    };
    auto shows = [&](const Trace<float> &want, int layer) {
        const WeightMatrix<float> *shown = win.w.heatmapView()->shownMatrix();
        const Mat<float> &w = want.weights(layer, win.w.session()->shownHead());
        // within float rounding: a token appended computes its row with products of other shapes
        return shown && shown->rows() == w.rows() && (shown->toDense() - w).cwiseAbs().maxCoeff() < 1e-5;
    };
    QString text = QStringLiteral("The quick brown fox jumps over the lazy dog");
    SnapshotPtr s = win.show(text);
    QVERIFY(s && s->hasResult());
    QCOMPARE(s->trace->observed.layers, std::vector<int>{0});
    QCOMPARE(s->trace->layers[1].output.rows(), Eigen::Index(0)); // not kept
    QCOMPARE(s->trace->layers[0].output.rows(), Eigen::Index(s->trace->tokens.size()));
    QCOMPARE(s->trace->layers[1].attention.batch[0].weights.size(), size_t(0)); // nor its weights
    QCOMPARE(s->trace->layers[0].attention.batch[0].weights.size(), size_t(s->trace->numHeads()));
    QCOMPARE(s->trace->layers[1].attention.batch[0].k.rows(), Eigen::Index(s->trace->tokens.size())); // the next token's keys
    QVERIFY(shows(whole(text), 0));
    // layer 1: computed again, holding layer 1
    quint64 g = s->generation;
    win.w.session()->setSelectedLayer(1);
    s = test::waitForSnapshot(*win.w.session(), g, [](const ComputeSnapshot &x) { return x.trace->observed.layer(1); }, 30000);
    QVERIFY(s);
    QCOMPARE(s->trace->layers[1].output.rows(), Eigen::Index(s->trace->tokens.size()));
    QCOMPARE(s->trace->layers[0].output.rows(), Eigen::Index(0));
    QVERIFY(shows(whole(text), 1));
    // typing on: still layer 1 alone, equal to a whole trace of the text
    for (const QString &more : {QStringLiteral(" and"), QStringLiteral(" and runs")}) {
        s = win.show(text + more);
        QVERIFY(s);
        QCOMPARE(s->trace->observed.layers, std::vector<int>{1});
        QVERIFY(shows(whole(text + more), 1));
    }
    text += QStringLiteral(" and runs");
    // the Layers × heads tab reads every layer: the whole trace
    g = s->generation;
    QVERIFY(win.w.showView(QStringLiteral("headRoles")));
    s = test::waitForSnapshot(*win.w.session(), g, [](const ComputeSnapshot &x) { return x.trace->observed.everything(); },
                              30000);
    QVERIFY(s);
    QCOMPARE(s->trace->layers[0].output.rows(), Eigen::Index(s->trace->tokens.size()));
    QCOMPARE(s->trace->layers[1].output.rows(), Eigen::Index(s->trace->tokens.size()));
}

void TestModelWindow::controlsThatDoNotApply()
{
    Window win;
    ComputeSettings before = win.w.controls()->settings();
    before.numHeads = 2;
    win.w.controls()->setSettings(before);
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("bert-tiny")), nullptr));
    for (const char *name : {"headsSpin", "scaleCombo", "normCombo", "dropoutSpin", "projectionCombo", "loadEmbeddingsButton"}) {
        QWidget *c = test::child<QWidget>(win.w.controls(), name);
        QVERIFY2(!c->isEnabled(), name);
        QVERIFY2(c->toolTip().contains(QLatin1String("bert-tiny")) || c->toolTip().contains(QLatin1String("trained")),
                 qPrintable(QStringLiteral("%1: %2").arg(QLatin1String(name), c->toolTip())));
    }
    QCOMPARE(win.w.controls()->settings().numHeads, 4);
    QVERIFY(test::child<QWidget>(win.w.controls(), "headSpin")->isEnabled()); // the head chooser stays
    win.w.useWordVectors();
    QVERIFY(win.w.session()->model() == nullptr);
    QCOMPARE(win.w.controls()->settings().numHeads, 2); // the word vectors' head count comes back
    QVERIFY(test::child<QWidget>(win.w.controls(), "headsSpin")->isEnabled());
    QVERIFY(test::child<QWidget>(win.w.controls(), "scaleCombo")->isEnabled());
}

void TestModelWindow::chipsShowPieces()
{
    Window win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("bert-tiny")), nullptr));
    QVERIFY(win.show(QStringLiteral("Tokenization is unbelievable")));
    TokenChipsView *chips = win.w.queryChips();
    // [CLS] token ##ization is unbelievable [SEP]
    QCOMPARE(chips->chipCount(), 6);
    QVERIFY(chips->isSpecial(0) && chips->isSpecial(5));
    QCOMPARE(chips->chipText(1), QStringLiteral("token"));
    QCOMPARE(chips->chipText(2), QStringLiteral("ization")); // joined to its word: the ## is the join
    QVERIFY(chips->isContinuation(2) && !chips->isContinuation(3));
    QCOMPARE(chips->chipRect(2).left() - chips->chipRect(1).right(), 2); // against "token", a hairline apart
    QVERIFY(chips->chipRect(3).left() - chips->chipRect(2).right() > 2);

    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.show(QStringLiteral("The animal didn't cross.")));
    // The ␣animal ␣didn 't ␣cross .
    QCOMPARE(chips->chipCount(), 6);
    QCOMPARE(chips->chipText(1), QStringLiteral("␣animal")); // the space marker made visible
    QVERIFY(chips->isContinuation(3));                       // 't continues didn
    QVERIFY(!chips->isContinuation(5));                      // '.' is not a piece of "cross"
    QVERIFY(!chips->isSpecial(0));
}

void TestModelWindow::badFolderKeepsModel_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<std::function<QString(const QString &)>>("spoil");
    QTest::addColumn<QStringList>("mentions");
    using Spoil = std::function<QString(const QString &)>;
    const QString g = QStringLiteral("gpt2-tiny");
    QTest::addRow("no config.json") << g << Spoil([](const QString &d) { QFile::remove(d + QStringLiteral("/config.json")); return d; })
                                    << QStringList{"config.json", "no such file"};
    QTest::addRow("no vocab.txt") << "bert-tiny" << Spoil([](const QString &d) { QFile::remove(d + QStringLiteral("/vocab.txt")); return d; })
                                  << QStringList{"vocab.txt"};
    QTest::addRow("unknown model_type") << g << Spoil([](const QString &d) {
        editJson(d + QStringLiteral("/config.json"), [](QJsonObject &o) { o.insert(QStringLiteral("model_type"), QStringLiteral("mamba")); });
        return d;
    }) << QStringList{"config.json", "model_type", "mamba"};
    QTest::addRow("tensor missing") << g << Spoil([](const QString &d) {
        const QString path = d + QStringLiteral("/model.safetensors");
        attnviz_test::Safetensors st = attnviz_test::readSafetensors(path);
        st.header.remove(QStringLiteral("transformer.h.1.mlp.c_fc.weight"));
        attnviz_test::writeSafetensors(path, st);
        return d;
    }) << QStringList{"model.safetensors", "transformer.h.1.mlp.c_fc.weight", "missing"};
    QTest::addRow("truncated") << g << Spoil([](const QString &d) {
        QFile f(d + QStringLiteral("/model.safetensors"));
        f.open(QIODevice::ReadWrite);
        f.resize(f.size() - 1000);
        return d;
    }) << QStringList{"model.safetensors", "truncated"};
    QTest::addRow("pytorch_model.bin only") << g << Spoil([](const QString &d) {
        QFile::rename(d + QStringLiteral("/model.safetensors"), d + QStringLiteral("/pytorch_model.bin"));
        return d;
    }) << QStringList{"pytorch_model.bin", "model.safetensors"};
    QTest::addRow("folder missing") << g << Spoil([](const QString &d) {
        return d + QStringLiteral("/no-such-model");
    }) << QStringList{"no-such-model"};
}

void TestModelWindow::badFolderKeepsModel()
{
    QFETCH(QString, model);
    QFETCH(std::function<QString(const QString &)>, spoil);
    QFETCH(QStringList, mentions);
    QTemporaryDir tmp;
    const QString dir = spoil(copyModelFolder(model, tmp));
    Window win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("distilbert-tiny")), nullptr));
    const std::shared_ptr<Model> inUse = win.w.session()->model();
    QVERIFY(win.show(QStringLiteral("The capital of France is [MASK].")));
    // blocking (sessions, --model): the core's message, nothing changes
    QString error;
    QVERIFY(!win.w.openModel(dir, &error));
    for (const QString &m : mentions)
        QVERIFY2(error.contains(m), qPrintable(error));
    QCOMPARE(win.w.session()->model(), inUse);
    // the menu's way (a thread behind a progress dialog): one message, the status bar says it
    win.w.startOpenModel(dir);
    QTRY_COMPARE_WITH_TIMEOUT(win.messages.size(), 1, 20000);
    QVERIFY2(win.messages.front().contains(error), qPrintable(win.messages.front()));
    QVERIFY(win.messages.front().contains(QLatin1String("keeps working")));
    QVERIFY(win.w.statusText().contains(QLatin1String("distilbert-tiny stays in use")));
    QCOMPARE(win.w.session()->model(), inUse);
    QCOMPARE(win.w.modelSource(), QDir::cleanPath(fixtureModel(QStringLiteral("distilbert-tiny"))));
    // and the model in use still computes
    const SnapshotPtr s = win.show(QStringLiteral("Paris is the [MASK] of France, isn't it? [MASK]!"));
    QVERIFY(s);
    QCOMPARE(s->tq(), 16);
}

void TestModelWindow::readThatThrowsKeepsModel_data()
{
    QTest::addColumn<std::function<void()>>("raise");
    QTest::addColumn<QString>("says");
    using Raise = std::function<void()>;
    QTest::addRow("std::bad_alloc") << Raise([] { throw std::bad_alloc(); }) << QStringLiteral("cannot be read: out of memory");
    QTest::addRow("std::length_error") << Raise([] { std::vector<char>().reserve(size_t(-1)); })
                                       << QStringLiteral("cannot be read: a size beyond what it can hold (vector::reserve)");
    QTest::addRow("std::runtime_error") << Raise([] { throw std::runtime_error("a library's own error"); })
                                        << QStringLiteral("cannot be read: a library's own error");
    QTest::addRow("not a std::exception") << Raise([] { throw 42; }) << QStringLiteral("cannot be read: an unexpected error");
}

// A read that throws on the worker thread (what the core does not foresee: an allocation, a
// library's exception): the dialog's one-line message names the folder, the model in use stays.
void TestModelWindow::readThatThrowsKeepsModel()
{
    QFETCH(std::function<void()>, raise);
    QFETCH(QString, says);
    Window win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("distilbert-tiny")), nullptr));
    const std::shared_ptr<Model> inUse = win.w.session()->model();
    QVERIFY(win.show(QStringLiteral("The capital of France is [MASK].")));
    ModelLoader::setReader([raise](const QString &, std::unique_ptr<Model> &, const LoadProgress &) -> Status {
        raise();
        return {};
    });
    struct Restore {
        ~Restore() { ModelLoader::setReader({}); }
    } restore;
    const QString dir = fixtureModel(QStringLiteral("gpt2-tiny"));
    // the menu's way: on a thread behind a progress dialog
    win.w.startOpenModel(dir);
    QTRY_COMPARE_WITH_TIMEOUT(win.messages.size(), 1, 20000);
    const QString message = win.messages.front().section(QStringLiteral("\n\n"), 0, 0);
    QCOMPARE(message, QStringLiteral("gpt2-tiny: ") + says);
    QVERIFY(win.messages.front().contains(QLatin1String("keeps working")));
    QVERIFY2(win.w.statusText().contains(QLatin1String("distilbert-tiny stays in use")), qPrintable(win.w.statusText()));
    QCOMPARE(win.w.session()->model(), inUse);
    // blocking (sessions, --model): the same message
    QString error;
    QVERIFY(!win.w.openModel(dir, &error));
    QCOMPARE(error, message);
    QCOMPARE(win.w.session()->model(), inUse);
    // the reader back: the folder opens
    ModelLoader::setReader({});
    QVERIFY(win.w.openModel(dir, nullptr));
    QVERIFY(win.show(QStringLiteral("The animal")));
}

void TestModelWindow::progressDialogPathAndDrop()
{
    Window win;
    // the menu's path: read on a thread, then the views show the model
    win.w.startOpenModel(fixtureModel(QStringLiteral("bert-tiny")));
    QTRY_COMPARE_WITH_TIMEOUT(win.w.modelSource(), QDir::cleanPath(fixtureModel(QStringLiteral("bert-tiny"))), 20000);
    SnapshotPtr s = win.show(QStringLiteral("The capital of France is [MASK]."));
    QVERIFY(s);
    QCOMPARE(win.w.queryChips()->chipToken(0)->id, 101);
    // a folder dropped on the window (its config.json works too)
    for (const QString &dropped : {fixtureModel(QStringLiteral("gpt2-tiny")),
                                   fixtureModel(QStringLiteral("distilbert-tiny")) + QStringLiteral("/config.json")}) {
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(dropped)});
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QCoreApplication::sendEvent(&win.w, &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QCoreApplication::sendEvent(&win.w, &drop);
        QTRY_COMPARE_WITH_TIMEOUT(win.w.modelSource(), QFileInfo(dropped).isDir() ? QDir::cleanPath(dropped)
                                                                                  : QFileInfo(dropped).absolutePath(),
                                  20000);
    }
    QCOMPARE(win.w.modelInfo().family, std::string("distilbert"));
    // a file that is not a model folder is not taken
    QMimeData text;
    text.setUrls({QUrl::fromLocalFile(fixtureModel(QStringLiteral("gpt2-tiny")) + QStringLiteral("/vocab.json"))});
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &text, Qt::LeftButton, Qt::NoModifier);
    enter.setAccepted(false);
    QCoreApplication::sendEvent(&win.w, &enter);
    QVERIFY(!enter.isAccepted());
}

void TestModelWindow::modelMenuAndRecent()
{
    QSettings().remove(QStringLiteral("models/recent"));
    Window win;
    QMenu *menu = win.w.findChild<QMenu *>(QStringLiteral("modelMenu"));
    QVERIFY(menu);
    auto checked = [menu] {
        for (QAction *a : menu->actions())
            if (a->isCheckable() && a->isChecked())
                return a->data().toString();
        return QStringLiteral("(none)");
    };
    QCOMPARE(checked(), QString()); // word vectors at start-up
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("bert-tiny")), nullptr));
    QCOMPARE(checked(), QDir::cleanPath(fixtureModel(QStringLiteral("bert-tiny"))));
    const QStringList recent = win.w.modelLoader()->recent();
    QCOMPARE(recent.value(0), QDir::cleanPath(fixtureModel(QStringLiteral("bert-tiny"))));
    QCOMPARE(recent.value(1), QDir::cleanPath(fixtureModel(QStringLiteral("gpt2-tiny"))));
    // a recent entry opens that model
    for (QAction *a : menu->actions())
        if (a->data().toString() == recent.value(1))
            a->trigger();
    QTRY_COMPARE_WITH_TIMEOUT(win.w.modelSource(), recent.value(1), 20000);
    QCOMPARE(checked(), recent.value(1));
    // the File menu lists them too
    QMenu *fileRecent = win.w.findChild<QMenu *>(QStringLiteral("recentModelsMenu"));
    QVERIFY(fileRecent && fileRecent->isEnabled());
    QCOMPARE(fileRecent->actions().size(), 2);
    // Word vectors (seed notebooks)
    menu->findChild<QAction *>(QStringLiteral("wordVectorsModelAction"));
    for (QAction *a : menu->actions())
        if (a->objectName() == QLatin1String("wordVectorsModelAction"))
            a->trigger();
    QCOMPARE(win.w.modelSource(), QString());
    QCOMPARE(checked(), QString());
    QVERIFY(win.w.session()->model() == nullptr);
}

void TestModelWindow::bundledModel()
{
    QVERIFY2(!bundledModelDir().isEmpty(), "the source tree's resources/models/attnviz-tiny-2");
    QVERIFY2(!bundledModelDir(kBundledGpt2Arg).isEmpty(), "the source tree's resources/models/attnviz-tiny");
    QVERIFY2(!bundledModelDir(kBundledDatesArg).isEmpty(), "the source tree's resources/models/attnviz-dates");
    QVERIFY(bundledModelDir(QStringLiteral("bundled-nothing")).isEmpty());
    Window win;
    QString error;
    QVERIFY2(win.w.openModel(kBundledModelArg, &error), qPrintable(error));
    QCOMPARE(win.w.modelSource(), kBundledModelArg);
    QCOMPARE(win.w.modelInfo().family, std::string("llama"));
    const SnapshotPtr s = win.show(QStringLiteral("The cat sat on the mat. The cat sat on the mat."));
    QVERIFY(s);
    QCOMPARE(s->numLayers(), win.w.modelInfo().layers);
    // its weights will change; what is fixed is that every row of every head sums to one
    for (int l = 0; l < s->numLayers(); ++l)
        for (int h = 0; h < win.w.modelInfo().heads; ++h)
            for (int i = 0; i < s->tq(); ++i)
                QVERIFY(std::abs(s->weights(l, h).row(i).sum() - 1.0f) < 1e-4f);
    int entries = 0;
    for (QAction *a : win.w.findChild<QMenu *>(QStringLiteral("modelMenu"))->actions()) {
        if (a->objectName() == QLatin1String("bundledModelAction"))
            QVERIFY(a->isEnabled() && a->isChecked() && a->text() == bundledModelTitle());
        if (a->objectName() == QLatin1String("bundledGpt2ModelAction"))
            QVERIFY(a->isEnabled() && !a->isChecked() && a->text() == bundledModelTitle(kBundledGpt2Arg));
        if (a->objectName() == QLatin1String("bundledDatesModelAction"))
            QVERIFY(a->isEnabled() && !a->isChecked() && a->text() == bundledModelTitle(kBundledDatesArg));
        entries += a->objectName().startsWith(QLatin1String("bundled"));
    }
    QCOMPARE(entries, 3);
    // the first bundled model, a GPT-2, by its own name
    QVERIFY2(win.w.openModel(kBundledGpt2Arg, &error), qPrintable(error));
    QCOMPARE(win.w.modelSource(), kBundledGpt2Arg);
    QCOMPARE(win.w.modelInfo().family, std::string("gpt2"));
    // the encoder-decoder one, a T5
    QVERIFY2(win.w.openModel(kBundledDatesArg, &error), qPrintable(error));
    QCOMPARE(win.w.modelSource(), kBundledDatesArg);
    QCOMPARE(win.w.modelInfo().family, std::string("t5"));
    QVERIFY(win.w.modelInfo().architecture.encoderDecoder);
}

void TestModelWindow::cutAtPositions()
{
    Window win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr)); // n_positions 32
    QString text;
    for (int i = 0; i < 40; ++i)
        text += QStringLiteral(" cat");
    const SnapshotPtr s = win.show(text);
    QVERIFY(s);
    QCOMPARE(s->tq(), 32);
    QCOMPARE(s->totalQueryTokens, 40);
    QCOMPARE(win.w.queryChips()->chipCount(), 32);
    QVERIFY2(win.w.statusText().contains(QLatin1String("cut at 32 of 40 tokens")), qPrintable(win.w.statusText()));
    QVERIFY2(win.w.statusText().contains(QString::fromStdString(s->trace->cutReason)), qPrintable(win.w.statusText()));
}

// Typing recomputes a causal model only from the first changed token, into one of two traces the
// compute thread keeps (the other is on screen), copying rows the shown one shares: after each edit
// the snapshot's weights of every layer and head and its predictions at every position equal a fresh
// trace of the same text by another instance of the model.
void TestModelWindow::typingEqualsFreshCompute_data()
{
    QTest::addColumn<bool>("holdAll"); // every snapshot kept alive: no trace can be written again
    QTest::addRow("views hold the shown snapshot") << false;
    QTest::addRow("every snapshot held") << true;
}

void TestModelWindow::typingEqualsFreshCompute()
{
    QFETCH(bool, holdAll);
    Window win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    std::unique_ptr<Model> fresh;
    QVERIFY(openPretrained(fixtureModel(QStringLiteral("gpt2-tiny")).toStdString(), {}, fresh).ok());
    const QStringList edits = {
        QStringLiteral("The cat sat on the"),         // first text
        QStringLiteral("The cat sat on the m"),       // typed
        QStringLiteral("The cat sat on the ma"),      // typed again (the trace before last comes back)
        QStringLiteral("The cat sat on the mat"),     // and again
        QStringLiteral("The cat sat on the ma"),      // deleted
        QStringLiteral("The cat sat on the mat"),     // typed
        QStringLiteral("The big cat sat on the mat"), // pasted in the middle
        QStringLiteral("The big cat sat on the mat."),
        QStringLiteral("The big cat sat on the mat. It"), // the shown trace shares more than the one written
    };
    std::vector<SnapshotPtr> held;
    for (const QString &text : edits) {
        const SnapshotPtr s = win.show(text);
        QVERIFY2(s, qPrintable(text));
        if (holdAll)
            held.push_back(s);
        TraceRequest req;
        req.text = text.toStdString();
        req.allPredictions = true; // every position, as the dock shows them on hover
        Trace<float> want;
        QVERIFY(fresh->trace(req, want).ok());
        QCOMPARE(s->tq(), int(want.tokens.size()));
        double worst = 0;
        for (int l = 0; l < want.numLayers(); ++l)
            for (int h = -1; h < want.numHeads(); ++h)
                worst = std::max(
                    worst, double((s->weights(l, h).toDense() - want.weights(l, h).toDense()).cwiseAbs().maxCoeff()));
        QVERIFY2(worst < 1e-5, qPrintable(QStringLiteral("%1: weights differ by %2").arg(text).arg(worst)));
        // the predictions: the trace's (the last position, and those kept from earlier texts), and
        // every other position as the dock shows it on hover (computed from the shared trace)
        const Predictions &got = s->trace->predictions, &ref = want.predictions;
        QCOMPARE(got.next.size(), ref.next.size());
        QCOMPARE(got.next.back().size(), size_t(10));
        PredictionsView *dock = win.w.predictionsView();
        for (size_t i = 0; i < ref.next.size(); ++i) {
            const QString where = QStringLiteral("%1: position %2").arg(text).arg(i);
            if (!got.next[i].empty()) {
                QCOMPARE(got.next[i].size(), ref.next[i].size());
                for (size_t k = 0; k < ref.next[i].size(); ++k)
                    QVERIFY2(std::abs(got.next[i][k].p - ref.next[i][k].p) < 1e-5, qPrintable(where));
                QCOMPARE(std::isnan(got.actualNext[i]), std::isnan(ref.actualNext[i]));
                if (!std::isnan(ref.actualNext[i]))
                    QVERIFY2(std::abs(got.actualNext[i] - ref.actualNext[i]) < 1e-5, qPrintable(where));
            }
            dock->setHoveredPosition(int(i));
            QCOMPARE(int(dock->groups().size()), 1);
            const PredictionsView::Group &g = dock->groups().front();
            QCOMPARE(g.position, int(i));
            QCOMPARE(g.entries.size(), ref.next[i].size());
            for (size_t k = 0; k < ref.next[i].size(); ++k) {
                QCOMPARE(g.entries[k].id, ref.next[i][k].id);
                QVERIFY2(std::abs(g.entries[k].p - ref.next[i][k].p) < 1e-5, qPrintable(where));
            }
            QCOMPARE(std::isnan(g.actualNext), std::isnan(ref.actualNext[i]));
            if (!std::isnan(ref.actualNext[i]))
                QVERIFY2(std::abs(g.actualNext - ref.actualNext[i]) < 1e-5, qPrintable(where));
        }
        dock->setHoveredPosition(-1);
        QVERIFY2(std::abs(got.next.back().front().p - ref.next.back().front().p) < 1e-5, qPrintable(text));
    }
}

void TestModelWindow::gpuBackendNote()
{
    Window win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.show(QStringLiteral("a b c d")));
    QVERIFY(!win.w.statusText().contains(QLatin1String("computed on the CPU")));
    test::setCombo(test::child<QComboBox>(win.w.controls(), "backendCombo"), 1); // GPU
    const SnapshotPtr s = win.settle();
    QVERIFY(s);
    // offscreen, no GPU starts: what computed it is the CPU, never the chosen backend's name, and why
    QCOMPARE(s->backendName, QStringLiteral("cpu"));
    QVERIFY2(win.w.statusText().contains(QLatin1String("computed on the CPU")), qPrintable(win.w.statusText()));
}

// The Compare tab's side B computes with the window's model: a second sentence on gpt2-tiny gives the
// reference's weights there too.
void TestModelWindow::compareOnTheModel()
{
    const QJsonObject want = expectedCase(QStringLiteral("gpt2-tiny"), 2);
    Window win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    CompareView *compare = win.w.compareView();
    QCOMPARE(compare->sessionB()->model(), win.w.session()->model());
    QVERIFY(!test::child<QWidget>(compare->controlsB(), "scaleCombo")->isEnabled());
    QVERIFY(win.w.showView(QStringLiteral("compare")));
    QTRY_VERIFY_WITH_TIMEOUT(compare->hasSideB() && compare->sessionB()->snapshot(), 20000); // B: a copy of A first
    compare->sessionB()->setDebounceMs(0);
    {
        // A's map as wide as B's, though only A's rows carry the tokens (A's was a third of B's)
        auto *pair = test::child<QCustomPlot>(compare, "comparePairPlot");
        QTRY_VERIFY(pair->axisRects().size() >= 2 && pair->axisRects()[1]->width() > 20);
        pair->replot();
        const QList<QCPAxisRect *> rects = pair->axisRects();
        QVERIFY2(std::abs(rects[0]->width() - rects[1]->width()) <= 3,
                 qPrintable(QStringLiteral("%1 vs %2").arg(rects[0]->width()).arg(rects[1]->width())));
    }
    const quint64 g = test::shownGeneration(*compare->sessionB());
    compare->sentenceEditB()->setText(want.value(QStringLiteral("text")).toString());
    const SnapshotPtr b = test::waitForSnapshot(*compare->sessionB(), g, [&](const ComputeSnapshot &s) {
        return s.sentence == want.value(QStringLiteral("text")).toString() && s.hasResult();
    }, 30000);
    QVERIFY2(b, compare->sessionB()->snapshot() ? qPrintable(compare->sessionB()->snapshot()->message) : "no snapshot");
    const QJsonArray ref = want.value(QStringLiteral("attentions")).toArray()[1].toArray()[3].toArray();
    double worst = 0;
    for (int i = 0; i < ref.size(); ++i)
        for (int j = 0; j < ref.size(); ++j)
            worst = std::max(worst, std::abs(double(b->weights(1, 3)(i, j)) - ref[i].toArray()[j].toDouble()));
    QVERIFY2(worst < 1e-5, qPrintable(QString::number(worst)));
    // the next tokens after each side's last token, and a logit difference read on both sides: each
    // side's value equals the difference of the two tokens' logits summed by attribution
    auto *next = test::child<ComparePredictions>(compare, "comparePredictions");
    QTRY_VERIFY(next->isVisible() && next->secondId() >= 0);
    const SnapshotPtr a = win.w.session()->snapshot();
    QCOMPARE(next->firstId(), a->trace->predictions.next.back().front().id);
    for (const auto &[side, value] : {std::pair{a, next->differenceA()}, std::pair{b, next->differenceB()}}) {
        const int last = int(side->trace->tokens.size()) - 1;
        Attribution x, y;
        QVERIFY(attribute(*side->model, *side->trace, last, next->firstId(), x));
        QVERIFY(attribute(*side->model, *side->trace, last, next->secondId(), y));
        QVERIFY2(std::abs(value - (x.cappedLogit - y.cappedLogit)) < 1e-4,
                 qPrintable(QStringLiteral("%1 vs %2").arg(value).arg(x.cappedLogit - y.cappedLogit)));
    }
    QVERIFY(next->text().contains(QStringLiteral("Logit difference")));
    win.w.useWordVectors();
    QVERIFY(compare->sessionB()->model() == nullptr);
    QTRY_VERIFY(!next->isVisible());
}

void TestModelWindow::sessionRoundTrip()
{
    QTemporaryDir tmp;
    const QString path = tmp.filePath(QStringLiteral("bert.attnviz"));
    const QJsonObject want = expectedCase(QStringLiteral("bert-tiny"), 0);
    {
        Window win;
        QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("bert-tiny")), nullptr));
        QVERIFY(win.show(want.value(QStringLiteral("text")).toString()));
        win.w.session()->setSelectedLayer(1);
        win.w.session()->setSelectedHead(3);
        QString error;
        QVERIFY2(win.w.saveSession(path, &error), qPrintable(error));
    }
    QVERIFY(test::readJson(path).value(QStringLiteral("model")).toString().endsWith(QLatin1String("/bert-tiny")));
    Window win;
    QString report;
    QVERIFY2(win.w.openSession(path, &report), qPrintable(report));
    QVERIFY2(!report.contains(QLatin1String("model:")) && !report.contains(QLatin1String("view.")), qPrintable(report));
    QCOMPARE(win.w.modelSource(), QDir::cleanPath(fixtureModel(QStringLiteral("bert-tiny"))));
    QVERIFY(win.settle());
    QCOMPARE(win.w.session()->selectedLayer(), 1);
    QCOMPARE(win.w.session()->selectedHead(), 3);
    QCOMPARE(win.w.controls()->shownLayer(), 1);
    const QJsonArray att = want.value(QStringLiteral("attentions")).toArray();
    QVERIFY(worstHeatmapError(*win.w.heatmapView(), att[1].toArray()[3].toArray()) < 1e-5);
    // "bundled" is saved by that name
    QVERIFY(win.w.openModel(kBundledModelArg, nullptr));
    QVERIFY(win.w.saveSession(path, nullptr));
    QCOMPARE(test::readJson(path).value(QStringLiteral("model")).toString(), kBundledModelArg);
}

void TestModelWindow::sessionWithMissingFolder()
{
    QTemporaryDir tmp;
    const QString path = tmp.filePath(QStringLiteral("gone.attnviz"));
    {
        QTemporaryDir models;
        const QString dir = copyModelFolder(QStringLiteral("gpt2-tiny"), models);
        Window win;
        QVERIFY(win.w.openModel(dir, nullptr));
        QVERIFY(win.w.saveSession(path, nullptr));
    } // the folder is removed here
    Window win;
    QString report;
    QVERIFY(win.w.openSession(path, &report));
    QVERIFY2(report.contains(QLatin1String("model:")) && report.contains(QLatin1String("word vectors")), qPrintable(report));
    QCOMPARE(win.w.modelSource(), QString());
    QVERIFY(win.w.session()->model() == nullptr);
    QVERIFY(win.show(QStringLiteral("I must go back to my ship")));
}

// Every command of the README's "Real models" section runs (the Hub downloads aside: no network here),
// with the folder the README calls gpt2 replaced by the gpt2-tiny fixture and the window told to quit
// once drawn (--screenshot).
void TestModelWindow::readmeCommandsRun_data()
{
    QTest::addColumn<QString>("readme");
    QTest::addColumn<QStringList>("args"); // GPT2 = the fixture folder, OUT/ = a temporary folder
    QTest::addRow("window bundled") << QStringLiteral("attnviz --model bundled --layer 1")
                                    << QStringList{"--model", "bundled", "--layer", "1", "--screenshot", "OUT/w.png"};
    QTest::addRow("window folder") << QStringLiteral("`attnviz --model gpt2` on the command line")
                                   << QStringList{"--model", "GPT2", "--screenshot", "OUT/w.png"};
    QTest::addRow("export") << QStringLiteral("attnviz export --model gpt2 --layer 5 --head 1 --sentence \"The animal didn't cross "
                                              "the street because it was too tired\" --out fig.png")
                            << QStringList{"export", "--model", "GPT2", "--layer", "1", "--head", "1", "--sentence",
                                           "The animal didn't cross the street because it was too tired", "--out", "OUT/fig.png"};
    QTest::addRow("model info") << QStringLiteral("attnviz model info bundled") << QStringList{"model", "info", "bundled"};
    QTest::addRow("model run") << QStringLiteral("attnviz model run bundled --text \"The cat sat on the mat\"")
                               << QStringList{"model", "run", "bundled", "--text", "The cat sat on the mat", "-o", "OUT/run.json"};
    QTest::addRow("bench --ui --model") << QStringLiteral("attnviz bench --ui --model bundled --tokens 256")
                                        << QStringList{"bench", "--ui", "--model", "bundled", "--tokens", "64", "--reps", "3"};
    QTest::addRow("bench --ui --seeded") << QStringLiteral("attnviz bench --ui --seeded gpt2-small --tokens 128")
                                         << QStringList{"bench", "--ui", "--seeded", "gpt2-small", "--tokens", "8", "--reps", "3"};
    QTest::addRow("tokenize") << QStringLiteral("attnviz tokenize --model bundled \"The cat sat on the mat\"")
                              << QStringList{"tokenize", "--model", "bundled", "The cat sat on the mat"};
}

void TestModelWindow::readmeCommandsRun()
{
    QFETCH(QString, readme);
    QFETCH(QStringList, args);
    const QString text = QString::fromUtf8(test::readAll(QString::fromUtf8(ATTNVIZ_SOURCE_PATH("/README.md"))));
    QVERIFY2(text.contains(readme), qPrintable(QStringLiteral("the README no longer shows: ") + readme));
    QTemporaryDir dir;
    QString written;
    for (QString &a : args) {
        if (a == QLatin1String("GPT2"))
            a = fixtureModel(QStringLiteral("gpt2-tiny"));
        if (a.startsWith(QLatin1String("OUT/")))
            a = written = dir.filePath(a.mid(4));
    }
    args << QStringLiteral("--no-restore");
    if (args.front() != QLatin1String("--model"))
        args.removeLast(); // only the window has --no-restore
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    p.setProcessEnvironment(env);
    p.start(QString::fromUtf8(ATTNVIZ_BINARY), args);
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, qPrintable(QString::fromUtf8(p.readAllStandardError())));
    if (!written.isEmpty())
        QVERIFY(QFileInfo(written).size() > 0);
    else
        QVERIFY(p.readAllStandardOutput().size() > 0);
}

// The stack's and a model's Layers tabs share their name and are never listed together: asked for by
// the stack's id (`--tab layers`, a session) with a model open, the model's is shown.
void TestModelWindow::layersTabFollowsItsName()
{
    Window win;
    QVERIFY(win.w.openModel(fixtureModel(QStringLiteral("gpt2-tiny")), nullptr));
    QVERIFY(win.show(QStringLiteral("the ship and the crew")));
    QVERIFY(win.w.showView(QStringLiteral("weights")));
    QVERIFY(win.w.showView(QStringLiteral("layers")));
    QCOMPARE(win.w.currentViewId(), QStringLiteral("headRoles"));
    QVERIFY(win.w.showView(QStringLiteral("weights")));
    QVERIFY(!win.w.showView(QStringLiteral("noSuchView")));
    QCOMPARE(win.w.currentViewId(), QStringLiteral("weights"));
}

QTEST_MAIN(TestModelWindow)
#include "tst_modelwindow.moc"
