// SPDX-License-Identifier: GPL-3.0-or-later
// The norm-weighted switch in the window (View ▸ Norm-weighted attention): on the gpt2-tiny and
// llama-tiny fixtures the heatmap's plotted cells equal the float64 ||a_ij v_j W_O^h|| of
// tests/fixtures/reads/reads-expected.json, its title and scale say so, its hover gives the key's
// value norm; the switch survives a session round trip; `attnviz export --norm-weighted` writes
// the norm-weighted matrix. The model's layers × heads grid draws the norm-weighted thumbnails and
// scores each query's shares of them; rollout rolls the shares out (both against the same float64
// matrices). With ATTNVIZ_NORM_SHOT=FILE the window is grabbed there (PNG).
#include "testpaths.h"
#include "files/session.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "views/headrolesview.h"
#include "views/heatmapview.h"
#include "views/normweighting.h"
#include "views/rolloutview.h"
#include "window/viewrouter.h"

#include "attnviz/pretrained.h"
#include "../support/modelfolders.h"

#include <qcustomplot.h>

#include <QAction>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <functional>
#include <memory>

using namespace attnviz;
using namespace attnviz::ui;

namespace {

QJsonArray expectedNormWeighted(const QString &model)
{
    QFile f(QString::fromUtf8(ATTNVIZ_FIXTURE("/reads/reads-expected.json")));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll())
        .object()[QStringLiteral("models")][model][QStringLiteral("norm_weighted")]
        .toArray();
}

QString caseText(const QString &model) { return attnviz_test::expectedCase(model, 0)[QStringLiteral("text")].toString(); }

std::shared_ptr<Model> openModel(const QString &model)
{
    std::unique_ptr<Model> m;
    return openPretrained(attnviz_test::fixtureModel(model).toStdString(), {}, m) ? std::shared_ptr<Model>(std::move(m)) : nullptr;
}

// The window shown on `model`'s fixture folder, its case text computed.
bool showOn(MainWindow &w, const QString &model)
{
    w.session()->setDebounceMs(0);
    w.resize(1400, 900);
    w.show();
    if (!QTest::qWaitForWindowExposed(&w))
        return false;
    w.session()->setModel(openModel(model));
    const QString text = caseText(model);
    w.setSentence(text);
    const bool computed = QTest::qWaitFor([&] {
        const SnapshotPtr s = w.session()->snapshot();
        return s && s->fromModel() && s->sentence == text && !w.session()->busy();
    }, 20000);
    QCoreApplication::processEvents();
    return computed;
}

// The heatmap's title as drawn (wrapped, or elided to one line).
QString drawnTitle(HeatmapView *view)
{
    auto *plot = view->findChild<QCustomPlot *>();
    if (!plot)
        return {};
    for (int i = 0; i < plot->plotLayout()->elementCount(); ++i)
        if (auto *t = qobject_cast<QCPTextElement *>(plot->plotLayout()->elementAt(i)))
            return t->text();
    return {};
}

bool near(double got, double want) { return std::abs(got - want) < 1e-4 * std::max(1.0, std::abs(want)); }

} // namespace

class TestNormSwitch : public QObject {
    Q_OBJECT
private slots:
    void window_data()
    {
        QTest::addColumn<QString>("model");
        QTest::newRow("gpt2-tiny") << QStringLiteral("gpt2-tiny");
        QTest::newRow("llama-tiny") << QStringLiteral("llama-tiny");
    }

    void window()
    {
        QFETCH(QString, model);
        MainWindow w;
        QVERIFY(showOn(w, model));
        w.session()->setSelectedLayer(1);
        w.session()->setSelectedHead(1);
        QCoreApplication::processEvents();
        HeatmapView *heatmap = w.heatmapView();
        QVERIFY(heatmap->title().startsWith(QStringLiteral("Attention weights")));
        QAction *sw = w.views()->normWeightedAction();
        QVERIFY(sw->isEnabled());
        const double alpha = heatmap->cellValue(2, 1);

        sw->setChecked(true);
        QCoreApplication::processEvents();
        QVERIFY(w.views()->normWeighted());
        const QJsonArray want = expectedNormWeighted(model);
        QCOMPARE(want.size(), 2);
        const int t = w.session()->snapshot()->tq();
        for (int i = 0; i < t; ++i)
            for (int j = 0; j < t; ++j)
                QVERIFY2(near(heatmap->cellValue(i, j), want[1][1][i][j].toDouble()),
                         qPrintable(QStringLiteral("cell %1,%2: %3 vs %4").arg(i).arg(j).arg(heatmap->cellValue(i, j)).arg(want[1][1][i][j].toDouble())));
        QVERIFY(heatmap->title().startsWith(QStringLiteral("Norm-weighted attention ‖α·v·W_O‖")));
        // the title as drawn at 1400 x 900: what the weights are said once, in at most three lines
        // (it took five: the heading, the model label's "norm-weighted ‖α·v·W_O‖" and the long
        // explanation each said it; the long explanation is the switch's tooltip)
        QCoreApplication::processEvents();
        const QString drawn = drawnTitle(heatmap);
        QVERIFY2(drawn.count(QStringLiteral("‖α·v·W_O‖")) == 1, qPrintable(drawn));
        QVERIFY2(drawn.count(QLatin1Char('\n')) + 1 <= 3, qPrintable(drawn));
        QVERIFY2(drawn.simplified().contains(normWeightingCaption()), qPrintable(drawn));
        QVERIFY(heatmap->title().simplified().contains(normWeightingCaption()));
        QCOMPARE(sw->toolTip(), normWeightingExplanation());
        const QString hover = heatmap->hoverText(2, 1);
        QVERIFY2(hover.contains(QStringLiteral("‖v·W_O‖ of")) && hover.contains(QStringLiteral("(head 1)")), qPrintable(hover));
        // the value norm on hover is the cell over its weight
        const double norm = want[1][1][2][1].toDouble() / alpha;
        QVERIFY2(hover.contains(QString::number(norm, 'f', 3)), qPrintable(hover + QStringLiteral(" / ") + QString::number(norm)));
        if (const QString shot = qEnvironmentVariable("ATTNVIZ_NORM_SHOT"); !shot.isEmpty() && model == QLatin1String("gpt2-tiny"))
            QVERIFY(w.grab().save(shot));

        sw->setChecked(false);
        QCoreApplication::processEvents();
        QVERIFY(near(heatmap->cellValue(2, 1), alpha));
        QVERIFY(heatmap->title().startsWith(QStringLiteral("Attention weights")));
    }

