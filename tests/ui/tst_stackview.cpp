// SPDX-License-Identifier: GPL-3.0-or-later
// Stack mode of the live window (offscreen): the depth control, the layers x heads grid against
// computeStack run here on the same token vectors, a click on a thumbnail, the residual-stream
// numbers, loading GPT-2-named safetensors (a good file and corrupt ones), and depth back to 1.
// Uses the hand-made toy table tests/fixtures/embeddings/toy-en16.txt (16-d).
#include "controls/controlpanel.h"
#include "files/figureexport.h"
#include "views/heatmapview.h"
#include "views/layergridview.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "testsupport.h"
#include "views/residualview.h"
#include "live/stackcompute.h"
#include "controls/stackcontrols.h"

#include "attnviz/embeddings.h"
#include "attnviz/transformer.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QSpinBox>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <functional>

using namespace attnviz;
using namespace attnviz::ui;

namespace {

const QString kToyTable = test::toyTable();
const QString kStackFile = test::stackFile();

using test::child;
using test::readAll;
using test::setCombo;

// Rewrites a safetensors file's JSON header, keeping the data block.
QByteArray withHeader(const QByteArray &file, const std::function<void(QJsonObject &)> &edit)
{
    quint64 n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | static_cast<unsigned char>(file[i]);
    QJsonObject head = QJsonDocument::fromJson(file.mid(8, int(n))).object();
    edit(head);
    const QByteArray h = QJsonDocument(head).toJson(QJsonDocument::Compact);
    QByteArray out(8, '\0');
    for (int i = 0; i < 8; ++i)
        out[i] = char((quint64(h.size()) >> (8 * i)) & 0xFF);
    return out + h + file.mid(8 + int(n));
}

} // namespace

class TestStackView : public QObject {
    Q_OBJECT

private:
    std::unique_ptr<MainWindow> m_w;
    EmbeddingTable m_table;

    SnapshotPtr waitFor(quint64 after, const std::function<bool(const ComputeSnapshot &)> &pred = {}, int ms = 10000)
    {
        return test::waitForSnapshot(*m_w->session(), after, pred, ms);
    }
    quint64 gen() const { return test::shownGeneration(*m_w->session()); }
    QSpinBox *depthSpin() { return child<QSpinBox>(m_w->controls(), "depthSpin"); }

    // Sets heads and depth through the controls and waits for the stack.
    SnapshotPtr stackOf(int depth, int heads)
    {
        const quint64 g = gen();
        child<QSpinBox>(m_w->controls(), "headsSpin")->setValue(heads);
        depthSpin()->setValue(depth);
        return waitFor(g, [&](const ComputeSnapshot &s) {
            return s.hasResult() && s.deep() && s.numLayers() == depth && s.attention(0).numHeads == heads;
        });
    }

    // The stack computed here, independently of the window, on the same sentence.
    StackResult<float> reference(const StackSettings &ss, int heads, const StackWeights<float> *weights = nullptr)
    {
        const EmbeddedSentence e = embedSentence(m_table, MainWindow::defaultSentence().toStdString());
        StackWeights<float> seeded;
        if (!weights) {
            const Status st = seededStackWeights<float>(16, ss.depth, ss.seed, ss.positions,
                                                        WordStackModel::kMaxPositions, seeded);
            if (!st.ok())
                qFatal("%s", st.message.c_str());
            weights = &seeded;
        }
        StackConfig cfg;
        cfg.depth = ss.depth;
        cfg.attention.numHeads = heads;
        cfg.attention.keepScores = false;
        cfg.norm = ss.norm;
        cfg.activation = ss.activation;
        cfg.positions = ss.positions;
        cfg.finalNorm = ss.norm == NormPlacement::Pre;
        StackResult<float> r;
        const Status st = computeStack(cfg, *weights, e.matrix, r);
        if (!st.ok())
            qFatal("%s", st.message.c_str());
        return r;
    }

private slots:
    void initTestCase()
    {
        const Status st = loadEmbeddings(kToyTable.toStdString(), m_table);
        QVERIFY2(st.ok(), st.message.c_str());
    }

    void init()
    {
        m_w = std::make_unique<MainWindow>();
        QString error;
        QVERIFY2(m_w->loadEmbeddingsFile(kToyTable, &error), qPrintable(error));
        m_w->resize(1300, 900);
        m_w->show();
        QVERIFY(QTest::qWaitForWindowExposed(m_w.get()));
        QVERIFY(waitFor(0, [](const ComputeSnapshot &s) { return s.hasResult() && s.tq() == 11; }));
    }
    void cleanup() { m_w.reset(); }

