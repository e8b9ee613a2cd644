// SPDX-License-Identifier: GPL-3.0-or-later
// The norm-weighted switch in the window (View ▸ Norm-weighted attention): on the gpt2-tiny and
// llama-tiny fixtures the heatmap's plotted cells equal the float64 ||a_ij v_j W_O^h|| of
// tests/fixtures/reads/reads-expected.json, its title and scale say so, its hover gives the key's
// value norm; the switch survives a session round trip; `attnviz export --norm-weighted` writes
// the norm-weighted matrix. With ATTNVIZ_NORM_SHOT=FILE the window is grabbed there (PNG).
#include "files/session.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "views/heatmapview.h"
#include "views/normweighting.h"
#include "window/viewrouter.h"

#include "attnviz/pretrained.h"
#include "../support/modelfolders.h"

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
    QFile f(QStringLiteral(ATTNVIZ_FIXTURES_DIR "/reads/reads-expected.json"));
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
        w.session()->setDebounceMs(0);
        w.resize(1400, 900);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        w.session()->setModel(openModel(model));
        const QString text = caseText(model);
        w.setSentence(text);
        QTRY_VERIFY_WITH_TIMEOUT(w.session()->snapshot() && w.session()->snapshot()->fromModel()
                                     && w.session()->snapshot()->sentence == text && !w.session()->busy(),
                                 20000);
        QCoreApplication::processEvents();
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
        QVERIFY(heatmap->title().simplified().contains(normWeightingExplanation()));
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
        p.start(QStringLiteral(ATTNVIZ_BINARY),
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
        bad.start(QStringLiteral(ATTNVIZ_BINARY),
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
