// SPDX-License-Identifier: GPL-3.0-or-later
// The views a real model needs, on the tiny fixture models (tests/fixtures/models): the
// predictions panel against expected.json (PyTorch float64), the layers × heads grid's role scores
// against attnviz/headroles.h and its sorting and clicks, the rollout cells, the pipeline's real
// Q/K/V and a clicked cell's explanation, and BERT's click-a-token-to-[MASK] path in the window.
#include "testpaths.h"
#include "controls/sentenceedit.h"
#include "controls/tokenchipsview.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "views/headrolesview.h"
#include "views/heatmapview.h"
#include "views/pipelineview.h"
#include "views/predictionsview.h"
#include "views/rolloutview.h"

#include "attnviz/headroles.h"
#include "attnviz/pretrained.h"

#include <qcustomplot.h>

#include <QDockWidget>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTabWidget>
#include <QtTest>

#include <cmath>
#include <memory>

using namespace attnviz;
using namespace attnviz::ui;
using Kind = PipelineView::StageKind;
using Role = HeadRolesView::Role;

namespace {

QString fixture(const QString &model)
{
    return QString::fromUtf8(ATTNVIZ_FIXTURE("/models/")) + model;
}

QJsonObject expected(const QString &model)
{
    QFile f(fixture(model) + QStringLiteral("/expected.json"));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

std::shared_ptr<Model> openModel(const QString &model)
{
    std::unique_ptr<Model> m;
    if (!openPretrained(fixture(model).toStdString(), {}, m))
        return nullptr;
    return std::shared_ptr<Model>(std::move(m));
}

// A snapshot of `model` on `text`, computed by a LiveSession as the window does.
SnapshotPtr traceText(const std::shared_ptr<Model> &model, const QString &text)
{
    LiveSession session;
    session.setDebounceMs(0);
    QSignalSpy spy(&session, &LiveSession::snapshotChanged);
    session.setModel(model);
    session.setSentence(text);
    session.requestNow();
    for (int i = 0; i < 200 && !(session.snapshot() && session.snapshot()->sentence == text && !session.busy()); ++i)
        spy.wait(100);
    const SnapshotPtr s = session.snapshot();
    return s && s->sentence == text ? s : nullptr;
}

} // namespace

class TestModelViews : public QObject {
    Q_OBJECT

private slots:
    void predictionsNextTokens_data()
    {
        QTest::addColumn<int>("caseIndex");
        for (int c = 0; c < expected(QStringLiteral("gpt2-tiny"))[QStringLiteral("cases")].toArray().size(); ++c)
            QTest::addRow("gpt2-tiny case %d", c) << c;
    }
    void predictionsNextTokens()
    {
        QFETCH(int, caseIndex);
        const QJsonObject c =
            expected(QStringLiteral("gpt2-tiny"))[QStringLiteral("cases")].toArray().at(caseIndex).toObject();
        const SnapshotPtr s = traceText(openModel(QStringLiteral("gpt2-tiny")), c[QStringLiteral("text")].toString());
        QVERIFY(s && s->hasResult());
        QVERIFY(s->causalLm() && !s->maskedLm());
        PredictionsView view;
        view.setSnapshot(s);
        const QJsonArray next = c[QStringLiteral("next")].toArray(),
                         actual = c[QStringLiteral("actual_next")].toArray();
        const int t = s->tq();
        QCOMPARE(t, int(next.size()));
        // no hover: after the last token; hovering position i: what the model predicted after i
        for (int hover : {-1, 0, t / 2, t - 2}) {
            view.setHoveredPosition(hover);
            const int at = hover < 0 ? t - 1 : hover;
            QCOMPARE(int(view.groups().size()), 1);
            const PredictionsView::Group &g = view.groups().front();
            QCOMPARE(g.position, at);
            const QJsonArray want = next.at(at).toArray();
            QCOMPARE(int(g.entries.size()), 10);
            for (int r = 0; r < 10; ++r) {
                QCOMPARE(g.entries[size_t(r)].id, want.at(r).toObject()[QStringLiteral("id")].toInt());
                QVERIFY2(std::abs(g.entries[size_t(r)].p - want.at(r).toObject()[QStringLiteral("p")].toDouble()) <
                             1e-5,
                         qPrintable(QStringLiteral("position %1 rank %2").arg(at).arg(r)));
            }
            if (hover >= 0) { // the actually following token's probability, as the panel words it
                const double p = actual.at(at).toDouble();
                QVERIFY(std::abs(g.actualNext - p) < 1e-5 * std::max(1.0, p * 1e3));
                QVERIFY2(g.note.contains(s->queryLabels.at(at + 1)), qPrintable(g.note));
            }
            // (a long token cut short, whole in its tooltip)
            QVERIFY(view.html().contains(PredictionsView::shownToken(g.entries.front().token).toHtmlEscaped()));
            QVERIFY(view.html().contains(g.entries.front().token.toHtmlEscaped()));
        }
    }