    void singleLayerIsTheDefault()
    {
        QCOMPARE(depthSpin()->value(), 1);
        const SnapshotPtr s = m_w->session()->snapshot();
        QVERIFY(!s->deep());
        QCOMPARE(s->settings.stack.depth, 1);
        QTabWidget *tabs = m_w->tabs();
        QVERIFY(!tabs->isTabVisible(tabs->indexOf(m_w->layerGridView())));
        QVERIFY(!tabs->isTabVisible(tabs->indexOf(m_w->residualView())));
    }

    void gridHoldsEveryLayerAndHead_data()
    {
        QTest::addColumn<int>("depth");
        QTest::addColumn<int>("heads");
        QTest::addColumn<int>("norm");
        QTest::addColumn<int>("positions");
        QTest::addRow("2 x 4 post-norm") << 2 << 4 << int(NormPlacement::Post) << int(PositionEncoding::None);
        QTest::addRow("3 x 2 pre-norm sinusoidal")
            << 3 << 2 << int(NormPlacement::Pre) << int(PositionEncoding::Sinusoidal);
        QTest::addRow("4 x 8 post-norm learned")
            << 4 << 8 << int(NormPlacement::Post) << int(PositionEncoding::Learned);
    }

    void gridHoldsEveryLayerAndHead()
    {
        QFETCH(int, depth);
        QFETCH(int, heads);
        QFETCH(int, norm);
        QFETCH(int, positions);
        setCombo(child<QComboBox>(m_w->controls(), "blockNormCombo"), norm);
        setCombo(child<QComboBox>(m_w->controls(), "positionsCombo"), positions);
        const SnapshotPtr s = stackOf(depth, heads);
        QVERIFY(s);
        QTabWidget *tabs = m_w->tabs();
        QVERIFY(tabs->isTabVisible(tabs->indexOf(m_w->layerGridView())));
        tabs->setCurrentWidget(m_w->layerGridView());
        QCoreApplication::processEvents();
        LayerGridView *g = m_w->layerGridView();
        QCOMPARE(g->layerCount(), depth);
        QCOMPARE(g->headCount(), heads);
        QCOMPARE(g->thumbnailCount(), depth * heads);
        QCOMPARE(g->cellsPerSide(), 11);
        const StackResult<float> ref = reference(s->settings.stack, heads);
        double maxDiff = 0;
        for (int l = 0; l < depth; ++l)
            for (int h = 0; h < heads; ++h) {
                const Mat<float> &w = ref.layers[size_t(l)].attention.batch[0].weights[size_t(h)];
                for (int i = 0; i < 11; ++i)
                    for (int j = 0; j < 11; ++j)
                        maxDiff = std::max(maxDiff, std::abs(g->cellValue(l, h, i, j) - double(w(i, j))));
            }
        QVERIFY2(maxDiff < 1e-6, qPrintable(QString::number(maxDiff)));
        // the layers differ: layer 1 does not repeat layer 0
        const Mat<float> &w0 = ref.layers[0].attention.batch[0].weights[0];
        const Mat<float> &w1 = ref.layers[1].attention.batch[0].weights[0];
        QVERIFY((w0 - w1).cwiseAbs().maxCoeff() > 1e-3f);
        QVERIFY(g->title().contains(QStringLiteral("%1 layers, %2 heads").arg(depth).arg(heads)));
    }

