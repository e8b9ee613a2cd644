// SPDX-License-Identifier: GPL-3.0-or-later
// Sessions (*.attnviz): every control round-trips through a file, bad files (truncated, newer, naming
// missing files) open what they can and never change the window or the file when they cannot, the
// modified flag and the unsaved-changes prompt, recent files, restore on start. Offscreen, with
// QSettings in Qt's test location; the user's own settings are never read or written.
#include "testpaths.h"
#include "controls/controlpanel.h"
#include "views/embeddingview.h"
#include "views/headgridview.h"
#include "views/heatmapview.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "testsupport.h"
#include "views/compareview.h"
#include "teaching/lessonpanel.h"
#include "views/linesview.h"
#include "style/appearance.h"
#include "views/residualview.h"
#include "teaching/seedtables.h"
#include "files/session.h"
#include "controls/stackcontrols.h"
#include "controls/tokenchipsview.h"

#include "bundledvectors.h"

#include <QAction>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMenu>
#include <QMessageBox>
#include <QProcess>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

#include <functional>

using namespace attnviz;
using namespace attnviz::ui;

namespace {

const QString kToyTable = test::toyTable();
const QString kStackFile = test::stackFile();

using test::readAll;
using test::readJson;
using test::writeFile;

// Two settings equal but for the loaded weights' identity (a file read twice gives two objects).
bool sameButLoaded(ComputeSettings a, ComputeSettings b)
{
    a.loadedProjections = b.loadedProjections = nullptr;
    a.stack.loaded = b.stack.loaded = nullptr;
    return a == b && a.projectionSource == b.projectionSource && a.stack.loadedSource == b.stack.loadedSource
        && a.stack.loadedDepth == b.stack.loadedDepth;
}

// A 16 x 16 W_q = W_k = 2 I projections file for the toy table.
bool writeProjections(const QString &path) { return test::writeDoubleIdentityProjections(path, 16); }

} // namespace