    void predictionsMaskedFills_data()
    {
        QTest::addColumn<int>("caseIndex");
        for (int c = 0; c < expected(QStringLiteral("bert-tiny"))[QStringLiteral("cases")].toArray().size(); ++c)
            QTest::addRow("bert-tiny case %d", c) << c;
    }
    void predictionsMaskedFills()
    {
        QFETCH(int, caseIndex);
        const QJsonObject c =
            expected(QStringLiteral("bert-tiny"))[QStringLiteral("cases")].toArray().at(caseIndex).toObject();
        const SnapshotPtr s = traceText(openModel(QStringLiteral("bert-tiny")), c[QStringLiteral("text")].toString());
        QVERIFY(s && s->hasResult() && s->maskedLm() && !s->causalLm());
        PredictionsView view;
        view.setSnapshot(s);
        const QJsonArray masked = c[QStringLiteral("masked")].toArray();
        QCOMPARE(int(view.groups().size()), int(masked.size()));
        for (int m = 0; m < masked.size(); ++m) {
            const QJsonObject want = masked.at(m).toObject();
            const PredictionsView::Group &g = view.groups()[size_t(m)];
            QCOMPARE(g.position, want[QStringLiteral("position")].toInt());
            const QJsonArray top = want[QStringLiteral("top")].toArray();
            QCOMPARE(int(g.entries.size()), int(top.size()));
            for (int r = 0; r < top.size(); ++r) {
                QCOMPARE(g.entries[size_t(r)].id, top.at(r).toObject()[QStringLiteral("id")].toInt());
                QVERIFY(std::abs(g.entries[size_t(r)].p - top.at(r).toObject()[QStringLiteral("p")].toDouble()) < 1e-5);
            }
        }
    }