    void rolesAndRollout_data() { window_data(); }

    void rolesAndRollout()
    {
        QFETCH(QString, model);
        MainWindow w;
        QVERIFY(showOn(w, model));
        const QJsonArray want = expectedNormWeighted(model);
        const int layers = int(want.size()), heads = int(want[0].toArray().size()), t = w.session()->snapshot()->tq();
        const auto matrix = [&](int l, int h) {
            Mat<double> m(t, t);
            for (int i = 0; i < t; ++i)
                for (int j = 0; j < t; ++j)
                    m(i, j) = want[l][h][i][j].toDouble();
            return m;
        };
        const auto shares = [](Mat<double> m) {
            for (Eigen::Index i = 0; i < m.rows(); ++i)
                if (const double sum = m.row(i).sum(); sum > 0)
                    m.row(i) /= sum;
            return m;
        };

        QVERIFY(w.showView(QStringLiteral("headRoles")));
        HeadRolesView *roles = w.headRolesView();
        QCOMPARE(roles->thumbnailScale(), 1.0);
        const double alphaPrev = roles->score(HeadRolesView::Role::PreviousToken, 1, 1);
        w.views()->normWeightedAction()->setChecked(true);
        QCoreApplication::processEvents();
        QCOMPARE(roles->layerCount(), layers);
        QCOMPARE(roles->headCount(), heads);
        double top = 0;
        for (int l = 0; l < layers; ++l)
            for (int h = 0; h < heads; ++h) {
                const Mat<double> n = matrix(l, h), sh = shares(n);
                top = std::max(top, n.maxCoeff());
                double prev = 0, first = 0;
                for (int i = 1; i < t; ++i) {
                    prev += sh(i, i - 1);
                    first += sh(i, 0);
                }
                QVERIFY2(near(roles->score(HeadRolesView::Role::PreviousToken, l, h), prev / (t - 1)),
                         qPrintable(QStringLiteral("L%1 H%2: %3 vs %4").arg(l).arg(h).arg(roles->score(HeadRolesView::Role::PreviousToken, l, h)).arg(prev / (t - 1))));
                QVERIFY(near(roles->score(HeadRolesView::Role::FirstToken, l, h), first / (t - 1)));
            }
        QVERIFY(std::abs(roles->thumbnailScale() - top) < 1e-4 * top);
        QVERIFY(roles->note().contains(QStringLiteral("‖α·v·W_O‖")));
        QVERIFY(roles->score(HeadRolesView::Role::PreviousToken, 1, 1) != alphaPrev);

        // rollout of the shares: Â = 0.5·shares(mean_h N) + 0.5·I, R_l = Â_l R_{l-1}
        QVERIFY(w.showView(QStringLiteral("rollout")));
        auto *rollout = qobject_cast<RolloutView *>(w.views()->view(QStringLiteral("rollout")));
        QVERIFY(rollout);
        QTRY_VERIFY(rollout->ready());
        Mat<double> acc;
        for (int l = 0; l < layers; ++l) {
            Mat<double> mean = Mat<double>::Zero(t, t);
            for (int h = 0; h < heads; ++h)
                mean += matrix(l, h);
            Mat<double> a = 0.5 * shares(mean / heads);
            a.diagonal().array() += 0.5;
            acc = l == 0 ? a : Mat<double>(a * acc);
            rollout->setRolloutLayer(l);
            for (int i = 0; i < t; ++i)
                for (int j = 0; j < t; ++j)
                    QVERIFY2(near(rollout->value(i, j), acc(i, j)),
                             qPrintable(QStringLiteral("layer %1 cell %2,%3: %4 vs %5").arg(l).arg(i).arg(j).arg(rollout->value(i, j)).arg(acc(i, j))));
        }
        QVERIFY(std::abs(acc.row(t - 1).sum() - 1.0) < 1e-9);
        QVERIFY(rollout->explanation().startsWith(QStringLiteral("Norm-weighted attention rollout")));
        QVERIFY(rollout->title().contains(normWeightedLabel()));
        if (const QString shot = qEnvironmentVariable("ATTNVIZ_NORM_ROLES_SHOT"); !shot.isEmpty() && model == QLatin1String("gpt2-tiny")) {
            QTest::qWait(200);
            QVERIFY(w.grab().save(QString(shot).replace(QStringLiteral(".png"), QStringLiteral("-rollout.png"))));
            QVERIFY(w.showView(QStringLiteral("headRoles")));
            QCoreApplication::processEvents();
            QVERIFY(w.grab().save(shot));
        }

        w.views()->normWeightedAction()->setChecked(false);
        QVERIFY(w.showView(QStringLiteral("rollout"))); // (a hidden view catches up when shown)
        QTRY_VERIFY(rollout->explanation().startsWith(QStringLiteral("Attention rollout")));
        QVERIFY(w.showView(QStringLiteral("headRoles")));
        QCoreApplication::processEvents();
        QCOMPARE(roles->thumbnailScale(), 1.0);
        QCOMPARE(roles->score(HeadRolesView::Role::PreviousToken, 1, 1), alphaPrev);
    }