class TestSessions : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    int m_prompts = 0;
    QStringList m_promptNames;

    QString path(const QString &name) const { return m_dir.filePath(name); }

    // A window on the toy table whose prompts fail the test unless a test sets its own.
    std::unique_ptr<MainWindow> window()
    {
        auto w = std::make_unique<MainWindow>();
        QString error;
        if (!w->loadEmbeddingsFile(kToyTable, &error))
            qFatal("%s", qPrintable(error));
        w->setSavePrompt([this](const QString &name) {
            ++m_prompts;
            m_promptNames << name;
            qWarning("unexpected save prompt for %s", qPrintable(name));
            return MainWindow::SaveAnswer::Cancel;
        });
        w->setSaveAsPrompt([](const QString &) { return QString(); });
        w->setOpenPrompt([](const QString &) { return QString(); });
        return w;
    }

    static void settle(MainWindow *w)
    {
        QElapsedTimer t;
        t.start();
        do {
            QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        } while (t.elapsed() < 5000 && (w->session()->busy() || !w->session()->snapshot() || t.elapsed() < 80));
    }

    // Every control away from its default (the stack row: a 3-layer stack, so d_head is not free).
    static void setEverything(MainWindow *w, bool seedTable, bool stack)
    {
        if (seedTable) {
            w->setEmbeddingTable(journeyTable(), describeTable(*journeyTable()));
            w->setSentence(QStringLiteral("your journey starts with one step"));
            w->setKeySentence(QStringLiteral("one step starts your journey"));
        } else {
            QString error;
            QVERIFY2(w->loadEmbeddingsFile(kToyTable, &error), qPrintable(error));
            w->setSentence(QStringLiteral("we must go back to the ship"));
            w->setKeySentence(QStringLiteral("my crew and my ship"));
        }
        ComputeSettings c;
        c.numHeads = stack ? 3 : 2;
        c.dHead = 6;
        c.scaleRule = ScaleRule::Temperature;
        c.temperature = ControlPanel::temperatureForSlider(140);
        c.normalization = Normalization::Sum;
        c.mask = MaskChoice::CausalPadding;
        c.maskMethod = MaskMethod::MultiplyRenormalize;
        c.projection = ProjectionMode::Random;
        c.projectionSeed = 123;
        c.initScheme = InitScheme::XavierUniform;
        c.drawOrder = DrawOrder::PerHead;
        c.outWidth = 5;
        c.dropout = 0.25;
        c.dropoutSeed = 77;
        c.backend = QStringLiteral("auto");
        c.stack.depth = stack ? 3 : 1;
        c.stack.norm = NormPlacement::Pre;
        c.stack.activation = Activation::GeluErf;
        c.stack.positions = PositionEncoding::Sinusoidal;
        c.stack.seed = 42;
        w->controls()->setSettings(c);
        w->session()->togglePadding(1);
        w->session()->togglePadding(3);
        w->session()->toggleCustomCell(0, 1);
        w->session()->toggleCustomCell(2, 2);
        w->session()->setSelectedHead(1);
        w->session()->setHeadDisplay(HeadDisplay::Average);
        w->session()->setSelectedQuery(2);
        if (stack) {
            w->session()->setSelectedLayer(2);
            w->controls()->stackControls()->setShownLayer(2);
        }
        w->controls()->setShowNumbers(false);
        w->tabs()->setCurrentWidget(stack ? static_cast<QWidget *>(w->residualView())
                                          : static_cast<QWidget *>(w->embeddingView()));
    }

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("attnviz-tests"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_sessions"));
        QVERIFY2(QSettings().fileName().contains(QStringLiteral(".qttest")), qPrintable(QSettings().fileName()));
        QSettings().clear();
        QVERIFY(m_dir.isValid());
    }
    void init()
    {
        QSettings().clear();
        m_prompts = 0;
        m_promptNames.clear();
    }
    void cleanupTestCase()
    {
        QSettings s;
        s.clear();
        s.sync();
        QFile::remove(s.fileName());
        QDir().rmdir(QFileInfo(s.fileName()).absolutePath());
    }

    void defaultsAgreeWithTheWindow()
    {
        QCOMPARE(SessionState().sentence, MainWindow::defaultSentence());
        QVERIFY(ComputeSettings() == ControlPanel().settings());
        // a new window does not restore anything by itself: tests and --no-restore start clean
        QSettings().setValue(QStringLiteral("session/last"), QStringLiteral("{\"format\":\"attnviz-session\",\"version\":1,"
                                                                            "\"input\":{\"sentence\":\"restored\"}}"));
        MainWindow w;
        QCOMPARE(w.captureSession().sentence, MainWindow::defaultSentence());
        QVERIFY(!w.isWindowModified());
        QVERIFY(w.windowTitle().startsWith(QStringLiteral("Untitled[*]")));
        // another table is a change
        QString error;
        QVERIFY(w.loadEmbeddingsFile(kToyTable, &error));
        QVERIFY(w.isWindowModified());
    }

    void theReadmeExampleReadsWithoutProblems()
    {
        const QString readme = QString::fromUtf8(readAll(QString::fromUtf8(ATTNVIZ_SOURCE_PATH("/README.md"))));
        const int at = readme.indexOf(QLatin1String("### Session files"));
        const int from = readme.indexOf(QLatin1String("```json\n"), at);
        const int to = readme.indexOf(QLatin1String("```"), from + 8);
        QVERIFY(at > 0 && from > at && to > from);
        QJsonParseError pe{};
        const QJsonDocument doc = QJsonDocument::fromJson(readme.mid(from + 8, to - from - 8).toUtf8(), &pe);
        QCOMPARE(pe.errorString(), QJsonParseError().errorString());
        SessionState s;
        QStringList problems;
        QVERIFY(sessionFromJson(doc.object(), s, &problems));
        QCOMPARE(problems, QStringList());
        QCOMPARE(s.settings.mask, MaskChoice::Causal);
        QCOMPARE(s.paddedKeys, (std::set<int>{3}));
        // and what the writer writes has exactly the example's keys
        const QJsonObject written = sessionToJson(s);
        QCOMPARE(written.keys(), doc.object().keys());
        for (const char *section : {"input", "settings", "table", "view"})
            QCOMPARE(written.value(section).toObject().keys(), doc.object().value(section).toObject().keys());
        QCOMPARE(written.value("settings").toObject().value("stack").toObject().keys(),
                 doc.object().value("settings").toObject().value("stack").toObject().keys());
    }

    // The Lesson column's preset, the appearance and the Compare tab's side B travel with a lesson.
    void roundTripsLessonAppearanceAndCompare()
    {
        auto a = window();
        QVERIFY(a->applyPreset(QStringLiteral("journey-sum")));
        Appearance look;
        look.theme = Theme::Dark;
        look.sequential = SequentialMap::Cividis;
        look.diverging = DivergingMap::PurpleOrange;
        look.fontScale = 1.3;
        AppearanceManager::instance()->setAppearance(look);
        CompareSide b;
        b.sentence = QStringLiteral("your journey starts");
        b.settings = a->controls()->settings();
        b.settings.normalization = Normalization::Softmax;
        b.settings.mask = MaskChoice::Causal;
        b.table = journeyTable();
        a->compareView()->setSideB(b);
        a->linesView()->setThreshold(0.05);
        a->linesView()->setScaleRows(true);
        settle(a.get());
        const SessionState saved = a->captureSession();
        QCOMPARE(saved.linesThreshold, 0.05);
        QVERIFY(saved.linesScaleRows);
        QCOMPARE(saved.lesson, QStringLiteral("journey-sum"));
        QVERIFY(saved.appearance == look);
        QVERIFY(saved.compare.present);
        QCOMPARE(saved.compare.seedTable, QStringLiteral("journey"));
        const QString file = path(QStringLiteral("lesson.attnviz"));
        QString error;
        QVERIFY2(a->saveSession(file, &error), qPrintable(error));
        const QJsonObject json = readJson(file);
        QCOMPARE(json.value("lesson").toString(), QStringLiteral("journey-sum"));
        QCOMPARE(json.value("appearance").toObject().value("weightsMap").toString(), QStringLiteral("cividis"));
        QCOMPARE(json.value("compare").toObject().value("settings").toObject().value("mask").toString(),
                 QStringLiteral("causal"));

        AppearanceManager::instance()->setAppearance(Appearance());
        auto w = window();
        QString report;
        QVERIFY2(w->openSession(file, &report), qPrintable(report));
        settle(w.get());
        QVERIFY(AppearanceManager::instance()->appearance() == look);
        QCOMPARE(w->lessonPanel()->currentId(), QStringLiteral("journey-sum"));
        const CompareSide got = w->compareView()->sideB();
        QCOMPARE(got.sentence, b.sentence);
        QVERIFY(got.settings == b.settings);
        QCOMPARE(got.table, journeyTable());
        QCOMPARE(w->linesView()->threshold(), 0.05);
        QVERIFY(w->linesView()->scaleRows());
        QVERIFY(w->captureSession() == saved);
        AppearanceManager::instance()->setAppearance(Appearance());

        // an unknown preset and a bad theme are reported, the rest opens
        QJsonObject bad = json;
        bad.insert("lesson", QStringLiteral("no-such-lesson"));
        QJsonObject ap = bad.value("appearance").toObject();
        ap.insert("theme", QStringLiteral("neon"));
        bad.insert("appearance", ap);
        const QString badFile = path(QStringLiteral("bad-lesson.attnviz"));
        QVERIFY(writeFile(badFile, QJsonDocument(bad).toJson()));
        auto v = window();
        QVERIFY(v->openSession(badFile, &report));
        QVERIFY2(report.contains(QStringLiteral("no-such-lesson")), qPrintable(report));
        QVERIFY2(report.contains(QStringLiteral("appearance.theme")), qPrintable(report));
        QCOMPARE(AppearanceManager::instance()->appearance().sequential, SequentialMap::Cividis);
        AppearanceManager::instance()->setAppearance(Appearance());
    }

    void roundTripsEveryControl_data()
    {
        QTest::addColumn<bool>("seedTable");
        QTest::addColumn<bool>("stack");
        QTest::addRow("file table, one layer") << false << false;
        QTest::addRow("seed table, stack of 3") << true << true;
    }

    void roundTripsEveryControl()
    {
        QFETCH(bool, seedTable);
        QFETCH(bool, stack);
        auto a = window();
        setEverything(a.get(), seedTable, stack);
        if (QTest::currentTestFailed())
            return;
        settle(a.get());
        const SessionState saved = a->captureSession();
        const ComputeSettings c = a->controls()->settings();
        // every field is away from its default (else the comparison below could not fail)
        const ComputeSettings d;
        QVERIFY(c.numHeads != d.numHeads);
        QVERIFY(stack || c.dHead != d.dHead); // a stack has its own weights: d_head is not free there
        QVERIFY(c.scaleRule != d.scaleRule && c.temperature != d.temperature);
        QVERIFY(c.normalization != d.normalization && c.mask != d.mask && c.maskMethod != d.maskMethod);
        QVERIFY(c.projection != d.projection && c.projectionSeed != d.projectionSeed);
        QVERIFY(c.initScheme != d.initScheme && c.drawOrder != d.drawOrder && c.outWidth != d.outWidth);
        QVERIFY(c.dropout != d.dropout && c.dropoutSeed != d.dropoutSeed && c.backend != d.backend);
        QVERIFY(stack == (c.stack.depth != d.stack.depth));
        QVERIFY(c.stack.norm != d.stack.norm && c.stack.activation != d.stack.activation);
        QVERIFY(c.stack.positions != d.stack.positions && c.stack.seed != d.stack.seed);
        QCOMPARE(saved.paddedKeys, (std::set<int>{1, 3}));
        QCOMPARE(saved.customMask.size(), size_t(2));
        QCOMPARE(saved.headDisplay, HeadDisplay::Average);
        QCOMPARE(saved.selectedHead, 1);
        QCOMPARE(saved.selectedQuery, 2);
        QCOMPARE(saved.layer, stack ? 2 : 0);
        QVERIFY(!saved.showNumbers);
        QCOMPARE(saved.tab, stack ? QStringLiteral("residual") : QStringLiteral("embeddings"));
        QCOMPARE(saved.tableKind, seedTable ? TableKind::Seed : TableKind::File);

        const QString file = path(QStringLiteral("every-%1.attnviz").arg(QTest::currentDataTag()).replace(' ', '_'));
        QString error;
        QVERIFY2(a->saveSession(file, &error), qPrintable(error));
        // the file is valid JSON with the format and version
        QJsonParseError pe{};
        const QJsonDocument doc = QJsonDocument::fromJson(readAll(file), &pe);
        QCOMPARE(pe.error, QJsonParseError::NoError);
        QCOMPARE(doc.object().value("format").toString(), QStringLiteral("attnviz-session"));
        QCOMPARE(doc.object().value("version").toInt(), 2);
        QCOMPARE(doc.object().value("settings").toObject().value("scaleRule").toString(), QStringLiteral("temperature"));
        QCOMPARE(doc.object().value("settings").toObject().value("mask").toString(), QStringLiteral("causal+padding"));
        QCOMPARE(doc.object().value("view").toObject().value("tab").toString(), saved.tab);
        if (seedTable)
            QCOMPARE(doc.object().value("table").toObject().value("name").toString(), QStringLiteral("journey"));
        else
            QCOMPARE(doc.object().value("table").toObject().value("path").toString(), QFileInfo(kToyTable).absoluteFilePath());

        auto b = window(); // a fresh window: defaults everywhere
        QVERIFY(b->captureSession() != saved);
        QString report;
        QVERIFY2(b->openSession(file, &report), qPrintable(report));
        QVERIFY2(!report.contains(QStringLiteral("could not")), qPrintable(report));
        settle(b.get());
        const SessionState got = b->captureSession();
        const ComputeSettings bc = b->controls()->settings();
        QVERIFY(bc == c);
        QCOMPARE(bc.numHeads, c.numHeads);
        QCOMPARE(bc.dHead, c.dHead);
        QCOMPARE(bc.temperature, c.temperature);
        QCOMPARE(bc.outWidth, c.outWidth);
        QCOMPARE(bc.dropout, c.dropout);
        QCOMPARE(bc.backend, c.backend);
        QCOMPARE(bc.stack.depth, c.stack.depth);
        QCOMPARE(got.sentence, saved.sentence);
        QCOMPARE(got.keySentence, saved.keySentence);
        QCOMPARE(got.paddedKeys, saved.paddedKeys);
        QVERIFY(got.customMask == saved.customMask);
        QCOMPARE(got.tableKind, saved.tableKind);
        QCOMPARE(got.tablePath, saved.tablePath);
        QCOMPARE(got.tableName, saved.tableName);
        if (seedTable)
            QCOMPARE(b->session()->table(), journeyTable());
        else
            QCOMPARE(b->session()->table()->dim(), 16);
        QCOMPARE(got.headDisplay, saved.headDisplay);
        QCOMPARE(got.selectedHead, saved.selectedHead);
        QCOMPARE(got.selectedQuery, saved.selectedQuery);
        QCOMPARE(got.layer, saved.layer);
        QCOMPARE(b->controls()->stackControls()->shownLayer(), saved.layer);
        QCOMPARE(got.showNumbers, saved.showNumbers);
        QCOMPARE(got.tab, saved.tab);
        QCOMPARE(b->tabs()->currentWidget(),
                 stack ? static_cast<QWidget *>(b->residualView()) : static_cast<QWidget *>(b->embeddingView()));
        QVERIFY(got == saved);
        QVERIFY(!b->isWindowModified());
        QCOMPARE(b->sessionPath(), QFileInfo(file).absoluteFilePath());
        QVERIFY(b->windowTitle().contains(QFileInfo(file).fileName()));
    }

    void roundTripsWeightFiles()
    {
        const QString proj = path(QStringLiteral("proj.json"));
        QVERIFY(writeProjections(proj));
        auto a = window();
        QString error;
        QVERIFY2(a->loadProjectionsFile(proj, &error), qPrintable(error));
        QVERIFY2(a->loadStackWeightsFile(kStackFile, &error), qPrintable(error));
        const ComputeSettings c = a->controls()->settings();
        QCOMPARE(c.projection, ProjectionMode::File);
        QCOMPARE(c.stack.source, StackWeightsSource::File);
        const QString file = path(QStringLiteral("weights.attnviz"));
        QVERIFY2(a->saveSession(file, &error), qPrintable(error));
        const QJsonObject json = readJson(file);
        QCOMPARE(json.value("projectionsFile").toString(), QFileInfo(proj).absoluteFilePath());
        QCOMPARE(json.value("stackWeightsFile").toString(), QFileInfo(kStackFile).absoluteFilePath());

        auto b = window();
        QString report;
        QVERIFY2(b->openSession(file, &report), qPrintable(report));
        const ComputeSettings bc = b->controls()->settings();
        QVERIFY(bc.loadedProjections && bc.stack.loaded);
        QVERIFY(sameButLoaded(bc, c));
        QCOMPARE(b->captureSession().projectionsFile, QFileInfo(proj).absoluteFilePath());
        QCOMPARE(b->captureSession().stackWeightsFile, QFileInfo(kStackFile).absoluteFilePath());

        // a session without weight files unloads them from a window that had some
        const QString plain = path(QStringLiteral("plain.attnviz"));
        {
            auto p = window();
            ComputeSettings random;
            random.projection = ProjectionMode::Random;
            p->controls()->setSettings(random);
            QVERIFY2(p->saveSession(plain, &error), qPrintable(error));
        }
        QVERIFY2(b->openSession(plain, &report), qPrintable(report));
        QVERIFY(b->captureSession().projectionsFile.isEmpty());
        QVERIFY(b->captureSession().stackWeightsFile.isEmpty());
        QCOMPARE(b->controls()->settings().projection, ProjectionMode::Random);
        QCOMPARE(b->controls()->settings().stack.source, StackWeightsSource::Seeded);
    }

    void olderFileWithSectionsMissingOpensWithDefaults()
    {
        const QString file = path(QStringLiteral("old.attnviz"));
        QVERIFY(writeFile(file, R"({"format": "attnviz-session", "version": 1, "input": {"sentence": "we go back"}})"));
        auto w = window();
        ComputeSettings c;
        c.numHeads = 4;
        c.mask = MaskChoice::Causal;
        w->controls()->setSettings(c);
        w->setKeySentence(QStringLiteral("my ship"));
        QString report;
        QVERIFY2(w->openSession(file, &report), qPrintable(report));
        const SessionState s = w->captureSession();
        QCOMPARE(s.sentence, QStringLiteral("we go back"));
        QCOMPARE(s.keySentence, QString());
        QVERIFY(w->controls()->settings() == ComputeSettings());
        QCOMPARE(s.tab, QStringLiteral("weights"));
        QCOMPARE(s.headDisplay, HeadDisplay::One);
        QVERIFY(s.showNumbers);
        if (hasBundledEmbeddings()) {
            QCOMPARE(s.tableKind, TableKind::Bundled);
            QVERIFY2(!report.contains(QStringLiteral("could not be opened")), qPrintable(report));
        } else {
            QCOMPARE(s.tableKind, TableKind::File); // the toy table stays, and the report says so
            QVERIFY(report.contains(QStringLiteral("no bundled")));
        }
    }

    // Version 1 was written when `bundled` was attnviz-tiny (the GPT-2): such a file opens that model,
    // now `bundled-gpt2`; version 2's `bundled` is attnviz-tiny 2.
    void versionOneBundledIsTheGpt2()
    {
        for (const int version : {1, 2}) {
            const QJsonObject json{{"format", "attnviz-session"}, {"version", version}, {"model", "bundled"}};
            SessionState s;
            QStringList problems;
            QVERIFY(sessionFromJson(json, s, &problems));
            QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('|'))));
            QCOMPARE(s.model, version == 1 ? QStringLiteral("bundled-gpt2") : QStringLiteral("bundled"));
        }
    }

    void newerVersionOpensWhatItCanAndReportsIgnoredKeys()
    {
        auto a = window();
        setEverything(a.get(), false, false);
        const QString base = path(QStringLiteral("base.attnviz"));
        QString error;
        QVERIFY2(a->saveSession(base, &error), qPrintable(error));
        QJsonObject json = readJson(base);
        json.insert("version", 3);
        QJsonObject settings = json.value("settings").toObject();
        settings.insert("fooBar", 1);
        json.insert("settings", settings);
        QJsonObject view = json.value("view").toObject();
        view.insert("zoom", 3);
        json.insert("view", view);
        json.insert("quiz", QJsonObject{{"settings", QJsonObject{}}});
        const QString file = path(QStringLiteral("newer.attnviz"));
        const QByteArray bytes = QJsonDocument(json).toJson();
        QVERIFY(writeFile(file, bytes));

        auto b = window();
        QString report;
        QVERIFY2(b->openSession(file, &report), qPrintable(report));
        QVERIFY2(report.contains(QStringLiteral("newer attnviz (session format version 3")), qPrintable(report));
        QVERIFY2(report.contains(QStringLiteral("ignored: settings.fooBar (written by a newer attnviz)")), qPrintable(report));
        QVERIFY2(report.contains(QStringLiteral("ignored: view.zoom")), qPrintable(report));
        QVERIFY2(report.contains(QStringLiteral("ignored: quiz")), qPrintable(report));
        QVERIFY(b->controls()->settings() == a->controls()->settings()); // what it understands applies
        QCOMPARE(b->captureSession().sentence, a->captureSession().sentence);
        // listed in one non-modal dialog and in the status bar
        auto *box = b->findChild<QMessageBox *>(QStringLiteral("sessionProblems"));
        QVERIFY(box);
        QVERIFY(box->isVisible() && !box->isModal());
        QVERIFY(box->text().contains(QStringLiteral("settings.fooBar")));
        // Save does not overwrite a file it could not read completely: it asks for a name (cancelled here)
        QVERIFY(!b->saveInteractive(false));
        QCOMPARE(readAll(file), bytes);
    }

    void badValuesAreNamedAndTheRestApplies_data()
    {
        QTest::addColumn<QString>("section");
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("value"); // JSON
        QTest::addColumn<QString>("problem");
        QTest::addRow("negative heads") << "settings" << "numHeads" << "-3" << "settings.numHeads: -3 is not a head count";
        QTest::addRow("fractional heads") << "settings" << "numHeads" << "2.5" << "settings.numHeads: 2.5 is not a head count";
        QTest::addRow("heads as text") << "settings" << "numHeads" << "\"four\"" << "settings.numHeads: \"four\" is not a head count";
        QTest::addRow("unknown mask") << "settings" << "mask" << "\"diagonal\"" << "settings.mask: \"diagonal\" is not one of";
        QTest::addRow("unknown scale") << "settings" << "scaleRule" << "\"1/d\"" << "settings.scaleRule: \"1/d\" is not one of";
        QTest::addRow("temperature 0") << "settings" << "temperature" << "0" << "settings.temperature: 0 is not a temperature";
        QTest::addRow("dropout 1") << "settings" << "dropout" << "1" << "settings.dropout: 1 is not a dropout rate";
        QTest::addRow("unknown backend") << "settings" << "backend" << "\"tpu\"" << "settings.backend: \"tpu\"";
        QTest::addRow("negative seed") << "settings" << "projectionSeed" << "-1" << "settings.projectionSeed: -1 is not a seed";
        QTest::addRow("unknown tab") << "view" << "tab" << "\"charts\"" << "view.tab: \"charts\" is not a view";
        QTest::addRow("unknown head display") << "view" << "headDisplay" << "\"some\"" << "view.headDisplay: \"some\"";
        QTest::addRow("numbers as text") << "view" << "showNumbers" << "\"no\"" << "view.showNumbers: \"no\" is not true or false";
        QTest::addRow("padding index") << "input" << "paddedKeys" << "[1, \"x\"]" << "input.paddedKeys[1]: \"x\" is not a token index";
        QTest::addRow("mask cell") << "input" << "customMask" << "[[0, 1], [2]]" << "input.customMask[1]: [2] is not a [query, key] cell";
        QTest::addRow("sentence as number") << "input" << "sentence" << "5" << "input.sentence: 5 is not text";
        QTest::addRow("settings not an object") << "" << "settings" << "[]" << "settings: [] is not an object";
    }

    void badValuesAreNamedAndTheRestApplies()
    {
        QFETCH(QString, section);
        QFETCH(QString, key);
        QFETCH(QString, value);
        QFETCH(QString, problem);
        SessionState good;
        good.sentence = QStringLiteral("we go back");
        good.settings.normalization = Normalization::Cosine;
        good.settings.numHeads = 2;
        good.tab = QStringLiteral("grid");
        QJsonObject json = sessionToJson(good);
        const QJsonValue bad = QJsonDocument::fromJson(("[" + value + "]").toUtf8()).array().at(0);
        if (section.isEmpty()) {
            json.insert(key, bad);
        } else {
            QJsonObject sec = json.value(section).toObject();
            sec.insert(key, bad);
            json.insert(section, sec);
        }
        SessionState s;
        QStringList problems;
        QVERIFY(sessionFromJson(json, s, &problems));
        QCOMPARE(problems.size(), 1);
        QVERIFY2(problems.first().startsWith(problem), qPrintable(problems.first()));
        // the bad value counts as absent (the default stays), the rest applies; a list keeps its good entries
        QJsonObject without = json;
        if (section.isEmpty()) {
            without.remove(key);
        } else {
            QJsonObject sec = without.value(section).toObject();
            sec.remove(key);
            without.insert(section, sec);
        }
        SessionState expected;
        QStringList none;
        QVERIFY(sessionFromJson(without, expected, &none));
        QCOMPARE(none, QStringList());
        if (key == QLatin1String("paddedKeys")) {
            QCOMPARE(s.paddedKeys, (std::set<int>{1}));
            expected.paddedKeys = s.paddedKeys;
        }
        if (key == QLatin1String("customMask")) {
            QVERIFY((s.customMask == std::set<std::pair<int, int>>{{0, 1}}));
            expected.customMask = s.customMask;
        }
        QVERIFY(s == expected);
        QCOMPARE(s.sentence, key == QLatin1String("sentence") ? SessionState().sentence : good.sentence);
        QCOMPARE(s.tab, key == QLatin1String("tab") ? SessionState().tab : good.tab);
        if (section != QLatin1String("settings") && key != QLatin1String("settings"))
            QVERIFY(s.settings == good.settings);
        else
            QCOMPARE(s.settings.normalization, key == QLatin1String("settings") ? Normalization::Softmax : Normalization::Cosine);
    }

    void notASessionChangesNothing_data()
    {
        QTest::addColumn<QByteArray>("content"); // empty with `dir`: the path is a folder
        QTest::addColumn<QString>("message");
        QTest::addRow("empty file") << QByteArray("") << ": malformed JSON: parse error at line 1, column 1: ";
        QTest::addRow("array") << QByteArray("[1, 2]") << "no JSON object";
        QTest::addRow("other format") << QByteArray(R"({"format": "attn-golden/1", "version": 1})") << "not an attnviz session";
        QTest::addRow("no version") << QByteArray(R"({"format": "attnviz-session"})") << "version: nothing";
        QTest::addRow("version as text") << QByteArray(R"({"format": "attnviz-session", "version": "one"})") << "version: \"one\"";
    }

    void notASessionChangesNothing()
    {
        QFETCH(QByteArray, content);
        QFETCH(QString, message);
        const QString file = path(QStringLiteral("bad.attnviz"));
        QVERIFY(writeFile(file, content));
        auto w = window();
        w->setSentence(QStringLiteral("the ship and the crew"));
        const SessionState before = w->captureSession();
        const auto table = w->session()->table();
        QString report;
        QVERIFY(!w->openSession(file, &report));
        QVERIFY2(report.startsWith(QStringLiteral("could not open %1: ").arg(file)), qPrintable(report));
        QVERIFY2(report.contains(message), qPrintable(report));
        QVERIFY(w->captureSession() == before);
        QCOMPARE(w->session()->table(), table);
        QCOMPARE(readAll(file), content);
        QVERIFY(w->sessionPath().isEmpty());
    }

    // The window opened on /dev/zero once ran to bad_alloc; a FIFO would block it forever.
    void specialFilesChangeNothing_data()
    {
        QTest::addColumn<QString>("target");
        QTest::addColumn<QString>("message");
        QTest::addRow("/dev/zero") << "/dev/zero" << "not a regular file";
        QTest::addRow("a FIFO") << "FIFO" << "not a regular file";
        QTest::addRow("a folder") << "DIR" << "it is a folder";
    }

    void specialFilesChangeNothing()
    {
        QFETCH(QString, target);
        QFETCH(QString, message);
        if (target == QLatin1String("FIFO")) {
            target = path(QStringLiteral("fifo.attnviz"));
            QVERIFY(::mkfifo(QFile::encodeName(target).constData(), 0600) == 0);
        }
        target.replace(QLatin1String("DIR"), m_dir.path());
        auto w = window();
        w->setSentence(QStringLiteral("the ship and the crew"));
        const SessionState before = w->captureSession();
        QString report;
        QVERIFY(!w->openSession(target, &report));
        QVERIFY2(report.startsWith(QStringLiteral("could not open %1: ").arg(target)), qPrintable(report));
        QVERIFY2(report.contains(message), qPrintable(report));
        QVERIFY(!report.contains(QLatin1Char('\n')));
        QVERIFY(w->captureSession() == before);
        QVERIFY(w->sessionPath().isEmpty());
    }

    void truncatedFileLeavesTheWindowExactlyAsItWas()
    {
        auto a = window();
        setEverything(a.get(), false, false);
        const QString file = path(QStringLiteral("truncated.attnviz"));
        QString error;
        QVERIFY2(a->saveSession(file, &error), qPrintable(error));
        QByteArray bytes = readAll(file);
        bytes.truncate(bytes.size() / 2);
        QVERIFY(writeFile(file, bytes));
        const QDateTime modified = QFileInfo(file).lastModified();

        auto w = window(); // a different state from the file's, modified and with a path of its own
        const QString own = path(QStringLiteral("own.attnviz"));
        QVERIFY2(w->saveSession(own, &error), qPrintable(error));
        w->setSentence(QStringLiteral("my crew must go"));
        QVERIFY(w->isWindowModified());
        const SessionState before = w->captureSession();
        const ComputeSettings settings = w->controls()->settings();
        const auto table = w->session()->table();
        QString report;
        QVERIFY(!w->openSession(file, &report));
        QVERIFY2(QRegularExpression(QStringLiteral("^could not open .*truncated.attnviz: malformed JSON: parse error at line \\d+, column \\d+: .+$")).match(report).hasMatch(),
                 qPrintable(report));
        QVERIFY(w->statusBar()->currentMessage().contains(report));
        QVERIFY(w->captureSession() == before);
        QVERIFY(w->controls()->settings() == settings);
        QCOMPARE(w->session()->table(), table);
        QVERIFY(w->isWindowModified());
        QCOMPARE(w->sessionPath(), QFileInfo(own).absoluteFilePath());
        QCOMPARE(readAll(file), bytes);
        QCOMPARE(QFileInfo(file).lastModified(), modified);
    }

    void missingFilesApplyTheRestAndSayWhich()
    {
        auto a = window();
        const QString proj = path(QStringLiteral("gone-proj.json"));
        QVERIFY(writeProjections(proj));
        QString error;
        QVERIFY(a->loadProjectionsFile(proj, &error));
        QJsonObject json = sessionToJson(a->captureSession());
        QJsonObject settings = json.value("settings").toObject();
        settings.insert("numHeads", 4);
        json.insert("settings", settings);
        json.insert("table", QJsonObject{{"kind", "file"}, {"path", path(QStringLiteral("vectors-gone.txt"))}});
        const QString file = path(QStringLiteral("missing.attnviz"));
        const QByteArray bytes = QJsonDocument(json).toJson();
        QVERIFY(writeFile(file, bytes));
        QVERIFY(QFile::remove(proj));

        auto w = window();
        w->setEmbeddingTable(journeyTable(), describeTable(*journeyTable()));
        QString report;
        QVERIFY2(w->openSession(file, &report), qPrintable(report));
        QVERIFY2(report.contains(QStringLiteral("vectors-gone.txt is missing")), qPrintable(report));
        QVERIFY2(report.contains(describeTable(*journeyTable())), qPrintable(report)); // the table in use
        QVERIFY2(report.contains(QStringLiteral("gone-proj.json is missing")), qPrintable(report));
        QVERIFY2(report.contains(QStringLiteral("identity projections are used instead")), qPrintable(report));
        QCOMPARE(w->session()->table(), journeyTable());
        QCOMPARE(w->controls()->settings().numHeads, 4);
        QCOMPARE(w->controls()->settings().projection, ProjectionMode::Identity);
        QCOMPARE(w->captureSession().sentence, a->captureSession().sentence);
        QVERIFY(w->statusBar()->currentMessage().contains(QStringLiteral("vectors-gone.txt")));
        QCOMPARE(readAll(file), bytes);
    }

    void unwritableSavePathWritesNothing_data()
    {
        QTest::addColumn<QString>("target");
        QTest::addRow("/proc") << "/proc/x.attnviz";
        QTest::addRow("a folder") << "DIR";
        QTest::addRow("a missing folder") << "DIR/no/such/folder/x.attnviz";
    }

    void unwritableSavePathWritesNothing()
    {
        QFETCH(QString, target);
        target.replace(QLatin1String("DIR"), m_dir.path());
        auto w = window();
        w->setSentence(QStringLiteral("my crew"));
        const QStringList before = QDir(m_dir.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot);
        QString error;
        QVERIFY(!w->saveSession(target, &error));
        QVERIFY2(error.startsWith(QStringLiteral("could not write %1: ").arg(target)), qPrintable(error));
        QVERIFY(target == m_dir.path() || !QFileInfo::exists(target));
        QCOMPARE(QDir(m_dir.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot), before);
        QVERIFY(w->isWindowModified());
        QVERIFY(w->sessionPath().isEmpty());
        QVERIFY(w->recentSessions().isEmpty());
    }

    void modifiedBySomeChangeClearedBySave_data()
    {
        QTest::addColumn<int>("change");
        QTest::addRow("sentence") << 0;
        QTest::addRow("key sentence") << 1;
        QTest::addRow("heads") << 2;
        QTest::addRow("table") << 3;
        QTest::addRow("head shown") << 4;
        QTest::addRow("query") << 5;
        QTest::addRow("tab") << 6;
        QTest::addRow("numbers") << 7;
        QTest::addRow("custom cell") << 8;
        QTest::addRow("padding click") << 9;
        QTest::addRow("head display") << 10;
    }

    void modifiedBySomeChangeClearedBySave()
    {
        QFETCH(int, change);
        auto w = window();
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        settle(w.get());
        QString error;
        QVERIFY2(w->saveSession(path(QStringLiteral("start.attnviz")), &error), qPrintable(error));
        QVERIFY(!w->isWindowModified());
        QCOMPARE(w->windowTitle(), QStringLiteral("start.attnviz[*] — attnviz"));
        ComputeSettings c = w->controls()->settings();
        switch (change) {
        case 0: w->setSentence(QStringLiteral("we go")); break;
        case 1: w->setKeySentence(QStringLiteral("my crew")); break;
        case 2: c.numHeads = 4; w->controls()->setSettings(c); break;
        case 3: w->setEmbeddingTable(bloemTable(), describeTable(*bloemTable())); break;
        case 4: c.numHeads = 2; w->controls()->setSettings(c); break;
        case 5: w->session()->setSelectedQuery(3); break;
        case 6: w->tabs()->setCurrentWidget(w->headGridView()); break;
        case 7: w->controls()->setShowNumbers(false); break;
        case 8: w->heatmapView()->cellToggled(1, 0); break;
        case 9: w->queryChips()->tokenClicked(2); break;
        case 10: w->session()->setHeadDisplay(HeadDisplay::Average); break;
        }
        if (change == 4) { // the heads first, saved; then the head shown
            QVERIFY(w->saveSession(path(QStringLiteral("heads.attnviz")), &error));
            QVERIFY(!w->isWindowModified());
            w->session()->setSelectedHead(1);
        }
        QVERIFY(w->isWindowModified());
        const QString file = path(QStringLiteral("modified.attnviz"));
        QVERIFY2(w->saveSession(file, &error), qPrintable(error));
        QVERIFY(!w->isWindowModified());
        QCOMPARE(w->windowTitle(), QStringLiteral("modified.attnviz[*] — attnviz"));
    }

    void changingBackClearsTheFlag()
    {
        auto w = window();
        QString error;
        QVERIFY2(w->saveSession(path(QStringLiteral("back.attnviz")), &error), qPrintable(error));
        ComputeSettings c = w->controls()->settings();
        c.numHeads = 4;
        w->controls()->setSettings(c);
        QVERIFY(w->isWindowModified());
        c.numHeads = 1;
        w->controls()->setSettings(c);
        QVERIFY(!w->isWindowModified());
    }

    void closeWithUnsavedChangesAsks()
    {
        auto w = window();
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        w->setSentence(QStringLiteral("we must go back"));
        // Cancel: the window stays open and nothing is stored
        int asked = 0;
        QString askedName;
        auto answer = MainWindow::SaveAnswer::Cancel;
        w->setSavePrompt([&](const QString &name) {
            ++asked;
            askedName = name;
            return answer;
        });
        QVERIFY(!w->close());
        QVERIFY(w->isVisible());
        QCOMPARE(asked, 1);
        QCOMPARE(askedName, QStringLiteral("Untitled"));
        QVERIFY(!QSettings().contains(QStringLiteral("session/last")));
        // New and Open ask too; Cancel keeps everything
        QVERIFY(!w->newSession());
        QVERIFY(!w->openSessionInteractive(path(QStringLiteral("whatever.attnviz"))));
        QCOMPARE(asked, 3);
        QCOMPARE(w->captureSession().sentence, QStringLiteral("we must go back"));
        // Save on an untitled session asks for a name; a cancelled name keeps the window open
        answer = MainWindow::SaveAnswer::Save;
        QVERIFY(!w->close());
        QVERIFY(w->isVisible());
        const QString file = path(QStringLiteral("closing"));
        w->setSaveAsPrompt([&](const QString &) { return file; });
        QVERIFY(w->close());
        QVERIFY(!w->isVisible());
        QCOMPARE(readJson(file + QStringLiteral(".attnviz")).value("input").toObject().value("sentence").toString(),
                 QStringLiteral("we must go back"));
        // Discard closes and the next start restores the state before the change
        auto v = window();
        v->show();
        v->setSentence(QStringLiteral("a change to throw away"));
        v->setSavePrompt([](const QString &) { return MainWindow::SaveAnswer::Discard; });
        QVERIFY(v->close());
        auto u = window();
        QVERIFY(u->restoreLastSession());
        QCOMPARE(u->captureSession().sentence, MainWindow::defaultSentence());
        QVERIFY(!u->isWindowModified());
    }

    void recentFilesUpdateAndAreCapped()
    {
        auto w = window();
        QStringList files;
        for (int i = 0; i < MainWindow::kMaxRecent + 2; ++i) {
            files << path(QStringLiteral("recent-%1.attnviz").arg(i));
            QString error;
            QVERIFY2(w->saveSession(files.last(), &error), qPrintable(error));
        }
        QStringList recent = w->recentSessions();
        QCOMPARE(recent.size(), MainWindow::kMaxRecent);
        QCOMPARE(recent.first(), QFileInfo(files.last()).absoluteFilePath());
        QVERIFY(!recent.contains(QFileInfo(files.first()).absoluteFilePath()));
        // opening one moves it to the front, once
        QString report;
        QVERIFY(w->openSession(files.at(4), &report));
        recent = w->recentSessions();
        QCOMPARE(recent.size(), MainWindow::kMaxRecent);
        QCOMPARE(recent.first(), QFileInfo(files.at(4)).absoluteFilePath());
        QCOMPARE(recent.count(QFileInfo(files.at(4)).absoluteFilePath()), 1);
        // a missing file is greyed in the menu, and can be removed from the list
        QVERIFY(QFile::remove(files.at(5)));
        auto *menu = w->findChild<QMenu *>(QStringLiteral("recentMenu"));
        QVERIFY(menu);
        emit menu->aboutToShow();
        QAction *gone = nullptr, *remove = nullptr;
        int shown = 0;
        for (QAction *a : menu->actions()) {
            if (a->data().toString() == QFileInfo(files.at(5)).absoluteFilePath())
                gone = a;
            if (!a->data().toString().isEmpty())
                ++shown;
            if (a->text().startsWith(QStringLiteral("Remove missing")))
                remove = a;
        }
        QCOMPARE(shown, MainWindow::kMaxRecent);
        QVERIFY(gone && !gone->isEnabled() && gone->text().contains(QStringLiteral("missing")));
        QVERIFY(remove);
        remove->trigger();
        QCOMPARE(w->recentSessions().size(), MainWindow::kMaxRecent - 1);
        QVERIFY(!w->recentSessions().contains(QFileInfo(files.at(5)).absoluteFilePath()));
        QVERIFY(w->statusBar()->currentMessage().contains(QStringLiteral("recent-5.attnviz")));
    }

    void restoreLastSessionAfterClose()
    {
        QVERIFY(!window()->restoreLastSession()); // nothing stored: nothing restored
        auto a = window();
        a->show();
        QVERIFY(QTest::qWaitForWindowExposed(a.get()));
        a->resize(777, 555);
        a->setSentence(QStringLiteral("we must go back to the ship"));
        ComputeSettings c = a->controls()->settings();
        c.numHeads = 4;
        c.mask = MaskChoice::Causal;
        a->controls()->setSettings(c);
        const QString file = path(QStringLiteral("restore.attnviz"));
        QString error;
        QVERIFY2(a->saveSession(file, &error), qPrintable(error));
        QVERIFY(!a->isWindowModified());
        QVERIFY(a->close());
        QCOMPARE(m_prompts, 0); // saved: nothing to ask
        const QSize size = a->size();

        auto b = window();
        b->show();
        QVERIFY(QTest::qWaitForWindowExposed(b.get()));
        QCOMPARE(b->captureSession().sentence, MainWindow::defaultSentence());
        b->resize(size + QSize(150, 100));
        QVERIFY2(b->size() != size, qPrintable(QStringLiteral("%1x%2, min %3x%4").arg(b->width()).arg(b->height()).arg(b->minimumSizeHint().width()).arg(b->minimumSizeHint().height())));
        QString report;
        QVERIFY2(b->restoreLastSession(&report), qPrintable(report));
        QCOMPARE(b->captureSession().sentence, QStringLiteral("we must go back to the ship"));
        QVERIFY(b->controls()->settings() == c);
        QCOMPARE(b->size(), size);
        QCOMPARE(b->sessionPath(), QFileInfo(file).absoluteFilePath());
        QVERIFY(!b->isWindowModified());
        QVERIFY(b->windowTitle().contains(QStringLiteral("restore.attnviz")));

        // a stored session that cannot be read changes nothing
        QSettings().setValue(QStringLiteral("session/last"), QStringLiteral("{\"format\": \"attnviz-ses"));
        auto d = window();
        const SessionState before = d->captureSession();
        QVERIFY(!d->restoreLastSession(&report));
        QVERIFY2(report.contains(QStringLiteral("malformed JSON: parse error at line 1, column 24: ")), qPrintable(report));
        QVERIFY(d->captureSession() == before);
    }

    void theAppOpensASessionFileFromTheCommandLine_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<bool>("good");
        QTest::addRow("attnviz FILE") << QStringList{"FILE"} << true;
        QTest::addRow("attnviz window FILE") << QStringList{"window", "FILE"} << true;
        QTest::addRow("missing file") << QStringList{"MISSING"} << false;
        QTest::addRow("truncated file") << QStringList{"window", "TRUNC"} << false;
    }

    void theAppOpensASessionFileFromTheCommandLine()
    {
        QFETCH(QStringList, args);
        QFETCH(bool, good);
        QTemporaryDir home;
        const QString file = home.filePath(QStringLiteral("lesson.attnviz"));
        const QString trunc = home.filePath(QStringLiteral("cut.attnviz"));
        {
            auto w = window();
            w->setSentence(QStringLiteral("we go back"));
            QString error;
            QVERIFY(w->saveSession(file, &error));
            QVERIFY(writeFile(trunc, readAll(file).left(40)));
        }
        const QByteArray truncBytes = readAll(trunc);
        args.replaceInStrings(QStringLiteral("MISSING"), home.filePath(QStringLiteral("none.attnviz")));
        args.replaceInStrings(QStringLiteral("TRUNC"), trunc);
        args.replaceInStrings(QStringLiteral("FILE"), file);
        const QString shot = home.filePath(QStringLiteral("shot.png"));
        args << QStringLiteral("--screenshot") << shot;
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), home.filePath(QStringLiteral("config"))); // not the user's settings
        env.insert(QStringLiteral("HOME"), home.path());
        p.setProcessEnvironment(env);
        p.start(QString::fromUtf8(ATTNVIZ_BINARY), args);
        QVERIFY(p.waitForFinished(60000));
        QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, p.readAllStandardError().constData());
        QVERIFY(QFileInfo::exists(shot)); // the window opened either way
        const QSettings written(home.filePath(QStringLiteral("config/attnviz/attnviz.conf")), QSettings::IniFormat);
        const QStringList recent = written.value(QStringLiteral("recentSessions")).toStringList();
        QCOMPARE(recent.contains(QFileInfo(file).absoluteFilePath()), good);
        QCOMPARE(readAll(trunc), truncBytes);
    }

    void windowHelpNamesTheSessionOptions()
    {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("QT_QPA_PLATFORM"));
        env.remove(QStringLiteral("DISPLAY"));
        env.remove(QStringLiteral("WAYLAND_DISPLAY"));
        p.setProcessEnvironment(env);
        p.start(QString::fromUtf8(ATTNVIZ_BINARY), {QStringLiteral("window"), QStringLiteral("--help")});
        QVERIFY(p.waitForFinished(30000));
        QCOMPARE(p.exitCode(), 0);
        const QString out = QString::fromUtf8(p.readAllStandardOutput());
        QVERIFY2(out.contains(QStringLiteral("--no-restore")), qPrintable(out));
        QVERIFY2(out.contains(QStringLiteral("SESSION.attnviz")), qPrintable(out));
        p.start(QString::fromUtf8(ATTNVIZ_BINARY), {QStringLiteral("--help")});
        QVERIFY(p.waitForFinished(30000));
        QVERIFY(QString::fromUtf8(p.readAllStandardOutput()).contains(QStringLiteral("  window [SESSION.attnviz]")));
    }
};

QTEST_MAIN(TestSessions)
#include "tst_sessions.moc"