    void clickingAThumbnailOpensThatLayerAndHead()
    {
        const SnapshotPtr s = stackOf(3, 2);
        QVERIFY(s);
        QCOMPARE(m_w->session()->selectedLayer(), 0);
        m_w->tabs()->setCurrentWidget(m_w->layerGridView());
        QCoreApplication::processEvents();
        LayerGridView *g = m_w->layerGridView();
        g->plot()->replot(QCustomPlot::rpImmediateRefresh);
        QCOMPARE(g->highlighted(), qMakePair(0, 0));
        const QPoint at = g->plot()->mapFrom(g, g->thumbnailCenter(2, 1));
        QTest::mouseClick(g->plot(), Qt::LeftButton, Qt::NoModifier, at);
        QCoreApplication::processEvents();
        QCOMPARE(m_w->session()->selectedLayer(), 2);
        QCOMPARE(m_w->session()->selectedHead(), 1);
        QCOMPARE(m_w->tabs()->currentWidget(), static_cast<QWidget *>(m_w->heatmapView()));
        const SnapshotPtr now = m_w->session()->snapshot();
        QCOMPARE(now, s); // same computation, another layer shown
        QCOMPARE(now->layerIndex(m_w->session()->selectedLayer()), 2);
        const Mat<float> &w = s->trace->layers[2].attention.batch[0].weights[1];
        HeatmapView *h = m_w->heatmapView();
        for (int i = 0; i < 11; ++i)
            for (int j = 0; j < 11; ++j)
                QCOMPARE(h->cellValue(i, j), double(w(i, j)));
        QVERIFY2(h->title().contains(QStringLiteral("layer 2 of 3")), qPrintable(h->title()));
        QVERIFY(m_w->statusText().contains(QStringLiteral("layer 2 of 3")));
        QCOMPARE(child<QSpinBox>(m_w->controls(), "layerSpin")->value(), 2);
        // the layer control selects too, without recomputing
        const quint64 generation = m_w->session()->generation();
        child<QSpinBox>(m_w->controls(), "layerSpin")->setValue(1);
        QCOMPARE(m_w->session()->selectedLayer(), 1);
        QCOMPARE(m_w->session()->generation(), generation);
        QCOMPARE(h->cellValue(3, 4), double(s->trace->layers[1].attention.batch[0].weights[1](3, 4)));
        child<QSpinBox>(m_w->controls(), "layerSpin")->setValue(2);
        // the grid follows the selection; the layer stays while typing
        m_w->tabs()->setCurrentWidget(g);
        QCoreApplication::processEvents();
        QCOMPARE(g->highlighted(), qMakePair(2, 1));
        m_w->setSentence(QStringLiteral("the ship and the crew"));
        const SnapshotPtr typed =
            waitFor(now->generation, [](const ComputeSnapshot &s) { return s.hasResult() && s.tq() == 5; });
        QVERIFY(typed);
        QCOMPARE(m_w->session()->selectedLayer(), 2);
        QCOMPARE(typed->weights(m_w->session()->selectedLayer(), 1), typed->trace->layers[2].attention.batch[0].weights[1]);
        // a gap between thumbnails selects nothing
        const QPoint a = g->thumbnailCenter(0, 0), b = g->thumbnailCenter(0, 1);
        QTest::mouseClick(g->plot(), Qt::LeftButton, Qt::NoModifier, g->plot()->mapFrom(g, (a + b) / 2));
        QCOMPARE(m_w->session()->selectedLayer(), 2);
    }

    void residualViewShowsNormsAndCosines()
    {
        setCombo(child<QComboBox>(m_w->controls(), "positionsCombo"), int(PositionEncoding::Sinusoidal));
        setCombo(child<QComboBox>(m_w->controls(), "blockNormCombo"), int(NormPlacement::Pre));
        const SnapshotPtr s = stackOf(3, 4);
        QVERIFY(s);
        m_w->tabs()->setCurrentWidget(m_w->residualView());
        QCoreApplication::processEvents();
        ResidualView *r = m_w->residualView();
        QCOMPARE(r->stageCount(), 4);
        const StackResult<float> ref = reference(s->settings.stack, 4);
        for (int stage = 0; stage < 4; ++stage) {
            const Mat<float> &x = stage == 0 ? ref.input : ref.layers[size_t(stage - 1)].output;
            for (int i = 0; i < 11; ++i) {
                const Eigen::VectorXd v = x.row(i).transpose().cast<double>();
                const Eigen::VectorXd v0 = ref.input.row(i).transpose().cast<double>();
                QVERIFY(std::abs(r->normAt(stage, i) - v.norm()) < 1e-4 * (1 + v.norm()));
                QVERIFY(std::abs(r->cosineAt(stage, i) - v.dot(v0) / (v.norm() * v0.norm())) < 1e-5);
            }
        }
        QVERIFY(std::abs(r->cosineAt(0, 3) - 1.0) < 1e-6);
        // pre-norm: the stream grows; the cosine to the input falls below 1 after a block
        QVERIFY(r->cosineAt(3, 3) < 0.999);
        // the selected token's curves follow the selection
        m_w->session()->setSelectedQuery(6);
        QCoreApplication::processEvents();
        QCOMPARE(r->selectedToken(), 6);
        const QVector<double> n = r->selectedNorms(), c = r->selectedCosines();
        QCOMPARE(n.size(), 4);
        for (int stage = 0; stage < 4; ++stage) {
            QCOMPARE(n[stage], r->normAt(stage, 6));
            QCOMPARE(c[stage], r->cosineAt(stage, 6));
        }
    }