    // The window's trace runs the LM head at the last position only: hovering another position asks
    // the snapshot's model for it (the shared trace only read) and shows what a trace of every
    // position says, the same top tokens and the probability of the token that follows (1e-6). What
    // was computed is kept while the tokens up to the one after it stay the same.
    void predictionsOnDemand()
    {
        const std::shared_ptr<Model> model = openModel(QStringLiteral("gpt2-tiny"));
        QVERIFY(model);
        const QString text = QStringLiteral("The animal didn't cross the street because it was too tired");
        auto everyPosition = [](const QString &sentence, Trace<float> &out) {
            TraceRequest req;
            req.text = sentence.toStdString();
            req.allPredictions = true;
            return openModel(QStringLiteral("gpt2-tiny"))->trace(req, out).ok(); // another instance
        };
        auto check = [](const PredictionsView &view, const Trace<float> &all, int i) {
            QCOMPARE(int(view.groups().size()), 1);
            const PredictionsView::Group &g = view.groups().front();
            QCOMPARE(g.position, i);
            const std::vector<TokenProb> &want = all.predictions.next[size_t(i)];
            QCOMPARE(g.entries.size(), want.size());
            for (size_t k = 0; k < want.size(); ++k) {
                QCOMPARE(g.entries[k].id, want[k].id);
                QCOMPARE(g.entries[k].token, QString::fromStdString(want[k].display));
                QVERIFY2(std::abs(g.entries[k].p - want[k].p) < 1e-6, qPrintable(QStringLiteral("%1 #%2").arg(i).arg(k)));
            }
            QVERIFY(!std::isnan(all.predictions.actualNext[size_t(i)]));
            QVERIFY2(std::abs(g.actualNext - all.predictions.actualNext[size_t(i)]) < 1e-6, qPrintable(QString::number(i)));
        };
        const SnapshotPtr s = traceText(model, text);
        QVERIFY(s && s->hasResult() && s->causalLm());
        const int t = s->tq();
        QCOMPARE(t, 12);
        Trace<float> all;
        QVERIFY(everyPosition(text, all));
        PredictionsView view;
        view.setSnapshot(s);
        QCOMPARE(view.computedOnDemand(), 0); // the last position is the trace's
        for (int i = t - 2; i >= 0; --i) {
            QVERIFY(s->trace->predictions.next[size_t(i)].empty()); // the window did not compute it
            view.setHoveredPosition(i);
            check(view, all, i);
            QVERIFY(s->trace->predictions.next[size_t(i)].empty()); // the shared trace is only read
            QCOMPARE(view.computedOnDemand(), t - 1 - i);
        }
        // a word typed at the end: every position before the old last one keeps its list; the old
        // last one is now followed by a token and is asked anew
        const QString longer = text + QStringLiteral(" to");
        const SnapshotPtr s2 = traceText(model, longer);
        QVERIFY(s2 && s2->tq() == t + 1);
        Trace<float> all2;
        QVERIFY(everyPosition(longer, all2));
        view.setHoveredPosition(-1);
        view.setSnapshot(s2);
        QCOMPARE(view.computedOnDemand(), t - 1);
        view.setHoveredPosition(3);
        check(view, all2, 3);
        view.setHoveredPosition(t - 1);
        check(view, all2, t - 1);
        QCOMPARE(view.computedOnDemand(), t);
        // the first word changed: nothing computed before holds
        const QString other = QStringLiteral("A") + text.mid(3);
        const SnapshotPtr s3 = traceText(model, other);
        QVERIFY(s3 && s3->hasResult());
        view.setHoveredPosition(-1);
        view.setSnapshot(s3);
        QCOMPARE(view.computedOnDemand(), 0);
        Trace<float> all3;
        QVERIFY(everyPosition(other, all3));
        view.setHoveredPosition(3);
        check(view, all3, 3);
    }

    void predictionsWithoutHead()
    {
        // the word-vector models have no head: the panel says so and lists nothing
        PredictionsView view;
        auto snap = std::make_shared<ComputeSnapshot>();
        view.setSnapshot(snap);
        QVERIFY(view.groups().empty());
        QVERIFY(view.message().contains(QStringLiteral("no prediction head")));
        // BERT with no [MASK]: how to get fills
        const SnapshotPtr s =
            traceText(openModel(QStringLiteral("bert-tiny")), QStringLiteral("The capital of France is Paris."));
        QVERIFY(s && s->hasResult());
        view.setSnapshot(s);
        QVERIFY(view.groups().empty());
        QVERIFY(view.message().contains(QStringLiteral("[MASK]")));
    }

    void maskedSentence_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("position");
        QTest::addColumn<QString>("result");
        QTest::addRow("a word") << "The capital of France is Paris." << 6 << "The capital of France is [MASK].";
        QTest::addRow("first word, capitals kept elsewhere") << "Paris is nice." << 1 << "[MASK] is nice.";
        QTest::addRow("accented word (UTF-8 ranges)") << "Un café noir." << 2 << "Un [MASK] noir.";
        QTest::addRow("[CLS] cannot be masked") << "Paris is nice." << 0 << "";
        QTest::addRow("[SEP] cannot be masked") << "Paris is nice." << 5 << "";
        QTest::addRow("punctuation") << "Paris is nice." << 4 << "Paris is nice[MASK]";
        QTest::addRow("out of range") << "Paris is nice." << 40 << "";
    }
    void maskedSentence()
    {
        QFETCH(QString, text);
        QFETCH(int, position);
        QFETCH(QString, result);
        const SnapshotPtr s = traceText(openModel(QStringLiteral("bert-tiny")), text);
        QVERIFY(s && s->hasResult());
        QCOMPARE(PredictionsView::maskedSentence(*s, position), result);
    }

