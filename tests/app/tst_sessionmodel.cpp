// SPDX-License-Identifier: GPL-3.0-or-later
// Sessions that name a model folder, opened in the window as `attnviz SESSION.attnviz` opens them:
// a relative `model` path is the session's folder's (not the working directory's), and a session
// whose sentence is one huge word opens in well under a second, with or without a model.
#include "mainwindow.h"
#include "live/livesession.h"

#include "../support/modelfolders.h"

#include <QElapsedTimer>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnviz;
using namespace attnviz::ui;

class TestSessionModel : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("attnviz-tests"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_sessionmodel"));
        QSettings().clear();
    }

    // M: "model": "models/gpt2-tiny" beside the session, opened from another working directory
    void relativeModelPath()
    {
        QTemporaryDir tmp, elsewhere;
        QVERIFY(QDir().mkpath(tmp.filePath(QStringLiteral("models"))));
        QTemporaryDir models(tmp.filePath(QStringLiteral("models/XXXXXX")));
        const QString dir = attnviz_test::copyModelFolder(QStringLiteral("gpt2-tiny"), models);
        const QString relative = QDir(tmp.path()).relativeFilePath(dir);
        QVERIFY(!QDir::isAbsolutePath(relative));
        const QString file = writeSession(tmp, QStringLiteral("a b c"), relative);
        const QString before = QDir::currentPath();
        QVERIFY(QDir::setCurrent(elsewhere.path()));
        MainWindow w;
        QString report;
        const bool opened = w.openSession(file, &report);
        QDir::setCurrent(before);
        QVERIFY2(opened, qPrintable(report));
        QVERIFY2(!report.contains(QLatin1String("could not")), qPrintable(report));
        QVERIFY(w.session()->model() != nullptr);
        QCOMPARE(QFileInfo(QString::fromStdString(w.session()->model()->info().source)).canonicalFilePath(),
                 QFileInfo(dir).canonicalFilePath());
    }

    // F: one 1 MB word as the sentence (Qt's layout of an unbreakable word grows with its square:
    // two minutes), without and with a model: refused with the reason, in well under a second
    void hugeWord_data()
    {
        QTest::addColumn<bool>("withModel");
        QTest::addRow("word vectors") << false;
        QTest::addRow("gpt2-tiny") << true;
    }

    void hugeWord()
    {
        QFETCH(bool, withModel);
        QTemporaryDir tmp;
        const QString model = withModel ? attnviz_test::fixtureModel(QStringLiteral("gpt2-tiny")) : QString();
        const QString file = writeSession(tmp, QString(1'000'000, QLatin1Char('a')), model);
        MainWindow w;
        w.resize(1000, 700);
        w.show();
        const QString before = w.captureSession().sentence;
        QElapsedTimer timer;
        timer.start();
        QString report;
        QVERIFY2(w.openSession(file, &report), qPrintable(report));
        QVERIFY2(report.contains(QLatin1String("input.sentence: one word of 1,000,000 characters, more than the 10,000")),
                 qPrintable(report));
        QTRY_VERIFY_WITH_TIMEOUT(w.session()->snapshot() && w.session()->snapshot()->generation > 0, 20000);
        QCoreApplication::processEvents();
        // a ceiling, not a speed test: laying out the 1 MB word took 124-131 s; refusing it takes
        // under a second
        QVERIFY2(timer.elapsed() < 20000, qPrintable(QStringLiteral("%1 ms").arg(timer.elapsed())));
        QCOMPARE(w.captureSession().sentence, before); // the sentence as it was
        QCOMPARE(w.session()->model() != nullptr, withModel); // the rest of the session opened
        // a long sentence of ordinary words still opens
        const QString words = writeSession(tmp, QStringLiteral("the ship and the crew ").repeated(2000), model);
        QVERIFY2(w.openSession(words, &report), qPrintable(report));
        QVERIFY2(!report.contains(QLatin1String("one word of")), qPrintable(report));
        QCOMPARE(w.captureSession().sentence.size(), 22 * 2000);
    }

private:
    static QString writeSession(const QTemporaryDir &tmp, const QString &sentence, const QString &model)
    {
        QJsonObject o{{QStringLiteral("format"), QStringLiteral("attnviz-session")},
                      {QStringLiteral("version"), 1},
                      {QStringLiteral("input"), QJsonObject{{QStringLiteral("sentence"), sentence}}}};
        if (!model.isEmpty())
            o.insert(QStringLiteral("model"), model);
        const QString file = tmp.filePath(QStringLiteral("s.attnviz"));
        QFile f(file);
        f.open(QIODevice::WriteOnly);
        f.write(QJsonDocument(o).toJson());
        return file;
    }
};

QTEST_MAIN(TestSessionModel)
#include "tst_sessionmodel.moc"