    void loadingGpt2WeightsUsesThem()
    {
        QString error;
        QVERIFY2(m_w->loadStackWeightsFile(kStackFile, &error), qPrintable(error));
        child<QSpinBox>(m_w->controls(), "headsSpin")->setValue(4);
        const SnapshotPtr s = waitFor(0, [](const ComputeSnapshot &s) {
            return s.hasResult() && s.deep() && s.settings.stack.source == StackWeightsSource::File &&
                   s.attention(0).numHeads == 4;
        });
        QVERIFY(s);
        QCOMPARE(int(s->trace->layers.size()), 2);
        QVERIFY(child<QLabel>(m_w->controls(), "stackSourceLabel")->text().contains(QStringLiteral("2 blocks")));
        SafetensorsFile file;
        QVERIFY(readSafetensors(kStackFile.toStdString(), file).ok());
        StackWeights<float> w;
        int depth = 0;
        QVERIFY(stackWeightsFromGpt2(file, w, depth).ok());
        const StackResult<float> ref = reference(s->settings.stack, 4, &w);
        QVERIFY((ref.layers[1].output - s->trace->layers[1].output).cwiseAbs().maxCoeff() < 1e-5f);
        QVERIFY(m_w->heatmapView()->title().contains(QStringLiteral("weights from stack_postnorm_relu_sinusoidal")));
    }

    void corruptWeightsFileChangesNothing_data()
    {
        QTest::addColumn<int>("which");
        QTest::addColumn<QString>("message");
        QTest::addRow("missing tensor") << 0 << "h.1.mlp.c_fc.weight: missing from the file";
        QTest::addRow("wrong shape") << 1 << "h.0.attn.c_proj.weight: shape (64, 4), expected (16, 16)";
        QTest::addRow("truncated") << 2 << "broken.safetensors";
        QTest::addRow("not a file") << 3 << "broken.safetensors";
    }

