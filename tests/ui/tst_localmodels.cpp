// SPDX-License-Identifier: GPL-3.0-or-later
// Model ▸ On this computer (LocalModelsDialog) on the fake stores of support/storetrees.h under a HOME
// of the test's own: the rows read back (name, family, parameters, size, precision, where, why not),
// greyed rows in the disabled text colour with their reason (a GGUF file's tokenizer keys included),
// the scan off the GUI thread, Add folder and Remove folder, and a double-click that opens
// hf:ORG/NAME in the real window through its loader; llama.cpp's T5 files listed, opened, or greyed.
// With ATTNVIZ_SCREENSHOT_DIR set, the dialog is also saved as local-models.png there (the README's).
#include "controls/controlpanel.h"
#include "mainwindow.h"
#include "testsupport.h"
#include "window/localmodelsdialog.h"

#include "../support/storetrees.h"

#include "attnviz/fileio.h"
#include "localmodels.h"

#include <QAction>
#include <QComboBox>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QScopeGuard>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

using namespace attnviz;
using namespace attnviz::ui;
using namespace attnviz_test;

namespace {

enum Column { Name, Family, Parameters, Size, Precision, Where, Note };

QTreeWidgetItem *row(const LocalModelsDialog &d, const QString &name)
{
    for (int i = 0; i < d.list()->topLevelItemCount(); ++i)
        if (d.list()->topLevelItem(i)->text(Name) == name)
            return d.list()->topLevelItem(i);
    return nullptr;
}

QStringList cells(const QTreeWidgetItem *item)
{
    QStringList c;
    for (int i = Family; i <= Where; ++i)
        c << item->text(i);
    return c;
}

bool waitScanned(LocalModelsDialog &d)
{
    QSignalSpy spy(&d, &LocalModelsDialog::scanned);
    return !d.scanning() || spy.wait(20000);
}

} // namespace

class TestLocalModels : public QObject {
    Q_OBJECT