    void clickTokenMasksIt()
    {
        // the window: a click on BERT's "paris" chip makes it [MASK]; the panel then shows the fills
        // PyTorch gives for "The capital of France is [MASK]."
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QSignalSpy spy(&w, &MainWindow::viewsUpdated);
        w.session()->setModel(openModel(QStringLiteral("bert-tiny")));
        w.setSentence(QStringLiteral("The capital of France is Paris."));
        QTRY_VERIFY_WITH_TIMEOUT(w.session()->snapshot() && w.session()->snapshot()->maskedLm() &&
                                     w.session()->snapshot()->sentence.endsWith(QStringLiteral("Paris.")) &&
                                     !w.session()->busy(),
                                 20000);
        QCoreApplication::processEvents();
        QTRY_COMPARE(w.queryChips()->chipCount(), 9); // [CLS] the capital of france is paris . [SEP]
        QTest::mouseClick(w.queryChips(), Qt::LeftButton, {}, w.queryChips()->chipRect(6).center());
        QCOMPARE(w.sentenceEdit()->toPlainText(), QStringLiteral("The capital of France is [MASK]."));
        QTRY_VERIFY_WITH_TIMEOUT(
            w.session()->snapshot()->sentence.contains(QStringLiteral("[MASK]")) && !w.session()->busy(), 20000);
        QCoreApplication::processEvents();
        const QJsonObject want =
            expected(QStringLiteral("bert-tiny"))[QStringLiteral("cases")].toArray().at(0).toObject();
        QCOMPARE(want[QStringLiteral("text")].toString(), QStringLiteral("The capital of France is [MASK]."));
        const QJsonArray top =
            want[QStringLiteral("masked")].toArray().at(0).toObject()[QStringLiteral("top")].toArray();
        QTRY_COMPARE(int(w.predictionsView()->groups().size()), 1);
        const PredictionsView::Group &g = w.predictionsView()->groups().front();
        QCOMPARE(g.position, 6);
        for (int r = 0; r < top.size(); ++r)
            QCOMPARE(g.entries[size_t(r)].id, top.at(r).toObject()[QStringLiteral("id")].toInt());
        QVERIFY(w.predictionsView()->isVisible()); // the dock shows for a model with a head
        QVERIFY(w.tabs()->isTabVisible(w.tabs()->indexOf(w.headRolesView())));
        QVERIFY(w.tabs()->isTabVisible(w.tabs()->indexOf(w.rolloutView())));

        // a click on the [MASK] chip gives the word back, and so does Ctrl+Z (the
        // replacement is an edit of the text, not a new text that empties the undo stack)
        QTRY_COMPARE(w.queryChips()->chipCount(), 9);
        QTest::mouseClick(w.queryChips(), Qt::LeftButton, {}, w.queryChips()->chipRect(6).center());
        QCOMPARE(w.sentenceEdit()->toPlainText(), QStringLiteral("The capital of France is Paris."));
        QTRY_VERIFY_WITH_TIMEOUT(w.session()->snapshot()->sentence.endsWith(QStringLiteral("Paris.")) && !w.session()->busy(),
                                 20000);
        QCoreApplication::processEvents();
        QTRY_COMPARE(w.queryChips()->chipCount(), 9);
        QTest::mouseClick(w.queryChips(), Qt::LeftButton, {}, w.queryChips()->chipRect(2).center()); // "capital"
        QCOMPARE(w.sentenceEdit()->toPlainText(), QStringLiteral("The [MASK] of France is Paris."));
        QVERIFY(w.sentenceEdit()->document()->isUndoAvailable());
        w.sentenceEdit()->undo();
        QCOMPARE(w.sentenceEdit()->toPlainText(), QStringLiteral("The capital of France is Paris."));
    }

    void hoverShowsPosition()
    {
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        w.session()->setModel(openModel(QStringLiteral("gpt2-tiny")));
        w.setSentence(QStringLiteral("a b c d a b c d"));
        QTRY_VERIFY_WITH_TIMEOUT(w.session()->snapshot() && w.session()->snapshot()->causalLm() &&
                                     !w.session()->busy() &&
                                     w.session()->snapshot()->sentence == QStringLiteral("a b c d a b c d"),
                                 20000);
        QTRY_COMPARE(w.queryChips()->chipCount(), 8);
        QTest::mouseMove(w.queryChips(), w.queryChips()->chipRect(3).center());
        QTRY_COMPARE(w.predictionsView()->hoveredPosition(), 3);
        QCOMPARE(w.predictionsView()->groups().front().position, 3);
        QVERIFY(w.predictionsView()->groups().front().note.contains(QStringLiteral("␣a")));
    }