    void corruptWeightsFileChangesNothing()
    {
        QFETCH(int, which);
        QFETCH(QString, message);
        const SnapshotPtr before = stackOf(2, 2);
        QVERIFY(before);
        const ComputeSettings settings = m_w->controls()->settings();
        const quint64 generation = m_w->session()->generation();
        const QByteArray good = readAll(kStackFile);
        QVERIFY(!good.isEmpty());
        QByteArray bad;
        switch (which) {
        case 0:
            // renamed, not removed: a removed tensor would leave a gap, which the reader refuses first
            bad = withHeader(good, [](QJsonObject &h) {
                h[QStringLiteral("h.1.mlp.c_fc.renamed")] = h.take(QStringLiteral("h.1.mlp.c_fc.weight"));
            });
            break;
        case 1:
            bad = withHeader(good, [](QJsonObject &h) {
                QJsonObject e = h[QStringLiteral("h.0.attn.c_proj.weight")].toObject();
                e[QStringLiteral("shape")] = QJsonArray{64, 4};
                h[QStringLiteral("h.0.attn.c_proj.weight")] = e;
            });
            break;
        case 2:
            bad = good.left(good.size() - 100);
            break;
        case 3:
            bad = "this is not a safetensors file";
            break;
        }
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("broken.safetensors"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(bad);
        f.close();
        QString error;
        QVERIFY(!m_w->loadStackWeightsFile(path, &error));
        QVERIFY2(error.contains(message), qPrintable(error));
        QVERIFY2(error.contains(QStringLiteral("broken.safetensors")), qPrintable(error));
        // nothing changed: the controls, the session, the shown snapshot
        QCoreApplication::processEvents();
        QVERIFY(m_w->controls()->settings() == settings);
        QCOMPARE(m_w->controls()->settings().stack.source, StackWeightsSource::Seeded);
        QCOMPARE(m_w->session()->generation(), generation);
        QCOMPARE(m_w->session()->snapshot(), before);
        QVERIFY(child<QLabel>(m_w->controls(), "stackSourceLabel")->text().contains(QStringLiteral("No weights file")));
    }

    void depthBackToOneRestoresTheSingleLayer()
    {
        const SnapshotPtr single = m_w->session()->snapshot();
        const SnapshotPtr s = stackOf(3, 1);
        QVERIFY(s);
        QTabWidget *tabs = m_w->tabs();
        QVERIFY(tabs->isTabVisible(tabs->indexOf(m_w->residualView())));
        tabs->setCurrentWidget(m_w->layerGridView());
        QVERIFY(!child<QSpinBox>(m_w->controls(), "dHeadSpin")->isEnabled());
        QVERIFY(!child<QComboBox>(m_w->controls(), "projectionCombo")->isEnabled());
        depthSpin()->setValue(1);
        const SnapshotPtr back =
            waitFor(s->generation, [](const ComputeSnapshot &s) { return s.hasResult() && !s.deep(); });
        QVERIFY(back);
        QVERIFY(!tabs->isTabVisible(tabs->indexOf(m_w->layerGridView())));
        QVERIFY(!tabs->isTabVisible(tabs->indexOf(m_w->residualView())));
        QVERIFY(tabs->currentWidget() != m_w->layerGridView());
        QVERIFY(child<QComboBox>(m_w->controls(), "projectionCombo")->isEnabled());
        QCOMPARE(back->weights(0, 0), single->weights(0, 0));
        QCOMPARE(back->queryInput(0), single->queryInput(0));
        m_w->tabs()->setCurrentWidget(m_w->heatmapView());
        QCoreApplication::processEvents();
        for (int i = 0; i < 11; ++i)
            QCOMPARE(m_w->heatmapView()->cellValue(i, 0), double(single->weights(0, 0)(i, 0)));
        QVERIFY(!m_w->heatmapView()->title().contains(QStringLiteral("layer")));
        QVERIFY(!m_w->statusText().contains(QStringLiteral("layer")));
    }

    void masksApplyToEveryLayer()
    {
        QVERIFY(stackOf(3, 2));
        m_w->session()->togglePadding(2);
        setCombo(child<QComboBox>(m_w->controls(), "maskCombo"), int(MaskChoice::CausalPadding));
        const SnapshotPtr s = waitFor(gen(), [](const ComputeSnapshot &s) {
            return s.hasResult() && s.deep() && s.settings.mask == MaskChoice::CausalPadding;
        });
        QVERIFY(s);
        m_w->tabs()->setCurrentWidget(m_w->layerGridView());
        QCoreApplication::processEvents();
        for (int l = 0; l < 3; ++l)
            for (int h = 0; h < 2; ++h) {
                const Mat<float> &w = s->trace->layers[size_t(l)].attention.batch[0].weights[size_t(h)];
                for (int i = 0; i < 11; ++i) {
                    for (int j = 0; j < 11; ++j) {
                        const bool masked = j > i || j == 2;
                        if (masked) {
                            QCOMPARE(w(i, j), 0.0f);
                            QVERIFY(std::isnan(m_w->layerGridView()->cellValue(l, h, i, j))); // grey
                        }
                    }
                    if (i >= 1) // a row with a key left sums to 1
                        QVERIFY(std::abs(w.row(i).sum() - 1.0f) < 1e-5f);
                }
            }
        QVERIFY(m_w->layerGridView()->title().contains(QStringLiteral("causal + padding")));
    }

    void bothViewsExportAsFigures()
    {
        QVERIFY(stackOf(3, 2));
        QTemporaryDir dir;
        for (QWidget *v : {static_cast<QWidget *>(m_w->layerGridView()), static_cast<QWidget *>(m_w->residualView())}) {
            m_w->tabs()->setCurrentWidget(v);
            QCoreApplication::processEvents();
            QCustomPlot *plot = v == m_w->layerGridView() ? m_w->layerGridView()->plot() : m_w->residualView()->plot();
            for (const char *suffix : {"png", "svg"}) {
                const QString path =
                    dir.filePath(QStringLiteral("%1.%2").arg(v->metaObject()->className()).arg(suffix));
                QString error;
                QVERIFY2(saveFigure(plot, path, {800, 600, 96}, &error), qPrintable(error));
                QVERIFY(QFileInfo(path).size() > 1000);
                if (QLatin1String(suffix) == QLatin1String("png")) {
                    const QImage img(path);
                    QCOMPARE(img.size(), QSize(800, 600));
                }
            }
        }
    }

    void crossAttentionIsExplainedInStackMode()
    {
        const SnapshotPtr s = stackOf(2, 2);
        QVERIFY(s);
        m_w->setKeySentence(QStringLiteral("we ship"));
        const SnapshotPtr x = waitFor(s->generation, [](const ComputeSnapshot &s) { return s.cross; });
        QVERIFY(x);
        QVERIFY(!x->hasResult());
        QVERIFY(x->message.contains(QStringLiteral("self-attention")));
    }
};

QTEST_MAIN(TestStackView)
#include "tst_stackview.moc"
