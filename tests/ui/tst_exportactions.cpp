// SPDX-License-Identifier: GPL-3.0-or-later
// File ▸ Export current view (Ctrl+E) on every tab of a model: each tab exports its own plot under
// its own default file name, or the action is disabled and says why.
#include "files/figureexport.h"
#include "live/livesession.h"
#include "mainwindow.h"
#include "views/view.h"
#include "window/viewrouter.h"

#include <qcustomplot.h>

#include <QAction>
#include <QApplication>
#include <QDialog>
#include <QFileDialog>
#include <QLineEdit>
#include <QFileInfo>
#include <QSpinBox>
#include <QTimer>
#include <QImage>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

using namespace attnviz;
using namespace attnviz::ui;

namespace {

// The share of pixels that differ between two images of one size.
double differingShare(const QImage &a, const QImage &b)
{
    if (a.size() != b.size() || a.isNull())
        return 1.0;
    const QImage x = a.convertToFormat(QImage::Format_RGB32), y = b.convertToFormat(QImage::Format_RGB32);
    qint64 differ = 0;
    for (int r = 0; r < x.height(); ++r)
        for (int c = 0; c < x.width(); ++c)
            differ += x.pixel(c, r) != y.pixel(c, r);
    return double(differ) / (double(x.width()) * x.height());
}

} // namespace

class TestExportActions : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void cleanupTestCase();
    void everyTabExportsItself_data();
    void everyTabExportsItself();

private:
    bool waitForResult();
    MainWindow *m_w = nullptr;
};

void TestExportActions::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("attnviz-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_exportactions"));
    QSettings().clear();
    m_w = new MainWindow;
    m_w->session()->setDebounceMs(0);
    m_w->resize(1400, 900);
    m_w->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_w));
    QString error;
    QVERIFY2(m_w->openModel(QStringLiteral("bundled"), &error), qPrintable(error));
    QVERIFY(waitForResult());
}

void TestExportActions::cleanupTestCase()
{
    delete m_w;
    m_w = nullptr;
}

bool TestExportActions::waitForResult()
{
    for (int i = 0; i < 500; ++i) {
        const SnapshotPtr s = m_w->session()->snapshot();
        if (s && !m_w->session()->busy() && s->generation == m_w->session()->generation())
            return s->hasResult();
        QTest::qWait(20);
    }
    return false;
}

void TestExportActions::everyTabExportsItself_data()
{
    QTest::addColumn<QString>("view");
    QTest::addColumn<QString>("name"); // the default file is attnviz-NAME.png; "" = disabled
    QTest::addRow("weights") << QStringLiteral("weights") << QStringLiteral("weights");
    QTest::addRow("heads") << QStringLiteral("grid") << QStringLiteral("grid");
    QTest::addRow("embeddings") << QStringLiteral("embeddings") << QStringLiteral("embeddings");
    QTest::addRow("lines") << QStringLiteral("lines") << QStringLiteral("lines");
    QTest::addRow("residual") << QStringLiteral("residual") << QStringLiteral("residual");
    QTest::addRow("rollout") << QStringLiteral("rollout") << QStringLiteral("rollout");
    QTest::addRow("lens") << QStringLiteral("lens") << QStringLiteral("lens");
    QTest::addRow("dla") << QStringLiteral("dla") << QStringLiteral("dla");
    QTest::addRow("layers × heads (roles)") << QStringLiteral("headRoles") << QString();
}

void TestExportActions::everyTabExportsItself()
{
    QFETCH(QString, view);
    QFETCH(QString, name);
    QVERIFY2(m_w->showView(view), qPrintable(view));
    QTest::qWait(50);
    QAction *action = nullptr; // File ▸ Export current view, as the menu holds it
    for (QAction *a : m_w->findChildren<QAction *>())
        if (a->text() == QStringLiteral("Export current &view…"))
            action = a;
    QVERIFY(action);
    if (name.isEmpty()) {
        QVERIFY2(!action->isEnabled(), "a tab with no figure: the action is disabled");
        QVERIFY(action->toolTip().contains(QStringLiteral("no figure")));
        return;
    }
    QVERIFY(action->isEnabled());
    QVERIFY(action->toolTip().contains(name));

    // Ctrl+E, answered as a user would: the size dialog at 400 × 300, then the file dialog's
    // default name read and a path in a temporary folder given
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("figure.png"));
    QString defaultName;
    bool sized = false, saved = false;
    std::function<void()> answer = [&] {
        QWidget *modal = QApplication::activeModalWidget();
        if (auto *files = qobject_cast<QFileDialog *>(modal)) {
            defaultName = QFileInfo(files->selectedFiles().value(0)).fileName();
            files->selectFile(path);
            // selectFile leaves the name field as it was while that field has the focus (the window
            // manager's timing, not ours): the name is typed there as a user would
            if (auto *name = files->findChild<QLineEdit *>(QStringLiteral("fileNameEdit")))
                name->setText(path);
            static_cast<QDialog *>(files)->accept();
            saved = true;
            return;
        }
        if (auto *size = qobject_cast<QDialog *>(modal); size && !sized) {
            const QList<QSpinBox *> boxes = size->findChildren<QSpinBox *>();
            if (boxes.size() == 2) {
                boxes[0]->setValue(400);
                boxes[1]->setValue(300);
            }
            sized = true;
            size->accept();
        }
        QTimer::singleShot(20, this, answer);
    };
    QTimer::singleShot(20, this, answer);
    action->trigger();
    QVERIFY(sized && saved);
    QCOMPARE(defaultName, QStringLiteral("attnviz-%1.png").arg(name));

    // what was written is the current tab's own plot, not the Weights heatmap
    const View *shown = m_w->views()->view(view);
    QVERIFY(shown && shown->plot());
    const QString own = dir.filePath(QStringLiteral("own.png"));
    QString error;
    QVERIFY2(saveFigure(shown->plot(), own, {400, 300, 144.0, QString()}, &error), qPrintable(error));
    const QImage written(path);
    QCOMPARE(written.size(), QSize(400, 300));
    // (a second export of the same plot may thin its axis labels otherwise: the Heads grid at
    // 400 × 300 drew one tick label fewer, 0.6 % of the pixels)
    const double sameAsOwn = differingShare(written, QImage(own));
    QVERIFY2(sameAsOwn < 0.02, qPrintable(QStringLiteral("%1: %2 of the pixels differ").arg(view).arg(sameAsOwn)));
    if (view != QLatin1String("weights")) {
        const QString weights = dir.filePath(QStringLiteral("weights.png"));
        QVERIFY(saveFigure(m_w->views()->view(QStringLiteral("weights"))->plot(), weights, {400, 300, 144.0, QString()}, &error));
        const double sameAsWeights = differingShare(written, QImage(weights));
        QVERIFY2(sameAsWeights > 0.1, qPrintable(QStringLiteral("%1: only %2 of the pixels differ from the Weights figure").arg(view).arg(sameAsWeights)));
    }
}

QTEST_MAIN(TestExportActions)
#include "tst_exportactions.moc"