    void session()
    {
        SessionState s;
        QCOMPARE(sessionToJson(s)[QStringLiteral("view")].toObject().contains(QStringLiteral("normWeighted")), false);
        s.normWeighted = true;
        const QJsonObject json = sessionToJson(s);
        SessionState back;
        QStringList problems;
        QVERIFY(sessionFromJson(json, back, &problems));
        QVERIFY(back.normWeighted);
        QVERIFY(back == s);

        MainWindow w;
        w.views()->setNormWeighted(true);
        QVERIFY(w.captureSession().normWeighted);
        SessionState off = w.captureSession();
        off.normWeighted = false;
        w.applySession(off, &problems);
        QVERIFY(!w.views()->normWeighted());
        w.applySession(s, &problems);
        QVERIFY(w.views()->normWeighted());
    }

    void exportFlag()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath(QStringLiteral("nw.json"));
        const QString text = caseText(QStringLiteral("gpt2-tiny"));
        QProcess p;
        p.start(QString::fromUtf8(ATTNVIZ_BINARY),
                {QStringLiteral("export"), QStringLiteral("--model"), attnviz_test::fixtureModel(QStringLiteral("gpt2-tiny")),
                 QStringLiteral("--view"), QStringLiteral("weights"), QStringLiteral("--layer"), QStringLiteral("1"),
                 QStringLiteral("--head"), QStringLiteral("1"), QStringLiteral("--sentence"), text,
                 QStringLiteral("--norm-weighted"), QStringLiteral("--out"), out});
        QVERIFY(p.waitForFinished(60000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonDocument doc = QJsonDocument::fromJson(f.readAll());
        const QJsonArray want = expectedNormWeighted(QStringLiteral("gpt2-tiny"));
        // the matrix: the first array of arrays of numbers in the file
        QJsonArray m;
        std::function<void(const QJsonValue &)> find = [&](const QJsonValue &v) {
            if (!m.isEmpty())
                return;
            if (v.isArray() && !v.toArray().isEmpty() && v.toArray()[0].isArray() && v.toArray()[0].toArray()[0].isDouble()) {
                m = v.toArray();
                return;
            }
            if (v.isObject())
                for (const QJsonValue &x : v.toObject())
                    find(x);
            if (v.isArray())
                for (const QJsonValue &x : v.toArray())
                    find(x);
        };
        find(doc.isObject() ? QJsonValue(doc.object()) : QJsonValue(doc.array()));
        QCOMPARE(m.size(), want[1][1].toArray().size());
        for (int i = 0; i < m.size(); ++i)
            for (int j = 0; j < m.size(); ++j)
                QVERIFY(near(m[i][j].toDouble(), want[1][1][i][j].toDouble()));

        QProcess bad;
        bad.start(QString::fromUtf8(ATTNVIZ_BINARY),
                  {QStringLiteral("export"), QStringLiteral("--model"), attnviz_test::fixtureModel(QStringLiteral("gpt2-tiny")),
                   QStringLiteral("--view"), QStringLiteral("embeddings"), QStringLiteral("--sentence"), text,
                   QStringLiteral("--norm-weighted"), QStringLiteral("--out"), out});
        QVERIFY(bad.waitForFinished(60000));
        QCOMPARE(bad.exitCode(), 2);
        QVERIFY(bad.readAllStandardError().contains("--norm-weighted"));
    }
};

QTEST_MAIN(TestNormSwitch)
#include "tst_normswitch.moc"