    QTemporaryDir m_tmp;
    StoreTrees m_trees;

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("attnviz-tests"));
        QSettings().clear();
        QVERIFY(m_tmp.isValid());
        m_trees = buildStoreTrees(m_tmp.path());
        for (const char *v : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "OLLAMA_MODELS"})
            qunsetenv(v);
        qputenv("HOME", m_trees.home.toLocal8Bit());
        qputenv("XDG_CACHE_HOME", (m_trees.home + QStringLiteral("/.cache")).toLocal8Bit());
        if (QFileInfo(QStringLiteral("/usr/share/ollama/.ollama/models")).isDir())
            QSKIP("this machine has Ollama's service store: the rows would not be the test's alone");
    }

    void rowsReadBack()
    {
        LocalModelsDialog d;
        d.resize(1200, 620);
        d.show();
        QVERIFY(d.scanning()); // the scan runs on a worker thread: the dialog is up before it ends
        QCOMPARE(d.findChild<QLabel *>(QStringLiteral("localModelsStatus"))->text(), QStringLiteral("Looking…"));
        QVERIFY(waitScanned(d));
        QCOMPARE(d.list()->topLevelItemCount(), 27); // 29 with the added folder's two
        QCOMPARE(int(d.models().size()), 27);

        const QTreeWidgetItem *gpt2 = row(d, QStringLiteral("openai-community/gpt2-tiny"));
        QVERIFY(gpt2);
        QCOMPARE(cells(gpt2), (QStringList{QStringLiteral("gpt2"), QStringLiteral("812K"), QStringLiteral("4.8 MB"), QStringLiteral("F32"),
                                           QStringLiteral("Hugging Face  ~/.cache/huggingface/hub")}));
        QVERIFY(gpt2->text(Note).isEmpty());
        const QTreeWidgetItem *tiny = row(d, QStringLiteral("tiny:latest"));
        QVERIFY(tiny);
        QCOMPARE(cells(tiny), (QStringList{QStringLiteral("llama"), QStringLiteral("792"),
                                           QString::fromStdString(describeBytes(uint64_t(m_trees.ggufBytes + 33))),
                                           QStringLiteral("Q4_K_M"), QStringLiteral("Ollama  ~/.ollama/models")}));
        QVERIFY(tiny->toolTip(Name).contains(QStringLiteral("Opens as: ollama:tiny:latest")));

        // greyed, with why, in the last column and the tooltip
        const QColor grey = d.palette().color(QPalette::Disabled, QPalette::Text);
        const QTreeWidgetItem *mamba = row(d, QStringLiteral("state-spaces/mamba-tiny"));
        QVERIFY(mamba);
        QCOMPARE(mamba->foreground(Name).color(), grey);
        QCOMPARE(mamba->text(Family), QStringLiteral("mamba"));
        QVERIFY2(mamba->text(Note).startsWith(QStringLiteral("config.json: model_type: \"mamba\" is not a family attnviz knows")),
                 qPrintable(mamba->text(Note)));
        QVERIFY(mamba->toolTip(Note).contains(QStringLiteral("attnviz cannot compute it: config.json: model_type")));
        const QTreeWidgetItem *loop = row(d, QStringLiteral("lmstudio-community/tiny-GGUF/loop"));
        QVERIFY(loop);
        QCOMPARE(loop->text(Note), QStringLiteral("a symbolic link loop"));
        QCOMPARE(loop->text(Where), QStringLiteral("LM Studio  ~/.lmstudio/models"));
        QCOMPARE(loop->foreground(Family).color(), grey);
        QVERIFY(row(d, QStringLiteral("notgguf:latest"))->text(Note).startsWith(QStringLiteral("not a GGUF file")));
        QVERIFY(gpt2->foreground(Name).color() != grey);

        // Open is for what attnviz computes; a greyed row activated says why instead
        QSignalSpy open(&d, &LocalModelsDialog::openRequested);
        d.list()->setCurrentItem(const_cast<QTreeWidgetItem *>(mamba));
        QVERIFY(!d.findChild<QPushButton *>(QStringLiteral("localModelsOpen"))->isEnabled());
        emit d.list()->itemActivated(const_cast<QTreeWidgetItem *>(mamba), 0);
        QCOMPARE(open.size(), 0);
        QVERIFY(d.findChild<QLabel *>(QStringLiteral("localModelsStatus"))->text().startsWith(
            QStringLiteral("state-spaces/mamba-tiny: attnviz cannot compute it: config.json: model_type")));
        QVERIFY(d.isVisible());
        d.list()->setCurrentItem(const_cast<QTreeWidgetItem *>(tiny));
        QVERIFY(d.findChild<QPushButton *>(QStringLiteral("localModelsOpen"))->isEnabled());
        QVERIFY(!d.findChild<QPushButton *>(QStringLiteral("localModelsRemoveFolder"))->isEnabled());
        d.findChild<QPushButton *>(QStringLiteral("localModelsOpen"))->click();
        QCOMPARE(open.size(), 1);
        QCOMPARE(open.at(0).at(0).toString(), QStringLiteral("ollama:tiny:latest"));
        QVERIFY(!d.isVisible());
    }

    void addAndRemoveFolder()
    {
        LocalModelsDialog d;
        d.setFolderPrompt([this] { return m_trees.folder; });
        d.show();
        QVERIFY(waitScanned(d));
        QCOMPARE(d.list()->topLevelItemCount(), 27);
        d.findChild<QPushButton *>(QStringLiteral("localModelsAddFolder"))->click();
        QVERIFY(waitScanned(d));
        QCOMPARE(d.list()->topLevelItemCount(), 29);
        QCOMPARE(userModelFolders(), QStringList{m_trees.folder});
        QTreeWidgetItem *mine = row(d, QStringLiteral("downloads/tiny"));
        QVERIFY(mine);
        QCOMPARE(cells(mine), (QStringList{QStringLiteral("gemma3"), QStringLiteral("792"),
                                           QString::fromStdString(describeBytes(uint64_t(m_trees.ggufBytes))), QStringLiteral("BF16"),
                                           QStringLiteral("folder  ~/models")}));
        d.list()->setCurrentItem(mine);
        QPushButton *remove = d.findChild<QPushButton *>(QStringLiteral("localModelsRemoveFolder"));
        QVERIFY(remove->isEnabled());
        remove->click();
        QVERIFY(waitScanned(d));
        QCOMPARE(d.list()->topLevelItemCount(), 27);
        QVERIFY(userModelFolders().isEmpty());
    }

    // Model ▸ On this computer… in the window; a double-click opens the model through the window's loader.
    void opensInTheWindow()
    {
        MainWindow w;
        w.setMessagePrompt([](const QString &, const QString &text) { QFAIL(qPrintable(text)); });
        w.resize(1200, 800);
        w.show();
        // the menu is rebuilt when the model changes: its action looked up each time
        const auto localModelsAction = [&w]() -> QAction * {
            for (QAction *a : w.findChild<QMenu *>(QStringLiteral("modelMenu"))->actions())
                if (a->objectName() == QLatin1String("localModelsAction"))
                    return a;
            return nullptr;
        };
        QAction *action = localModelsAction();
        QVERIFY(action);
        QCOMPARE(action->text(), QStringLiteral("On this &computer…"));
        action->trigger();
        LocalModelsDialog *d = w.findChild<LocalModelsDialog *>();
        QVERIFY(d && d->isVisible());
        QVERIFY(waitScanned(*d));
        QTreeWidgetItem *qwen = row(*d, QStringLiteral("Qwen/Qwen3-tiny"));
        QVERIFY(qwen);
        QCOMPARE(cells(qwen).mid(0, 2), (QStringList{QStringLiteral("qwen3"), QStringLiteral("1.22M")}));
        emit d->list()->itemActivated(qwen, 0);
        QTRY_COMPARE_WITH_TIMEOUT(w.modelSource(), QStringLiteral("hf:Qwen/Qwen3-tiny"), 30000);
        QVERIFY(!d->isVisible());
        // the spec, not the snapshot's path, is what the recent list and sessions keep
        QCOMPARE(QSettings().value(QStringLiteral("models/recent")).toStringList().value(0), QStringLiteral("hf:Qwen/Qwen3-tiny"));
        action = localModelsAction();
        QVERIFY(action);
        action->trigger(); // shown again: scanned again, same dialog
        QCOMPARE(w.findChildren<LocalModelsDialog *>().size(), 1);
        QVERIFY(waitScanned(*d));
        d->hide();

        // a session keeps the spec (not a path relative to the session file) and opens it again
        QTemporaryDir tmp;
        const QString session = tmp.filePath(QStringLiteral("qwen.attnviz"));
        QString error;
        QVERIFY2(w.saveSession(session, &error), qPrintable(error));
        QCOMPARE(test::readJson(session).value(QStringLiteral("model")).toString(), QStringLiteral("hf:Qwen/Qwen3-tiny"));
        w.useWordVectors();
        QCOMPARE(w.modelSource(), QString());
        QString report;
        QVERIFY2(w.openSession(session, &report), qPrintable(report));
        QVERIFY2(!report.contains(QLatin1String("model:")), qPrintable(report));
        QCOMPARE(w.modelSource(), QStringLiteral("hf:Qwen/Qwen3-tiny"));

        // an Ollama model (a GGUF blob) picked from the list
        action = localModelsAction();
        action->trigger();
        QVERIFY(waitScanned(*d));
        QTreeWidgetItem *llama = row(*d, QStringLiteral("llama-tiny:q8_0"));
        QVERIFY(llama);
        QCOMPARE(cells(llama), (QStringList{QStringLiteral("llama"), QStringLiteral("57.5K"), QStringLiteral("89.4 KB"),
                                            QStringLiteral("Q8_0"), QStringLiteral("Ollama  ~/.ollama/models")}));
        emit d->list()->itemActivated(llama, 0);
        QTRY_COMPARE_WITH_TIMEOUT(w.modelSource(), QStringLiteral("ollama:llama-tiny:q8_0"), 30000);
        // the status line says what a quantized model's attention is
        QTRY_VERIFY_WITH_TIMEOUT(w.findChild<QLabel *>(QStringLiteral("statusLabel"))
                                     ->text()
                                     .contains(QStringLiteral("Q8_0 — attention of the quantized model")),
                                 30000);
    }

    // A GGUF file whose tokenizer attnviz cannot build (an unknown tokenizer.ggml.pre) is greyed
    // with the reason opening it would give; Open stays off for it; a valid one beside it is not.
    void greyedGgufSaysWhy()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QVERIFY(writeBytes(dir.path() + QStringLiteral("/tekken.gguf"), tinyGguf("tekken", "llama", 7, true, true, "tekken")));
        QVERIFY(writeBytes(dir.path() + QStringLiteral("/fine.gguf"), tinyGguf("fine", "llama", 7)));
        addUserModelFolder(dir.path());
        const auto unadd = qScopeGuard([&] { removeUserModelFolder(dir.path()); });
        LocalModelsDialog d;
        d.resize(1400, 680);
        d.show();
        QVERIFY(waitScanned(d));
        QTreeWidgetItem *tekken = row(d, QStringLiteral("tekken")); // named by the path under the folder
        QTreeWidgetItem *fine = row(d, QStringLiteral("fine"));
        QVERIFY(tekken && fine);
        const QColor grey = d.palette().color(QPalette::Disabled, QPalette::Text);
        QCOMPARE(tekken->foreground(Name).color(), grey);
        const QString why = QStringLiteral("metadata \"tokenizer.ggml.pre\": \"tekken\" is not a pre-tokenizer attnviz knows");
        QVERIFY2(tekken->text(Note).startsWith(why), qPrintable(tekken->text(Note)));
        QVERIFY(tekken->toolTip(Name).contains(QStringLiteral("attnviz cannot compute it: ") + why));
        QVERIFY(fine->foreground(Name).color() != grey);
        QVERIFY(fine->text(Note).isEmpty());
        d.list()->setCurrentItem(tekken);
        QVERIFY(!d.findChild<QPushButton *>(QStringLiteral("localModelsOpen"))->isEnabled());
        d.list()->setCurrentItem(fine);
        QVERIFY(d.findChild<QPushButton *>(QStringLiteral("localModelsOpen"))->isEnabled());
        const QString shots = qEnvironmentVariable("ATTNVIZ_SCREENSHOT_DIR");
        if (!shots.isEmpty()) {
            QCoreApplication::processEvents();
            QVERIFY(d.grab().toImage().save(shots + QStringLiteral("/local-models-greyed-gguf.png")));
        }
    }

    // llama.cpp's T5 files in a folder of the user's: t5.gguf listed as a t5 model and opened in the
    // window by a double-click (the Attention selector and the Target field shown, as for a T5
    // folder); t5encoder.gguf listed as a model of its own (the encoder alone).
    void t5GgufFiles()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString from = QString::fromUtf8(ATTNVIZ_FIXTURE("/gguf/"));
        for (const char *name : {"t5.gguf", "t5encoder.gguf"})
            QVERIFY(QFile::copy(from + QLatin1String(name), dir.filePath(QLatin1String(name))));
        addUserModelFolder(dir.path());
        const auto unadd = qScopeGuard([&] { removeUserModelFolder(dir.path()); });
        MainWindow w;
        w.setMessagePrompt([](const QString &, const QString &text) { QFAIL(qPrintable(text)); });
        w.resize(1200, 800);
        w.show();
        for (QAction *a : w.findChild<QMenu *>(QStringLiteral("modelMenu"))->actions())
            if (a->objectName() == QLatin1String("localModelsAction"))
                a->trigger();
        LocalModelsDialog *d = w.findChild<LocalModelsDialog *>();
        QVERIFY(d && d->isVisible());
        QVERIFY(waitScanned(*d));
        QTreeWidgetItem *t5 = row(*d, QStringLiteral("t5")), *encoder = row(*d, QStringLiteral("t5encoder"));
        QVERIFY(t5 && encoder);
        QCOMPARE(cells(t5).mid(0, 2), (QStringList{QStringLiteral("t5"), QStringLiteral("23K")}));
        QCOMPARE(t5->text(Precision), QStringLiteral("F32"));
        QVERIFY(t5->text(Note).isEmpty());
        const QColor grey = d->palette().color(QPalette::Disabled, QPalette::Text);
        QVERIFY(encoder->foreground(Name).color() != grey);
        QVERIFY2(encoder->text(Note).isEmpty(), qPrintable(encoder->text(Note)));
        emit d->list()->itemActivated(t5, 0);
        QTRY_COMPARE_WITH_TIMEOUT(w.modelSource(), dir.filePath(QStringLiteral("t5.gguf")), 30000);
        auto *combo = w.controls()->findChild<QComboBox *>(QStringLiteral("attentionKindCombo"));
        QVERIFY(combo);
        QTRY_VERIFY_WITH_TIMEOUT(combo->isVisibleTo(&w), 30000);
    }

    // The README's screenshot: the list as it opens on the test's stores plus the added folder.
    void screenshot()
    {
        addUserModelFolder(m_trees.folder);
        LocalModelsDialog d;
        d.resize(1400, 680);
        d.show();
        QVERIFY(waitScanned(d));
        d.list()->setCurrentItem(row(d, QStringLiteral("Qwen/Qwen3-tiny")));
        QCoreApplication::processEvents();
        const QImage shot = d.grab().toImage();
        QVERIFY(shot.width() >= 1000 && shot.height() >= 500);
        const QString dir = qEnvironmentVariable("ATTNVIZ_SCREENSHOT_DIR");
        if (!dir.isEmpty())
            QVERIFY(shot.save(dir + QStringLiteral("/local-models.png")));
        removeUserModelFolder(m_trees.folder);
    }
};

QTEST_MAIN(TestLocalModels)
#include "tst_localmodels.moc"