    void roleScores_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("text");
        QTest::addRow("gpt2-tiny") << "gpt2-tiny"
                                   << "a b c d a b c d a b c d";
        QTest::addRow("bert-tiny") << "bert-tiny"
                                   << "the cat sat on the mat because the cat was tired";
        QTest::addRow("distilbert-tiny") << "distilbert-tiny"
                                         << "the cat sat on the mat";
    }
    void roleScores()
    {
        QFETCH(QString, model);
        QFETCH(QString, text);
        const std::shared_ptr<Model> m = openModel(model);
        const SnapshotPtr s = traceText(m, text);
        QVERIFY(s && s->hasResult());
        QVERIFY(s->induction); // measured once per model by the compute thread
        HeadRoleScores want;
        QVERIFY(headRoles(*m, *s->trace, want).ok());
        HeadRolesView view;
        view.setSnapshot(s);
        QCOMPARE(view.layerCount(), s->numLayers());
        QCOMPARE(view.headCount(), s->trace->numHeads());
        QCOMPARE(int(view.shownOrder().size()), view.layerCount() * view.headCount());
        // the core's four roles; the view's self (diagonal) score is read by hand below
        const Mat<double> *mats[] = {&want.previousToken, &want.firstToken, &want.sameToken, &want.induction};
        for (int r = 0; r < int(std::size(mats)); ++r)
            for (int l = 0; l < view.layerCount(); ++l)
                for (int h = 0; h < view.headCount(); ++h) {
                    const double a = view.score(Role(r), l, h), b = (*mats[r])(l, h);
                    QVERIFY2((std::isnan(a) && std::isnan(b)) || std::abs(a - b) < 1e-12,
                             qPrintable(QStringLiteral("%1 L%2 H%3: %4 vs %5")
                                            .arg(HeadRolesView::roleName(Role(r)))
                                            .arg(l)
                                            .arg(h)
                                            .arg(a)
                                            .arg(b)));
                }
        // the scores printed under a thumbnail are these: previous-token of layer 0 head 0 by hand
        const Mat<float> &w0 = s->trace->weights(0, 0);
        double prev = 0;
        for (int i = 1; i < w0.rows(); ++i)
            prev += w0(i, i - 1);
        QVERIFY(std::abs(view.score(Role::PreviousToken, 0, 0) - prev / double(w0.rows() - 1)) < 1e-6);
        double self = 0;
        for (int i = 1; i < w0.rows(); ++i)
            self += w0(i, i);
        QVERIFY(std::abs(view.score(Role::Self, 0, 0) - self / double(w0.rows() - 1)) < 1e-6);
    }

    void sortFilterAndClick()
    {
        const SnapshotPtr s =
            traceText(openModel(QStringLiteral("gpt2-tiny")), QStringLiteral("a b c d a b c d a b c d"));
        QVERIFY(s && s->hasResult());
        HeadRolesView view;
        view.resize(900, 700);
        view.setSnapshot(s);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        // layer order: L0 H0, L0 H1, ...
        const auto plain = view.shownOrder();
        QCOMPARE(plain.front(), qMakePair(0, 0));
        QCOMPARE(plain.at(1), qMakePair(0, 1));
        for (int r = 0; r < HeadRolesView::kRoles; ++r) {
            view.setSortRole(r);
            const auto order = view.shownOrder();
            for (int i = 1; i < order.size(); ++i)
                QVERIFY(view.score(Role(r), order[i - 1].first, order[i - 1].second) >=
                        view.score(Role(r), order[i].first, order[i].second));
            // the first is the best head of all
            double best = -1;
            for (int l = 0; l < view.layerCount(); ++l)
                for (int h = 0; h < view.headCount(); ++h)
                    if (std::isfinite(view.score(Role(r), l, h)))
                        best = std::max(best, view.score(Role(r), l, h));
            QCOMPARE(view.score(Role(r), order.front().first, order.front().second), best);
        }
        view.setSortRole(int(Role::PreviousToken));
        QVERIFY(view.shownOrder() != plain);
        // a threshold between the best and the worst hides the heads below it
        const double top =
            view.score(Role::PreviousToken, view.shownOrder().front().first, view.shownOrder().front().second);
        view.setMinimum(top - 1e-9);
        QCOMPARE(view.shownOrder().size(), 1);
        view.setMinimum(0.0);
        QCOMPARE(int(view.shownOrder().size()), view.layerCount() * view.headCount());
        view.setSortRole(-1);
        QCOMPARE(view.shownOrder(), plain);
        // a click on a thumbnail emits its layer and head
        QSignalSpy spy(&view, &HeadRolesView::headOpened);
        const QRect r = view.thumbnailRect(1, 2);
        QVERIFY(!r.isEmpty());
        QTest::mouseClick(view.canvas(), Qt::LeftButton, {}, r.center());
        QCOMPARE(spy.count(), 1);
        QCOMPARE(spy.first().at(0).toInt(), 1);
        QCOMPARE(spy.first().at(1).toInt(), 2);
    }

    void rolloutCells_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addRow("gpt2-tiny") << "gpt2-tiny";
        QTest::addRow("bert-tiny") << "bert-tiny";
    }
    void rolloutCells()
    {
        QFETCH(QString, model);
        const SnapshotPtr s =
            traceText(openModel(model), QStringLiteral("The animal didn't cross the street because it was too tired."));
        QVERIFY(s && s->hasResult());
        RolloutView view;
        view.setSnapshot(s);
        QVERIFY(view.ready());
        const std::vector<Mat<double>> want = attentionRollout(*s->trace);
        const int t = s->tq();
        for (int L = 0; L < s->numLayers(); ++L) {
            view.setRolloutLayer(L);
            QCOMPARE(view.rolloutLayer(), L);
            QVERIFY(view.title().contains(QStringLiteral("layers 0–%1").arg(L)));
            for (int i = 0; i < t; ++i)
                for (int j = 0; j < t; ++j) {
                    QCOMPARE(view.value(i, j), want[size_t(L)](i, j));
                    QVERIFY(std::abs(view.cellValue(i, j) - want[size_t(L)](i, j)) < 1e-6);
                }
        }
        // layer 0 by hand: 0.5·mean_h A + 0.5·I, rows renormalised (they already sum to 1)
        view.setRolloutLayer(0);
        const Mat<float> &a = s->trace->weights(0, -1);
        for (int i = 0; i < t; ++i)
            QVERIFY(std::abs(view.value(i, i) - (0.5 * a(i, i) + 0.5)) < 1e-6);
        if (model == QLatin1String("gpt2-tiny")) // causal: nothing from later tokens
            QCOMPARE(view.value(0, 1), 0.0);
        QVERIFY(view.explanation().contains(QStringLiteral("Abnar & Zuidema 2020")));
        QVERIFY(view.explanation().contains(QStringLiteral("identity")));
        // the window's layer drives it
        view.setSelection(99, 0, 0);
        QCOMPARE(view.rolloutLayer(), s->numLayers() - 1);
    }

    void pipelineRealQkv_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("layer");
        QTest::addColumn<int>("head");
        QTest::addRow("gpt2-tiny L1 H2") << "gpt2-tiny" << 1 << 2;
        QTest::addRow("bert-tiny L0 H3") << "bert-tiny" << 0 << 3;
    }
    void pipelineRealQkv()
    {
        QFETCH(QString, model);
        QFETCH(int, layer);
        QFETCH(int, head);
        const SnapshotPtr s =
            traceText(openModel(model), QStringLiteral("The animal didn't cross the street because it was too tired."));
        QVERIFY(s && s->hasResult());
        PipelineView view;
        view.resize(1200, 900);
        view.setSnapshot(s);
        view.setSelection(layer, head, 0);
        const SequenceResult<float> &r = s->trace->layers[size_t(layer)].attention.batch.front();
        const int dh = s->trace->layers[size_t(layer)].attention.dHead;
        auto plotted = [&](Kind k, int row, int col) {
            auto *map = qobject_cast<QCPColorMap *>(view.stagePlot(view.indexOf(k))->plottable(0));
            return double(map->data()->cell(col, row));
        };
        for (int i = 0; i < s->tq(); ++i)
            for (int d = 0; d < dh; ++d) {
                QCOMPARE(plotted(Kind::Q, i, d), double(r.q(i, head * dh + d)));
                QCOMPARE(plotted(Kind::K, i, d), double(r.k(i, head * dh + d)));
                QCOMPARE(plotted(Kind::V, i, d), double(r.v(i, head * dh + d)));
                QCOMPARE(plotted(Kind::Weights, i, d % s->tq()),
                         double(s->trace->weights(layer, head)(i, d % s->tq())));
            }
        const QString qTitle = view.stageTitle(view.indexOf(Kind::Q));
        QVERIFY2(qTitle.contains(model == QLatin1String("gpt2-tiny") ? QStringLiteral("LN₁(X)·W_qᵀ + b_q")
                                                                     : QStringLiteral("X·W_qᵀ + b_q")),
                 qPrintable(qTitle));
        // a clicked score cell: q·k, / √d_head, with the real numbers
        const int i = 8, j = 1;
        QVERIFY(view.explainCell(view.indexOf(Kind::Scaled), i, j));
        double dot = 0;
        for (int d = 0; d < dh; ++d)
            dot += double(r.q(i, head * dh + d)) * double(r.k(j, head * dh + d));
        const QString text = view.explanation();
        auto num = [](double v) { return QString::number(v, 'f', 4); };
        QVERIFY2(text.contains(QStringLiteral("1/√%1").arg(dh)), qPrintable(text));
        QVERIFY2(text.contains(num(dot)), qPrintable(text + QStringLiteral(" / want ") + num(dot)));
        QVERIFY2(text.contains(num(dot / std::sqrt(double(dh)))), qPrintable(text));
        // the softmax row of a clicked weight ends in the weight itself
        QVERIFY(view.explainCell(view.indexOf(Kind::Weights), i, j));
        QVERIFY2(view.explanation().contains(num(s->trace->weights(layer, head)(i, j))),
                 qPrintable(view.explanation()));
        QVERIFY(view.explanation().contains(QStringLiteral("Softmax")));
        // a clicked Q cell: x · row of W_q + b_q with the layer's real weights
        QVERIFY(view.explainCell(view.indexOf(Kind::Q), i, 3));
        QVERIFY2(view.explanation().contains(QStringLiteral("b_q[%1]").arg(head * dh + 3)),
                 qPrintable(view.explanation()));
        QVERIFY(view.explanation().contains(num(r.q(i, head * dh + 3))));
    }

    void pipelineWideHeads()
    {
        // GPT-2 small's shape (seeded weights): 64-d heads and 768-d streams show their first
        // kMaxShownDims columns and say how many there are
        std::unique_ptr<Model> m;
        Architecture gpt2Small;
        QVERIFY(seededShape("gpt2-small", gpt2Small));
        QVERIFY(seededPretrained(gpt2Small, 7, m).ok());
        TraceRequest req;
        for (int i = 0; i < 20; ++i)
            req.ids.push_back(100 + 37 * i);
        auto trace = std::make_shared<Trace<float>>();
        QVERIFY(m->trace(req, *trace).ok());
        auto snap = std::make_shared<ComputeSnapshot>();
        snap->trace = trace;
        snap->modelInfo = m->info();
        for (const TraceToken &t : trace->tokens)
            snap->queryLabels << QString::fromStdString(t.display);
        snap->keyLabels = snap->queryLabels;
        snap->totalQueryTokens = snap->totalKeyTokens = snap->tq();
        PipelineView view;
        view.resize(1200, 900);
        view.setSnapshot(snap);
        view.setSelection(3, 5, 0);
        for (Kind k : {Kind::Input, Kind::Q, Kind::Context, Kind::Output}) {
            QCustomPlot *p = view.stagePlot(view.indexOf(k));
            auto *map = qobject_cast<QCPColorMap *>(p->plottable(0));
            QCOMPARE(map->data()->keySize(), PipelineView::kMaxShownDims);
            QVERIFY2(p->xAxis->label().contains(
                         QStringLiteral("… %1 dims").arg(k == Kind::Q || k == Kind::Context ? 64 : 768)),
                     qPrintable(p->xAxis->label()));
        }
        const SequenceResult<float> &r = trace->layers[3].attention.batch.front();
        auto *qmap = qobject_cast<QCPColorMap *>(view.stagePlot(view.indexOf(Kind::Q))->plottable(0));
        QCOMPARE(double(qmap->data()->cell(7, 4)), double(r.q(4, 5 * 64 + 7)));
        // a click still explains the exact number, its 768 terms summarised
        QVERIFY(view.explainCell(view.indexOf(Kind::Q), 4, 7));
        QVERIFY(view.explanation().contains(QStringLiteral("more terms")));
    }

    void renderedViews_data()
    {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<QString>("text");
        const QString sentence =
            QStringLiteral("The animal didn't cross the street because it was too tired. The animal was tired.");
        QTest::addRow("gpt2-tiny") << fixture(QStringLiteral("gpt2-tiny")) << "a b c d a b c d a b c d";
        QTest::addRow("bert-tiny") << fixture(QStringLiteral("bert-tiny"))
                                   << "Paris is the [MASK] of France, isn't it?";
        QTest::addRow("attnviz-tiny") << QString::fromUtf8(ATTNVIZ_SOURCE_PATH("/resources/models/attnviz-tiny"))
                                      << sentence;
    }
    void renderedViews()
    {
        // Each view in the window, offscreen, with a model put in directly: it draws its thumbnails,
        // map and lists (not a blank page). ATTNVIZ_SCREENSHOT_DIR=DIR keeps the PNGs for looking at.
        QFETCH(QString, folder);
        QFETCH(QString, text);
        std::unique_ptr<Model> m;
        QVERIFY(openPretrained(folder.toStdString(), {}, m).ok());
        MainWindow w;
        w.resize(1400, 900);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        for (const char *dock : {"controlsDock", "rowDock"}) // the model's views get the room
            if (auto *d = w.findChild<QDockWidget *>(QLatin1String(dock)))
                d->hide();
        w.session()->setModel(std::shared_ptr<Model>(std::move(m)));
        w.setSentence(text);
        QTRY_VERIFY_WITH_TIMEOUT(w.session()->snapshot() && w.session()->snapshot()->fromModel() &&
                                     !w.session()->busy() && w.session()->snapshot()->sentence == text,
                                 20000);
        const QString dir = qEnvironmentVariable("ATTNVIZ_SCREENSHOT_DIR");
        const QString name = QFileInfo(folder).fileName();
        auto shot = [&](QWidget *tab, const QString &view) {
            w.tabs()->setCurrentWidget(tab);
            QCoreApplication::processEvents();
            QTest::qWait(50);
            const QImage img = w.grab().toImage();
            QVERIFY(!img.isNull());
            if (!dir.isEmpty())
                img.save(dir + QLatin1Char('/') + name + QLatin1Char('-') + view + QStringLiteral(".png"));
        };
        shot(w.headRolesView(), QStringLiteral("grid"));
        QCOMPARE(int(w.headRolesView()->shownOrder().size()),
                 w.session()->snapshot()->numLayers() * w.session()->snapshot()->trace->numHeads());
        // a thumbnail is drawn where the view says: not all one colour
        const QImage canvas = w.headRolesView()->canvas()->grab().toImage();
        const QRect r = w.headRolesView()->thumbnailRect(0, 0);
        QSet<QRgb> colours;
        for (int y = r.top() + 2; y < r.bottom() - 2; y += 3)
            for (int x = r.left() + 2; x < r.right() - 2; x += 3)
                colours.insert(canvas.pixel(x, y));
        QVERIFY2(colours.size() > 3, qPrintable(QString::number(colours.size())));
        w.headRolesView()->setSortRole(int(Role::PreviousToken));
        shot(w.headRolesView(), QStringLiteral("grid-sorted"));
        w.headRolesView()->setSortRole(-1);
        w.session()->setSelectedLayer(w.session()->snapshot()->numLayers() - 1);
        shot(w.rolloutView(), QStringLiteral("rollout"));
        QCOMPARE(w.rolloutView()->rolloutLayer(), w.session()->snapshot()->numLayers() - 1);
        QVERIFY(w.rolloutView()->ready());
        w.pipelineView()->setSelection(1, 1, 0);
        shot(w.pipelineView(), QStringLiteral("pipeline"));
        if (w.session()->snapshot()->causalLm())
            w.predictionsView()->setHoveredPosition(2);
        shot(w.heatmapView(), QStringLiteral("predictions"));
        QVERIFY(w.predictionsView()->isVisible());
        QVERIFY(!w.predictionsView()->groups().empty());
    }
};

QTEST_MAIN(TestModelViews)
#include "tst_modelviews.moc"
