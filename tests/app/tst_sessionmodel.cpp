// SPDX-License-Identifier: GPL-3.0-or-later
// Sessions that name a model folder, opened in the window as `attnviz SESSION.attnviz` opens them:
// a relative `model` path is the session's folder's (not the working directory's), a session whose
// sentence is one huge word opens in well under a second, with or without a model; a session the
// hardened JSON checks refuse (deep, huge, a key twice) changes nothing; and what the window shows of
// a hostile file (its dialogs, its status line) is short, escaped plain text.
#include "mainwindow.h"
#include "live/livesession.h"

#include "../support/modelfolders.h"

#include <QElapsedTimer>
#include <QLabel>
#include <QMessageBox>
#include <QStatusBar>
#include <QJsonArray>
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

    // C, G: sessions through the one hardened reader's limits: one message naming the file and the
    // problem, and the window keeps its sentence and its model
    void refusedSessions_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QString>("problem");
        const QByteArray head = R"({"format": "attnviz-session", "version": 1, "input": {"sentence": )";
        QTest::addRow("100,000 nested arrays") << head + QByteArray(100000, '[') + QByteArray(100000, ']') + "}}"
                                               << "input.sentence: nested deeper than 64 levels";
        QTest::addRow("60 MB") << head + '"' + QByteArray(60'000'000, 'a') + "\"}}" << "60.0 MB, more than the 16.0 MB this reader accepts";
        QTest::addRow("a key twice") << QByteArray(R"({"format": "attnviz-session", "version": 1, "settings": {"numHeads": 2, "numHeads": 4}})")
                                     << "settings.numHeads: duplicate key (a field may be given once)";
        QTest::addRow("a number beyond float64") << QByteArray(R"({"format": "attnviz-session", "version": 1, "settings": {"numHeads": 1e999}})")
                                                 << "malformed JSON: number overflow parsing '1e999'";
    }

    void refusedSessions()
    {
        QFETCH(QByteArray, text);
        QFETCH(QString, problem);
        QTemporaryDir tmp;
        const QString file = tmp.filePath(QStringLiteral("s.attnviz"));
        QFile f(file);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(text);
        f.close();
        MainWindow w;
        QString error;
        QVERIFY2(w.openModel(attnviz_test::fixtureModel(QStringLiteral("gpt2-tiny")), &error), qPrintable(error));
        w.setSentence(QStringLiteral("the ship sails"));
        QString report;
        QVERIFY(!w.openSession(file, &report));
        QCOMPARE(report, QStringLiteral("could not open %1: %2").arg(file, problem));
        QCOMPARE(w.statusBar()->currentMessage(), report);
        QCOMPARE(w.captureSession().sentence, QStringLiteral("the ship sails"));
        QVERIFY(w.session()->model() != nullptr);
        QVERIFY(w.modelSource().endsWith(QLatin1String("gpt2-tiny")));
    }

    // E, O: names and values from a hostile session and model folder, as the window shows them: the
    // problems dialog, the status bar and the model's error message are short, escaped plain text
    void hostileTextInDialogs()
    {
        QTemporaryDir tmp;
        const QString forged = QStringLiteral("x\n\x1b[2J\x1b[31mattnviz: all good");
        // a model folder whose model_type is 5 MB and forges a line
        const QString dir = attnviz_test::copyModelFolder(QStringLiteral("gpt2-tiny"), tmp);
        attnviz_test::editJson(dir + QStringLiteral("/config.json"), [&](QJsonObject &o) {
            o.insert(QStringLiteral("model_type"), forged + QString(5'000'000, QLatin1Char('x')));
        });
        QJsonObject o{{QStringLiteral("format"), QStringLiteral("attnviz-session")},
                      {QStringLiteral("version"), 1},
                      {QStringLiteral("model"), dir},
                      {QStringLiteral("input"), QJsonObject{{QStringLiteral("sentence"), QStringLiteral("a b c")}}},
                      {QStringLiteral("appearance"), QJsonObject{{QStringLiteral("theme"), forged + QString(1'000'000, QLatin1Char('t'))}}},
                      {QStringLiteral("a") + forged, 1},                 // an unknown key
                      {QStringLiteral("<h1>big</h1>") + forged, 2}};     // markup is text
        for (int i = 0; i < 500; ++i)
            o.insert(QStringLiteral("unknown%1").arg(i), i);          // a list is cut
        const QString file = tmp.filePath(QStringLiteral("hostile\x1b[2J.attnviz"));
        QFile f(file);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QJsonDocument(o).toJson());
        f.close();
        MainWindow w;
        w.resize(1000, 700);
        w.show();
        QElapsedTimer timer;
        timer.start();
        QString report;
        QVERIFY2(w.openSession(file, &report), qPrintable(report.left(2000)));
        auto clean = [](const QString &text, int most) {
            if (text.size() > most)
                return QStringLiteral("%1 characters").arg(text.size());
            for (const QChar c : text)
                if ((c.unicode() < 0x20 && c != QLatin1Char('\n')) || c.unicode() == 0x7f)
                    return QStringLiteral("a raw control character U+%1").arg(c.unicode(), 4, 16, QLatin1Char('0'));
            return QString();
        };
        QMessageBox *box = w.findChild<QMessageBox *>(QStringLiteral("sessionProblems"));
        QVERIFY(box);
        QCOMPARE(box->textFormat(), Qt::PlainText);
        const QString shown = box->text();
        QCOMPARE(shown, report);
        QVERIFY2(clean(shown, 20000).isEmpty(), qPrintable(clean(shown, 20000)));
        QVERIFY2(clean(box->windowTitle(), 300).isEmpty(), qPrintable(box->windowTitle()));
        QVERIFY2(shown.contains(QLatin1String("model: ") + dir + QLatin1String("/config.json: model_type: \"x\\x0a\\x1b[2J\\x1b[31mattnviz: all good")),
                 qPrintable(shown.left(3000)));
        QVERIFY2(shown.contains(QLatin1String("... (5.0 MB) is not a family")), qPrintable(shown.left(3000)));
        QVERIFY2(shown.contains(QLatin1String("appearance.theme: \"x\\x0a\\x1b[2J")), qPrintable(shown.left(3000)));
        QVERIFY2(shown.contains(QLatin1String("ignored: ax\\x0a\\x1b[2J")), qPrintable(shown.left(3000)));
        QVERIFY2(shown.contains(QLatin1String("<h1>big</h1>")), qPrintable(shown.left(3000))); // shown as typed
        QVERIFY2(shown.endsWith(QStringLiteral("\n… and 484 more")), qPrintable(shown.right(300))); // 504 problems, 20 shown
        QVERIFY2(shown.startsWith(QLatin1String("Opened ") + tmp.path() + QLatin1String("/hostile\\x1b[2J.attnviz")), qPrintable(shown.left(300)));
        const QString status = w.statusBar()->currentMessage();
        QVERIFY2(clean(status, 20000).isEmpty(), qPrintable(clean(status, 20000)));
        QVERIFY(w.session()->model() == nullptr); // the folder was refused: the word vectors stay
        QVERIFY2(timer.elapsed() < 20000, qPrintable(QStringLiteral("%1 ms").arg(timer.elapsed())));

        // the same folder from File > Open model (read on a thread): the message and the status line
        QString title, text;
        w.setMessagePrompt([&](const QString &t, const QString &m) { title = t; text = m; });
        w.startOpenModel(dir);
        QTRY_VERIFY_WITH_TIMEOUT(!text.isEmpty(), 30000);
        QVERIFY2(clean(text, 3000).isEmpty(), qPrintable(clean(text, 3000)));
        QVERIFY2(text.contains(QLatin1String("model_type: \"x\\x0a\\x1b[2J\\x1b[31mattnviz: all good")), qPrintable(text));
        const QString label = w.statusText();
        QVERIFY2(clean(label, 1000).isEmpty(), qPrintable(clean(label, 1000)));
        QCOMPARE(w.findChild<QLabel *>(QStringLiteral("statusLabel"))->textFormat(), Qt::PlainText);
    }

    // C, G: a session naming a folder whose config.json is nested 2,000,000 deep or gives a key
    // twice: the hardened reader's one line, the window up with the word vectors, the rest opened
    void sessionNamingRefusedFolder_data()
    {
        QTest::addColumn<QByteArray>("extra");
        QTest::addColumn<QString>("problem");
        QTest::addRow("config.json nested 2,000,000 deep") << ", \"x\": " + QByteArray(2'000'000, '[') + QByteArray(2'000'000, ']')
                                                            << "/config.json: x: nested deeper than 64 levels";
        QTest::addRow("config.json n_head twice") << QByteArray(", \"n_head\": 8") << "/config.json: n_head: duplicate key";
    }

    void sessionNamingRefusedFolder()
    {
        QFETCH(QByteArray, extra);
        QFETCH(QString, problem);
        QTemporaryDir tmp;
        const QString dir = attnviz_test::copyModelFolder(QStringLiteral("gpt2-tiny"), tmp);
        QFile f(dir + QStringLiteral("/config.json"));
        QVERIFY(f.open(QIODevice::ReadOnly));
        QByteArray b = f.readAll();
        f.close();
        b.truncate(b.lastIndexOf('}'));
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(b + extra + "}");
        f.close();
        const QString file = writeSession(tmp, QStringLiteral("the crew"), dir);
        MainWindow w;
        QString report;
        QVERIFY2(w.openSession(file, &report), qPrintable(report));
        QVERIFY2(report.contains(QStringLiteral("model: ") + dir + problem), qPrintable(report.left(2000)));
        QVERIFY(report.size() < 2000);
        QVERIFY(w.session()->model() == nullptr);
        QCOMPARE(w.captureSession().sentence, QStringLiteral("the crew"));
    }

    // I: weights that overflow float32 (3e38 in a layer norm) make NaN attention; the window says so
    // in its status line instead of drawing it
    void nonFiniteInWindow()
    {
        QTemporaryDir tmp;
        const QString dir = attnviz_test::copyModelFolder(QStringLiteral("gpt2-tiny"), tmp);
        attnviz_test::Safetensors st = attnviz_test::readSafetensors(dir + QStringLiteral("/model.safetensors"));
        const QJsonArray off = st.header.value(QStringLiteral("transformer.h.0.ln_1.weight")).toObject().value(QStringLiteral("data_offsets")).toArray();
        const float big = 3e38f;
        for (qint64 at = off[0].toInteger(); at < off[1].toInteger(); at += 4)
            st.data.replace(int(at), 4, reinterpret_cast<const char *>(&big), 4);
        attnviz_test::writeSafetensors(dir + QStringLiteral("/model.safetensors"), st);
        MainWindow w;
        w.session()->setDebounceMs(0);
        QString error;
        QVERIFY2(w.openModel(dir, &error), qPrintable(error));
        w.setSentence(QStringLiteral("a b c d"));
        QTRY_VERIFY_WITH_TIMEOUT(w.statusText().contains(QLatin1String("the attention weights are not finite")), 20000);
        QVERIFY(w.session()->snapshot() && !w.session()->snapshot()->hasResult());
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
